"""Context window: tokens used by the system part, the prompt and the output
against the model's context length, with the KV cache's size."""

from __future__ import annotations

import pyqtgraph as pg

from app.charts.base import NOT_REPORTED, empty_text, set_title, show_empty, style_plot, view_point
from app.run_state import RunState
from app.theme import FREE, OUTPUT, PROMPT, SYSTEM
from engine.units import human_bytes

OVER = "#b00020"


class ContextChart(pg.PlotWidget):
    """Two bars: the whole window to scale, and the used part stretched to full width."""

    def __init__(self, parent=None):
        super().__init__(parent)
        plot = self.getPlotItem()
        style_plot(plot, "Context window", bottom="tokens")
        plot.setMouseEnabled(x=False, y=False)
        self.bars = {
            name: pg.BarGraphItem(x0=[0], y=[0], height=0.6, width=[0], brush=color, pen=None)
            for name, color in (("free", FREE), ("system", SYSTEM), ("prompt", PROMPT),
                                ("output", OUTPUT), ("over", OVER))
        }  # fmt: skip
        for bar in self.bars.values():
            plot.addItem(bar)
        plot.getAxis("left").setTicks([[(0, "whole window"), (1, "used part")]])
        plot.invertY(True)
        self.counts = {"system": 0, "prompt": 0, "output": 0, "context": 0, "kv_bytes": None,
                       "over": 0}  # fmt: skip
        self.summary = ""
        self.empty = empty_text(plot, "Run a prompt to see how full the context is")
        self.zoom = 1.0
        self.update_from(RunState())

    def update_from(self, state: RunState) -> None:
        ctx = (state.model.context_length or 0) if state.model else 0
        unknown = state.remote and (not ctx or not state.prompt_tokens)
        system = state.system_tokens
        prompt = max(state.prompt_tokens - system, 0)
        output = state.output_steps
        kv = state.done.kv_cache_bytes if state.done else None
        used = system + prompt + output
        over = max(used - ctx, 0) if ctx else 0
        self.counts = {"system": system, "prompt": prompt, "output": output,
                       "context": ctx, "kv_bytes": kv, "over": over}  # fmt: skip
        zoom = ctx / used if used and ctx else 1.0
        self.zoom = zoom
        # Row 1 is stretched: say so, and by how much, so the axis is not misread.
        stretched = f"used {used:,} (×{zoom:,.0f})" if zoom > 1.5 else "used part"
        self.getPlotItem().getAxis("left").setTicks([[(0, "whole window"), (1, stretched)]])
        show_empty(self.getPlotItem(), self.empty, not used or unknown, x=(0, max(ctx, 1)),
                   y=(-0.5, 1.5), message=NOT_REPORTED.format(
                       what="the context window" if not ctx else "the prompt's length")
                   if unknown and used else None)  # fmt: skip
        if unknown and used:
            for bar in self.bars.values():
                bar.setOpts(x0=[0], y=[0], width=[0])
            known = f"{ctx:,}-token window" if ctx else f"{used:,} tokens so far"
            set_title(self.getPlotItem(), "Context window", f"{known}; the rest not reported")
            return
        x = 0
        for name, count in (("system", system), ("prompt", prompt), ("output", output)):
            # Row 0 is the whole window to scale; row 1 the used part, stretched to fill.
            self.bars[name].setOpts(x0=[x, x * zoom], y=[0, 1], width=[count, count * zoom])
            x += count
        self.bars["free"].setOpts(x0=[min(used, ctx)], y=[0], width=[max(ctx - used, 0)])
        self.bars["over"].setOpts(x0=[ctx], y=[0], width=[over])
        if used:
            self.getPlotItem().setRange(xRange=(0, max(ctx, used, 1)), yRange=(-0.5, 1.5),
                                        padding=0.02)  # fmt: skip
        if over:
            head = (f"<span style='color:{OVER}'>{used:,} tokens: {over:,} over the "
                    f"{ctx:,}-token window</span>")  # fmt: skip
        else:
            pct = 100 * used / ctx if ctx else 0
            head = f"{used:,} of {ctx:,} tokens ({pct:.1f}%)" if ctx else f"{used:,} tokens"
        kv_text = f" · KV cache {human_bytes(kv)}" if kv is not None else ""
        self.summary = (
            f"{head}{kv_text}<br><span style='color:{SYSTEM}'>■ system {system:,}</span> "
            f"<span style='color:{PROMPT}'>■ prompt {prompt:,}</span> "
            f"<span style='color:{OUTPUT}'>■ output {output:,}</span> "
            f"<span style='color:#999'>■ free {max(ctx - used, 0):,}</span>"
        )
        set_title(self.getPlotItem(), "Context window", self.summary)

    def readout(self, scene_pos) -> str | None:
        """Which part of the context the token position under the cursor belongs to."""
        p = view_point(self.getPlotItem(), scene_pos)
        c = self.counts
        if p is None or not c["context"]:
            return None
        row = int(round(p.y()))
        pos = p.x() / (self.zoom if row == 1 else 1.0)
        if row not in (0, 1) or pos < 0:
            return None
        edges = (("system", c["system"]), ("prompt", c["prompt"]), ("output", c["output"]))
        start = 0
        for name, count in edges:
            if pos < start + count:
                return f"token {int(pos):,}: {name} ({count:,} tokens)"
            start += count
        return f"token {int(pos):,}: free ({max(c['context'] - start, 0):,} tokens left)"
