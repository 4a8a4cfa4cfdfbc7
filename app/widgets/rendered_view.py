"""The answer rendered as Markdown, beside the token view.

The model's text is split into prose and fenced code blocks (```lang … ```; a fence
still open while streaming runs to the end). Prose is drawn by Qt's own Markdown
support (QLabel with Qt.MarkdownText: no HTML from the model is ever interpreted as
such, Qt escapes it); each code block is monospaced, with its language and a Copy
button. `add_copy_actions` gives any answer's context menu Copy answer / Copy as
Markdown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase, QGuiApplication, QTextDocument
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)[^\n]*$")
REFRESH_MS = 150  # while the rendered tab is shown and tokens stream in
MAX_RENDERED = 100_000  # characters of the answer rendered; Qt lays out megabytes for minutes


@dataclass(frozen=True)
class Block:
    """A piece of the answer: prose (Markdown) or a fenced code block."""

    kind: str  # "text" | "code"
    text: str
    language: str = ""


def split_blocks(markdown: str) -> list[Block]:
    """The answer's prose and fenced code blocks, in order.

    Args:
        markdown: the answer as the model wrote it.

    Returns:
        Blocks; empty prose between blocks is left out. An unclosed fence (a code
        block still streaming) runs to the end of the text.
    """
    blocks, lines, fence, language = [], [], None, ""
    for line in markdown.split("\n"):
        m, bare = FENCE.match(line), line.strip()
        if fence is None and m:
            _flush(blocks, "text", lines)
            fence, language, lines = m.group(1), m.group(2), []
        elif fence is not None and len(bare) >= len(fence) and set(bare) == {fence[0]}:
            blocks.append(Block("code", "\n".join(lines), language))
            fence, lines = None, []
        else:
            lines.append(line)
    if fence is not None:
        blocks.append(Block("code", "\n".join(lines), language))
    else:
        _flush(blocks, "text", lines)
    return blocks


def _flush(blocks: list[Block], kind: str, lines: list[str]) -> None:
    text = "\n".join(lines).strip("\n")
    if text.strip():
        blocks.append(Block(kind, text))


def plain_text(markdown: str) -> str:
    """The answer as a reader sees it (Markdown syntax rendered away)."""
    doc = QTextDocument()
    doc.setMarkdown(markdown)
    return doc.toPlainText()


def copy_answer(markdown: str, as_markdown: bool = False) -> None:
    """Put the answer on the clipboard: rendered as plain text, or as its Markdown.

    Text only: a QMimeData handed to the clipboard (to add an HTML flavour) crashes
    PySide6 when the application exits (a double delete, seen on Qt's offscreen
    platform), and a copy must never cost the person a crash on quit."""
    if as_markdown:
        QGuiApplication.clipboard().setText(markdown)
        return
    doc = QTextDocument()
    doc.setMarkdown(markdown)
    QGuiApplication.clipboard().setText(doc.toPlainText())


def add_copy_actions(menu: QMenu, markdown: str) -> None:
    """Copy answer / Copy as Markdown at the end of an answer's context menu."""
    menu.addSeparator()
    for label, as_md in (("Copy answer", False), ("Copy as Markdown", True)):
        act = menu.addAction(label, lambda m=as_md: copy_answer(markdown, m))
        act.setEnabled(bool(markdown))


class CodeBlock(QFrame):
    """One fenced code block: monospaced, selectable, with a Copy button."""

    def __init__(self, block: Block, parent=None):
        super().__init__(parent)
        self.code = block.text
        self.setObjectName("codeBlock")
        self.setStyleSheet(
            "#codeBlock { background: palette(alternate-base); border: 1px solid palette(mid);"
            " border-radius: 4px; }"
        )
        self.copy_button = QToolButton()
        self.copy_button.setText("Copy")
        self.copy_button.setToolTip("Copy this code block")
        self.copy_button.setAccessibleName(f"Copy {block.language or 'code'} block")
        self.copy_button.clicked.connect(self.copy)
        self.label = QLabel(block.text)
        self.label.setTextFormat(Qt.PlainText)
        self.label.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.label.setAccessibleName(f"{block.language or 'Code'} block")
        head = QHBoxLayout()
        head.addWidget(QLabel(block.language or "code"))
        head.addStretch(1)
        head.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 6)
        layout.addLayout(head)
        layout.addWidget(self.label)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.code)
        self.copy_button.setText("Copied")
        QTimer.singleShot(1500, self.copy_button, lambda: self.copy_button.setText("Copy"))


class RenderedView(QScrollArea):
    """The answer as Markdown. Takes `source`, a () -> str giving the answer's text;
    `refresh()` redraws it (only when the text changed)."""

    def __init__(self, source, parent=None):
        super().__init__(parent)
        self._source, self._shown = source, None
        self.setWidgetResizable(True)
        self.setAccessibleName("Rendered answer")
        self.setAccessibleDescription("The answer with its Markdown rendered; code can be copied")
        self.body = QWidget()
        self.layout_ = QVBoxLayout(self.body)
        self.layout_.setAlignment(Qt.AlignTop)
        self.setWidget(self.body)
        self.timer = QTimer(self, interval=REFRESH_MS, singleShot=True, timeout=self.refresh)

    def markdown(self) -> str:
        return self._source()

    def schedule(self) -> None:
        """Refresh soon, if shown (called as tokens stream in)."""
        if self.isVisible() and not self.timer.isActive():
            self.timer.start()

    def refresh(self) -> None:
        text = self._source()
        if text == self._shown:
            return
        self._shown = text
        while self.layout_.count():
            self.layout_.takeAt(0).widget().deleteLater()
        blocks = split_blocks(text[:MAX_RENDERED]) or [Block("text", "*No answer yet.*")]
        if len(text) > MAX_RENDERED:  # what is rendered is bounded, what is kept is not
            note = (
                f"*… the answer has {len(text):,} characters: the first {MAX_RENDERED:,} are "
                "rendered here; Copy answer and the exports hold all of it.*"
            )
            blocks.append(Block("text", note))
        for block in blocks:
            self.layout_.addWidget(self._widget(block))

    def _widget(self, block: Block) -> QWidget:
        if block.kind == "code":
            return CodeBlock(block)
        label = QLabel(block.text)
        label.setTextFormat(Qt.MarkdownText)
        label.setWordWrap(True)
        label.setOpenExternalLinks(False)  # a model's link is text, not a click away
        label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        return label

    def code_blocks(self) -> list[CodeBlock]:
        return self.body.findChildren(CodeBlock)

    def contextMenuEvent(self, event):
        menu = QMenu(self)
        add_copy_actions(menu, self._source())
        menu.exec(event.globalPos())

    def showEvent(self, event):
        super().showEvent(event)
        self.refresh()
