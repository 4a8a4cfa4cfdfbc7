"""Next-token distribution at the current/selected step: top-k candidates as
horizontal bars, the model's raw distribution (T=1) beside the one sampled from.

Every row drawn is named on the left axis: a chart too short for all the candidates
(1024 x 700 gives ~100 px) draws the most likely ones that have a label's height each,
the chosen token last if it is not among them, and its x-axis title says how many
("probability · 7 of 11 candidates (enlarge for all)")."""

from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetricsF

from app.charts.base import (
    NOT_REPORTED,
    empty_text,
    set_title,
    short,
    show_empty,
    style_plot,
    view_point,
)
from app.core.theme import CHOSEN, RAW, SAMPLED, chart_colors
from engine.display.units import fmt_prob
from engine.run.records import TokenRecord, TopToken

BAR = 0.38
MIN_ROWS = 3  # the fewest candidates drawn, however short the chart (their labels thin out)
AXIS_TITLE = "probability"
AXIS_TITLE_SIZE = 8  # pt, as style_plot gives it
TITLE_MARGIN_PX = 8  # the axis title's text document margins, both sides
_LEGEND = (
    f"<span style='color:{RAW}'>■ raw (T=1)</span> "
    f"<span style='color:{SAMPLED}'>■ sampled from</span> "
    f"<span style='color:{CHOSEN}'>▶ chosen</span>"
)
_READ_LEGEND = (  # a text read through the model: its own token, nothing sampled
    f"<span style='color:{RAW}'>■ the model's distribution</span> "
    f"<span style='color:{CHOSEN}'>▶ the text's token</span>"
)


