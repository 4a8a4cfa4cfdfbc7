"""The status line's text: TTFT, prefill and decode tok/s, tokens, peak memory, device."""

from __future__ import annotations

from app.run_state import RunState


def status_text(state: RunState, model) -> str | None:
    """None when there is nothing to say yet (no model, no run)."""
    d = state.done
    device = model.device if model else "—"
    if d is not None:
        return (
            f"TTFT {d.ttft_s:.2f} s · prefill {d.prefill_tps:.1f} tok/s · "
            f"decode {d.decode_tps:.1f} tok/s · {d.generated_tokens} tokens · "
            f"peak {d.peak_memory_bytes / 1e6:.0f} MB · {device} · {d.finish_reason}"
        )
    if state.n:
        ttft = state.tokens[0].elapsed_s
        span = state.tokens[-1].elapsed_s - ttft
        tps = (state.n - 1) / span if state.n > 1 and span > 0 else 0.0
        return (f"TTFT {ttft:.2f} s · decode {tps:.1f} tok/s · {state.n} tokens · "
                f"{device} · generating…")  # fmt: skip
    if model is not None:
        return f"Ready · {model.name} on {device}"
    return None
