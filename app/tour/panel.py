"""The tour panel (Help ▸ Tour…): a dock beside the playground, never modal. It shows
one lesson at a time (title, text, progress), runs its experiment on *Show me* by
resuming the lesson's generator whenever the predicate it waits on holds, then shows
the sentence computed from what ran and asks the host to highlight the view."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.core.appearance import themed_style
from app.core.theme import by_theme
from app.tour.highlight import FRAME_COLOUR
from app.tour.host import Sentence
from app.tour.lessons import LESSONS, Lesson

SENTENCE_TEXT = ("#1f2937", "#e5e7eb")  # light / dark: read first, so full contrast
POLL_MS = 25  # how often a waiting experiment is looked at (a cheap check; 100 ms added
# 50 ms on average to each of a lesson's steps: the read lesson waits on 17 reads)
# px: one width whatever a sentence says, so windows placed beside it stay beside it
PANEL_WIDTH = 340
NEEDS_LOCAL = (
    "This lesson reads the model's weights, which a server does not share, so nothing ran: "
    "switch to a local model (the button below, or File ▸ Open model…) and press Show me again."
)


class TourPanel(QDockWidget):
    finished = Signal(str, object, object)  # lesson key, ctx dict, Sentence
    closed = Signal()  # the person closed the tour: their playground comes back

    def __init__(self, host, parent=None, lessons: tuple[Lesson, ...] = LESSONS):
        super().__init__("Tour", parent)
        self.setObjectName("tour")
        self.host, self.lessons, self.index = host, lessons, 0
        self.ctx: dict = {}
        self.result: Sentence | None = None
        self._gen = self._waiting = None
        self.timer = QTimer(self, interval=POLL_MS)
        self.timer.timeout.connect(self._poll)
        self._build()
        self.show_lesson(0)

    def _build(self) -> None:
        body = QWidget()
        self.progress = QLabel()
        self.title = QLabel()
        self.title.setWordWrap(True)
        themed_style(  # a stylesheet's colour is fixed when set: given again on a theme change
            self.title,
            lambda: f"font-weight: 600; font-size: 13pt; color: {by_theme(SENTENCE_TEXT)};",
        )
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.show_me = QPushButton("Show me")
        self.show_me.setToolTip("Run this lesson's experiment on the loaded model")
        self.sentence = QLabel()
        self.sentence.setWordWrap(True)
        self.sentence.setTextInteractionFlags(Qt.TextSelectableByMouse)
        themed_style(self.sentence, _sentence_css)
        self.switch = QPushButton()  # offered when a lesson needs a local model
        self.switch.hide()
        self.switch.clicked.connect(self._switch)
        self.back, self.next = QPushButton("Back"), QPushButton("Next")
        nav = QHBoxLayout()
        nav.addWidget(self.back)
        nav.addStretch(1)
        nav.addWidget(self.next)
        layout = QVBoxLayout(body)
        for w in (self.progress, self.title, self.text, self.show_me, self.sentence, self.switch):
            layout.addWidget(w)
        layout.addStretch(1)
        layout.addLayout(nav)
        self.setWidget(body)
        self.setFixedWidth(PANEL_WIDTH)
        self.show_me.clicked.connect(self.run_lesson)
        self.back.clicked.connect(lambda: self.show_lesson(self.index - 1))
        self.next.clicked.connect(lambda: self.show_lesson(self.index + 1))

    @property
    def lesson(self) -> Lesson:
        return self.lessons[self.index]

    @property
    def running(self) -> bool:
        return self._gen is not None

    def show_lesson(self, index: int) -> None:
        """Lesson `index` (0-based), its experiment not yet run."""
        self._stop()
        self.index = max(0, min(index, len(self.lessons) - 1))
        x = self.lesson
        self.progress.setText(f"Lesson {self.index + 1} of {len(self.lessons)}")
        self.title.setText(x.title)
        self.text.setText(x.text)
        self.sentence.clear()
        self.sentence.hide()
        self.switch.hide()
        self.back.setEnabled(self.index > 0)
        self.next.setEnabled(self.index < len(self.lessons) - 1)
        self.ctx, self.result = {}, None

    def run_lesson(self) -> None:
        """Show me: set up and run the lesson's experiment."""
        if self.running:
            return
        self.ctx, self.result = {}, None
        self.switch.hide()
        if self.lesson.needs_local and not self.host.local():
            self.ctx["needs_local"] = True
            self._say(Sentence(NEEDS_LOCAL))
            self._offer_local()
            self.finished.emit(self.lesson.key, self.ctx, self.result)
            return
        self.show_me.setEnabled(False)
        self.show_me.setText("Running…")
        self.sentence.setText("Running on the loaded model…")
        self.sentence.show()
        self._gen = self.lesson.show_me(self.host, self.ctx)
        self._advance()

    def _advance(self) -> None:
        """Resume the experiment until it waits on something not yet true, or ends."""
        try:
            while True:
                wait = next(self._gen)
                if not wait():
                    self._waiting = wait
                    self.timer.start()
                    return
        except StopIteration:
            self._end()

    def _poll(self) -> None:
        if self._waiting is not None and self._waiting():
            self.timer.stop()
            self._waiting = None
            self._advance()

    def _end(self) -> None:
        self._stop()
        x = self.lesson
        self._say(x.sentence(self.ctx))
        if self.ctx.get("needs_local"):  # it found out while running (a server's refusal)
            self._offer_local()
        self.host.highlight(x.target)
        self.finished.emit(x.key, self.ctx, self.result)

    def _offer_local(self) -> None:
        self.switch.setText(f"Switch to {self.host.local_choice()}")
        self.switch.show()

    def _switch(self) -> None:
        """Load the local model offered (the lesson is run again with Show me once loaded)."""
        if self.host.switch_to_local():
            self.switch.hide()
            self._say(Sentence(f"Loading {self.host.local_choice()}… then press Show me."))

    def _say(self, sentence: Sentence) -> None:
        self.result = sentence
        self.sentence.setText(sentence.text)
        self.sentence.show()

    def _stop(self) -> None:
        """Stop following an experiment (what it started runs on, shown where it runs)."""
        self.timer.stop()
        self._gen = self._waiting = None
        self.show_me.setEnabled(True)
        self.show_me.setText("Show me")

    def cleanup(self) -> None:
        self._stop()

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self._stop()
        super().closeEvent(event)
        self.closed.emit()


def _sentence_css() -> str:
    return (
        # a border-left alone is not drawn: the whole border is declared first
        f"QLabel {{ padding: 6px; border: 0px solid transparent; "
        f"border-left: 3px solid {FRAME_COLOUR}; "
        f"color: {by_theme(SENTENCE_TEXT)}; font-weight: 500; }}"
    )