class DistributionChart(pg.PlotWidget):
    def __init__(self, parent=None, max_bars: int = 10):
        super().__init__(parent)
        self.max_bars = max_bars
        plot = self.getPlotItem()
        style_plot(plot, "Next-token distribution", bottom="probability")
        plot.invertY(True)
        plot.setMouseEnabled(x=False, y=False)
        self.raw_bars = pg.BarGraphItem(x0=[], y=[], height=BAR, width=[], brush=RAW, pen=None)
        self.sampled_bars = pg.BarGraphItem(
            x0=[], y=[], height=BAR, width=[], brush=SAMPLED, pen=None
        )
        self.chosen_mark = pg.ScatterPlotItem(symbol="t2", size=11, brush=CHOSEN, pen=None)
        for item in (self.raw_bars, self.sampled_bars, self.chosen_mark):
            plot.addItem(item)
        # The legend lives in the title line, so it never covers a bar.
        self.empty = empty_text(plot, "Run a prompt to see the candidates")
        self.labels: list[str] = []
        self.total = 0  # candidates the step has; fewer are drawn in a short chart
        self.axis_title = AXIS_TITLE
        self.ticks: list[tuple[int, str]] | None = None  # the labels on the axis now
        self.texts: list[str] = []
        self.raw_probs = np.zeros(0)
        self.sampled_probs = np.zeros(0)
        self.token_ids: list[int] = []
        self.record: TokenRecord | None = None
        self.branches = None  # BranchRequests: a click on a bar offers to continue with it
        self.why_no_branch = lambda: None
        self.scene().sigMouseClicked.connect(self._clicked)
        plot.vb.sigResized.connect(self._resized)
        self.show_record(None)

    def offer_branches(self, requests, why_not) -> None:
        """Offer branch actions in the menu: `requests` (BranchRequests) receives them,
        `why_not()` says why branching cannot run now (None: it can)."""
        self.branches, self.why_no_branch = requests, why_not

    def show_record(self, record: TokenRecord | None) -> None:
        plot = self.getPlotItem()
        self.record = record
        self.total = 0
        if record is None:
            self._set([], [], [], [])
            set_title(plot, "Next-token distribution", _LEGEND)
            show_empty(plot, self.empty, True)
            return
        # Raw candidates where known; else (llama.cpp while sampling) the sampled-from ones.
        cands = list((record.top or record.sampled_top)[: self.max_bars])
        if not cands and record.logprob is None and record.sampled_logprob is None:
            self._set([], [], [], [])
            set_title(plot, "Next-token distribution", f"step {record.step}")
            show_empty(plot, self.empty, True, message=NOT_REPORTED.format(what="probabilities"))
            return
        show_empty(plot, self.empty, False)
        raw_known = bool(record.top) or record.logprob is not None
        if record.token_id not in {c.token_id for c in cands}:
            lp = record.logprob if raw_known else record.sampled_logprob
            cands.append(TopToken(record.token_id, record.label, lp))
        ids = [c.token_id for c in cands]
        raw = [math.exp(c.logprob) if raw_known else math.nan for c in cands]
        # The record's own sampled-from values; NaN (no bar, marked "?") where unknown.
        samp = [None if record.read else record.sampled_prob_of(i) for i in ids]  # read: none
        samp = [math.nan if p is None else p for p in samp]
        chosen = ids.index(record.token_id)
        rows = self.rows_shown(len(ids), chosen)  # as many as have room for their name
        self.total = len(ids)
        texts = [c.text for c in cands]
        self._set(*([v[i] for i in rows] for v in (ids, texts, raw, samp)))
        x = max(
            0.0 if math.isnan(raw[chosen]) else raw[chosen],
            0.0 if math.isnan(samp[chosen]) else samp[chosen],
        )
        self.chosen_mark.setData([x + 0.02], [rows.index(chosen)])
        unknown = sum(math.isnan(p) for p in samp)
        legend, note = _LEGEND, ""
        if not raw_known:  # a server that reports only what the token was drawn from
            legend = _LEGEND.replace("■ raw (T=1)", "raw: not reported")
        elif record.read:  # a text read through the model: nothing was sampled
            legend = _READ_LEGEND
        elif unknown == len(samp):  # a server that reports only the raw distribution
            legend = _LEGEND.replace("■ sampled from", "sampled-from: not reported")
        elif unknown:
            note = f" · {unknown} sampled n/a"
        p_text = f"p={fmt_prob(record.prob)}" if record.prob is not None else "raw p n/a"
        set_title(
            plot,
            "Next-token distribution",
            f"step {record.step} · {'read' if record.read else 'chose'} "
            f"{html.escape(repr(short(record.label)))} ({p_text}{_rank(record)}){note}<br>{legend}",
        )

    def rows_shown(self, n: int, chosen: int) -> list[int]:
        """Which of `n` candidates (most likely first) to draw: all where the plot gives
        each a label's height, else as many of the most likely as fit (MIN_ROWS at
        least), the `chosen` one last in place of the least likely."""
        fit = max(MIN_ROWS, self.rows_that_fit())
        if n <= fit:
            return list(range(n))
        top = list(range(fit))
        return top if chosen in top else [*top[:-1], chosen]

    def rows_that_fit(self) -> int:
        """How many rows the plot's height holds at a label's height each (the y range
        spans the rows plus 0.4 of a row); every candidate before the first layout."""
        height = self.getPlotItem().vb.height()
        if height <= 0:
            return self.max_bars + 1
        return int(height / self._label_px() - 0.4)

    def _label_px(self) -> float:
        font = self.getPlotItem().getAxis("left").style["tickFont"] or QFont()
        return QFontMetricsF(font).height()

    def shown_labels(self) -> list[int]:
        """The rows whose token is named on the axis: every row where a label's height
        fits the row (rows_shown sees to it), else every k-th row and the chosen one
        (labels never overlap) in a chart too short even for MIN_ROWS."""
        n = len(self.labels)
        rows_px = self.getPlotItem().vb.height() / (n + 0.4) if n else 0.0
        label_px = self._label_px()
        k = 1 if rows_px <= 0 else max(1, math.ceil(label_px / rows_px))
        shown = set(range(0, n, k))
        chosen = self.token_ids.index(self.record.token_id) if self._has_chosen() else None
        if chosen is not None and chosen not in shown:
            shown = {i for i in shown if abs(i - chosen) >= k} | {chosen}
        return sorted(shown)

    def _has_chosen(self) -> bool:
        return self.record is not None and self.record.token_id in self.token_ids

    def _resized(self) -> None:
        """A new size: the record drawn again when another number of rows fits, then
        the rows' labels and the axis title fitted."""
        wanted = min(self.total, max(MIN_ROWS, self.rows_that_fit()))
        if self.record is not None and self.total and wanted != len(self.token_ids):
            self.show_record(self.record)
            return
        self._fit_ticks()
        self._fit_axis_title()

    def _fit_axis_title(self) -> None:
        """'probability', or with how many of the step's candidates are drawn when not
        all are: the longest form that fits the axis's width (set only when it changes:
        text layout is costly)."""
        shown, total = len(self.token_ids), self.total
        forms = [AXIS_TITLE]
        if shown < total:
            forms = [
                f"{AXIS_TITLE} · {shown} of {total} candidates (enlarge for all)",
                f"{AXIS_TITLE} · {shown} of {total} candidates",
                f"{shown} of {total} candidates",
            ]
        font = QFont()
        font.setPointSize(AXIS_TITLE_SIZE)
        metrics = QFontMetricsF(font)
        axis = self.getPlotItem().getAxis("bottom")
        room = axis.width() - TITLE_MARGIN_PX
        title = next((f for f in forms if metrics.horizontalAdvance(f) <= room), forms[-1])
        if title != self.axis_title:
            self.axis_title = title
            style = {"font-size": f"{AXIS_TITLE_SIZE}pt", "color": chart_colors()[1]}
            self.getPlotItem().setLabel("bottom", title, **style)
            axis.resizeEvent()  # pyqtgraph centres an axis title only when the axis resizes

    def _fit_ticks(self) -> None:
        axis = self.getPlotItem().getAxis("left")
        ticks = [(i, self.labels[i]) for i in self.shown_labels()]
        if ticks != self.ticks:  # text layout is costly
            self.ticks = ticks
            axis.setTicks([ticks])

    def readout(self, scene_pos) -> str | None:
        """The candidate under the cursor: its raw and sampled-from probabilities."""
        i = self.bar_at(scene_pos)
        if i is None:
            return None
        samp, raw = self.sampled_probs[i], self.raw_probs[i]
        shown = "not recorded" if math.isnan(samp) else fmt_prob(samp)
        raw_shown = "not reported" if math.isnan(raw) else fmt_prob(raw)
        tid = self.token_ids[i]
        ident = f"id {tid}" if tid >= 0 else "no id from the server"
        return f"{self.texts[i]!r} ({ident}): raw {raw_shown} · sampled from {shown}"

    def bar_at(self, scene_pos) -> int | None:
        """The index of the candidate bar row under `scene_pos` (None: none)."""
        p = view_point(self.getPlotItem(), scene_pos)
        if p is None or not self.token_ids:
            return None
        i = int(round(p.y()))
        return i if 0 <= i < len(self.token_ids) else None

    def _clicked(self, event) -> None:
        """A click on a candidate's bar: a menu to continue the answer with it."""
        from app.widgets.branch_menu import offers_branches

        i = self.bar_at(event.scenePos())
        if self.branches is None or self.record is None or i is None:
            return
        if not offers_branches(self.record):  # a token of a text read: nothing to branch
            return
        self.branch_menu(i).popup(event.screenPos().toPoint())
        event.accept()

    def branch_menu(self, i: int):
        """The menu for candidate `i` of the step shown: continue with it, or sample."""
        from PySide6.QtWidgets import QMenu

        from app.widgets.branch_menu import add_sample_menu

        step, tid, text = self.record.step, self.token_ids[i], self.texts[i]
        reason = self.why_no_branch()
        menu = QMenu(self)
        menu.setToolTipsVisible(True)
        if tid != self.record.token_id and tid >= 0:
            act = menu.addAction(f"Continue with {text!r} from step {step}")
            act.triggered.connect(lambda: self.branches.branch.emit(step, tid))
        else:
            act = menu.addAction(f"{text!r} is the token chosen at step {step}")
            act.setEnabled(False)
        add_sample_menu(menu, step, self.branches.sample.emit)
        if reason is not None:
            for a in menu.actions():
                a.setEnabled(False)  # a submenu's action disables the submenu
            menu.addAction(reason).setEnabled(False)
        return menu

    def _set(self, ids, texts, raw, samp) -> None:
        n = len(ids)
        y = np.arange(n, dtype=float)
        self.token_ids = list(ids)
        self.raw_probs, self.sampled_probs = np.asarray(raw), np.asarray(samp)
        self.labels = [short(t) for t in texts]
        self.texts = list(texts)
        self.raw_bars.setOpts(
            x0=np.zeros(n), y=y - BAR / 2, width=np.nan_to_num(self.raw_probs, nan=0.0)
        )
        self.sampled_bars.setOpts(
            x0=np.zeros(n), y=y + BAR / 2, width=np.nan_to_num(self.sampled_probs, nan=0.0)
        )
        if n == 0:
            self.chosen_mark.setData([], [])
        self._fit_ticks()
        self._fit_axis_title()
        top = max([*[p for p in [*raw, *samp] if not math.isnan(p)], 0.05])
        self.getPlotItem().setRange(  # room for the chosen marker even at p = 1
            xRange=(0, top * 1.08 + 0.06), yRange=(-0.7, max(n, 1) - 0.3), padding=0
        )


def _rank(record: TokenRecord) -> str:
    """', rank 3' when the record says where its token ranked under the model."""
    return f", rank {record.rank:,}" if getattr(record, "rank", None) else ""
