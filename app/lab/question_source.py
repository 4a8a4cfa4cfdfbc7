"""The question set a Lab tab answers (Confidence, Routing): the label that names it
with its size, the file dialog that picks another, and a question's journaled answer
found again for the playground. One copy for both tabs."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from engine.errors import SettingsError
from engine.lab.questions import bundled_path, load_questions


def show_question_source(label, bundled_button, questions: str | None) -> None:
    """Name `questions` (a file, or None: the bundled set) and its size on `label`; the
    Bundled set button is offered only when another set is chosen."""
    path = Path(questions) if questions else bundled_path()
    try:
        n = f" ({len(load_questions(questions)):,})"
    except SettingsError:  # a file that went bad since: said when Run is pressed
        n = ""
    label.setText(("bundled set" if questions is None else path.name) + n)
    label.setToolTip(str(path))
    bundled_button.setEnabled(questions is not None)


def choose_question_file(parent) -> str | None:
    """A question file (JSONL or CSV) the person picks; None when they cancel."""
    path, _filter = QFileDialog.getOpenFileName(
        parent, "Question file", "", "Questions (*.jsonl *.csv);;All files (*)"
    )
    return path or None


def journaled_answer(run_id: str | None, unsaved: str, error: str = ""):
    """(the RunLog of `run_id`, "") to open in the playground, or (None, why not): the
    answer was not saved (`unsaved` names what, `error` says why) or left History."""
    from engine.sessions.journal import find

    if not run_id:
        return None, f"{unsaved} not saved to History" + (f": {error}" if error else ".")
    try:
        return find(run_id)[1], ""
    except LookupError as e:
        return None, f"This answer is no longer in History: {e}"
