"""Total tokens/s of `logitscope serve` at 1 and at N concurrent streaming clients.

Starts the server on a free loopback port (the default model unless --model),
sends the same prompts one client at a time, then N at once, greedy, with
logprobs on, and prints generated tokens / wall seconds for each and their ratio.

    .venv/bin/python scripts/bench_serve.py --clients 8 --tokens 32
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import time

import httpx

from engine.backends.mlx.lab_batch import PROMPTS
from engine.serve.server import ServeOptions, start


def ask(url: str, prompt: str, tokens: int) -> int:
    """One streamed request; returns the tokens it received."""
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": tokens,
        "temperature": 0,
        "logprobs": True,
        "top_logprobs": 5,
        "stream": True,
    }
    n = 0
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=600) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                chunk = json.loads(line[6:])
                lp = chunk["choices"][0]["logprobs"] if chunk["choices"] else None
                n += len(lp["content"]) if lp else 0
    return n


def measure(url: str, prompts: list[str], clients: int, tokens: int) -> tuple[int, float]:
    t = time.perf_counter()
    with cf.ThreadPoolExecutor(clients) as pool:
        n = sum(pool.map(lambda p: ask(url, p, tokens), prompts))
    return n, time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--batch", type=int, default=8, help="the server's batch size")
    args = p.parse_args()
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.clients)]
    handle = start(ServeOptions(args.model, port=0, max_batch=args.batch, journal=False))
    try:
        ask(handle.url, "Hi", 4)  # warm up
        n1, s1 = measure(handle.url, prompts, 1, args.tokens)
        nn, sn = measure(handle.url, prompts, args.clients, args.tokens)
    finally:
        handle.stop()
    one, many = n1 / s1, nn / sn
    print(f"1 client:  {n1} tokens in {s1:.2f} s = {one:.1f} tok/s")
    print(f"{args.clients} clients: {nn} tokens in {sn:.2f} s = {many:.1f} tok/s")
    print(f"ratio: {many / one:.2f}x")


if __name__ == "__main__":
    main()
