"""The Rendered tab: the answer as Markdown, code blocks monospaced with Copy."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QLabel

from app.shell.layout import answer_tabs_of
from app.widgets.rendered_view import Block, copy_answer, plain_text, split_blocks
from app.widgets.token_view import TokenView
from engine.run.records import TokenRecord

ANSWER = "Use **sorted**:\n\n```python\nprint(sorted([3, 1, 2]))\n```\n\nThat prints `[1, 2, 3]`."


def _tokens(text: str, size: int = 5) -> list[TokenRecord]:
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    return [
        TokenRecord(
            step=i,
            token_id=i,
            text=t,
            logprob=None,
            prob=0.5,
            sampled_logprob=None,
            top=(),
            sampled_top=(),
            entropy=None,
            sampled_entropy=None,
            elapsed_s=0.0,
            latency_s=0.0,
            context_tokens=i,
        )  # fmt: skip
        for i, t in enumerate(pieces)
    ]


def test_split_blocks_finds_prose_and_code():
    assert split_blocks(ANSWER) == [
        Block("text", "Use **sorted**:"),
        Block("code", "print(sorted([3, 1, 2]))", "python"),
        Block("text", "That prints `[1, 2, 3]`."),
    ]
    streaming = split_blocks("Here:\n~~~\nx = 1")  # the fence is not closed yet
    assert streaming[-1] == Block("code", "x = 1", "")


def test_rendered_tab_shows_a_code_block_with_copy(qtbot):
    output = TokenView()
    tabs, rendered = answer_tabs_of(output)
    qtbot.addWidget(tabs)
    tabs.show()
    assert tabs.currentWidget() is output  # tokens stay the default view
    output.append_tokens(_tokens(ANSWER))
    tabs.setCurrentWidget(rendered)
    qtbot.waitUntil(lambda: len(rendered.code_blocks()) == 1, timeout=2000)
    block = rendered.code_blocks()[0]
    assert block.label.text() == "print(sorted([3, 1, 2]))"
    # The system's fixed font, as asked of Qt (Qt calls some mono fonts, Noto Sans Mono
    # among them, not fixed-pitch: what the app asks for is what it can answer for).
    fixed = QFontDatabase.systemFont(QFontDatabase.FixedFont)
    assert block.label.font().family() == fixed.family()
    prose = [w for w in rendered.body.findChildren(QLabel) if w.textFormat() == Qt.MarkdownText]
    assert [p.text() for p in prose] == ["Use **sorted**:", "That prints `[1, 2, 3]`."]
    block.copy_button.click()
    assert QGuiApplication.clipboard().text() == "print(sorted([3, 1, 2]))"
    assert block.copy_button.text() == "Copied"


def test_copy_answer_and_copy_as_markdown(qtbot):
    copy_answer(ANSWER, as_markdown=True)
    assert QGuiApplication.clipboard().text() == ANSWER
    copy_answer(ANSWER)
    copied = QGuiApplication.clipboard().text()
    assert copied == plain_text(ANSWER)
    assert "Use sorted:" in copied and "**" not in copied
