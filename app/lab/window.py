"""The lab: experiments with the techniques that make inference cheap and fast, on
the playground's model and prompt, each measured in the engine (never on the GUI
thread), one at a time, with progress. Tabs: quantization A/B, conversations and the
KV cache, speculative decoding, batching, distillation, confidence (does the model know
when it is wrong: a question set), routing (the playground's model answers a question
set, a larger one escalated to: app/lab/routing_view.py). The header says what the tab on screen
shows: "Done" only on a tab whose experiment ran, the model and prompt elsewhere.
The Confidence tab's Compare runs its result's questions on a second model (side B,
`compare_confidence`), on this same engine, after the first. The tabs, keyed by the
experiments' names (engine/lab/registry.py), are listed in app/lab/views.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QTabWidget, QVBoxLayout, QWidget

from app.core.bridge import error_text
from app.core.child_window import ChildWindow
from app.lab.views import SHARED, TABS, tab_of
from engine.errors import SettingsError
from engine.lab import LabParams, LabResult

DONE = "Done: numbers measured in the engine, in this run."
DEFAULT_SIZE = (1200, 760)  # shrunk to fit the screen (app/core/window_fit.py)
GEOMETRY_KEY = "lab"
TAB_OF = SHARED  # an experiment run from another's tab (app/lab/views.py)
# tabs that do not run the playground's prompt: what they run on instead
OWN_INPUT = {kind: tab.own_input for kind, tab in TABS.items() if tab.own_input}


class LabWindow(ChildWindow, QWidget):
    def __init__(self, source, parent=None, bridge=None):
        """`source() -> (model record, prompt text, settings)`: the playground's, used by
        every experiment. `bridge`: an engine bridge to use instead of its own (tests)."""
        super().__init__(parent, Qt.Window)
        self.source = source
        self.setWindowTitle("Lab — Logitscope")
        self.start_child(GEOMETRY_KEY, DEFAULT_SIZE, bridge)  # app/core/child_window.py
        self.views = {}  # experiment name -> its tab's view (app/lab/views.py)
        self.tabs = QTabWidget()
        for kind, tab in TABS.items():
            view = self.views[kind] = tab.make(self.bridge)
            setattr(self, tab.attr, view)  # lab.quant, lab.confidence, lab.routing, …
            self.tabs.addTab(view, tab.title)
        self.source_text = "Experiments use the playground's model and prompt."
        self.model_name: str | None = None  # the playground's model, when one is loaded
        self.said: dict[str, str] = {}  # per tab: its experiment's last outcome
        self.running: str | None = None  # the experiment in flight
        self.side_b = False  # the experiment in flight is the Confidence tab's side B
        self.status = QLabel(self.source_text)
        self.status.setWordWrap(True)
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setMaximumWidth(220)
        self.progress.hide()
        head = QHBoxLayout()
        head.addWidget(self.status, 1)
        head.addWidget(self.progress)
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(self.tabs, 1)
        for kind, view in self.views.items():
            view.run_requested.connect(lambda k=kind: self._on_run_requested(k))
        self.confidence.compare_requested.connect(self.compare_confidence)
        self.bridge.progress.connect(self._on_progress)
        self.bridge.lab_done.connect(self._on_done)
        self.bridge.failed.connect(
            lambda e: self._finish(f"The experiment failed. {error_text(e)}", self.running)
        )
        self.bridge.busy_changed.connect(self._on_busy)
        self.tabs.currentChanged.connect(lambda _i: self._show_status())

    def show_source(self, _record=None) -> None:
        """Say which model and prompt the next experiment runs on (the playground's)."""
        if self.bridge.busy:
            return
        model, prompt, _settings = self.source()
        self.distill.set_teacher(model)  # the playground's model teaches
        self.routing.set_small(model)  # and answers first in the cascade
        self.model_name = model.name if model is not None else None
        if model is None:
            self.source_text = "Load a local model in the playground to run experiments."
        else:
            prompt = " ".join(prompt.split())[:80] or "Explain why the sky is blue."
            self.source_text = f"Experiments run on {model.name} with the prompt “{prompt}”."
        self.said.clear()  # another model or prompt: earlier outcomes are not this one's
        self._show_status()

    def show_tab(self, kind: str) -> QWidget:
        """Bring the tab of experiment `kind` (e.g. "distill") on screen; returns its view."""
        view = self.views[tab_of(kind)]
        self.tabs.setCurrentWidget(view)
        return view

    def current_kind(self) -> str:
        """The experiment of the tab on screen (quant | cache | speculative | batch |
        distill | calibrate | route)."""
        view = self.tabs.currentWidget()
        return next(k for k, v in self.views.items() if v is view)

    def _show_status(self) -> None:
        """The header for the tab on screen: its outcome, else the model and prompt."""
        if self.bridge.busy:
            return  # the running experiment's progress stays
        self.status.setText(
            self.said.get(self.current_kind(), self._source_of(self.current_kind()))
        )

    def _source_of(self, kind: str) -> str:
        """What experiment `kind` runs on, in words: the playground's model and prompt, or
        its model and the tab's own input."""
        if kind in OWN_INPUT and self.model_name is not None:
            return f"Experiments run on {self.model_name}; this one with {OWN_INPUT[kind]}."
        return self.source_text

    def _on_run_requested(self, kind: str) -> None:
        """A tab's Run button: its view's parameters, checked, then run."""
        try:
            params = self.views[kind].params()
        except SettingsError as e:
            self._finish(f"Check the experiment's settings: {e}", kind)
            return
        self.start(params)

    def start(self, params: LabParams) -> bool:
        """Run the experiment `params` on the playground's model and prompt (the
        conversation of the cache experiment starts with that prompt)."""
        kind = tab_of(params.kind)
        model, prompt, settings = self.source()
        if model is None or model.backend != "mlx" or not Path(model.path).is_dir():
            self._finish("The lab needs a local model's weights: load one in the playground.", kind)
            return False
        prompt = prompt.strip() or "Explain why the sky is blue."
        field = TABS[kind].prompt_field  # e.g. the cache experiment's first message
        try:
            experiment = replace(params, **{field: prompt}) if field else params
        except SettingsError as e:
            self._finish(f"Check the experiment's settings: {e}", kind)
            return False
        if not self.bridge.lab(experiment, prompt, settings, model.path):
            self.status.setText("An experiment is already running; wait for it to finish.")
            return False
        self.running = kind
        show = getattr(self.views[kind], "show_params", None)
        if show is not None:  # started from elsewhere (the tour): its tab shows what runs
            show(params)
        what = OWN_INPUT.get(kind) or repr(prompt[:80])
        self.status.setText(f"Running on {Path(model.path).name}: {what}…")
        return True

    def compare_confidence(self) -> bool:
        """Run the Confidence tab's result's parameters (the same questions, samples,
        temperature, limit and seed) on the model chosen in "Compare with…": side B.
        Its answers are not journaled (the tab's rows open side A's). Returns whether
        it started."""
        view, path = self.confidence, self.confidence.chosen_model()
        if view.ran is None or path is None:
            self._finish(
                "Run the questions first, then choose a model to compare with.", "calibrate"
            )
            return False
        if not Path(path).is_dir():
            self._finish(f"The model to compare with is not a local folder: {path}", "calibrate")
            return False
        _model, prompt, settings = self.source()
        params = replace(view.ran, journal=False)
        if not self.bridge.lab(params, prompt or "", settings, path):
            self.status.setText("An experiment is already running; wait for it to finish.")
            return False
        self.running, self.side_b = "calibrate", True
        view.show_compare_params(path)
        self.status.setText(f"Running on {Path(path).name}: {OWN_INPUT['calibrate']}, side B…")
        return True

    def _on_progress(self, message: str, fraction: float) -> None:
        self.status.setText(message)
        self.progress.setValue(int(100 * fraction))

    def _on_done(self, record) -> None:
        """A LabRecord: its result dataclass, drawn by its experiment's tab."""
        result: LabResult = record.result
        kind = tab_of(result.kind)
        if kind == "calibrate" and self.side_b:
            self.confidence.show_other(result)
        else:
            self.views[kind].show_result(result)
        self._finish(DONE, kind)

    def _finish(self, message: str, kind: str | None) -> None:
        """`message` about experiment `kind`: kept for its tab, shown on it now."""
        if kind is None:
            self.status.setText(message)
            return
        self.said[kind] = message
        current = self.current_kind()
        self.status.setText(self.said.get(current, self._source_of(current)))

    def _on_busy(self, busy: bool) -> None:
        if not busy:
            self.side_b = False
        self.progress.setVisible(busy)
        for view in self.views.values():
            view.run.setEnabled(not busy)
