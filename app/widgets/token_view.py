"""TokenView: streamed tokens shaded by probability; hover shows alternatives,
click selects the step every chart follows.

What is drawn is bounded, what is kept is not: a token's shown text is cut at
MAX_TOKEN_SHOWN characters (its size in the tooltip), and once the view has drawn
MAX_VIEW_CHARS characters the later tokens are kept but not drawn (one line says
so). Qt lays out a megabyte of text for minutes on the GUI thread; a hostile
server can send that in one token.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QTextEdit, QToolTip

from app.core.theme import prob_color, prob_text_color, rank_color
from app.widgets.rendered_view import add_copy_actions
from engine.display.units import fmt_prob
from engine.run.records import TokenRecord
from engine.run.run_result import add_token

STEP_PROPERTY = QTextCharFormat.UserProperty + 1


MAX_TOKEN_SHOWN = 200  # characters of one token drawn; the rest elided with ELLIPSIS
MAX_VIEW_CHARS = 200_000  # characters drawn in one view; later tokens are kept, not drawn
ELLIPSIS = "…"
EOS_MARK = "⏎"  # the end-of-sequence step: chosen like any token, adds no text
PART_MARK = "·"  # a token holding part of a UTF-8 character (the next one completes it)


def visible(record: TokenRecord) -> str:
    """What the view shows for a token: its text, with whitespace-only pieces and
    text-less steps made visible so they can be seen, hovered and clicked."""
    text = record.text
    if record.eos:
        return EOS_MARK
    if text == "":
        return PART_MARK
    if len(text) > MAX_TOKEN_SHOWN:  # a huge token: drawn cut, the tooltip says its size
        text = text[:MAX_TOKEN_SHOWN] + ELLIPSIS
    return text.replace("\n", "↵\n") if text.strip() == "" and "\n" in text else text


def _shown(text: str, limit: int = 60) -> str:
    """A token's text for a tooltip: its repr, cut at `limit` characters with its size."""
    if len(text) <= limit:
        return html.escape(repr(text))
    return f"{html.escape(repr(text[:limit]))}{ELLIPSIS} ({len(text):,} characters)"


def alternatives_html(record: TokenRecord, limit: int = 8) -> str:
    """Tooltip: the chosen token and its top alternatives, raw and sampled-from.

    A token of a text read through the model (`record.read`) was read, not chosen,
    and nothing was sampled: the tooltip says "read", gives its rank and shows the
    model's one distribution.
    """
    import math

    rows = []
    raw_known = bool(record.top)
    for c in (record.top or record.sampled_top)[:limit]:
        mark = "▶ " if c.token_id == record.token_id else ""
        sampled = record.sampled_prob_of(c.token_id)
        raw = fmt_prob(math.exp(c.logprob)) if raw_known else "—"
        cells = f"<td align='right'>{raw}</td>"
        if not record.read:
            cells += f"<td align='right'>{'—' if sampled is None else fmt_prob(sampled)}</td>"
        rows.append(f"<tr><td>{mark}<code>{_shown(c.text)}</code></td>{cells}</tr>")
    what = "end of sequence " if record.eos else ""
    p = "not reported" if record.prob is None else fmt_prob(record.prob)
    h = "not reported" if record.entropy is None else f"{record.entropy:.2f} nats"
    columns = "<th>p</th>" if record.read else "<th>raw</th><th>sampled</th>"
    table = (
        f"<table><tr><th></th>{columns}</tr>{''.join(rows)}</table>"
        if rows
        else "<br><i>no candidates reported by this server</i>"
    )
    if record.read:
        who = "read"
    else:
        who = "<b>you</b> chose (not sampled)" if record.forced else "chose"
    rank = f" · rank {record.rank:,}" if record.read and record.rank is not None else ""
    return (
        f"<b>step {record.step}</b> · {who} {what}<code>{_shown(record.label)}"
        f"</code> p={p}{rank} · entropy {h}{_size_note(record)}{table}"
    )


def _size_note(record: TokenRecord) -> str:
    """For a token drawn cut: how long it is, and where the whole of it is."""
    if len(record.text) <= MAX_TOKEN_SHOWN:
        return ""
    return (
        f"<br><i>a token of {len(record.text):,} characters: {MAX_TOKEN_SHOWN} are shown; "
        "Copy answer and the exports hold all of it</i>"
    )


