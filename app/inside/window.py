"""Inside the model: one window, six tabs (tokenizer, attention, logit lens,
hardware, the journey of one token, attention by position), following the
playground's run and selected step.

Attention and the lens are computed on demand in an engine process of this
window's own (never on the GUI thread), one request at a time, cancellable;
results are cached per run, step, view, layer and head. A past run opened from
History is recomputed when its model is still here, and says so when it is not.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.core.bridge import error_text
from app.core.child_window import ChildWindow
from app.inside.attention_view import AttentionView
from app.inside.hardware_view import HardwareView
from app.inside.journey_view import JourneyView
from app.inside.lens_view import LensView
from app.inside.position_view import PositionView
from app.inside.tokenizer_view import TokenizerView
from engine.inside.inspect_request import InspectRequest
from engine.machine.hardware_timeline import timeline

TABS = ("tokenizer", "attention", "lens", "hardware", "journey", "position")
COMPUTED = ("attention", "lens", "journey", "position")  # tabs the engine computes

DEFAULT_SIZE = (1200, 800)  # shrunk to fit the screen (app/core/window_fit.py)
GEOMETRY_KEY = "inside"


class InsideWindow(ChildWindow, QWidget):
    def __init__(self, model=None, parent=None):
        """`model`: the playground's SessionSignals; the window follows the run on
        screen and its selected step (a run started, finished, reopened, a click)."""
        super().__init__(parent, Qt.Window)
        self.setWindowTitle("Inside the model — Logitscope")
        self.start_child(GEOMETRY_KEY, DEFAULT_SIZE)  # app/core/child_window.py
        self.tabs = QTabWidget()
        self.tokenizer = TokenizerView()
        self.attention = AttentionView()
        self.lens = LensView()
        self.hardware = HardwareView()
        self.journey = JourneyView()
        self.position = PositionView()
        for view, name in (
            (self.tokenizer, "Tokenizer"),
            (self.attention, "Attention"),
            (self.lens, "Logit lens"),
            (self.hardware, "Prefill vs decode"),
            (self.journey, "Journey of a token"),
            (self.position, "Attention by position"),
        ):
            self.tabs.addTab(view, name)
        self.where = QLabel("Run a prompt in the playground, then pick a token to inspect.")
        self.where.setWordWrap(True)
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)
        self.busy.setMaximumWidth(160)
        self.busy.hide()
        self.stop = QPushButton("Stop")
        self.stop.setToolTip("Cancel the computation in progress (Esc)")
        self.stop.setShortcut("Esc")
        self.stop.hide()
        head = QHBoxLayout()
        head.addWidget(self.where, 1)
        head.addWidget(self.busy)
        head.addWidget(self.stop)
        self.fault = _FaultPanel()
        self.body = QStackedWidget()  # the views, or an engine fault in their place
        self.body.addWidget(self.tabs)
        self.body.addWidget(self.fault)
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(self.body, 1)
        self.state = None
        self.step: int | None = None
        self.cache: dict[tuple, object] = {}
        self.pending: tuple | None = None
        self._asked: tuple | None = None  # the request in flight
        self.tabs.currentChanged.connect(lambda _i: self.refresh())
        self.attention.request.connect(lambda *_: self.refresh())
        self.journey.layer_clicked.connect(self._on_journey_layer)
        self.journey.step_requested.connect(self._on_journey_step)
        self.bridge.inspected.connect(self._on_record)
        self.bridge.failed.connect(self._on_error)
        self.bridge.busy_changed.connect(self._on_busy)
        self.stop.clicked.connect(self.bridge.cancel)
        self.fault.retry.clicked.connect(self._retry)
        self.session_model = model  # selecting a step here selects it in the session
        if model is not None:
            session = model.session
            model.shown_changed.connect(lambda s: self._follow_if_open(s, s.selected))
            model.run_finished.connect(
                lambda _r: self._follow_if_open(session.shown, session.shown.selected)
            )
            model.step_selected.connect(lambda step: self._follow_if_open(session.shown, step))

    # -- what to show ---------------------------------------------------------------
    def _follow_if_open(self, state, step) -> None:
        if not self.closed and self.isVisible():
            self.follow(state, step)

    def follow(self, state, step: int | None) -> None:
        """The playground's run (a RunState) and its selected step."""
        from engine.models.catalogue import list_models
        from engine.models.light_tokenizer import shared_tokenizer

        if self.closed:
            return
        model_changed = self.state is None or _path(self.state) != _path(state)
        self.state, self.step = state, step
        if model_changed:
            tok = None
            if self.available():
                try:
                    tok = shared_tokenizer(_path(state))
                except (OSError, ValueError):
                    tok = None
            done = state.done
            models, own = list_models(other_tools=False), state.model
            if self.available() and all(str(m.path) != str(own.path) for m in models):
                models = [own, *models]  # the run's own model counts too, installed or not
            self.tokenizer.set_model(
                tok,
                models,
                done.prefill_tps if done else None,
                own.context_length if own else None,
            )
        self.hardware.show_timeline(
            timeline(state.model, state.tokens, state.done, state.prompt_tokens or None)
        )
        self.where.setText(self._describe())
        self.attention.reset_readout()
        self.refresh()

    def _describe(self) -> str:
        """Which run and step the views show (the playground's run on screen)."""
        s = self.state
        if s is None or (not s.tokens and s.done is None):
            return "Run a prompt in the playground, then pick a token to inspect."
        name = s.model.name if s.model else "an unknown model"
        step = "the prompt alone" if self.step is None else f"step {self.step}"
        return f"{name} · {step} of “{' '.join(s.prompt.split())[:80]}”"

    def available(self) -> bool:
        s = self.state
        return bool(s and s.model and s.model.backend == "mlx" and Path(s.model.path).is_dir())

    def _key(self) -> tuple | None:
        name = TABS[self.tabs.currentIndex()]
        if name not in COMPUTED or self.state is None:
            return None
        layer, head = self.attention.layer.value(), self.attention.head.currentData()
        detail = (layer, head) if name == "attention" else ()
        return (self.state.run_id or id(self.state), _path(self.state), self.step, name, *detail)

    def refresh(self) -> None:
        self.body.setCurrentWidget(self.tabs)  # a new question: the fault notice goes
        key = self._key()
        if key is None:
            return
        s = self.state
        if not self.available():
            why = (
                "a model on a server reports only the tokens it chose"
                if s.model and s.model.backend != "mlx"
                else f"the model this run used ({s.model.path if s.model else 'unknown'}) is "
                "not on this machine any more: open it to inspect this run"
            )
            self.where.setText(f"Inside the model is not available: {why}.")
            return
        step = "the prompt alone" if self.step is None else f"step {self.step}"
        self.where.setText(f"{Path(s.model.path).name} · {step} · computed in the engine")
        if key in self.cache:
            self._show(self.cache[key])
            return
        if self.bridge.busy:
            self.pending = key
            return
        self.pending = None
        request = InspectRequest(
            what=key[3],
            step=self.step,
            layer=self.attention.layer.value(),
            head=self.attention.head.currentData(),
            # the journey's last step may be the stop token itself
            continuation=tuple(t.token_id for t in s.tokens if key[3] == "journey" or not t.eos),
            # a read: its text after its context (the system box), as the read fed it,
            # never the text as a prompt followed by the same text as an answer
            reading=s.reading,
        )
        self._asked = key
        if key[3] == "attention":
            self.attention.show_empty(f"Computing attention at {step}…")
        self.bridge.inspect(s.engine_prompt, s.settings, request, s.model.path)

    # -- results --------------------------------------------------------------------
    def _on_record(self, record) -> None:
        self.cache[self._asked] = record
        if self._asked == self._key():
            self._show(record)

    def _show(self, record) -> None:
        views = {"attention": self.attention, "journey": self.journey, "position": self.position}
        views.get(record.what, self.lens).show_record(record)

    def _on_journey_layer(self, layer: int) -> None:
        """The journey's layer chart was clicked: that layer's attention heatmap."""
        self.attention.layer.setValue(layer)
        self.tabs.setCurrentIndex(TABS.index("attention"))

    def _on_journey_step(self, step: int) -> None:
        """The journey's next-step button: select the token just appended. On the
        playground's run on screen the step is selected in the session, so the
        playground (answer, charts) and this window move together."""
        if self.state is None or step >= len(self.state.tokens):
            return
        model = self.session_model
        if model is not None and model.session.shown is self.state:
            model.select(step)  # step_selected brings this window to the step too
            if self.step != step:  # hidden windows do not follow: this one asked
                self.follow(self.state, step)
        else:
            self.follow(self.state, step)

    def _on_error(self, error) -> None:
        self.where.setText(f"Could not look inside: {error.message}")
        if self._asked is not None and self._asked[3] == "attention":
            self.attention.show_empty("Nothing was computed for this step (see above)")
        if error.kind in ("engine_died", "engine_hung"):  # nothing computed: say so there
            self.where.setText("Could not look inside: the engine stopped.")
            if self.pending == self._asked:  # no automatic retry into the same fault
                self.pending = None
            self.fault.show_error(error_text(error))
            self.body.setCurrentWidget(self.fault)

    def _retry(self) -> None:
        """Back to the views (their earlier results kept) and ask again."""
        self.body.setCurrentWidget(self.tabs)
        self.refresh()

    def _on_busy(self, busy: bool) -> None:
        self.busy.setVisible(busy)
        self.stop.setVisible(busy)
        if not busy and self.pending is not None and self.pending == self._key():
            self.refresh()


class _FaultPanel(QWidget):
    """Shown in place of the views when the engine died or hung while computing."""

    def __init__(self):
        super().__init__()
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setObjectName("insideFault")
        self.message.setStyleSheet("QLabel#insideFault { color: #b3261e; font-size: 14px; }")
        note = QLabel(
            "Nothing was computed for this step. The views keep their earlier results; "
            "a fresh engine starts when you try again."
        )
        note.setWordWrap(True)
        self.retry = QPushButton("Try again")
        self.retry.setToolTip("Start a fresh engine and compute this view again")
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addWidget(self.message)
        layout.addWidget(note)
        layout.addWidget(self.retry, 0, Qt.AlignLeft)
        layout.addStretch(2)

    def show_error(self, text: str) -> None:
        self.message.setText(text)


def _path(state) -> str | None:
    return state.model.path if state is not None and state.model is not None else None
