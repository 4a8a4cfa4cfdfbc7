"""The conversation above the answer: earlier turns as a transcript, and a line
naming the turn the answer view shows, each with show / edit / regenerate links.
Links and secondary text take the palette's colours, and both redraw on a change of
theme."""

from __future__ import annotations

import html

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import QLabel, QTextBrowser

from app.core.appearance import on_theme
from app.core.theme import note_color
from app.session import Answer, Conversation
from engine.display.units import human_bytes
from engine.machine.hardware_timeline import cache_reuse


def _link_style() -> str:
    """A link in the palette's link colour (readable on light and dark)."""
    return f"color:{QGuiApplication.palette().color(QPalette.Link).name()}; text-decoration:none;"


def _links(conv: Conversation, i: int, shown: bool) -> str:
    link = _link_style()
    show = "" if shown else f"<a style='{link}' href='show:{i}'>show</a> · "
    return (
        f"<span style='font-size:8pt'>{_siblings(conv, i)}{show}"
        f"<a style='{link}' href='edit:{i}'>edit</a> · "
        f"<a style='{link}' href='regen:{i}'>regenerate</a></span>"
    )


def _siblings(conv: Conversation, i: int) -> str:
    """'‹ 2/3 › · ' when turn i has several runs (regenerated or edited), else ''."""
    answers, current = conv.siblings(i)
    if len(answers) < 2:
        return ""
    link = _link_style()
    prev = f"<a style='{link}' href='prev:{i}'>‹</a>" if current > 0 else "‹"
    nxt = f"<a style='{link}' href='next:{i}'>›</a>" if current < len(answers) - 1 else "›"
    return f"{prev} run {current + 1}/{len(answers)} {nxt} · "


def turn_stats(turn: Answer) -> str:
    """'42 tokens · TTFT 0.31 s (140 of 155 from cache) · KV 7.1 MB', or '' while unknown."""
    s = turn.state
    d = s.done if s is not None else None
    if d is None:
        return ""
    parts = [f"{d.generated_tokens} tokens"]
    thinking = sum(getattr(t, "thinking", False) for t in s.tokens)
    if thinking:
        parts.append(f"{thinking} thinking")
    if d.ttft_s is not None:
        reuse = f" ({cache_reuse(d)})" if d.cached_tokens else ""
        parts.append(f"TTFT {d.ttft_s:.2f} s{reuse}")
    if d.kv_cache_bytes:
        parts.append(f"KV {human_bytes(d.kv_cache_bytes)}")
    return " · ".join(parts)


class ConversationView(QTextBrowser):
    """Turns before the one shown below; hidden while there are none."""

    turn_link = Signal(str, int)  # ("show" | "edit" | "regen" | "prev" | "next", turn index)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setMinimumHeight(60)
        self.setToolTip(
            "The conversation so far: each turn is sent again with the next "
            "message, its tokens reused from the KV cache"
        )
        self.anchorClicked.connect(self._on_link)
        self._shown: tuple | None = None  # what show_conversation drew, for a new theme
        on_theme(self, lambda view: view._shown and view.show_conversation(*view._shown))
        self.hide()

    def show_conversation(self, conv: Conversation, shown: int | None) -> None:
        """The turns before `shown` (the one in the answer view, drawn below this): a
        later turn is never drawn above an earlier one; the turn line names the turns
        that follow (TurnLabel). With no turn shown, every turn."""
        self._shown = (conv, shown)
        note = note_color()
        rows = []
        for i, turn in enumerate(conv.turns):
            if shown is not None and i >= shown:
                break
            stats = turn_stats(turn)
            answer = html.escape(_drawn(turn.answer)) or "<i>(no answer)</i>"
            rows.append(
                f"<p style='margin:2px 0'><b>You</b> <span style='color:{note}'>turn "
                f"{conv.dropped + i + 1}</span> {_links(conv, i, False)}<br>"
                f"{html.escape(turn.user)}</p><p style='margin:2px 0 8px 12px'>"
                f"<b>Assistant</b> <span style='color:{note};font-size:8pt'>{stats}</span><br>"
                f"{answer}</p>"
            )
        self.setHtml("".join(rows).replace("\n", "<br>"))
        self.setVisible(bool(rows))
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def _on_link(self, url) -> None:
        kind, _, index = url.toString().partition(":")
        if index.isdigit():
            self.turn_link.emit(kind, int(index))


def _later(conv: Conversation, i: int) -> str:
    """'an earlier turn: turn 2 follows, show' (the turns after turn i, linked)."""
    later = len(conv.turns) - 1 - i
    first, last = conv.dropped + i + 2, conv.dropped + len(conv.turns)
    which = f"turn {first} follows" if later == 1 else f"turns {first}–{last} follow"
    return (
        f"an earlier turn: {which}, "
        f"<a style='{_link_style()}' href='show:{len(conv.turns) - 1}'>show the latest</a>"
    )


class TurnLabel(QLabel):
    """'Turn 3 · You: …' above the answer, with the same links."""

    turn_link = Signal(str, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.linkActivated.connect(self._on_link)
        self._shown: tuple | None = None  # what show_turn drew, for a new theme
        on_theme(self, lambda label: label._shown and label.show_turn(*label._shown))
        self.hide()

    def show_turn(self, conv: Conversation, i: int | None) -> None:
        """Name turn `i` of `conv` (the one the answer view shows), with its links."""
        self._shown = (conv, i)
        if i is None or i >= len(conv.turns):
            self.clear()
            self.hide()
            return
        turn = conv.turns[i]
        text = html.escape(" ".join(turn.user.split()))
        if len(text) > 300:
            text = text[:300] + "…"
        latest = "" if i == len(conv.turns) - 1 else f" <i>({_later(conv, i)})</i>"
        self.setText(
            f"<b>Turn {conv.dropped + i + 1}</b>{latest} · <b>You:</b> {text} "
            f"&nbsp; {_links(conv, i, True)}"
        )
        self.show()

    def _on_link(self, link: str) -> None:
        kind, _, index = link.partition(":")
        if index.isdigit():
            self.turn_link.emit(kind, int(index))


MAX_ANSWER_SHOWN = 20_000  # characters of an earlier answer drawn (Qt lays out megabytes slowly)


def _drawn(answer: str) -> str:
    """An earlier turn's answer as drawn: cut at MAX_ANSWER_SHOWN, saying its size."""
    if len(answer) <= MAX_ANSWER_SHOWN:
        return answer
    return f"{answer[:MAX_ANSWER_SHOWN]}… ({len(answer):,} characters; the history keeps all)"
