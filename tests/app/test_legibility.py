"""Nothing on screen is cut, overlapped or unreadable at any window size or theme
(issue 37, walkthrough points 17, 18, 22, 23): hidden charts stay hidden under tabs,
labels thin or shorten where room is short, lines of figures drop details rather than
cut words, legends follow the theme, and names take the room they are given.
Qt only: every widget is fed records built here, no model runs."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QFontMetricsF, QImage, QPainter
from PySide6.QtWidgets import QLabel, QPushButton, QStatusBar, QWidget

from app.charts import temperature
from app.charts.base import short
from app.charts.distribution import DistributionChart
from app.charts.panel import ChartsPanel
from app.charts.temperature import TemperatureChart
from app.charts.timeline import TimelineChart
from app.session.run_state import RunState
from app.widgets.fitting_label import FittingLabel, shorter_forms
from engine.run.records import SWEEP_TEMPERATURES, TokenRecord, TopToken
from tests.app.test_chart_room import long_named_record

STATUS = (
    "TTFT 0.60 s (17 of 38 from cache) · prefill 68.0 tok/s (14 of 134 GFLOP/s) · "
    "decode 7.0 tok/s (3.6 of 13.7 GB/s) · 12 tokens · peak 553.1 MB · CPU · "
    "stopped at max tokens · ≈ 1.8 J/token (estimated from 10 W)"
)


def _record(names, probs, step=3, chosen=0) -> TokenRecord:
    lps = np.log(np.asarray(probs, dtype=float))
    top = tuple(TopToken(i, n, float(lp)) for i, (n, lp) in enumerate(zip(names, lps, strict=True)))
    z = lps[None, :5] / np.array(SWEEP_TEMPERATURES)[:, None]  # (T, 5)
    logz = np.logaddexp.reduce(z, axis=1)
    p = np.exp(z - logz[:, None])
    h = -(p * np.log(p)).sum(axis=1)
    return TokenRecord(
        step=step,
        token_id=chosen,
        text=names[chosen],
        logprob=float(lps[chosen]),
        prob=float(probs[chosen]),
        sampled_logprob=None,
        top=top,
        sampled_top=(),
        entropy=float(h[9]),
        sampled_entropy=None,
        elapsed_s=0.1 * (step + 1),
        latency_s=0.01,
        context_tokens=9 + step,
        sweep_logz=tuple(logz),
        sweep_entropy=tuple(h),
    )


def _settle(qtbot, widget, size) -> None:
    widget.resize(*size)
    widget.show()
    qtbot.waitExposed(widget)
    qtbot.wait(30)


# -- 17: tabs ---------------------------------------------------------------------------
def test_charts_under_tabs_show_only_the_current_one(qtbot):
    """A hidden chart painted under the current tab showed pieces of itself through it."""
    panel = ChartsPanel()
    qtbot.addWidget(panel)
    _settle(qtbot, panel, (1100, 700))
    assert panel.columns == 2
    panel.resize(480, 700)  # narrow: the charts become tabs
    qtbot.waitUntil(lambda: panel.columns == 0, timeout=2000)
    qtbot.wait(30)
    shown = [name for name, frame in panel.frames.items() if frame.isVisible()]
    assert shown == ["dist"]
    panel.tabs.setCurrentWidget(panel.frames["throughput"])
    qtbot.wait(10)
    shown = [name for name, frame in panel.frames.items() if frame.isVisible()]
    assert shown == ["throughput"]
    panel.resize(1100, 700)  # and back to the grid: all five again
    qtbot.waitUntil(lambda: panel.columns == 2, timeout=2000)
    assert all(frame.isVisible() for frame in panel.frames.values())


# -- 18: 1024 x 700 -----------------------------------------------------------------------
def _timeline_state(n: int = 12) -> RunState:
    state = RunState()
    state.add_tokens(
        [
            _record([" a", " b", " c", " d", " e"], [0.5, 0.2, 0.1, 0.1, 0.1], step=k)
            for k in range(n)
        ]
    )
    return state


@pytest.mark.parametrize(
    ("height", "titles"),
    [(190, ("p", "H")), (700, ("p(chosen)", "entropy (nats)"))],
)
def test_timeline_axis_titles_never_run_into_each_other(qtbot, height, titles):
    chart = TimelineChart()
    qtbot.addWidget(chart)
    _settle(qtbot, chart, (300, height))
    chart.update_from(_timeline_state())
    qtbot.wait(30)
    prob_axis, entropy_axis = (p.getAxis("left") for p in (chart.prob_plot, chart.entropy_plot))
    assert (prob_axis.labelText, entropy_axis.labelText) == titles
    font = QFontMetricsF(chart.prob_plot.getAxis("left").label.font())
    for axis in (prob_axis, entropy_axis):  # each rotated title within its own plot's height
        assert font.horizontalAdvance(axis.labelText) <= axis.height()


def _drawn_labels(axis) -> list[tuple[QRectF, str]]:
    """The tick labels pyqtgraph draws on `axis` now: (rect, text), as its paint makes them."""
    image = QImage(10, 10, QImage.Format_ARGB32)
    painter = QPainter(image)
    painter.setFont(axis.style["tickFont"])
    try:
        _axis_spec, _ticks, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(rect, text) for rect, _flags, text in texts]


def _overlapping(labels) -> list[tuple[str, str]]:
    return [
        (a, b) for i, (ra, a) in enumerate(labels) for rb, b in labels[i + 1 :] if ra.intersects(rb)
    ]


NAMES = [" where", " below", " of", " that", " o", "\n", ":", " I", " a", " the"]
PROBS = [0.3, 0.2, 0.1, 0.1, 0.07, 0.07, 0.05, 0.04, 0.04, 0.03]


def test_a_short_distribution_names_every_row_it_draws_and_says_how_many(qtbot):
    """1024 x 700 gives the chart ~100 px: it draws the candidates that have a label's
    height each (the chosen one, least likely, last) and names every one of them."""
    chart = DistributionChart()
    qtbot.addWidget(chart)
    _settle(qtbot, chart, (300, 190))  # the chart in a 1024 x 700 window
    chart.show_record(_record(NAMES, PROBS, chosen=9))
    qtbot.wait(30)
    axis = chart.getPlotItem().getAxis("left")
    drawn = _drawn_labels(axis)
    shown = len(chart.token_ids)
    assert 3 <= shown < len(NAMES)
    assert chart.token_ids == [*range(shown - 1), 9]  # the most likely, then the chosen one
    assert [text for _rect, text in drawn] == [short(NAMES[i]) for i in chart.token_ids]
    assert _overlapping(drawn) == []
    row_px = chart.getPlotItem().vb.height() / (shown + 0.4)
    label_px = QFontMetricsF(axis.style["tickFont"]).height()
    assert row_px >= label_px  # one more row would not have had a label's height
    assert chart.getPlotItem().vb.height() / (shown + 1.4) < label_px
    bottom = chart.getPlotItem().getAxis("bottom")
    assert bottom.labelText.startswith(f"probability · {shown} of 10 candidates")
    placed = bottom.label.mapRectToScene(bottom.label.boundingRect())  # centred, not cut
    middle = bottom.mapToScene(QPointF(bottom.size().width() / 2, 0)).x()
    assert abs(placed.center().x() - middle) <= 1, (placed, middle)
    assert placed.left() >= 0 and placed.right() <= chart.width(), placed
    chart.resize(300, 600)  # room for every candidate again
    qtbot.wait(30)
    assert chart.token_ids == list(range(len(NAMES)))
    assert [text for _rect, text in _drawn_labels(axis)] == [short(n) for n in NAMES]
    assert chart.getPlotItem().getAxis("bottom").labelText == "probability"


def test_the_distribution_in_the_1024_window_names_every_candidate_it_draws(qtbot):
    """As many candidates as the plot's height holds at the tick font's line height
    (6 in DejaVu Sans, 4 in the taller Noto Sans), more than a squeezed chart's MIN_ROWS,
    and every one named, no two names overlapping."""
    from app.charts.distribution import MIN_ROWS

    panel = ChartsPanel()
    qtbot.addWidget(panel)
    _settle(qtbot, panel, (545, 600))  # the charts' column in a 1024 x 700 window
    chart = panel.dist
    chart.show_record(_record(NAMES, PROBS, chosen=0))
    qtbot.wait(30)
    axis = chart.getPlotItem().getAxis("left")
    drawn = _drawn_labels(axis)
    shown = len(chart.token_ids)
    assert [text for _rect, text in drawn] == [short(NAMES[i]) for i in chart.token_ids]
    assert _overlapping(drawn) == []
    assert MIN_ROWS < shown < len(NAMES)
    label_px = QFontMetricsF(axis.style["tickFont"]).height()
    height = chart.getPlotItem().vb.height()
    assert height / (shown + 0.4) >= label_px  # each drawn row a label's height
    assert height / (shown + 1.4) < label_px  # one more would not have had it


@pytest.mark.parametrize(
    ("height", "entropy_top", "prob_labels", "entropy_labels"),
    [  # the chart in a 1024 x 700 window (~35 px a plot), then a tall one
        (190, None, ["0.5"], ["1"]),
        # step 5 would put its one tick on the edge; 2 and 4 where they are a label apart
        (190, 4.9, ["0.5"], "2, 4 if a label apart"),
        (700, None, ["0.2", "0.4", "0.6", "0.8"], [f"{k / 5:.1f}" for k in range(1, 8)]),
    ],
)
def test_timeline_y_labels_never_overlap(qtbot, height, entropy_top, prob_labels, entropy_labels):
    """pyqtgraph put 0.2, 0.4, 0.6 and 0.8 into 45 px; the steps now follow the height
    (labels that would cross a plot's edge, like 0 and 1, pyqtgraph leaves out). A short
    plot always names one value at least, whatever the font: where two labels a step
    apart would overlap (Noto Sans is taller than DejaVu Sans), one of them only."""
    chart = TimelineChart()
    qtbot.addWidget(chart)
    _settle(qtbot, chart, (300, height))
    state = _timeline_state()  # entropy 0 to 1.43 nats
    if entropy_top is not None:  # entropy rising to `entropy_top` nats
        state = RunState()
        rows = _timeline_state().tokens
        state.add_tokens([replace(t, entropy=entropy_top * k / 11) for k, t in enumerate(rows)])
    chart.update_from(state)
    qtbot.wait(30)
    if isinstance(entropy_labels, str):  # from the tick font's own height, 2 nats in px
        axis = chart.entropy_plot.getAxis("left")
        low, high = chart.entropy_plot.vb.viewRange()[1]
        apart_px = 2 * chart.entropy_plot.vb.height() / (high - low)
        label_px = QFontMetricsF(axis.style["tickFont"]).height()
        entropy_labels = ["2", "4"] if apart_px >= label_px else ["2"]
    for plot, expected in ((chart.prob_plot, prob_labels), (chart.entropy_plot, entropy_labels)):
        drawn = _drawn_labels(plot.getAxis("left"))
        assert [text for _rect, text in drawn] == expected
        assert _overlapping(drawn) == []


def test_shorter_forms_drop_details_then_parts():
    forms = shorter_forms("a (x) · b · c (y)")
    assert forms == ["a (x) · b · c (y)", "a · b · c", "a · b", "a"]


def test_the_status_line_drops_details_rather_than_cut_words(qtbot):
    bar = QStatusBar()
    qtbot.addWidget(bar)
    from app.shell.layout import build_status

    label, _progress = build_status(bar)
    assert isinstance(label, FittingLabel)
    label.setText(STATUS)
    _settle(qtbot, bar, (1024, 24))
    metrics = label.fontMetrics()
    assert label.text() == STATUS and label.toolTip() == STATUS  # readers get every figure
    assert metrics.horizontalAdvance(label.shown_text()) <= label.contentsRect().width()
    assert label.shown_text() in shorter_forms(STATUS)  # a whole form: no word cut
    assert label.shown_text().startswith("TTFT 0.60 s · prefill 68.0 tok/s · decode 7.0 tok/s")
    bar.resize(2000, 24)
    qtbot.wait(30)
    assert label.shown_text() == STATUS


def test_shorter_forms_can_keep_the_first_parts_detail():
    forms = shorter_forms("a (x) · b · c (y)", keep_first_detail=True)
    assert forms == ["a (x) · b · c (y)", "a (x) · b · c", "a (x) · b", "a (x)", "a"]


CACHED = "TTFT 0.12 s (75 of 76 tokens from cache)"


CACHED_STATUS = STATUS.replace("TTFT 0.60 s (17 of 38 from cache)", CACHED)
AT_1024 = (  # at least this much: the other details go first, then the last parts
    f"{CACHED} · prefill 68.0 tok/s · decode 7.0 tok/s · 12 tokens · peak 553.1 MB · CPU"
)


@pytest.mark.parametrize("width, at_least", [(1024, AT_1024), (1440, CACHED_STATUS)])
def test_the_status_line_keeps_the_cache_figure_at_common_widths(qtbot, width, at_least):
    """The playground's status line (RunView asks its label to keep the first detail)
    drops the other details and the last parts before "(75 of 76 tokens from cache)".
    How many last parts fit at 1024 px depends on the font (DejaVu Sans drops the
    energy, the narrower Noto Sans keeps it): the longest form that fits, at least
    `at_least`."""
    bar = QStatusBar()
    qtbot.addWidget(bar)
    from app.shell.layout import build_status

    label, _progress = build_status(bar)
    label.keep_first_detail()
    label.setText(CACHED_STATUS)
    _settle(qtbot, bar, (width, 24))
    forms = shorter_forms(CACHED_STATUS, keep_first_detail=True)
    room, metrics = label.contentsRect().width(), label.fontMetrics()
    expected = next(f for f in forms if metrics.horizontalAdvance(f) <= room)
    assert expected.startswith(at_least) and forms.index(expected) <= forms.index(at_least)
    assert label.shown_text() == expected
    assert label.fontMetrics().horizontalAdvance(expected) <= label.contentsRect().width()
    assert label.text() == CACHED_STATUS and label.toolTip() == CACHED_STATUS  # on hover


def test_the_chart_hint_keeps_whole_words_in_a_narrow_chart(qtbot):
    panel = ChartsPanel()
    qtbot.addWidget(panel)
    _settle(qtbot, panel, (600, 700))
    readout = panel.frames["dist"].readout
    assert readout.shown_text() in shorter_forms(readout.text())
    assert readout.fontMetrics().horizontalAdvance(readout.shown_text()) <= readout.width()


def test_the_model_line_wraps_instead_of_being_cut(qtbot):
    from app.widgets.model_picker import ModelPicker

    picker = ModelPicker()
    qtbot.addWidget(picker)
    line = (
        "llama · 135 M params · GGUF Q4_1 → MLX 4/8-bit, group 32 · runs float32 · "
        "98 MB · context 8,192 · CPU"
    )
    picker.info.setText(line)
    one_line = picker.info.fontMetrics().height()
    assert picker.info.heightForWidth(300) >= 2 * one_line  # wrapped, every word kept


def test_the_buttons_under_the_prompt_keep_their_labels_at_the_narrowest(qtbot):
    """The centre column could be dragged to 300 px, where "↻ Regenerate" read "Regenerat"."""
    from app.shell.layout import build_center, build_side, build_split

    prompt_panel = SimpleNamespace(
        token_count=QLabel("38 tokens of 8,192"), show_tokens=QPushButton("Tokens"), stack=QWidget()
    )
    center, side = build_center(prompt_panel), build_side()
    split = build_split(side.tabs, center.widget, ChartsPanel(), side.controls)
    qtbot.addWidget(split)
    _settle(qtbot, split, (1024, 700))
    split.setSizes([10_000, 1, 10_000])  # the centre as narrow as it can be dragged
    qtbot.wait(30)
    for button in (center.regen_button, center.run_button, center.stop_button):
        assert button.width() >= button.sizeHint().width(), button.text()


# -- 22: legends and crowded labels -------------------------------------------------------
def test_lab_legends_follow_a_change_to_the_dark_theme(qtbot, restore_palette):
    from app.core import appearance, theme
    from app.lab.batch_view import BatchView

    appearance.apply_theme("light")
    view = BatchView()
    qtbot.addWidget(view)
    legend = view.chart.getPlotItem().legend
    assert legend.items
    appearance.apply_theme("dark")
    fg = theme.chart_colors()[1]
    assert fg == theme.DARK_AXIS
    for _sample, label in legend.items:
        assert f"color:{fg}" in label.item.toHtml().replace(" ", ""), label.text
    appearance.apply_theme("light")
    for _sample, label in legend.items:
        assert f"color:{theme.AXIS}" in label.item.toHtml().replace(" ", ""), label.text


def _layer_rows(n=30):
    from engine.inside.inside_results import LayerChange

    rows = [LayerChange(i, 3.0, 9.0, attention=0.2 + 0.01 * i, ffn=0.25) for i in range(n)]
    rows[0] = LayerChange(0, 3.0, 9.0, attention=4.2, ffn=7.6)  # both bars far above the rest
    return tuple(rows)


def test_journey_cut_bars_at_one_layer_share_one_label(qtbot):
    from app.inside.journey_view import JourneyView

    view = JourneyView()
    qtbot.addWidget(view)
    _settle(qtbot, view, (1024, 700))
    view.show_layers(_layer_rows())
    assert len(view.cut_labels) == 1  # two side by side overlapped each other
    text = view.cut_labels[0].textItem.toPlainText()
    assert text.splitlines() == ["4.2 ↑", "7.6 ↑"]


def test_attention_key_labels_never_run_together(qtbot):
    from app.inside.attention_view import AttentionView

    labels = tuple(f" word{i:02d}x" for i in range(60))
    n = len(labels)
    weights = np.tril(np.ones((n, n), dtype=np.float32))
    weights /= weights.sum(axis=1, keepdims=True)
    record = SimpleNamespace(
        data=SimpleNamespace(weights=weights, head=None, layer=0),
        layers=30,
        heads=9,
        labels=labels,
        step=3,
    )
    view = AttentionView()
    qtbot.addWidget(view)
    _settle(qtbot, view, (1000, 600))
    view.show_record(record)
    qtbot.wait(30)
    item = view.plot.getPlotItem()
    key_step, _query_step = view.label_steps()
    metrics = QFontMetricsF(item.getAxis("bottom").style["tickFont"])
    widest = max(metrics.horizontalAdvance(t.replace(" ", "␣")) for t in labels)
    assert key_step * item.vb.width() / n >= widest  # neighbours' names never touch
    ticks = item.getAxis("bottom")._tickLevels[0]
    assert len(ticks) == len(range(0, n, key_step)) < n


# -- 23: legend names take the room they have --------------------------------------------
def test_temperature_key_names_are_whole_where_there_is_room(qtbot):
    chart = TemperatureChart()
    qtbot.addWidget(chart)
    record = long_named_record()  # " unquestionably", " Constantinople", ...
    _settle(qtbot, chart, (1200, 600))  # a chart at 2560 x 1440
    chart.show_record(record)
    assert chart.key_names()[:2] == ["␣unquestionably", "␣Constantinople"]
    assert "␣Constantinople" in chart.getPlotItem().titleLabel.text
    chart.resize(320, 300)  # a narrow chart: names cut, never below KEY_MIN_CHARS
    qtbot.wait(30)
    names = chart.key_names()
    assert names[1].endswith("…") and all(len(n) >= temperature.KEY_MIN_CHARS for n in names)
    assert names[1] in chart.getPlotItem().titleLabel.text
