"""The playground's own windows: Compare, Inside the model and the Lab.

Each is made on first use as a child window of the playground (closed with it
and by Quit, its engine process with it), made afresh after it was closed, and
brought back un-minimised (their one lifecycle: app/core/child_window.py).
They are given what they show (the session adapter, Compare's lanes, the journal,
the prompt, the model and settings), never the playground window itself.
"""

from __future__ import annotations

from collections.abc import Callable


class ChildWindows:
    def __init__(
        self, parent, model, journal: Callable, prompt_text: Callable, lab_source: Callable
    ):
        """Args:
        parent: the playground (their parent window).
        model: the session adapter (SessionSignals) Inside follows.
        journal: () -> the session's Journal (created when needed) or None.
        prompt_text: () -> the prompt box's text (Compare starts from it).
        lab_source: () -> the playground's (model record, prompt text, settings): the lab
            runs on them, and Compare's new lanes take the settings.
        """
        self.parent, self.model, self.journal = parent, model, journal
        self.prompt_text, self.lab_source = prompt_text, lab_source
        self.compare = self.inside = self.lab = None

    def open_compare(self):
        """Compare: its own engine process, this session's journal; new lanes start from
        the playground's settings."""
        from app.compare.window import CompareWindow

        if self.compare is None or self.compare.closed:
            comparison = self.model.session.comparison  # its lanes outlive the window
            self.compare = CompareWindow(
                comparison,
                journal=self.journal(),
                parent=self.parent,
                playground_settings=lambda: self.lab_source()[2],
            )
            comparison.set_shared_prompt(self.prompt_text())
        return self.compare.bring_back()

    def open_inside(self, step: int | None = None):
        """Inside the model, on the session's run on screen and `step` (its selected one
        by default; a given step opens the attention view)."""
        from app.inside.window import TABS, InsideWindow

        if self.inside is None or self.inside.closed:
            self.inside = InsideWindow(self.model, self.parent)
        state = self.model.session.shown
        self.inside.follow(state, step if step is not None else state.selected)
        if step is not None:
            self.inside.tabs.setCurrentIndex(TABS.index("attention"))
        return self.inside.bring_back()

    def open_lab(self):
        from app.lab.window import LabWindow

        if self.lab is None or self.lab.closed:
            self.lab = LabWindow(self.lab_source, parent=self.parent)
            self.model.model_changed.connect(self.lab.show_source)  # the playground's model
            load = getattr(self.parent, "load_model", None)  # the playground's (not in tests)
            if load is not None:
                self.lab.distill.open_student.connect(load)  # a student it made
            self.lab.confidence.open_run.connect(self.show_from_lab)  # a question's answer
            self.lab.routing.open_run.connect(self.show_from_lab)  # a routed question's
            history = getattr(self.parent, "history", None)
            if history is not None:  # the engine journaled the answers: History lists them
                self.lab.confidence.runs_saved.connect(lambda _sid: history.refresh())
        self.lab.show_source()
        return self.lab.bring_back()

    def show_from_lab(self, run) -> None:
        """Show `run` (a RunLog the Lab journaled: a Confidence question's answer) in the
        playground, read-only (app/session/guest.py), and bring the playground in front."""
        self.parent.show_run(run)
        self.parent.raise_()
        self.parent.activateWindow()

    def cleanup(self) -> None:
        if self.compare is not None:
            self.compare.close()  # saves its geometry and stops its engine
