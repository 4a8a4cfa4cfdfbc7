"""Context window: tokens used by the system part, earlier turns of the
conversation, the prompt, thinking and the output against the model's context
length; the prompt tokens reused from the KV cache outlined; the KV cache's size
after each turn. Each row has its own token axis: the whole window's on top, the
stretched used part's at the bottom (its ticks placed at token x stretch). The
selected step's token is marked in the used row ("step N: token position P of C"),
so the chart follows the step the person clicked, like every other chart."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

from app.charts.base import NOT_REPORTED, empty_text, set_title, show_empty, style_plot, view_point
from app.core.appearance import on_theme
from app.core.theme import (
    CHOSEN,
    EARLIER_ANSWER,
    EARLIER_USER,
    FREE,
    OUTPUT,
    PROMPT,
    SYSTEM,
    THINKING,
    chart_colors,
)
from app.session.run_state import RunState
from engine.display.ticks import nice_ticks
from engine.display.units import human_bytes

OVER = "#b00020"
WINDOW_AXIS = "whole window: tokens"
USED_AXIS = "used part: tokens"


class ContextChart(pg.PlotWidget):
    """Two bars: the whole window to scale, and the used part stretched to full width."""

    def __init__(self, parent=None):
        super().__init__(parent)
        plot = self.getPlotItem()
        style_plot(plot, "Context window", bottom=USED_AXIS)
        # The whole window's tokens, beside its row (row 0, on top); no axis label: the row's
        # own "whole window" label names it, and a chart ~120 px high has no line to spare.
        plot.showAxis("top")
        top = plot.getAxis("top")  # its colours follow the theme with the others (base.py)
        top.setTickFont(plot.getAxis("bottom").style["tickFont"])
        top.enableAutoSIPrefix(False)
        plot.setMouseEnabled(x=False, y=False)
        self.bars = {
            name: pg.BarGraphItem(x0=[0], y=[0], height=0.6, width=[0], brush=color, pen=None)
            for name, color in (
                ("free", FREE),
                ("system", SYSTEM),
                ("earlier_user", EARLIER_USER),
                ("earlier_answer", EARLIER_ANSWER),
                ("prompt", PROMPT),
                ("thinking", THINKING),
                ("output", OUTPUT),
                ("over", OVER),
            )
        }
        self.bars["cached"] = pg.BarGraphItem(
            x0=[0],
            y=[0],
            height=0.8,
            width=[0],
            brush=None,
        )
        self._paint_outline()
        on_theme(self, ContextChart._paint_outline)  # a dark outline vanishes on a dark chart
        for bar in self.bars.values():
            plot.addItem(bar)
        # The selected step's token in the used row: a short upright tick across row 1.
        self.step_mark = pg.PlotDataItem(pen=pg.mkPen(CHOSEN, width=2))
        plot.addItem(self.step_mark)
        self.step_mark.setVisible(False)
        plot.getAxis("left").setTicks([[(0, "whole window"), (1, "used part")]])
        plot.invertY(True)
        self.counts = {
            "system": 0,
            "earlier": 0,
            "prompt": 0,
            "thinking": 0,
            "output": 0,
            "context": 0,
            "kv_bytes": None,
            "over": 0,
            "cached": 0,
        }
        self.edges: list[tuple[str, int, int]] = []  # (part, first token, end) for readouts
        self.summary = ""
        self.empty = empty_text(plot, "Run a prompt to see how full the context is")
        self.zoom = 1.0
        self.used_ticks: list[tuple[float, str]] = []  # (x in the plot, used-row token)
        self.update_from(RunState())

    def _paint_outline(self) -> None:
        """The cached prompt's outline in the theme's axis colour (readable on its chart)."""
        self.bars["cached"].setOpts(pen=pg.mkPen(chart_colors()[1], width=1, style=Qt.DashLine))

    def update_from(self, state: RunState) -> None:
        ctx = (state.model.context_length or 0) if state.model else 0
        unknown = state.remote and (not ctx or not state.prompt_tokens)
        system = state.system_tokens
        edges = [("system", 0, system)]
        at = system
        for n, (a0, a1) in enumerate(state.earlier):  # earlier turns: message, then answer
            a0, a1 = max(a0, at), max(a1, a0, at)
            edges += [(f"turn {n + 1} message", at, a0), (f"turn {n + 1} answer", a0, a1)]
            at = a1
        earlier = at - system
        prompt = max(state.prompt_tokens - at, 0)
        thinking = sum(getattr(t, "thinking", False) for t in state.tokens)
        output = state.output_steps - thinking
        edges += [
            ("prompt", at, at + prompt),
            ("thinking", at + prompt, at + prompt + thinking),
            ("output", at + prompt + thinking, at + prompt + thinking + output),
        ]
        self.edges = [e for e in edges if e[2] > e[1]]
        record = state.done or state.prefill
        cached = getattr(record, "cached_tokens", 0) or 0
        kv = state.done.kv_cache_bytes if state.done else None
        used = at + prompt + thinking + output
        over = max(used - ctx, 0) if ctx else 0
        self.counts = {
            "system": system,
            "earlier": earlier,
            "prompt": prompt,
            "thinking": thinking,
            "output": output,
            "context": ctx,
            "kv_bytes": kv,
            "over": over,
            "cached": cached,
        }
        zoom = ctx / used if used and ctx else 1.0
        self.zoom = zoom
        # Row 1 is stretched: say so, and by how much, so the axis is not misread.
        stretched = f"used {used:,} (×{zoom:,.0f})" if zoom > 1.5 else "used part"
        self.getPlotItem().getAxis("left").setTicks([[(0, "whole window"), (1, stretched)]])
        self._used_axis(used, zoom)
        show_empty(
            self.getPlotItem(),
            self.empty,
            not used or unknown,
            x=(0, max(ctx, 1)),
            y=(-0.5, 1.5),
            message=NOT_REPORTED.format(
                what="the context window" if not ctx else "the prompt's length"
            )
            if unknown and used
            else None,
        )
        if unknown and used:
            self.step_mark.setVisible(False)
            for bar in self.bars.values():
                bar.setOpts(x0=[0], y=[0], width=[0])
            known = f"{ctx:,}-token window" if ctx else f"{used:,} tokens so far"
            set_title(self.getPlotItem(), "Context window", f"{known}; the rest not reported")
            return
        groups: dict[str, list] = {name: [] for name in self.bars}
        for part, a, b in edges:
            name = part.split()[-1] if part.startswith("turn") else part
            name = {"message": "earlier_user", "answer": "earlier_answer"}.get(name, name)
            groups[name].append((a, b - a))
        for name in ("system", "earlier_user", "earlier_answer", "prompt", "thinking", "output"):
            # Row 0 is the whole window to scale; row 1 the used part, stretched to fill.
            spans = groups[name] or [(0, 0)]
            x0 = [a for a, _ in spans] + [a * zoom for a, _ in spans]
            widths = [w for _, w in spans] + [w * zoom for _, w in spans]
            self.bars[name].setOpts(x0=x0, y=[0] * len(spans) + [1] * len(spans), width=widths)
        self.bars["cached"].setOpts(x0=[0], y=[1], width=[cached * zoom])
        self.bars["cached"].setVisible(cached > 0)  # a zero-width outline still draws a line
        self.bars["free"].setOpts(x0=[min(used, ctx)], y=[0], width=[max(ctx - used, 0)])
        self.bars["over"].setOpts(x0=[ctx], y=[0], width=[over])
        if used:
            self.getPlotItem().setRange(
                xRange=(0, max(ctx, used, 1)), yRange=(-0.5, 1.5), padding=0.02
            )
        if over:
            head = (
                f"<span style='color:{OVER}'>{used:,} tokens: {over:,} over the "
                f"{ctx:,}-token window</span>"
            )
        else:
            pct = 100 * used / ctx if ctx else 0
            head = f"{used:,} of {ctx:,} tokens ({pct:.1f}%)" if ctx else f"{used:,} tokens"
        growth = [*state.kv_growth, kv] if kv is not None else []
        kv_text = " · KV cache " + " → ".join(human_bytes(b) for b in growth[-4:]) if growth else ""
        parts = [
            ("system", SYSTEM, system),
            ("earlier turns", "#b8741f", earlier),
            ("prompt", PROMPT, prompt),
            ("thinking", THINKING, thinking),
            ("output", OUTPUT, output),
        ]
        legend = " ".join(
            f"<span style='color:{c}'>■ {n} {k:,}</span>"
            for n, c, k in parts
            if k or n in ("system", "prompt", "output")
        )
        reuse = f" ┅ from cache {cached:,}" if cached else ""
        free = f"<span style='color:#999'>■ free {max(ctx - used, 0):,}</span>"
        self.summary = f"{head}{kv_text} · {legend}{reuse} {free}"  # wraps when narrow
        self.summary += self._mark_step(state, at + prompt, zoom, ctx)
        set_title(self.getPlotItem(), "Context window", self.summary)

    def _mark_step(self, state: RunState, first: int, zoom: float, ctx: int) -> str:
        """Mark the selected step's token (position `first` + step) in the used row;
        ' · step N: token position P of C' for the title ('' when none is selected): on
        the summary's line, not one of its own (each title line costs the bars' room)."""
        step = state.selected if state.selected is not None and state.selected < state.n else None
        self.step_mark.setVisible(step is not None)
        if step is None:
            self.step_mark.setData([], [])
            return ""
        position = first + step
        x = (position + 0.5) * zoom  # the token's middle, where the stretched row draws it
        self.step_mark.setData([x, x], [0.55, 1.45])
        of = f" of {ctx:,}" if ctx else ""
        return f" · step {step}: token position {position:,}{of}"

    def _used_axis(self, used: int, zoom: float) -> None:
        """The bottom axis counts the used row's tokens: round token numbers, each drawn
        where the stretched row puts it (token x zoom), so it is never read against the
        whole window's scale."""
        axis = self.getPlotItem().getAxis("bottom")
        if not used:
            axis.setTicks(None)
            return
        ticks = [int(v) for v in nice_ticks(0, used) if float(v).is_integer()]
        self.used_ticks = [(v * zoom, f"{v:,}") for v in ticks]
        axis.setTicks([self.used_ticks, []])
        label = f"{USED_AXIS} (×{zoom:,.0f} stretched)" if zoom > 1.5 else USED_AXIS
        style = {"font-size": "8pt", "color": chart_colors()[1]}  # setLabel drops the theme's
        self.getPlotItem().setLabel("bottom", label, **style)

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
        cached = " · its keys and values reused from the cache" if pos < c["cached"] else ""
        for name, a, b in self.edges:
            if a <= pos < b:
                return f"token {int(pos):,}: {name} ({b - a:,} tokens){cached}"
        end = self.edges[-1][2] if self.edges else 0
        return f"token {int(pos):,}: free ({max(c['context'] - end, 0):,} tokens left)"
