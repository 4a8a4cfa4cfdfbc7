"""Distillation, part 1: teacher and student read one text teacher-forced.

The teacher is the playground's model (the lab runs on it); the student is picked from
the installed models, the teacher's own folder "as stored" first. It shows the per-token
KL(teacher ‖ student) (per-word surprisal of each across tokenizers, where KL is not
defined), the summary numbers, and the tokens where the two disagree most; picking one
shows both models' top candidates there as two bar charts. Numbers come from the
DistillResult the engine made (engine/backends/mlx/distill_compare.py).
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.charts.base import pen, set_title, short, style_plot
from app.core.appearance import themed_style
from app.core.theme import CHOSEN, OUTPUT, RAW, tint
from app.widgets.model_picker import fill_models
from engine.errors import SettingsError
from engine.lab import DistillParams, DistillResult
from engine.lab.params import QUICK_STUDENT_BITS

TEXT_FILE = Path(__file__).resolve().parents[2] / "resources" / "distill_text.txt"
TOP_SHOWN = 8  # candidates per bar chart
KL_TITLE, WORD_TITLE = "KL(teacher ‖ student) per token", "Surprisal per word (bits)"


def default_text() -> str:
    """The text that ships with the app (resources/distill_text.txt)."""
    return TEXT_FILE.read_text(encoding="utf-8")


def read_text_file(path: str) -> str:
    """A text file's contents (SettingsError: unreadable, not UTF-8 text, or empty)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SettingsError(f"cannot read {Path(path).name} as UTF-8 text: {e}") from None
    if not text.strip():
        raise SettingsError(f"{Path(path).name} is empty")
    return text


class TopBars(pg.PlotWidget):
    """One model's top candidates at one token: horizontal bars, labels on the axis."""

    def __init__(self, who: str, color: str, parent=None):
        super().__init__(parent)
        self.who = who
        plot = self.getPlotItem()
        style_plot(plot, who, bottom="probability")
        plot.invertY(True)
        plot.setMouseEnabled(x=False, y=False)
        self.bars = pg.BarGraphItem(x0=[], y=[], height=0.6, width=[], brush=color, pen=None)
        plot.addItem(self.bars)
        self.probs: list[float] = []
        self.labels: list[str] = []
        self.setMinimumHeight(150)

    def show_top(self, pairs, names: dict, mark: str | None = None) -> None:
        """`pairs`: (token id, p) largest first; `names`: token id (str) -> label."""
        pairs = list(pairs)[:TOP_SHOWN]
        self.probs = [p for _t, p in pairs]
        self.labels = [names.get(str(t), f"<{t}>") for t, _p in pairs]
        n = len(pairs)
        self.bars.setOpts(x0=np.zeros(n), y=np.arange(n), width=np.array(self.probs), height=0.6)
        ticks = [(i, short(repr(label), 12)) for i, label in enumerate(self.labels)]
        plot = self.getPlotItem()
        plot.getAxis("left").setTicks([ticks])
        plot.setXRange(0, max([*self.probs, 0.05]) * 1.1, padding=0)
        plot.setYRange(-0.6, max(n, 1) - 0.4, padding=0)
        top = f"top {html.escape(repr(short(self.labels[0])))} {self.probs[0]:.1%}" if n else ""
        set_title(plot, self.who, top + (f" · {mark}" if mark else ""))


