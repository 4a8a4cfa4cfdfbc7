"""Probability timeline: chosen-token probability (top) and entropy (bottom) per
step, with the selected step marked in both. For a text read through the model
(Mode: Read a text) the top plot is each token's surprisal in bits, titled with
the text's perplexity. Each plot's y ticks are spaced for its height (1-2-5 steps at
least 1.2 label heights apart), so a short chart's labels never overlap, and one label
at least is drawn in any font (a plot too short for two shows one)."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetricsF

from app.charts.base import (
    NOT_REPORTED,
    empty_text,
    pen,
    set_title,
    show_empty,
    style_plot,
    view_point,
)
from app.core.theme import CHOSEN, ENTROPY, RAW, chart_colors
from app.session.run_state import RunState
from engine.display.ticks import nice_step

PROB_TITLES = ("p(chosen)", "p")  # longest first: the first that fits the plot's height
SURPRISAL_TITLES = ("surprisal (bits)", "bits")
ENTROPY_TITLES = {
    "entropy (nats)": ("entropy (nats)", "H (nats)", "H"),
    "H top-k (nats)": ("H top-k (nats)", "H top-k", "H"),
}
AXIS_TITLE_GAP_PX = 8  # between the two stacked plots' titles
TICK_GAP = 1.2  # y tick labels at least this many label heights apart
MAX_Y_TICKS = 8  # a tall plot's y axis: about this many intervals at most
LABEL_BOX = 0.8  # pyqtgraph draws a tick label in a box this share of its line height


def _axis_title_font() -> QFont:
    font = QFont()
    font.setPointSize(8)
    return font


class TimelineChart(pg.GraphicsLayoutWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.prob_plot = self.addPlot(row=0, col=0)
        self.entropy_plot = self.addPlot(row=1, col=0)
        style_plot(self.prob_plot, "Probability timeline", left="p(chosen)")
        style_plot(self.entropy_plot, "", left="entropy (nats)", bottom="step")
        self.entropy_plot.setTitle(None)
        self.prob_plot.setYRange(0, 1.02, padding=0)
        self.entropy_plot.setXLink(self.prob_plot)
        for p in (self.prob_plot, self.entropy_plot):
            p.setClipToView(True)
            p.setDownsampling(auto=True, mode="peak")
            p.setMouseEnabled(y=False)
        self.prob_curve = self.prob_plot.plot(pen=pen(RAW, 1))  # no symbols: they cost paint time
        self.entropy_curve = self.entropy_plot.plot(
            pen=pen(ENTROPY, 1), fillLevel=0, brush=(114, 183, 178, 60)
        )
        self.lines = [pg.InfiniteLine(angle=90, pen=pen(CHOSEN, 1, Qt.DashLine)) for _ in range(2)]
        self.prob_plot.addItem(self.lines[0])
        self.entropy_plot.addItem(self.lines[1])
        self.empty = empty_text(self.prob_plot, "Run a prompt to see each step's probability")
        self.steps = None
        self.state = None
        self.entropy_label = "entropy (nats)"
        self.reading = False  # the top plot shows surprisal (a read) rather than p
        self.axis_titles: dict[str, str] = {}  # plot ("prob" | "entropy") -> title shown
        self.y_steps: dict[str, tuple] = {}  # plot -> (y tick step, the one label or None)
        for p in (self.prob_plot, self.entropy_plot):
            p.vb.sigResized.connect(self._fit_axis_titles)
            p.vb.sigResized.connect(self._fit_y_ticks)
        self.update_from(RunState())

    def update_from(self, state: RunState) -> None:
        import numpy as np

        n = state.n
        self.state = state
        show_empty(self.prob_plot, self.empty, n == 0, x=(0, 10), y=(0, 1.02))
        if n == 0:
            self.entropy_plot.setYRange(0, 1, padding=0)
        else:  # the empty state pinned the range: let entropy (nats, up to ~10) fit again
            known = state.entropy[:n][np.isfinite(state.entropy[:n])]
            top = float(known.max()) if known.size else 0.0
            self.entropy_plot.setYRange(0, max(top, 0.5) * 1.05, padding=0)
        self.steps = np.arange(n)
        reading = bool(getattr(state, "reading", False))
        if reading != self.reading:
            self.reading = reading
            self.axis_titles.pop("prob", None)
            self._fit_axis_titles()
        if reading:  # a read: each token's surprisal, -log2 p, and the text's perplexity
            with np.errstate(divide="ignore", invalid="ignore"):
                bits = -np.log2(state.prob[:n])
            self.prob_curve.setData(self.steps, bits, connect="finite")
            finite = bits[np.isfinite(bits)]
            top = max(float(finite.max()) if finite.size else 1.0, 1.0)
            self.prob_plot.setYRange(0, top * 1.05, padding=0)
            title, detail = self._read_title(state)
            set_title(self.prob_plot, title, detail)
        else:
            self.prob_curve.setData(self.steps, state.prob[:n], connect="finite")  # NaN: none
            self.prob_plot.setYRange(0, 1.02, padding=0)
            set_title(self.prob_plot, "Probability timeline", "&nbsp;")
        self.entropy_curve.setData(self.steps, state.entropy[:n], connect="finite")
        no_probs = n > 0 and not np.isfinite(state.prob[:n]).any()
        show_empty(
            self.prob_plot,
            self.empty,
            n == 0 or no_probs,
            x=(0, max(n, 10)),
            y=(0, 1.02),
            message=NOT_REPORTED.format(what="probabilities") if no_probs else None,
        )
        topk = state.remote and state.can("entropy_top_k") and not state.can("entropy")
        label = "H top-k (nats)" if topk else "entropy (nats)"
        if label != self.entropy_label:  # the entropy of a server's top-k only: say so
            self.entropy_label = label
            self._fit_axis_titles()
        self.prob_plot.setXRange(-0.5, max(n, 10) - 0.5, padding=0.01)
        step = state.current_step
        for line in self.lines:
            line.setVisible(step is not None)
            if step is not None:
                line.setValue(step)
        self._fit_y_ticks()  # the y ranges may have changed

    def _fit_y_ticks(self) -> None:
        """Each plot's y ticks a 1-2-5 step apart, as many as its height holds with
        TICK_GAP label heights between them, MAX_Y_TICKS intervals at most (pyqtgraph's
        own choice overlapped at 1024 x 700: 0.2, 0.4, 0.6, 0.8 in 45 px; a label that
        would cross the plot's edge is not drawn; where two would overlap, one alone:
        _labelled_step). Set only when the step changes."""
        for key, plot in (("prob", self.prob_plot), ("entropy", self.entropy_plot)):
            axis = plot.getAxis("left")
            low, high = plot.vb.viewRange()[1]
            height = plot.vb.height()
            if height <= 0 or not high > low:
                continue
            label_px = QFontMetricsF(axis.style["tickFont"] or QFont()).height()
            apart_px = max(label_px * TICK_GAP, height / MAX_Y_TICKS)
            closest = (high - low) * apart_px / height  # the least step that fits
            step, only = _labelled_step(nice_step(closest, 1), low, high, height, label_px)
            if self.y_steps.get(key) != (step, only):
                self.y_steps[key] = (step, only)
                if only is None:
                    axis.setTicks(None)
                    axis.setTickSpacing(levels=[(step, 0.0)])  # labels on this step only
                else:  # one label: its step's neighbours would overlap it
                    axis.setTickSpacing()
                    axis.setTicks([[(only, _tick_text(only, step))]])

    def _fit_axis_titles(self) -> None:
        """Each plot's left title as long as the plot is tall: in a short chart the two
        stacked titles would run into each other, so they shorten ("p", "H (nats)")."""
        metrics = QFontMetricsF(_axis_title_font())
        for key, plot, forms in (
            ("prob", self.prob_plot, SURPRISAL_TITLES if self.reading else PROB_TITLES),
            ("entropy", self.entropy_plot, ENTROPY_TITLES[self.entropy_label]),
        ):
            room = plot.getAxis("left").height() - AXIS_TITLE_GAP_PX
            fitting = [f for f in forms if metrics.horizontalAdvance(f) <= room]
            title = fitting[0] if fitting else forms[-1]
            if self.axis_titles.get(key) != title:
                self.axis_titles[key] = title
                # setLabel replaces the axis's label style: the theme's colour given again
                plot.setLabel("left", title, **{"font-size": "8pt", "color": chart_colors()[1]})

    @staticmethod
    def _read_title(state) -> tuple[str, str]:
        """('Surprisal per token', 'perplexity 12.41'): the running figure while reading."""
        d = state.done
        summary = getattr(d, "reading", None) if d is not None else None
        ppl = summary.perplexity if summary is not None else None
        if ppl is None and state.n:
            lps = [t.logprob for t in state.tokens[: state.n] if t.logprob is not None]
            ppl = math.exp(-sum(lps) / len(lps)) if lps else None
        return "Surprisal per token", (f"perplexity {ppl:,.2f}" if ppl else "&nbsp;")

    def readout(self, scene_pos) -> str | None:
        """The step under the cursor: its token, probability and entropy."""
        st = self.state
        for plot in (self.prob_plot, self.entropy_plot):
            p = view_point(plot, scene_pos)
            if p is not None and st is not None and st.n:
                k = int(round(p.x()))
                if 0 <= k < st.n:
                    t = st.tokens[k]
                    p_text = f"p={t.prob:.1%}" if t.prob is not None else "p not reported"
                    h = f"H={t.entropy:.2f} nats" if t.entropy is not None else "H not reported"
                    return f"step {k} {t.label!r}: {p_text} · {h}"
        return None


def _labelled_step(
    step: float, low: float, high: float, height: float, label_px: float
) -> tuple[float, float | None]:
    """(`step`, None), or the largest smaller 1-2-5 step whose labels are drawn a label's
    height apart, when `step` puts no tick far enough inside the plot for its label to be
    drawn (pyqtgraph leaves out a label that crosses the plot's edge: 0 to 5.15 nats in
    45 px at step 5 drew none). Where the first step with a label drawn would draw two
    closer than a label's height (Noto Sans in a 30 px plot), (that step, the one tick
    nearest the middle) instead: one label rather than none or two overlapping.

    Args:
        step: the preferred tick step.
        low, high: the y range shown.
        height: the plot's height in pixels.
        label_px: a tick label's line height in pixels (its font's QFontMetricsF.height()).
    """
    per_px = (high - low) / height
    half = LABEL_BOX * label_px / 2 + 0.01  # pyqtgraph's drawn label box, half of it
    candidate = step
    while candidate / per_px >= LABEL_BOX * label_px / 2:
        first = math.ceil((low + half * per_px) / candidate - 1e-9)
        last = math.floor((high - half * per_px) / candidate + 1e-9)
        drawn = [k * candidate for k in range(first, last + 1)]
        if len(drawn) == 1 or (drawn and candidate / per_px >= label_px):
            return candidate, None
        if drawn:  # two or more, too close together: the middle one only
            middle = (low + high) / 2
            return candidate, min(drawn, key=lambda v: abs(v - middle))
        candidate = nice_step(candidate / 2.5, 1)  # 5 -> 2 -> 1 -> 0.5 ...
    return step, None


def _tick_text(value: float, step: float) -> str:
    """`value` written as pyqtgraph writes its ticks `step` apart ("0.5", "2")."""
    places = max(0, math.ceil(-math.log10(step)))
    return f"{value:.{places}f}"
