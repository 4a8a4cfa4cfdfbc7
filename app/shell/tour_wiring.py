"""The tour in the playground: Help ▸ Tour… opens the tour panel (app/tour/) as a dock,
and the window is its TourHost: lessons start runs, branches, Inside and the Lab only
through the window's public pieces here. `offer_once` asks a new user, once
(remembered in the settings store), whether to start it; the app calls it at start
(app/main.py), tests never do."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QGroupBox, QMessageBox

from app.shell.menus import add_help_action
from app.shell.tour_guest import TourGuest, place_beside
from app.tour.highlight import Highlighter
from app.tour.panel import TourPanel
from app.widgets.controls import CHAT_MODE, RAW_MODE, READ_MODE
from engine.models.default_model import DEFAULT_MODEL_NAME

MODES = {"chat": CHAT_MODE, "raw": RAW_MODE, "read": READ_MODE}
OFFERED_KEY = "tour/offered"
# The distillation lesson reads the shipped text's start (all 6 KB took 2 minutes here)
DISTILL_CHARS, TINY_DISTILL_CHARS = 600, 200


class WindowTourHost:
    """The playground as a TourHost (app/tour/host.py)."""

    def __init__(self, window):
        self.w = window
        self.panel = None  # the tour's panel: windows a lesson opens sit beside it
        self.lab_results: dict[str, object] = {}
        self._lab_bridge = None
        self.highlighter = Highlighter(window)
        self.highlighted = None  # the widget framed last (tests read it)
        self.tiny = False  # the smallest experiments (the tests' walks on Gemma and a server)
        self._busy: dict[int, bool] = {}  # per bridge, as its busy_changed last said
        self._watch(window.bridge)

    def _watch(self, bridge) -> None:
        """Follow `bridge`'s busy_changed: its thread ends before its last records are
        delivered, so `bridge.busy` turns False before the run's end reached the views."""
        if id(bridge) not in self._busy:
            self._busy[id(bridge)] = bridge.busy
            # a slot before this one may start the next request inside the emission of False
            bridge.busy_changed.connect(lambda b, k=id(bridge): self._set_busy(k, bridge, b))

    def _set_busy(self, key: int, bridge, busy: bool) -> None:
        self._busy[key] = busy or bridge.busy

    def _idle(self, bridge) -> bool:
        return not bridge.busy and not self._busy.get(id(bridge), False)

    # -- the playground ------------------------------------------------------------
    def local(self) -> bool:
        rec = self.w.model_record
        return rec is not None and rec.backend == "mlx" and Path(rec.path).is_dir()

    def local_choice(self) -> str:
        return DEFAULT_MODEL_NAME

    def switch_to_local(self) -> bool:
        if self.w.bridge.busy:
            self.w.show_error("Wait for the current run to finish before switching models.")
            return False
        self.w.load_model(None)  # the default model, fetched by the setup
        return True

    def model_name(self) -> str:
        rec = self.w.model_record
        return rec.name if rec is not None else "no model"

    def _settings(self, mode=None, temperature=None, max_tokens=None, seed=None) -> None:
        c = self.w.controls
        if mode is not None:
            c.mode.setCurrentIndex(MODES[mode])
        if temperature is not None:
            c.temp_spin.setValue(temperature)
        if max_tokens is not None:
            c.max_tokens.setValue(max_tokens)
        if seed is not None:
            c.seed_lock.setChecked(True)
            c.seed.setValue(seed)

    def run(self, prompt, *, mode="raw", temperature=0.0, max_tokens=6, seed=7, cold=False):
        if self.w.bridge.busy:
            self.w.show_error("Wait for the current run to finish (or stop it) first.")
            return False
        self.w.hide_error()
        self.w.model.clear_conversation()  # each lesson afresh, in the tour's one session
        self._settings(mode, temperature, max_tokens, seed)
        self.w.prompt.setPlainText(prompt)
        self.w.run(cold=cold)
        return not self._idle(self.w.bridge)

    def idle(self) -> bool:
        w = self.w
        escalating = w.right_size_flow.escalating is not None
        return self._idle(w.bridge) and w.session.sampling is None and not escalating

    def second_model(self) -> str | None:
        from engine.lab.routing import model_key
        from engine.models.catalogue import list_models

        rec = self.w.model_record
        mine = model_key(rec.path) if rec is not None and rec.backend == "mlx" else None
        others = [m for m in list_models() if Path(m.path).is_dir() and model_key(m.path) != mine]
        if not others:
            return None
        return max(others, key=lambda m: m.parameters or 0).path

    def right_size(self, large, signal, threshold) -> None:
        from app.session.right_size import RightSizing

        sizing = RightSizing(large or "", signal, threshold)
        self.w.right_size.set(sizing if large else self.w.right_size.settings, bool(large))

    def turn_runs(self) -> list:
        conversation = self.w.session.conversation
        if not len(conversation):
            return [self.w.state]
        return [a.state for a in conversation.siblings(0)[0] if a.state is not None]

    def shown(self):
        return self.w.state

    def select(self, step) -> None:
        self.w.select_step(step)

    def sample(self, step, n, temperature, seed) -> bool:
        self._settings(temperature=temperature, seed=seed)
        return self.w.branch_flow.sample(step, n=n)

    def samples(self) -> list:
        home = self.w.session.home()
        answers = home.answers if home is not None else []
        return [a.state for a in answers if a.branch_kind == "sample"]

    def branch(self, step, token_id) -> bool:
        return self.w.branch_flow.branch(step, token_id=token_id)

    # -- Inside the model ------------------------------------------------------------
    @property
    def inside_window(self):
        win = self.w.windows.inside
        return None if win is None or win.closed else win

    def inside(self, step, tab) -> None:
        from app.inside.window import TABS

        win = self.inside_window
        if win is not None:  # on its tab before it follows the step: one computation
            win.tabs.blockSignals(True)
            win.tabs.setCurrentIndex(TABS.index(tab))
            win.tabs.blockSignals(False)
        self.w.select_step(step)
        win = self.w.open_inside()
        self._beside(win)
        self._watch(win.bridge)
        if win.tabs.currentIndex() != TABS.index(tab):
            win.tabs.setCurrentIndex(TABS.index(tab))
        else:
            win.refresh()

    def inside_record(self, what):
        win = self.inside_window
        if win is None:
            return None
        record = win.cache.get(win._key())
        return record if record is not None and record.what == what else None

    def inside_idle(self) -> bool:
        win = self.inside_window
        return win is None or (self._idle(win.bridge) and win.pending is None)

    # -- the Lab ---------------------------------------------------------------------
    def _lab(self):
        lab = self.w.open_lab()
        self._beside(lab)
        if self._lab_bridge is not lab.bridge:  # a new Lab window: listen to its results
            self._lab_bridge = lab.bridge
            self._watch(lab.bridge)
            lab.bridge.lab_done.connect(self._on_lab_done)
        return lab

    def _on_lab_done(self, record) -> None:
        self.lab_results[record.result.kind] = record.result

    def lab(self, params, prompt) -> bool:
        from app.lab.window import OWN_INPUT

        if params.kind not in OWN_INPUT:  # a question set leaves the playground as it is
            self._settings(mode="raw")
            self.w.prompt.setPlainText(prompt)
        lab = self._lab()
        lab.tabs.setCurrentWidget(lab.views[params.kind])
        self.lab_results.pop(params.kind, None)
        lab.show_source()
        return lab.start(params)

    def lab_result(self, kind):
        return self.lab_results.get(kind)

    def lab_idle(self) -> bool:
        return self._lab_bridge is None or self._idle(self._lab_bridge)

    def distill_quick(self):
        from app.lab.distill_compare_view import default_text
        from engine.lab import DistillParams
        from engine.lab.params import QUICK_STUDENT_BITS

        text, n = default_text(), TINY_DISTILL_CHARS if self.tiny else DISTILL_CHARS
        if len(text) > n and " " in text[n:]:
            text = text[: text.index(" ", n)]  # cut between words
        path, bits = self.w.model_record.path, QUICK_STUDENT_BITS  # a student that differs
        return DistillParams(student=path, text=text, student_bits=bits)

    def lab_tabs(self) -> tuple[str, ...]:
        return tuple(self._lab().views)

    def open_lab_tab(self, kind) -> None:
        lab = self._lab()
        lab.tabs.setCurrentWidget(lab.views[kind])

    def beside(self, panel) -> None:
        """Windows a lesson opens go beside `panel` (the tour's), never over it."""
        self.panel = panel

    def _beside(self, window) -> None:
        """A window a lesson opens goes beside the tour's panel, never over it (again
        once the layout has settled: a dock's geometry is final only then)."""
        if self.panel is None:
            return
        place_beside(window, self.panel)
        QTimer.singleShot(0, lambda: place_beside(window, self.panel))

    # -- highlighting ------------------------------------------------------------------
    def target_widget(self, target: str):
        """The widget a lesson's `target` names, brought on screen (its tab, its window)."""
        where, _, section = target.partition(":")
        place, _, view = where.partition(".")
        w = self.w
        if place == "inside" and self.inside_window is not None:
            from app.inside.window import TABS

            win = self.inside_window
            win.tabs.setCurrentIndex(TABS.index(view))
            widget = getattr(win, view)
            if section:
                boxes = [b for b in widget.findChildren(QGroupBox) if section in b.title()]
                if boxes:
                    widget.ensureWidgetVisible(boxes[0])
                    widget = boxes[0]
            return widget
        if place == "lab" and view in getattr(w.windows.lab, "views", {}):
            lab = w.windows.lab
            lab.tabs.setCurrentWidget(lab.views[view])
            return lab.views[view]
        if view == "branches":
            w.toggle_side_panel(True)
            w.side_tabs.setCurrentWidget(w.branches_view)
            return w.branches_view
        if view == "thinking" and w.thinking.isVisible():
            return w.thinking
        named = {"temperature": w.temp_chart, "status": w.status_label, "right_size": w.right_size}
        return named.get(view, w.output)

    def highlight(self, target: str) -> None:
        widget = self.target_widget(target)
        top = widget.window()
        for win in (self.inside_window, self.w.windows.lab):  # any a lesson left open too
            if win is not None and win.isVisible():
                self._beside(win)
        if top is not self.w:
            self._beside(top)
        top.show()
        top.raise_()
        top.activateWindow()
        self.highlighted = widget
        self.highlighter.show(widget)


