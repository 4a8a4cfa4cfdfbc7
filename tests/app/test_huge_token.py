"""A huge token (a hostile server's 5 MB one) is drawn cut, never laid out whole on
the GUI thread; what the run keeps stays whole."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel

from app.widgets.rendered_view import MAX_RENDERED, RenderedView
from app.widgets.token_view import (
    ELLIPSIS,
    MAX_TOKEN_SHOWN,
    MAX_VIEW_CHARS,
    TokenView,
    alternatives_html,
    visible,
)
from engine.run.records import TokenRecord, TopToken

HUGE = "z" * 5 * 2**20  # 5 MB, as the hostile event carried


def token(step: int, text: str) -> TokenRecord:
    return TokenRecord(
        step=step,
        token_id=step,
        text=text,
        logprob=-0.1,
        prob=0.9,
        sampled_logprob=None,
        top=(TopToken(step, text, -0.1), TopToken(99, "b" * 10**6, -3.0)),
        sampled_top=(),
        entropy=0.3,
        sampled_entropy=None,
        elapsed_s=0.0,
        latency_s=0.0,
        context_tokens=step + 1,
    )


def test_a_5_mb_token_is_drawn_cut_and_kept_whole(qtbot):
    view = TokenView()
    qtbot.addWidget(view)
    view.append_tokens([token(0, "Hi "), token(1, HUGE), token(2, " end")])
    drawn = view.document().toPlainText()
    assert drawn == "Hi " + "z" * MAX_TOKEN_SHOWN + ELLIPSIS + " end"
    assert view.document().characterCount() == len(drawn) + 1  # Qt's closing paragraph mark
    assert view.plain_text() == "Hi " + HUGE + " end"  # what is kept: the whole token
    view.select_step(2)  # steps after the cut one are still outlined where they are drawn
    cursor = view._cursor_for(2)
    assert cursor.selectedText() == " end" and cursor.charFormat().fontUnderline()
    view.show()  # laid out for real: a few hundred characters, not megabytes
    qtbot.waitExposed(view)


def test_the_tooltip_of_a_huge_token_states_its_size(qtbot):
    tip = alternatives_html(token(1, HUGE))
    assert len(tip) < 2000
    assert f"a token of {len(HUGE):,} characters: {MAX_TOKEN_SHOWN} are shown" in tip
    assert "(1,000,000 characters)" in tip  # a huge candidate is cut too


def test_the_whole_view_draws_a_bounded_text(qtbot):
    view = TokenView()
    qtbot.addWidget(view)
    pieces = [token(i, f"{i:04d}" + "x" * (MAX_TOKEN_SHOWN - 4)) for i in range(1500)]
    for start in range(0, 1500, 100):  # streamed in batches, as the window does
        view.append_tokens(pieces[start : start + 100])
    per_token = len(visible(pieces[0]))
    assert view.drawn_steps() == MAX_VIEW_CHARS // per_token
    text = view.document().toPlainText()
    assert len(text) < MAX_VIEW_CHARS + 200 and "the rest of the answer is not drawn" in text
    assert view.plain_text() == "".join(p.text for p in pieces)
    view.select_step(1400)  # kept, not drawn: nothing to outline, no error
    view.select_step(3)


def test_the_rendered_answer_is_bounded(qtbot):
    answer = "Hello " + HUGE
    view = RenderedView(lambda: answer)
    qtbot.addWidget(view)
    view.refresh()
    shown = sum(len(label.text()) for label in view.body.findChildren(QLabel))
    assert MAX_RENDERED < shown < MAX_RENDERED + 300
    assert f"the answer has {len(answer):,} characters" in view.body.findChildren(QLabel)[-1].text()


def test_an_earlier_huge_answer_in_a_conversation_is_drawn_cut(qtbot):
    from app.playground.conversation_view import MAX_ANSWER_SHOWN, ConversationView
    from app.session.conversation import Conversation

    conv = Conversation()
    conv.add_run(0, "Hi", None).answer_text = HUGE
    conv.add_run(1, "More?", None).answer_text = "yes"
    view = ConversationView()
    qtbot.addWidget(view)
    view.show_conversation(conv, 1)
    drawn = view.document().toPlainText()
    assert MAX_ANSWER_SHOWN < len(drawn) < MAX_ANSWER_SHOWN + 300
    assert f"({len(HUGE):,} characters; the history keeps all)" in drawn
    assert conv.turns[0].answer == HUGE  # kept whole
