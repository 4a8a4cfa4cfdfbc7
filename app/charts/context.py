"""Context window: tokens used by the system prompt, the prompt and the output
against the model's context length, with the KV cache's size."""

from __future__ import annotations

import pyqtgraph as pg

from app.charts.base import set_title, style_plot
from app.run_state import RunState
from app.theme import FREE, OUTPUT, PROMPT, SYSTEM


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class ContextChart(pg.PlotWidget):
    """Two bars: the whole window (to scale) and the used part, zoomed in."""

    def __init__(self, parent=None):
        super().__init__(parent)
        plot = self.getPlotItem()
        style_plot(plot, "Context window", bottom="tokens")
        plot.setMouseEnabled(x=False, y=False)
        self.bars = {
            name: pg.BarGraphItem(x0=[0], y=[0], height=0.6, width=[0], brush=color, pen=None)
            for name, color in (("free", FREE), ("system", SYSTEM), ("prompt", PROMPT),
                                ("output", OUTPUT))
        }  # fmt: skip
        for bar in self.bars.values():
            plot.addItem(bar)
        plot.getAxis("left").setTicks([[(0, "window"), (1, "used (zoomed)")]])
        plot.invertY(True)
        self.counts = {"system": 0, "prompt": 0, "output": 0, "context": 0, "kv_bytes": 0}

    def update_from(self, state: RunState) -> None:
        ctx = state.model.context_length if state.model else 0
        system = state.done.system_tokens if state.done else 0
        prompt = max(state.prompt_tokens - system, 0)
        output = state.done.generated_tokens if state.done else state.n
        kv = state.done.kv_cache_bytes if state.done else 0
        self.counts = {"system": system, "prompt": prompt, "output": output,
                       "context": ctx, "kv_bytes": kv}  # fmt: skip
        used = system + prompt + output
        segments = (("system", system), ("prompt", prompt), ("output", output))
        x = 0
        for name, count in segments:
            # Row 0 is the whole window to scale; row 1 the used part, scaled to fill.
            self.bars[name].setOpts(x0=[x, x * _zoom(ctx, used)], y=[0, 1],
                                    width=[count, count * _zoom(ctx, used)])  # fmt: skip
            x += count
        self.bars["free"].setOpts(x0=[used], y=[0], width=[max(ctx - used, 0)])
        zoom = f"used (×{_zoom(ctx, used):,.0f})" if used else "used"
        self.getPlotItem().getAxis("left").setTicks([[(0, "window"), (1, zoom)]])
        self.getPlotItem().setRange(xRange=(0, max(ctx, 1)), yRange=(-0.5, 1.5), padding=0.02)
        pct = 100 * used / ctx if ctx else 0
        kv_text = f" · KV cache {human_bytes(kv)}" if kv else ""
        set_title(
            self.getPlotItem(),
            "Context window",
            f"{used:,} of {ctx:,} tokens ({pct:.1f}%) · "
            f"<span style='color:{SYSTEM}'>■ system {system}</span> · "
            f"<span style='color:{PROMPT}'>■ prompt {prompt}</span> · "
            f"<span style='color:{OUTPUT}'>■ output {output}</span> · "
            f"<span style='color:#999'>■ free {max(ctx - used, 0):,}</span>{kv_text}",
        )


def _zoom(ctx: int, used: int) -> float:
    return ctx / used if used else 1.0
