"""The journey of one token: the seven steps of inference for the selected step, each
a section with that step's real numbers (an InspectRecord with what = "journey",
computed in the engine: engine/backends/mlx/journey.py).

Clicking a layer in the residual-stream chart asks for that layer's attention
heatmap (`layer_clicked`); the iteration section's button asks for the next step
(`step_requested`). The sampling funnel's order is mlx-lm's, which the view says.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import (
    decade_ticks,
    pen,
    scroll_not_zoom,
    set_title,
    short,
    style_plot,
    view_point,
)
from app.core.theme import CHOSEN, OUTPUT, RAW
from app.inside.funnel_table import FunnelChart, FunnelTable
from engine.display.units import fmt_prob
from engine.inside.inside_results import Embedding, Iteration, LayerChange, Projection, Tokenization

MAX_TOKENS_SHOWN = 100  # the tokenization section shows the context's last tokens
BAR = 0.38  # width of each of a layer's two bars
OUTLIER = 3.0  # a bar this many times the 90th percentile is cut, its value written on it


def _section(title: str, *widgets) -> QGroupBox:
    box = QGroupBox(title)
    layout = QVBoxLayout(box)
    for w in widgets:
        layout.addWidget(w)
    layout.addStretch(1)  # the section's content at its top
    return box


def _label() -> QLabel:
    label = QLabel()
    label.setWordWrap(True)
    label.setTextFormat(Qt.RichText)
    label.setTextInteractionFlags(Qt.TextSelectableByMouse)
    return label


def _plot(title: str, left: str, bottom: str, height: int = 190) -> pg.PlotWidget:
    w = pg.PlotWidget()
    style_plot(w.getPlotItem(), title, left=left, bottom=bottom)
    w.getPlotItem().setMouseEnabled(x=False, y=False)
    scroll_not_zoom(w)  # the wheel over it, its axes too, scrolls the journey
    w.setMinimumHeight(height)
    w.setMaximumHeight(height + 40)
    return w


class JourneyView(QScrollArea):
    """Seven sections; `show_record` fills them from one journey record."""

    layer_clicked = Signal(int)  # show this layer's attention heatmap
    step_requested = Signal(int)  # inspect this step next

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.record = None
        self.tokens = _label()
        self.embed_text = _label()
        self.strip = _plot("Embedding vector", "", "dimension", 120)
        self.strip.getPlotItem().hideAxis("left")
        self.strip_image = pg.ImageItem(axisOrder="row-major")
        self.strip_image.setLookupTable(pg.colormap.get("CET-D1").getLookupTable(nPts=256))
        self.strip.getPlotItem().addItem(self.strip_image)
        self.layers = _plot("Residual stream, layer by layer", "‖Δh‖ / ‖h‖", "layer", 230)
        item = self.layers.getPlotItem()
        self.attn_bars = pg.BarGraphItem(x=[], height=[], width=BAR, brush=RAW)
        self.ffn_bars = pg.BarGraphItem(x=[], height=[], width=BAR, brush=OUTPUT)
        item.addItem(self.attn_bars)
        item.addItem(self.ffn_bars)
        self.cut_labels: list[pg.TextItem] = []
        self.layers.scene().sigMouseClicked.connect(self._on_layers_click)
        self.layers.setToolTip("Click a layer to open its attention heatmap")
        self.residual_text = _label()
        self.proj_text = _label()
        self.lens = _plot("Chosen token's rank by layer (logit lens)", "rank", "layer", 170)
        self.lens.getPlotItem().setLogMode(y=True)
        self.lens.getPlotItem().invertY(True)
        self.lens.getPlotItem().getAxis("left").setTicks(decade_ticks(3))  # ranks: 1, 10, 100…
        self.lens_curve = self.lens.getPlotItem().plot(
            [], [], pen=pen(CHOSEN, 2), symbol="o", symbolSize=4, symbolBrush=CHOSEN
        )
        self.funnel = FunnelTable()
        self.funnel_chart = FunnelChart()
        sampling = QWidget()
        row = QHBoxLayout(sampling)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.funnel, 3)
        row.addWidget(self.funnel_chart, 2)
        self.order = _label()
        self.iter_text = _label()
        self.next = QPushButton("Next step →")
        self.next.setToolTip("Follow the token just appended: the journey of the next step")
        self.next.clicked.connect(self._on_next)
        self.next.setEnabled(False)
        body = QWidget()
        grid = QGridLayout(body)
        grid.addWidget(_section("1 · Tokenization", self.tokens), 0, 0, 1, 3)
        grid.addWidget(_section("2 · Embedding", self.embed_text, self.strip), 1, 0)
        grid.addWidget(
            _section("3–4 · Attention and feed-forward", self.layers, self.residual_text), 1, 1
        )
        grid.addWidget(_section("5 · Vocabulary projection", self.proj_text, self.lens), 1, 2)
        grid.addWidget(_section("6 · Sampling", self.order, sampling), 2, 0, 1, 2)
        grid.addWidget(_section("7 · Iteration", self.iter_text, self.next), 2, 2)
        for col in range(3):
            grid.setColumnStretch(col, 1)
        grid.setRowStretch(3, 1)  # spare height below the sections, not inside them
        self.setWidget(body)
        self.tokens.setText("Pick a step of a local run to follow its token through the model.")

    # -- filling ----------------------------------------------------------------
    def show_record(self, record) -> None:
        """Fill every section from a journey InspectRecord."""
        self.record = record
        d = record.data  # a JourneyResult (engine/inside/inside_results.py)
        names = d.token_labels
        self._tokenization(d.tokenization, d.reading)
        self._embedding(d.embedding, record.labels[-1], names)
        self.show_layers(d.layers)
        self._projection(d.projection, names)
        self.order.setText(f"<i>{escape(d.sampling.order)}.</i>")
        self.funnel.show_stages(d.sampling.stages, d.sampling.greedy)
        self.funnel_chart.show_stages(d.sampling.stages)
        self._iteration(d.iteration, record.step, d.reading)

    def _tokenization(self, tok: Tokenization, reading: bool) -> None:
        tokens, new, n_prompt = tok.tokens, tok.new, tok.prompt_tokens
        first = max(0, len(tokens) - MAX_TOKENS_SHOWN)
        spans = [f"… {first} earlier tokens … "] if first else []
        for i in range(first, len(tokens)):
            tid, label, _raw = tokens[i]
            colour = "#c7dcf0" if i < n_prompt else "#fde0c2"
            if i == new:
                colour = "#ffd54f"
            spans.append(
                f'<span style="background:{colour}; color:#000">{escape(label)}</span>'
                f'<sub style="color:#808080">{tid}</sub>'
            )
        text = " ".join(spans)
        if new is not None:
            tid, label, raw = tokens[new]
            hexes = " ".join(f"{b:02x}" for b in raw)
            parts = ("context", "the text read") if reading else ("prompt", "answer")
            text += (
                f"<br>{'token read' if reading else 'new token'} <b>{escape(repr(label))}</b> · "
                f"id {tid} · bytes {hexes} · {len(tokens)} tokens ({n_prompt} of the "
                f"{parts[0]}; blue: {parts[0]}, orange: {parts[1]})"
            )
        self.tokens.setText(text)

    def _embedding(self, emb: Embedding, label: str, names: dict) -> None:
        values = np.array(emb.values, dtype=np.float32)[None, :]  # (1, D)
        bound = float(np.abs(values).max()) or 1.0
        self.strip_image.setImage(values, levels=(-bound, bound))
        self.strip_image.setRect(0, 0, values.shape[1], 1)
        near = ", ".join(
            f"{escape(repr(short(names[str(i)], 14)))} {c:.3f}" for i, c in emb.neighbours
        )
        self.embed_text.setText(
            f"input token <b>{escape(repr(label))}</b> (id {emb.token_id}): "
            f"{values.shape[1]} values, norm {emb.norm:.3f}<br>"
            f"nearest in the embedding table (cosine): {near}"
        )

    def show_layers(self, rows: tuple[LayerChange, ...]) -> None:
        """The residual stream's bars: each layer's attention and feed-forward change."""
        x = np.arange(len(rows), dtype=float)
        if rows and rows[0].attention is not None:
            att = np.array([r.attention for r in rows])
            ffn = np.array([r.ffn for r in rows])
            self.attn_bars.setOpts(x=x - BAR / 2, height=att, width=BAR)
            self.ffn_bars.setOpts(x=x + BAR / 2, height=ffn, width=BAR)
            self._cut_outliers(x, att, ffn)
            big_a, big_f = int(att.argmax()), int(ffn.argmax())
            detail = (
                f'<span style="color:{RAW}">■</span> attention · '
                f'<span style="color:{OUTPUT}">■</span> feed-forward · largest: '
                f"attention at layer {big_a}, feed-forward at layer {big_f}"
            )
        else:
            self.attn_bars.setOpts(x=[], height=[])
            self.ffn_bars.setOpts(x=[], height=[])
            detail = "this architecture's feed-forward could not be separated"
        set_title(self.layers.getPlotItem(), "Residual stream, layer by layer", detail)
        if rows:
            self.residual_text.setText(
                f"‖h‖ grows from {rows[0].norm_in:.1f} (embedding) to "
                f"{rows[-1].norm_out:.1f} after layer {len(rows) - 1}; "
                "each bar is how much that step changed the residual stream. "
                "Click a layer for its attention heatmap."
            )

    def _cut_outliers(self, x, att, ffn) -> None:
        """Keep the layers legible: a bar far above the rest (layer 0's feed-forward
        often is, the embedding being small) is cut at the top and labelled."""
        item = self.layers.getPlotItem()
        for label in self.cut_labels:
            item.removeItem(label)
        self.cut_labels = []
        both = np.concatenate([att, ffn])
        top = float(np.percentile(both, 90)) * OUTLIER
        if both.max() <= top:
            item.enableAutoRange(axis="y")
            return
        item.setYRange(0, top, padding=0)
        # One label per cut layer, its values stacked in their bars' colours: two labels
        # side by side (attention and feed-forward of layer 0) ran into each other.
        for xi, a, f in zip(x, att, ffn, strict=True):
            lines = [
                f'<span style="color:{colour}">{v:.1f} ↑</span>'
                for colour, v in ((RAW, a), (OUTPUT, f))
                if v > top
            ]
            if lines:
                label = pg.TextItem(html="<br>".join(lines), anchor=(0, 0))
                label.setPos(xi + BAR, top)
                item.addItem(label)
                self.cut_labels.append(label)

    def _projection(self, proj: Projection, names: dict) -> None:
        top = ", ".join(
            f"{escape(repr(short(names[str(i)], 12)))} {p:.3f}" for i, _l, p in proj.top[:8]
        )
        c = proj.chosen
        text = f"softmax of the final logits — top: {top}"
        if c is not None:
            text += (
                f"<br>chosen <b>{escape(repr(names[str(c.token_id)]))}</b>: logit "
                f"{c.logit:.3f}, p = {fmt_prob(c.prob)}, rank {c.rank:,}"
            )
            ranks = np.array([r.chosen_rank for r in proj.lens], dtype=float)
            self.lens_curve.setData(np.arange(len(ranks)), ranks)
            # whole ranks from 1 to the decade above the largest: 1, 10, 100, 1,000…
            known = ranks[np.isfinite(ranks)]
            top = max(1, math.ceil(math.log10(max(known.max(initial=1.0), 1.0)) - 1e-9))
            item = self.lens.getPlotItem()
            item.getAxis("left").setTicks(decade_ticks(top))
            # room for half a label beyond 1 and the top decade, in any font: pyqtgraph
            # drops a tick label that would cross the axis's ends (Noto Sans at 9 pt
            # needs about 9 px; 12 % of the range is 14 px or more at the chart's height)
            item.setYRange(0, top, padding=0.12)
        else:
            text += "<br>the prompt alone: no token chosen yet"
            self.lens_curve.setData([], [])
        self.proj_text.setText(text)

    def _iteration(self, it: Iteration, step, reading: bool) -> None:
        if reading:  # a read stops where its text does, never at a limit or stop token
            end = "the text ends here" if it.length_limit else "the text read goes on"
        else:
            end = (
                "a stop token: the answer ends here"
                if it.stop_token
                else "the length limit: the answer ends here"
                if it.length_limit
                else "the answer goes on"
            )
        self.iter_text.setText(
            f"the token is appended: context {it.context_tokens:,} of "
            f"{it.context_length:,} tokens · KV cache +{it.kv_bytes_added:,} bytes this "
            f"step ({it.kv_bytes_before + it.kv_bytes_added:,} in all) · {end}"
            + (
                f"<br>{it.kv_layers_full} sliding-window layers add nothing: their cache "
                "is full and the oldest entry is overwritten"
                if it.kv_layers_full
                else ""
            )
        )
        # the prompt alone (no step selected) leads to the answer's first step
        self.next.setEnabled(it.next_step is not None or step is None)

    # -- clicks -----------------------------------------------------------------
    def _on_layers_click(self, event) -> None:
        item = self.layers.getPlotItem()
        point = view_point(item, event.scenePos())
        if point is None or self.record is None:
            return
        layer = int(round(point.x()))
        if 0 <= layer < len(self.record.data.layers):
            self.layer_clicked.emit(layer)

    def _on_next(self) -> None:
        if self.record is None:
            return
        step = self.record.data.iteration.next_step
        self.step_requested.emit(0 if self.record.step is None else step)
