"""The status line's text: TTFT, prefill and decode tok/s, tokens, peak memory, device.

Every figure comes from the one definition in `engine.run.series` / the DoneRecord;
a figure the engine did not report says so. A branch's speed counts only the tokens
it generated (engine/run/run_kind.py), never the prefix it inherited from its parent.
"""

from __future__ import annotations

from app.session.run_state import RunState
from engine.cost.run_cost import run_cost, short
from engine.display.units import fmt_mb, fmt_or_na
from engine.machine.hardware_timeline import cache_reuse, versus
from engine.run.run_kind import first_generated_step, generated
from engine.run.series import streaming_figures
from engine.sessions.run_outcome import finish_words


def status_text(state: RunState, model) -> str | None:
    """None when there is nothing to say yet (no model, no run)."""
    d = state.done
    device = model.device if model else "—"
    if state.reading:
        return read_text(state, device)
    if d is not None:
        reuse = f" ({cache_reuse(d)})" if d.cached_tokens else ""
        return (
            f"TTFT {fmt_or_na(d.ttft_s, '.2f', 's')}{reuse} · "
            f"prefill {fmt_or_na(d.prefill_tps, '.1f', 'tok/s')}{_flops(d, model)} · "
            f"decode {fmt_or_na(d.decode_tps, '.1f', 'tok/s')}{_bandwidth(d, model)} · "
            f"{d.generated_tokens} tokens{_new_tokens(state)}{_thinking(d)} · "
            f"peak {fmt_mb(d.peak_memory_bytes)} · {device} · "
            f"{finish_words(d.finish_reason)}{_energy(d)}"
        )
    if state.n:
        ttft, tps = streaming_figures(state.tokens, state.branch)
        first = "…" if ttft is None else f"{ttft:.2f} s"  # a branch's prefix came first
        return (
            f"TTFT {first} · decode {fmt_or_na(tps, '.1f', 'tok/s')} · "
            f"{state.output_steps} tokens{_new_tokens(state)} · {device} · generating…"
        )
    if model is not None:
        return f"Ready · {model.name} on {device}"
    return None


def _new_tokens(state: RunState) -> str:
    """' (12 new from step 4)' for a branch: the answer's tokens past its parent's
    prefix ('' for a run that is not a branch)."""
    if not state.branch:
        return ""
    new = sum(1 for t in generated(state.tokens, state.branch) if not t.eos)
    return f" ({new} new from step {first_generated_step(state.branch)})"


def _bandwidth(d, model) -> str:
    """Decode reads every weight once per token: achieved GB/s against the measured limit."""
    if not (d.decode_tps and model is not None and model.weight_bytes):
        return ""
    got = d.decode_tps * model.weight_bytes / 1e9
    return f" ({versus(got, model.memory_gbs, 'GB/s', '.1f')})"


def _flops(d, model) -> str:
    """Prefill does about 2 x parameters FLOPs per token: achieved against the limit."""
    if not (d.prefill_tps and model is not None and model.parameters):
        return ""
    got = d.prefill_tps * 2 * model.parameters / 1e9
    return f" ({versus(got, model.matmul_gflops, 'GFLOP/s')})"


def _thinking(d) -> str:
    n = getattr(d, "thinking_tokens", 0)
    return f" ({n} thinking)" if n else ""


def _energy(d) -> str:
    """'≈ 0.41 J/token (estimated from 10 W)' (engine/cost/run_cost.py); '' for a remote run."""
    part = short(run_cost(d, prices=[]))
    return f" · {part}" if part else ""


def read_text(state: RunState, device: str) -> str:
    """A read's line: tokens, perplexity, bits per byte, read speed (and its window)."""
    d = state.done
    summary = getattr(d, "reading", None) if d is not None else None
    if summary is None:
        done = "" if d is None else f" · {finish_words(d.finish_reason)}"
        return f"Reading… {state.n:,} tokens · {device}{done}"
    window = f" · sliding window of {summary.window:,} tokens" if summary.window else ""
    cut = "" if summary.complete else " · cancelled: the figures cover what was read"
    return (
        f"Read {summary.tokens:,} tokens · perplexity "
        f"{fmt_or_na(summary.perplexity, ',.2f', '').strip()} · "
        f"{fmt_or_na(summary.bits_per_byte, '.3f', 'bits/byte')} · "
        f"{fmt_or_na(summary.read_tps, ',.1f', 'tok/s')} · {device}{window}{cut}"
    )
