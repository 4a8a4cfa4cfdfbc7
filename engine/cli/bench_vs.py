"""`logitscope bench --vs URL`: the local engine and an OpenAI-compatible server on
the same raw prompt, greedy, alternating rounds.

Both sides run through the engine process's client (the server through the
remote backend), so each side's figures are what the window would show: prefill
and decode tokens/s (the engine's own measurement locally; the server's own
timings where it reports them, else as received), time to first token, and
whether the greedy answers agree (token ids where both sides report them, else
the text with whitespace normalised: mlx_lm.server drops a completion's leading
space).
"""

from __future__ import annotations

import statistics

from engine.run.settings import SamplingSettings

VS_PROMPT = (
    "The history of the printing press begins in the fifteenth century, when Johannes "
    "Gutenberg combined movable metal type, oil-based ink and a wooden press adapted "
    "from those used for wine. Within fifty years"
)


def _side(client, spec: str | None, settings: SamplingSettings) -> dict:
    """One run's figures, or its error (tokens a server re-sends supersede the first)."""
    from engine.run.run_result import RunResult

    run = RunResult()
    for r in client.generate(VS_PROMPT, settings, spec):
        run.add(r)
    error = run.error.message if run.error is not None else None
    return {"tokens": run.tokens, "done": run.done, "error": error, "model": run.model}


def _agree(a: list, b: list) -> bool:
    ids_a, ids_b = [t.token_id for t in a], [t.token_id for t in b]
    if all(i >= 0 for i in ids_a + ids_b):
        return ids_a == ids_b
    text = lambda ts: " ".join("".join(t.text for t in ts).split())  # noqa: E731
    return text(a) == text(b)


def run_vs(url: str, remote_model: str | None, model: str | None, tokens: int, rounds: int):
    """Alternate local and server runs (swapping who goes first); a plain dict report.

    Raises:
        LogitscopeError: a side that fails (its message says which).
    """
    from engine.cli.args import base_url
    from engine.errors import LogitscopeError
    from engine.process.client import EngineClient

    remote = f"{base_url(url)}#{remote_model or ''}"
    settings = SamplingSettings(
        temperature=0.0, max_tokens=tokens, seed=0, chat_template=False, prompt_cache=False
    )
    client = EngineClient()
    runs = {"local": [], "server": []}
    try:
        for spec in (model, remote):  # warm up both (loading, the server's first pass)
            w = _side(client, spec, settings.with_(max_tokens=2))
            if w["error"]:
                where = "the local model" if spec is model else url
                raise LogitscopeError(f"{where}: {w['error']}")
        for i in range(rounds):
            order = (("local", model), ("server", remote))
            for side, spec in order if i % 2 == 0 else order[::-1]:
                r = _side(client, spec, settings)
                if r["error"]:
                    raise LogitscopeError(f"{side} run failed: {r['error']}")
                runs[side].append(r)
    finally:
        client.close()
    out = {"prompt_chars": len(VS_PROMPT), "max_tokens": tokens, "rounds": rounds, "url": url}
    for side, rs in runs.items():
        d = [r["done"] for r in rs]
        out[side] = {
            "model": rs[-1]["model"].name if rs[-1]["model"] else "",
            "device": rs[-1]["model"].device if rs[-1]["model"] else "",
            "prefill_tps": _median([x.prefill_tps for x in d]),
            "decode_tps": _median([x.decode_tps for x in d]),
            "ttft_s": _median([x.ttft_s for x in d]),
            "timings_from": d[-1].timings_from,
            "generated_tokens": d[-1].generated_tokens,
        }
    out["same_greedy_tokens"] = all(
        _agree(a["tokens"], b["tokens"]) for a, b in zip(runs["local"], runs["server"], strict=True)
    )
    return out


def _median(values):
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def format_vs(r: dict) -> str:
    """The comparison as text for people."""
    from engine.display.units import fmt_or_na

    lines = [f"{r['max_tokens']} greedy tokens x {r['rounds']} rounds, raw prompt, alternating"]
    for side in ("local", "server"):
        s = r[side]
        lines.append(
            f"  {side:6} {s['model'][:40]:40} prefill {fmt_or_na(s['prefill_tps'], '.1f', 'tok/s')}"
            f" · decode {fmt_or_na(s['decode_tps'], '.1f', 'tok/s')}"
            f" · TTFT {fmt_or_na(s['ttft_s'], '.2f', 's')} ({s['timings_from']})"
        )
    lines.append(f"  same greedy tokens: {r['same_greedy_tokens']}")
    return "\n".join(lines)
