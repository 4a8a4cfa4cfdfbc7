"""Compare's summary table (one column per lane) and its overlay of the lanes'
probability timelines, drawn from the lanes' runs. A reading lane's column counts
the tokens it read, and gives its text's perplexity and bits per byte."""

from __future__ import annotations

from PySide6.QtWidgets import QTableWidgetItem

from app.charts.base import pen, set_title

SUMMARY_ROWS = (
    ("prompt tokens", "prompt_tokens", "{:d}"),
    ("generated tokens", "generated_tokens", "{:d}"),
    ("TTFT (s)", "ttft_s", "{:.3f}"),
    ("prefill tok/s", "prefill_tps", "{:.1f}"),
    ("decode tok/s", "decode_tps", "{:.1f}"),
    ("mean p(chosen)", "mean_prob", "{:.3f}"),
    ("perplexity", "perplexity", "{:.2f}"),
    ("bits per byte (reads)", "bits_per_byte", "{:.3f}"),
    ("mean entropy (nats)", "mean_entropy", "{:.3f}"),
    ("finish", "finish_reason", "{}"),
)


def fill_summary(table, lanes, summaries) -> None:
    """One column per lane: each SUMMARY_ROWS figure of its run ("—" before it ran,
    "not reported" where the backend gave none)."""
    for col, (lane, s) in enumerate(zip(lanes, summaries, strict=True)):
        reading = getattr(lane.state.done, "reading", None)  # a read's ReadSummary
        for row, (_label, attr, fmt) in enumerate(SUMMARY_ROWS):
            value = getattr(reading if attr == "bits_per_byte" else s, attr, None)
            if lane.state.error is not None and attr == "finish_reason":
                value = "error"
            if attr == "bits_per_byte" and not lane.state.reading:
                text = "not a read"
            elif value is None:
                text = "not reported" if lane.state.done else "—"
            else:
                text = fmt.format(value) if lane.state.n or attr == "finish_reason" else "—"
                if s.forced and attr in ("mean_prob", "perplexity"):
                    text += f" (excl. {s.forced} chosen)"  # the model's own choices
            table.setItem(row, col, QTableWidgetItem(text))


def draw_overlay(plot, lanes) -> None:
    """Every lane's chosen-token probability per step, in its lane colour."""
    plot.clear()
    names = []
    for lane in lanes:
        n = lane.state.n
        if n:
            plot.plot(range(n), lane.state.prob[:n], pen=pen(lane.color, 1.5), connect="finite")
            names.append(f"<span style='color:{lane.color}'>■ Lane {chr(65 + lane.index)}</span>")
    set_title(plot, "Probability timelines", " ".join(names) or "no run yet")