class Tour:
    """Help ▸ Tour… and the panel it opens (made on first use). The tour is a guest
    (app/shell/tour_guest.py): opening it sets the person's playground aside, closing
    it puts it back."""

    def __init__(self, window):
        self.window, self.host, self.panel = window, WindowTourHost(window), None
        self.guest = TourGuest(window)
        self.action = add_help_action(
            window.menuBar(),
            "&Tour…",
            lambda: self.open(),
            "Short live lessons on the loaded model",
        )

    def open(self, index: int | None = None) -> TourPanel:
        if self.panel is None:
            self.panel = TourPanel(self.host, self.window)
            self.panel.closed.connect(self.close)
            self.host.beside(self.panel)
            self.window.addDockWidget(Qt.RightDockWidgetArea, self.panel)
        self.guest.enter()
        if index is not None:
            self.panel.show_lesson(index)
        self.panel.show()
        self.panel.raise_()
        return self.panel

    def close(self) -> None:
        """The tour's panel closed: the person's playground comes back as it was."""
        if self.panel is not None and self.panel.isVisible():
            self.panel.hide()
        if self.panel is not None:
            self.panel.cleanup()
        self.host.highlighter.clear()  # nothing of the tour outlives it
        self.guest.leave()


def wire_tour(window) -> Tour:
    """Add Help ▸ Tour… to `window` (a PlaygroundWindow); returns the Tour."""
    return Tour(window)


def offer_once(window) -> QMessageBox | None:
    """At the app's first start: offer the tour (non-modal), once ever."""
    store = window.store
    if store.value(OFFERED_KEY, "") == "yes":
        return None
    store.setValue(OFFERED_KEY, "yes")
    box = QMessageBox(
        QMessageBox.Question,
        "Take the tour?",
        "New to how language models work? The tour shows it on the model you loaded, in short "
        "live lessons. You can start it any time from Help ▸ Tour….",
        QMessageBox.NoButton,
        window,
    )
    start = box.addButton("Start the tour", QMessageBox.AcceptRole)
    box.addButton("Not now", QMessageBox.RejectRole)
    box.setWindowModality(Qt.NonModal)
    box.buttonClicked.connect(lambda b: window.tour.open(0) if b is start else None)
    box.show()
    return box