class TokenView(QTextEdit):
    """Read-only text of a run, one character format per token."""

    step_clicked = Signal(int)
    inspect_requested = Signal(int)  # "Inspect this step" from the context menu
    branches = None  # BranchRequests: the menu offers branch actions when set
    why_no_branch = staticmethod(lambda: None)  # why branching cannot run now (None: it can)

    def __init__(self, parent=None):
        super().__init__(parent)
        from app.core.repaint_registry import track

        track("token_view", self)  # reshaded on a change of theme or scale
        self.setReadOnly(True)
        self.setMouseTracking(True)
        self.setPlaceholderText("The model's answer appears here, token by token.")
        self._records: list[TokenRecord] = []
        self._selected: int | None = None
        self._drawn = self._drawn_chars = 0  # tokens and characters drawn so far
        self.shading = "prob"  # "prob": by probability; "rank": by GLTR's rank buckets

    def set_shading(self, shading: str) -> None:
        """Shade tokens by probability ("prob") or by their rank's GLTR bucket ("rank")."""
        if shading != self.shading:
            self.shading = shading
            records, selected = list(self._records), self._selected
            self.clear_tokens()
            self.append_tokens(records)
            if selected is not None:
                self.select_step(selected)

    def offer_branches(self, requests, why_not) -> None:
        """Offer branch actions in the menu: `requests` (BranchRequests) receives them,
        `why_not()` says why branching cannot run now (None: it can)."""
        self.branches, self.why_no_branch = requests, why_not

    def clear_tokens(self) -> None:
        self._records = []
        self._selected = None
        self._drawn = self._drawn_chars = 0
        self.clear()

    def append_tokens(self, records: list[TokenRecord]) -> None:
        merged, first = list(self._records), len(self._records)
        for r in records:  # a backend may re-send tokens it learnt more about
            first = min(first, add_token(merged, r))
        if first < len(self._records):  # rewrite from there (once per run at most)
            selected = self._selected
            self.clear_tokens()
            records = merged
            self._selected = selected if selected is not None and selected < len(merged) else None
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.End)
        cursor.beginEditBlock()  # one relayout per batch, not per token
        for r in records:
            if self._drawn < len(self._records) or not self._fits(r, cursor):
                self._records.append(r)  # kept (plain_text, exports), not drawn
                continue
            fmt = QTextCharFormat()
            if self.shading == "rank":
                fmt.setBackground(rank_color(r.rank))
                fmt.setForeground(QColor("black"))  # the bucket hues are pale: black reads
            else:
                fmt.setBackground(prob_color(r.prob))
                fmt.setForeground(prob_text_color(r.prob))  # readable on its shading (WCAG)
            fmt.setProperty(STEP_PROPERTY, r.step)
            if getattr(r, "forced", False):  # chosen by the person: overlined, italic
                fmt.setFontOverline(True)
                fmt.setFontItalic(True)
            cursor.insertText(visible(r), fmt)
            self._records.append(r)
            self._drawn += 1
            self._drawn_chars += len(visible(r))
        cursor.endEditBlock()
        self.ensureCursorVisible()

    def _fits(self, record: TokenRecord, cursor: QTextCursor) -> bool:
        """Whether `record` can still be drawn; if not, a note (at `cursor`, the
        end) closes what is drawn."""
        if self._drawn_chars + len(visible(record)) <= MAX_VIEW_CHARS:
            return True
        cursor.insertText(
            f"\n{ELLIPSIS} the rest of the answer is not drawn here (over "
            f"{MAX_VIEW_CHARS:,} characters); Copy answer and the exports hold all of it",
            QTextCharFormat(),
        )
        return False

    def drawn_steps(self) -> int:
        """How many of the run's tokens are drawn (the rest are kept, not drawn)."""
        return self._drawn

    def plain_text(self) -> str:
        return "".join(r.text for r in self._records)

    def step_at(self, pos) -> int | None:
        """The step of the token under `pos`, or None over blank space."""
        cursor = self.cursorForPosition(pos)
        if cursor.atBlockEnd() and cursor.atBlockStart():
            return None
        end = QTextCursor(self.document())
        end.movePosition(QTextCursor.End)
        if pos.y() > self.cursorRect(end).bottom():  # below the last line of text
            return None
        rect = self.cursorRect(cursor)
        if cursor.atBlockEnd() and pos.x() > rect.right() + 8:  # past the end of a line
            return None
        cursor.movePosition(QTextCursor.Right)  # the format of the char under the mouse
        value = cursor.charFormat().property(STEP_PROPERTY)
        return int(value) if value is not None else None

    def contextMenuEvent(self, event):
        menu = self.createStandardContextMenu()
        step = self.step_at(event.pos())
        if step is not None and step < len(self._records):
            menu.addSeparator()
            act = menu.addAction(f"Inspect step {step} (attention, logit lens)…")
            act.triggered.connect(
                lambda: (
                    self.select_step(step),
                    self.step_clicked.emit(step),
                    self.inspect_requested.emit(step),
                )
            )
            from app.widgets.branch_menu import add_branch_actions, offers_branches

            record = self._records[step]
            if self.branches is not None and offers_branches(record):
                menu.addSeparator()
                add_branch_actions(menu, record, self.branches, self.why_no_branch)
        add_copy_actions(menu, self.plain_text())  # Copy answer / Copy as Markdown
        menu.exec(event.globalPos())

    def mouseMoveEvent(self, event):
        step = self.step_at(event.position().toPoint())
        if step is not None and step < len(self._records):
            record = self._records[step]
            tip = alternatives_html(record)
            if self.branches is not None:
                from app.widgets.branch_menu import branch_hint

                tip += branch_hint(record)
            QToolTip.showText(event.globalPosition().toPoint(), tip, self)
        else:
            QToolTip.hideText()
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event):
        super().mouseReleaseEvent(event)
        if event.button() == Qt.LeftButton and not self.textCursor().hasSelection():
            step = self.step_at(event.position().toPoint())
            if step is not None:
                self.select_step(step)
                self.step_clicked.emit(step)

    def select_step(self, step: int | None) -> None:
        """Outline the selected token (underline) and clear the previous one."""
        for s, underline in ((self._selected, False), (step, True)):
            if s is None or s >= self._drawn:  # a step kept but not drawn has no text here
                continue
            cursor = self._cursor_for(s)
            fmt = QTextCharFormat()
            fmt.setFontUnderline(underline)
            fmt.setFontWeight(700 if underline else 400)
            cursor.mergeCharFormat(fmt)
        self._selected = step

    def _cursor_for(self, step: int) -> QTextCursor:
        start = sum(len(visible(r)) for r in self._records[:step])
        cursor = QTextCursor(self.document())
        cursor.setPosition(start)
        cursor.setPosition(start + len(visible(self._records[step])), QTextCursor.KeepAnchor)
        return cursor
