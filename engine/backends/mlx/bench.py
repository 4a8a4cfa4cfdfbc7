"""`logitscope bench`: the instrumented engine against bare mlx-lm, in one run.

The same greedy prompt runs through `mlx_lm.stream_generate` in this process and
through `EngineClient` (engine process, records over the pipe, as the app uses
it), alternating `rounds` times so drift on a shared machine hits both alike.
Decode tok/s is measured the same way for both, where the tokens arrive:
(tokens after the first) / (time from the first token to the last).
"""

from __future__ import annotations

import statistics
import time

from engine.settings import SamplingSettings

BENCH_PROMPT = "Write a long story about a dragon who learns to bake bread."


def decode_tps(stamps: list[float]) -> float:
    """Tokens per second after the first token, from arrival timestamps (0 if < 2)."""
    from engine.series import decode_rate

    return decode_rate(stamps) or 0.0


def _bare_run(model, tokenizer, prompt_text: str, max_tokens: int) -> float:
    from mlx_lm import stream_generate

    stamps = []
    for r in stream_generate(model, tokenizer, prompt_text, max_tokens=max_tokens):
        if r.finish_reason in (None, "length"):  # a "stop" yield carries no token
            stamps.append(time.perf_counter())
    return decode_tps(stamps)


def _engine_run(client, settings: SamplingSettings, model: str | None) -> float:
    stamps = []
    for record in client.generate(BENCH_PROMPT, settings, model):
        if record.type == "token":
            stamps.append(time.perf_counter())
        elif record.type == "error":
            from engine.errors import LogitscopeError

            raise LogitscopeError(record.message)
    return decode_tps(stamps)


def run_bench(model: str | None, max_tokens: int = 48, rounds: int = 3) -> dict:
    """Alternate bare and engine runs; return the figures as a plain dict."""
    from mlx_lm import load

    from engine.backends.mlx.loader import device_name, resolve_model
    from engine.client import EngineClient

    folder = resolve_model(model)
    bare_model, tokenizer = load(str(folder))
    prompt_text = tokenizer.apply_chat_template(
        [{"role": "user", "content": BENCH_PROMPT}],
        add_generation_prompt=True,
        tokenize=False,
    )
    settings = SamplingSettings(temperature=0.0, max_tokens=max_tokens, seed=0)
    client = EngineClient()
    try:
        list(client.load(str(folder)))
        _engine_run(client, settings.with_(max_tokens=4), str(folder))  # warm-up
        _bare_run(bare_model, tokenizer, prompt_text, 4)
        bare, engine = [], []
        for _ in range(rounds):
            bare.append(_bare_run(bare_model, tokenizer, prompt_text, max_tokens))
            engine.append(_engine_run(client, settings, str(folder)))
    finally:
        client.close()
    b, e = statistics.median(bare), statistics.median(engine)
    return {
        "model": folder.name,
        "device": device_name(),
        "max_tokens": max_tokens,
        "rounds": rounds,
        "bare_decode_tps": b,
        "engine_decode_tps": e,
        "ratio": e / b if b else 0.0,
        "bare_runs": bare,
        "engine_runs": engine,
    }


def format_report(r: dict) -> str:
    return (
        f"{r['model']} on {r['device']}, {r['max_tokens']} tokens x {r['rounds']} rounds\n"
        f"  bare mlx-lm        {r['bare_decode_tps']:7.2f} tok/s\n"
        f"  Logitscope engine  {r['engine_decode_tps']:7.2f} tok/s\n"
        f"  ratio              {r['ratio']:7.3f}"
    )
