"""The session model announces every change itself (app/session/events.py), once per
call, after it is consistent: views subscribe and never need to be told twice."""

from __future__ import annotations

from app.session import Session
from app.session.events import Announcer, announces
from app.session.run_state import RunState
from tests.session.test_session_model import CHAT, done, model, token


def recorder(session: Session) -> list:
    heard: list = []
    for name in (
        "model_changed",
        "shown_changed",
        "conversation_changed",
        "step_selected",
        "tokens_added",
        "prefill_changed",
        "run_finished",
        "journal_changed",
    ):
        getattr(session.events, name).connect(lambda *a, n=name: heard.append((n, a)))
    return heard


def test_a_turn_announces_each_change_once_in_order():
    s = Session()
    heard = recorder(s)
    s.set_model(model())
    state = RunState(prompt="hi", settings=CHAT)
    s.begin("hi", 0, state)
    s.add_tokens([token(0, "a"), token(1, "b")])
    s.select(1)
    s.finish(done(5, 2))
    names = [n for n, _ in heard]
    assert names == [
        "model_changed",
        "shown_changed",
        "conversation_changed",
        "tokens_added",
        "step_selected",
        "run_finished",
    ]
    assert heard[1][1] == (state,) and heard[4][1] == (1,)
    assert s.shown is state and state.n == 2 and state.selected == 1
    assert state.done.generated_tokens == 2 and state.model is s.model


def test_the_same_model_again_is_not_a_change():
    s = Session()
    heard = recorder(s)
    s.set_model(model())
    s.set_model(model())
    assert [n for n, _ in heard] == ["model_changed"]


def test_new_conversation_closes_the_journal_and_shows_an_empty_run():
    class Journal:
        closed = False

        def close(self):
            self.closed = True

    s = Session()
    j = s.open_journal(Journal)
    assert s.open_journal(Journal) is j  # made once
    heard = recorder(s)
    s.new_conversation()
    assert j.closed and s.journal is None
    assert [n for n, _ in heard] == ["journal_changed", "shown_changed", "conversation_changed"]
    assert s.shown.n == 0


def test_a_failed_first_run_takes_its_turn_back_and_says_so():
    s = Session()
    s.set_model(model())
    state = RunState(prompt="hi", settings=CHAT)
    s.begin("hi", 0, state)
    heard = recorder(s)
    s.finish(done(5, 0, reason="cancelled"))
    assert s.run_ended() == "hi"
    assert [n for n, _ in heard] == ["run_finished", "conversation_changed"]
    assert s.conversation.turns == []


def test_nested_calls_announce_once_after_the_outer_one():
    class Model:
        def __init__(self):
            self.events = Announcer(("changed",))
            self.value = 0

        @announces
        def inner(self):
            self.value += 1
            self.events.note("changed", self.value)

        @announces
        def outer(self):
            self.inner()
            self.inner()

    m, heard = Model(), []
    m.events.changed.connect(heard.append)
    m.outer()
    assert heard == [2]  # one announcement, with the final value


def test_sample_n_seeds_are_taken_in_order_and_the_batch_ends():
    from app.session.session import SampleBatch

    s = Session()
    s.start_sampling(SampleBatch(None, 3, [7, 8], 2))
    assert s.next_sample_seed() == 7 and s.sampling.started == 1
    assert s.next_sample_seed() == 8
    assert s.next_sample_seed() is None and s.sampling is None
