"""The answer view with the model's thinking in a collapsible block above it.

Thinking tokens (TokenRecord.thinking) stream into their own TokenView, shaded by
probability like the answer, under a header with their count, time and share of
the output. Each view numbers its tokens from 0; `AnswerViews` maps those to the
run's steps, so selecting, clicking and inspecting a token work as before.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QToolButton, QVBoxLayout, QWidget

from app.core.appearance import themed_style
from app.core.theme import THINKING_HEAD, by_theme, tint
from app.widgets.token_view import TokenView
from engine.cost.costs import money


class ThinkingBlock(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.header = QToolButton()
        self.header.setCheckable(True)
        self.header.setChecked(True)
        self.header.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        self.header.setArrowType(Qt.DownArrow)
        themed_style(
            self.header,
            lambda: (
                f"QToolButton {{ border: none; color: {by_theme(THINKING_HEAD)}; "
                "font-weight: 600; }"
            ),
        )
        self.header.setToolTip("The model's reasoning before its answer: click to fold or unfold")
        self.view = TokenView()
        self.view.setPlaceholderText("")
        themed_style(self.view, _thinking_css)
        self.view.setMaximumHeight(160)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.header)
        layout.addWidget(self.view)
        self.header.toggled.connect(self._on_toggle)
        self.hide()

    def _on_toggle(self, open_: bool) -> None:
        self.view.setVisible(open_)
        self.header.setArrowType(Qt.DownArrow if open_ else Qt.RightArrow)

    def set_summary(
        self, tokens: int, seconds: float, share: float, streaming: bool, cost: str = ""
    ) -> None:
        """The header: tokens, time, share of the output, and (when known) of the cost."""
        verb = "Thinking…" if streaming else "Thought"
        self.header.setText(
            f"{verb} · {tokens:,} tokens · {seconds:.1f} s · {share:.0%} of the output{cost}"
        )


def _thinking_css() -> str:
    bg, fg, border = tint("thinking")
    return f"QTextEdit {{ background: {bg}; color: {fg}; border: 1px solid {border}; }}"


class AnswerViews(QObject):
    """The answer TokenView and the thinking block, fed one run's records."""

    step_clicked = Signal(int)
    inspect_requested = Signal(int)

    def __init__(self, output: TokenView, thinking: ThinkingBlock):
        super().__init__(output)
        self.output, self.thinking = output, thinking
        self.views = {False: output, True: thinking.view}
        self.clear_tokens()
        for kind, view in self.views.items():
            view.step_clicked.connect(lambda s, k=kind: self.step_clicked.emit(self.step_of(k, s)))
            view.inspect_requested.connect(
                lambda s, k=kind: self.inspect_requested.emit(self.step_of(k, s))
            )

    def clear_tokens(self) -> None:
        self.where: list[tuple[bool, int]] = []  # run step -> (thinking, the view's index)
        self.steps: dict[bool, list[int]] = {False: [], True: []}  # view index -> run step
        self.latency = 0.0
        for view in self.views.values():
            view.clear_tokens()
        self.thinking.hide()

    def step_of(self, thinking: bool, index: int) -> int:
        steps = self.steps[thinking]
        return steps[index] if 0 <= index < len(steps) else index

    def append_tokens(self, records, all_tokens=None) -> None:
        """Add records in step order; a backend that re-sends earlier steps (a remote
        second pass) redraws the run from `all_tokens`."""
        if any(r.step < len(self.where) for r in records):
            records = list(all_tokens if all_tokens is not None else records)
            self.clear_tokens()
        batch: dict[bool, list] = {False: [], True: []}
        for r in records:
            kind = bool(getattr(r, "thinking", False))
            index = len(self.steps[kind])
            self.steps[kind].append(r.step)
            self.where.append((kind, index))
            batch[kind].append(r if index == r.step else replace(r, step=index))
            self.latency += r.latency_s if kind else 0.0
        for kind, part in batch.items():
            if part:
                self.views[kind].append_tokens(part)
        n = len(self.steps[True])
        if n:
            self.thinking.show()
            last = records[-1] if records else None
            streaming = last is not None and bool(getattr(last, "thinking", False))
            self.thinking.set_summary(n, self.latency, n / max(len(self.where), 1), streaming)

    def set_done(self, done) -> None:
        """A finished run: the header adds the thinking's share of the run's energy and
        money (its share of the run's time: the power is taken as steady)."""
        n = len(self.steps[True])
        if not n or not getattr(done, "elapsed_s", None):  # None, or an ErrorRecord
            return
        share = min(1.0, self.latency / done.elapsed_s)
        what = f" ({money(share * done.cost, done.cost_currency)})" if done.cost else ""
        cost = f" · ≈ {share:.0%} of the cost{what}" if done.energy_j is not None else ""
        self.thinking.set_summary(n, self.latency, n / max(len(self.where), 1), False, cost)

    def select_step(self, step: int | None) -> None:
        kind, index = (
            self.where[step] if step is not None and step < len(self.where) else (None, None)
        )
        for k, view in self.views.items():
            view.select_step(index if k == kind else None)

    def plain_text(self) -> str:
        return self.output.plain_text()
