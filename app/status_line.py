"""The status line's text: TTFT, prefill and decode tok/s, tokens, peak memory, device.

Every figure comes from the one definition in `engine.series` / the DoneRecord;
a figure the engine did not report says so.
"""

from __future__ import annotations

from app.run_state import RunState
from engine.series import decode_rate
from engine.units import fmt_mb, fmt_or_na


def status_text(state: RunState, model) -> str | None:
    """None when there is nothing to say yet (no model, no run)."""
    d = state.done
    device = model.device if model else "—"
    if d is not None:
        return (
            f"TTFT {fmt_or_na(d.ttft_s, '.2f', 's')} · "
            f"prefill {fmt_or_na(d.prefill_tps, '.1f', 'tok/s')} · "
            f"decode {fmt_or_na(d.decode_tps, '.1f', 'tok/s')} · {d.generated_tokens} tokens · "
            f"peak {fmt_mb(d.peak_memory_bytes)} · {device} · {d.finish_reason}"
        )
    if state.n:
        ttft = state.tokens[0].elapsed_s
        tps = decode_rate(state.elapsed[: state.n])
        return (f"TTFT {ttft:.2f} s · decode {fmt_or_na(tps, '.1f', 'tok/s')} · "
                f"{state.n} tokens · {device} · generating…")  # fmt: skip
    if model is not None:
        return f"Ready · {model.name} on {device}"
    return None