class DistillCompareView(QWidget):
    compare_requested = Signal()  # the tab asks `params()` and the lab runs them

    def __init__(self, parent=None):
        super().__init__(parent)
        self.teacher = QLabel("Teacher: the playground's model")
        self.student = QComboBox()
        self.student.setToolTip("The student: any model the app can open")
        self.student.setMinimumWidth(220)
        self.run = QPushButton("Compare")
        self.run.setToolTip("Both read the text teacher-forced in the lab's engine")
        self.load_text = QPushButton("Load text file…")
        self.error = QLabel()
        themed_style(self.error, lambda: f"color: {tint('error')[1]};")
        bar = QHBoxLayout()
        for w in (QLabel("Student"), self.student, self.load_text, self.run):
            bar.addWidget(w)
        bar.addStretch(1)
        self.text = QPlainTextEdit(default_text())
        self.text.setMaximumHeight(90)
        self.summary = QLabel("Compare to see where the student departs from the teacher.")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.chart = pg.PlotWidget()
        self.chart.setMinimumHeight(170)
        item = self.chart.getPlotItem()
        style_plot(item, KL_TITLE, left="nats", bottom="token")
        item.addLegend(offset=(10, 10))
        self.kl_curve = item.plot([], [], pen=pen(RAW, 1))
        self.student_curve = item.plot([], [], pen=pen(OUTPUT, 1))
        self.mark = pg.InfiniteLine(angle=90, pen=pen(CHOSEN, 1))
        self.mark.hide()
        item.addItem(self.mark)
        self.most = QListWidget()
        self.most.setToolTip("Where they disagree most: pick one to see both distributions")
        self.teacher_bars, self.student_bars = TopBars("Teacher", RAW), TopBars("Student", OUTPUT)
        bars = QHBoxLayout()
        bars.addWidget(self.teacher_bars)
        bars.addWidget(self.student_bars)
        lower = QHBoxLayout()
        lower.addWidget(self.most, 2)
        lower.addLayout(bars, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.teacher)
        layout.addLayout(bar)
        layout.addWidget(self.error)
        layout.addWidget(self.text)
        layout.addWidget(self.summary)
        layout.addWidget(self.chart, 3)
        layout.addWidget(QLabel("Where they disagree most (pick one):"))
        layout.addLayout(lower, 3)
        self.result: DistillResult | None = None
        self.run.clicked.connect(self._on_compare)
        self.load_text.clicked.connect(self._on_load_text)
        self.most.currentRowChanged.connect(self.show_row)

    def set_teacher(self, model) -> None:
        """The teacher (the playground's ModelRecord or None): named, and its own folder
        offered first as the student ("as stored": its weights as installed)."""
        fill_models(self.student)
        if model is None:
            self.teacher.setText("Teacher: load a local model in the playground.")
            return
        self.teacher.setText(f"Teacher: {model.name} (the playground's model)")
        quick = QUICK_STUDENT_BITS
        self.student.insertItem(
            0, f"{model.name}, as stored (the teacher's own weights)", model.path
        )
        self.student.insertItem(  # first: a student that differs, quick to make
            0, f"{model.name}, re-quantized to {quick}-bit (quick)", (model.path, quick)
        )
        self.student.setCurrentIndex(0)

    def params(self) -> DistillParams:
        """What Compare runs (SettingsError: no student or no text)."""
        spec = self.student.currentData()
        if spec is None:
            raise SettingsError("pick a student model that is installed")
        path, bits = spec if isinstance(spec, tuple) else (spec, None)
        return DistillParams(student=str(path), text=self.text.toPlainText(), student_bits=bits)

    def _on_compare(self) -> None:
        try:
            self.params()
        except SettingsError as e:
            self.error.setText(str(e))
            return
        self.error.clear()
        self.compare_requested.emit()

    def _on_load_text(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Text for both models", "", "Text (*.txt *.md)")
        if path:
            self.use_file(path)

    def use_file(self, path: str) -> bool:
        """Put a text file's contents in the text box (said beside Compare if it cannot)."""
        try:
            self.text.setPlainText(read_text_file(path))
        except SettingsError as e:
            self.error.setText(str(e))
            return False
        self.error.clear()
        return True

    def show_result(self, r: DistillResult) -> None:
        self.result = r
        plot = self.chart.getPlotItem()
        if r.same_tokenizer:
            x = np.arange(len(r.kl), dtype=float)
            self.kl_curve.setData(x, np.array(r.kl, dtype=float))
            self.student_curve.setData([], [])
            self._legend(())  # one curve: its title names it
            set_title(plot, KL_TITLE, f"{len(r.kl):,} tokens · mean {nats(r.mean_kl)} nats")
            plot.setLabel("left", "nats", **{"font-size": "8pt"})
        else:
            x = np.arange(len(r.labels), dtype=float)
            self.kl_curve.setData(x, _nan(r.teacher_bits))
            self.student_curve.setData(x, _nan(r.student_bits))
            self._legend(("teacher", "student"))
            set_title(plot, WORD_TITLE, f"{len(r.labels):,} words · KL not defined: see above")
            plot.setLabel("left", "bits", **{"font-size": "8pt"})
        plot.setLabel("bottom", "token" if r.same_tokenizer else "word", **{"font-size": "8pt"})
        self.summary.setText(summary_text(r))
        self.most.blockSignals(True)
        self.most.clear()
        for i in r.most:
            self.most.addItem(self._row_text(i))
        self.most.blockSignals(False)
        if r.most:
            self.most.setCurrentRow(0)

    def _legend(self, names) -> None:
        legend = self.chart.getPlotItem().legend
        legend.clear()
        legend.setVisible(bool(names))
        for curve, name in zip((self.kl_curve, self.student_curve), names, strict=False):
            legend.addItem(curve, name)

    def _row_text(self, i: int) -> str:
        r = self.result
        label = repr(r.labels[i])
        if r.same_tokenizer:
            agree = "same top-1" if r.agree[i] else "top-1 differs"  # p: of the teacher's top
            return f"{label}  KL {nats(r.kl[i])} · {agree} · p {r.p_teacher_top[i]:.2f}"
        t, s = r.teacher_bits[i], r.student_bits[i]
        return f"{label} · teacher {_bits(t)} · student {_bits(s)}"

    def show_row(self, n: int) -> None:
        """The `n`-th listed disagreement: both models' candidates there, marked on the chart."""
        r = self.result
        if r is None or not 0 <= n < len(r.most):
            return
        i = r.most[n]
        self.mark.setValue(i)
        self.mark.show()
        top, names = r.top or {}, r.token_labels or {}
        mark = f"at {repr(short(r.labels[i]))}"
        self.teacher_bars.show_top(
            top.get("teacher", {}).get(str(i), ()), names.get("teacher", {}), mark
        )
        self.student_bars.show_top(
            top.get("student", {}).get(str(i), ()), names.get("student", {}), mark
        )


def summary_text(r: DistillResult) -> str:
    """The comparison's numbers in one paragraph (each field of the result, as is)."""
    head = f"{r.teacher} (teacher) and {r.student} (student) read {r.text_bytes:,} bytes"
    if r.same_tokenizer:
        return (
            f"{head} in {len(r.kl):,} tokens ({r.seconds:.1f} s). Mean KL(teacher ‖ student) "
            f"{nats(r.mean_kl)} nats/token; top-1 agreement {r.agreement:.1%}; cross-entropy "
            f"against the text: teacher {r.teacher_ce:.4f}, student {r.student_ce:.4f} "
            f"nats/token ({r.teacher_bits_per_byte:.3f} and {r.student_bits_per_byte:.3f} "
            "bits per byte)."
        )
    return (
        f"{head} ({r.seconds:.1f} s): teacher {r.teacher_bits_per_byte:.3f} bits per byte, "
        f"student {r.student_bits_per_byte:.3f}. {r.why}"
    )


def nats(v: float) -> str:
    """A KL in nats, legible however small (a model against its own copy: ~1e-6)."""
    return f"{v:.4f}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"


def _nan(values) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _bits(v) -> str:
    return "n/a" if v is None else f"{v:.2f} bits"
