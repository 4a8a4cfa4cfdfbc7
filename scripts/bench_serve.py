"""Total tokens/s of `logitscope serve` at 1 and at N concurrent streaming clients.

Starts the server on a free loopback port (the default model unless --model) in
this process, set up as `logitscope serve` sets up its own (an optimised BLAS
before MLX loads, the compute path of --compute), then for each of --reps rounds
sends the same prompts one client at a time and N at once (greedy unless
--temperature; request i seeded i), with logprobs on: the two configurations
alternate, so a machine shared with other work loads both alike. Prints generated
tokens / wall seconds for each, their ratio per round, the median ratio, and the
load average before and after.

    .venv/bin/python scripts/bench_serve.py --clients 8 --tokens 32 --reps 3
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import statistics
import time

SAMPLING: dict = {"temperature": 0}  # what each request asks (--temperature, --top-p)


def ask(url: str, prompt: str, tokens: int, seed: int = 0) -> int:
    """One streamed request; returns the tokens it received."""
    import httpx

    body = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": tokens,
        **SAMPLING,
        "seed": seed,
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
    """(tokens received, wall seconds) for `prompts` sent by `clients` at a time."""
    t = time.perf_counter()
    with cf.ThreadPoolExecutor(clients) as pool:
        n = sum(pool.map(lambda ip: ask(url, ip[1], tokens, ip[0]), enumerate(prompts)))
    return n, time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--batch", type=int, default=8, help="the server's batch size")
    p.add_argument("--reps", type=int, default=3, help="rounds of 1 client then N clients")
    p.add_argument(
        "--compute", default=None, help="auto | speed | memory (LOGITSCOPE_COMPUTE for the server)"
    )
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    p.add_argument("--top-p", type=float, default=1.0)
    args = p.parse_args()
    SAMPLING.update(temperature=args.temperature, top_p=args.top_p)
    if args.compute:
        os.environ["LOGITSCOPE_COMPUTE"] = args.compute
    from engine.backends.base import prepare_process

    print("BLAS:", prepare_process())  # before MLX loads, as `logitscope serve` does
    from engine.backends.mlx.lab_batch import PROMPTS
    from engine.serve.server import ServeOptions, start

    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.clients)]
    print(f"load average before: {os.getloadavg()}")
    handle = start(ServeOptions(args.model, port=0, max_batch=args.batch, journal=False))
    print("compute:", handle.served.record.compute)
    ratios = []
    try:
        ask(handle.url, "Hi", 4)  # warm up
        for rep in range(args.reps):
            n1, s1 = measure(handle.url, prompts, 1, args.tokens)
            nn, sn = measure(handle.url, prompts, args.clients, args.tokens)
            one, many = n1 / s1, nn / sn
            ratios.append(many / one)
            print(
                f"round {rep + 1}: 1 client {n1} tokens in {s1:.2f} s = {one:.1f} tok/s; "
                f"{args.clients} clients {nn} tokens in {sn:.2f} s = {many:.1f} tok/s; "
                f"ratio {many / one:.2f}x  (load {os.getloadavg()[0]:.2f})"
            )
    finally:
        handle.stop()
    print(f"median ratio over {len(ratios)} rounds: {statistics.median(ratios):.2f}x")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
