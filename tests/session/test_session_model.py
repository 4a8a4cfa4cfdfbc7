"""The playground's session model without widgets: no Qt is imported here (the
import-linter contract on app.session says the model itself imports none)."""

from __future__ import annotations

import subprocess
import sys

from app.session import Conversation, Session
from app.session.run_state import RunState
from engine.run.records import DoneRecord, ErrorRecord, ModelRecord, TokenRecord
from engine.run.settings import SamplingSettings

CHAT = SamplingSettings(temperature=0, max_tokens=4)
RAW = CHAT.with_(chat_template=False)


def model(name: str = "tiny", path: str = "/models/tiny", ctx: int = 64) -> ModelRecord:
    return ModelRecord(
        name=name,
        path=path,
        architecture="llama",
        quantization="4-bit",
        size_bytes=1,
        context_length=ctx,
        device="CPU",
        load_s=0.0,
    )


def token(step: int, text: str) -> TokenRecord:
    return TokenRecord(
        step, 100 + step, text, -0.1, 0.9, -0.1, (), (), 0.5, 0.5, 0.01 * step, 0.01, 10 + step
    )


def done(prompt_tokens: int, n: int, kv: int | None = None, reason="length") -> DoneRecord:
    return DoneRecord(reason, "", prompt_tokens, n, 0.1, 10.0, 20.0, None, kv, 64, 1, 0.5)


def answer(session: Session, text: str, turn: int, words=("Hi", "!"), kv=None) -> RunState:
    """Run `text` as turn `turn` and let it answer `words`."""
    state = RunState(prompt=text, settings=CHAT)
    prompt, info = session.begin(text, turn, state)
    state.add_tokens([token(i, w) for i, w in enumerate(words)])
    state.done = done(5 * (turn + 1), len(words), kv)
    session.run_ended()
    return state


def test_turns_send_the_conversation_so_far():
    s = Session()
    s.set_model(model())
    answer(s, "Hello", 0, ("Hi", "!"))
    state = RunState(prompt="And you?", settings=CHAT)
    prompt, info = s.begin("And you?", 1, state)
    assert prompt == [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi!"},
        {"role": "user", "content": "And you?"},
    ]
    assert info["turn"] == 1 and info["messages"] == prompt[:2]
    assert s.shown is state and s.shown_turn == 1 and state.model.name == "tiny"
    assert [a.user for a in s.conversation.turns] == ["Hello", "And you?"]


def test_regenerate_and_edit_are_sibling_runs_with_their_own_continuations():
    s = Session()
    first = answer(s, "Hello", 0, ("Hi",))
    answer(s, "More", 1, ("Sure",))
    # Regenerate turn 0: a sibling; turn 1 stays with the first run's branch.
    again = answer(s, "Hello", 0, ("Hey",))
    answers, current = s.conversation.siblings(0)
    assert [a.state for a in answers] == [first, again] and current == 1
    assert [a.answer for a in s.conversation.turns] == ["Hey"]  # the new branch: no turn 1
    # Edit turn 0: a third sibling with another message.
    s.editing_turn = 0
    assert s.next_turn("Hello there") == 0
    answer(s, "Hello there", s.next_turn("Hello there"), ("Yo",))
    assert s.editing_turn is None
    assert [a.user for a in s.conversation.siblings(0)[0]] == ["Hello", "Hello", "Hello there"]
    # Back to the first run: its continuation (turn 1) comes back with it.
    shown = s.switch_sibling(0, 0)
    assert shown is first and s.shown_turn == 0
    assert [a.user for a in s.conversation.turns] == ["Hello", "More"]
    assert s.conversation.messages()[-1] == {"role": "assistant", "content": "Sure"}


def test_next_turn_runs_the_last_turn_again_for_its_own_message_or_an_empty_box():
    s = Session()
    answer(s, "Hello", 0)
    assert s.next_turn("Hello") == 0 and s.next_turn("") == 0 and s.next_turn("New") == 1
    assert s.next_prompt("New", chat=True)[0] == 2
    assert s.next_prompt("New", chat=False) == (1, "New")


def test_a_run_that_fails_before_its_first_token_takes_its_turn_back():
    s = Session()
    answer(s, "Hello", 0)
    state = RunState(prompt="Broken", settings=CHAT)
    s.begin("Broken", 1, state)
    state.error = ErrorRecord("engine died during prefill", "engine_died")
    assert s.run_ended() == "Broken"
    assert len(s.conversation) == 1 and s.shown_turn is None
    # A failed sibling goes and the earlier run is current again.
    state = RunState(prompt="Hello", settings=CHAT)
    s.begin("Hello", 0, state)
    state.done = done(5, 0, reason="cancelled")
    assert s.run_ended() == "Hello"
    answers, current = s.conversation.siblings(0)
    assert len(answers) == 1 and current == 0
    # A run with tokens keeps its turn, even when it failed later.
    kept = RunState(prompt="Go on", settings=CHAT)
    s.begin("Go on", 1, kept)
    kept.add_tokens([token(0, "x")])
    kept.error = ErrorRecord("lost", "engine_died")
    assert s.run_ended() is None and len(s.conversation) == 2


def test_drop_oldest_until_it_fits():
    s = Session()
    for i in range(3):
        answer(s, f"turn {i}", i, ("a", "b"))
    sizes = []

    def overflows(prompt) -> bool:  # fits with at most one earlier turn
        sizes.append(len(prompt))
        return len(prompt) > 3

    assert s.fit_by_dropping("next", 3, overflows) == 2
    assert [a.user for a in s.conversation.turns] == ["turn 2"]
    assert s.conversation.dropped == 2 and s.conversation.journal_info(1)["turn"] == 3
    assert sizes == [7, 5, 3]


def test_cold_vs_cached_ab():
    s = Session()
    answer(s, "Hello", 0)
    assert s.start_ab() == 0
    cold = answer(s, "Hello", 0)
    assert s.ab_next() == "cached" and s.ab.cold is cold.done
    cached = answer(s, "Hello", 0)
    assert s.ab_next() == "result" and s.ab is None
    assert s.ab_result == (cold.done, cached.done)
    s.start_ab()
    failed = RunState(prompt="Hello", settings=CHAT)
    s.begin("Hello", 0, failed)
    failed.error = ErrorRecord("no", "error")
    assert s.ab_next() == "stopped" and s.ab is None
    assert Session().start_ab() is None  # no turn yet


def test_a_reopened_run_brings_its_conversation_and_its_own_model():
    class Log:  # the fields of a journal's RunLog the session reads
        def __init__(self, prompt, messages, turn, state, cid="c1"):
            self.prompt, self.messages, self.done = prompt, messages, state.done
            self.conversation = {"conversation_id": cid, "turn": turn, "messages": messages}
            self.state = state
            self.run_id, self.branch, self.deleted = f"s/{turn}-{prompt}", None, False

    s = Session()
    s.set_model(model("loaded", "/models/loaded"))
    earlier = RunState(prompt="Hello", settings=CHAT, model=model("old", "/models/old"))
    earlier.add_tokens([token(0, "Hi")])
    earlier.done = done(5, 1, kv=4096)
    last = RunState(prompt="More", settings=CHAT, model=model("old", "/models/old"))
    last.done = done(12, 1, kv=8192)
    messages = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}]
    run = Log("More", messages, 1, last)
    first = Log("Hello", [], 0, earlier)
    s.restore(run, last, [first], lambda log: log.state)
    assert [a.user for a in s.conversation.turns] == ["Hello", "More"]
    assert s.conversation.turns[0].state is earlier  # its charts come back too
    assert s.shown is last and s.shown_turn == 1 and s.viewing is run
    assert last.kv_growth == [4096]  # the turns before it, not itself again
    assert s.shown_model.name == "old"  # the run's own model, not the loaded one
    s.set_model(model("server", "http://x/v1#m"))
    assert s.shown.model.name == "old"  # a finished run keeps the model it ran with
    # A single-turn run reopened: no earlier growth, no conversation before it.
    alone = RunState(prompt="Solo", settings=CHAT)
    alone.done = done(4, 1, kv=2048)
    s.restore(Log("Solo", [], 0, alone, "c2"), alone, [], lambda log: log.state)
    assert alone.kv_growth == [] and s.guest.source == "History"
    assert s.next_prompt("Next", chat=True)[0] == 1  # the person's own, empty, goes on


class _Log:  # the fields of a journal's RunLog the session reads
    def __init__(self, prompt, messages, turn, state, cid="c1"):
        self.prompt, self.messages, self.done = prompt, messages, state.done
        self.conversation = {"conversation_id": cid, "turn": turn, "messages": messages}
        self.state, self.name, self.started = state, "", 0.0
        self.run_id, self.branch, self.deleted = f"s/{turn}-{prompt}", None, False


def _their_run() -> tuple[_Log, RunState]:
    """A two-turn chat run of someone else's session, as History reopens it."""
    theirs = RunState(prompt="Who?", settings=CHAT.with_(temperature=1.3))
    theirs.add_tokens([token(0, "Me")])
    theirs.done = done(40, 1)
    earlier = [{"role": "user", "content": "Long ago"}, {"role": "assistant", "content": "Yes"}]
    return _Log("Who?", earlier, 1, theirs), theirs


def test_a_run_shown_from_history_is_a_guest_and_never_becomes_yours():
    s = Session()
    s.set_model(model())
    mine = answer(s, "Hello", 0, ("Hi", "!"))
    run, theirs = _their_run()
    s.restore(run, theirs, [], lambda log: log.state, "From History")
    # Drawn in full, with its own conversation, read-only under its line.
    assert s.shown is theirs and [t.user for t in s.conversation.turns] == ["Long ago", "Who?"]
    assert s.guest.line == "From History" and s.viewing is run
    # What Run would send is the person's own conversation, not the guest's.
    number, prompt = s.next_prompt("Next", chat=True)
    assert number == 2 and [m["content"] for m in prompt] == ["Hello", "Hi!", "Next"]
    # Run: the person's conversation comes back and grows by one turn.
    state = RunState(prompt="Next", settings=CHAT)
    sent, info = s.begin("Next", s.next_turn("Next"), state)
    assert [m["content"] for m in sent] == ["Hello", "Hi!", "Next"]
    assert [t.user for t in s.conversation.turns] == ["Hello", "Next"]
    assert s.conversation.turns[0].state is mine and s.guest is None and s.viewing is None
    assert state.earlier == s.conversation.earlier_spans(1) and s.shown_turn == 1
    # Branching a guest is refused; Back to your conversation puts yours back unchanged.
    s.restore(run, theirs, [], lambda log: log.state, "From History")
    try:
        s.begin_branch(s.shown_answer(), 0, "forced", RunState(prompt="Who?", settings=CHAT))
        raise AssertionError("a guest was branched")
    except ValueError as e:
        assert "read-only" in str(e)
    assert s.leave_guest() and s.shown is state and s.shown_turn == 1
    assert not s.leave_guest()  # nothing from elsewhere is on screen any more


def test_continue_from_here_is_the_one_way_a_guest_becomes_yours():
    s = Session()
    s.set_model(model())
    answer(s, "Hello", 0)
    run, theirs = _their_run()
    s.restore(run, theirs, [], lambda log: log.state, "From History")
    assert s.adopt() is theirs and s.guest is None and s.viewing is None
    number, prompt = s.next_prompt("Then?", chat=True)
    assert number == 3 and [m["content"] for m in prompt] == [
        "Long ago", "Yes", "Who?", "Me", "Then?"
    ]  # fmt: skip
    assert s.adopt() is None  # nothing left to adopt


def test_a_read_reopened_is_never_a_chat_turn_and_your_conversation_stays():
    s = Session()
    s.set_model(model())
    mine = answer(s, "Hello", 0)
    read = RunState(prompt="Rain falls.", settings=RAW, reading=True)
    read.add_tokens([token(0, "Rain"), token(1, " falls.")])
    run = _Log("Rain falls.", [], 0, read)
    run.conversation = None
    s.restore_raw(run, read, [run], lambda log: log.state, "A read from History")
    assert s.shown is read and s.shown_turn is None and len(s.conversation) == 0
    assert s.home().answer.state is read  # its branches' turn, not a conversation turn
    assert s.own_conversation.turns[0].state is mine
    state = RunState(prompt="Again", settings=CHAT)
    sent, _info = s.begin("Again", s.next_turn("Again"), state)
    assert [m["content"] for m in sent] == ["Hello", "Hi!", "Again"]
    assert "Rain" not in str(sent) and s.raw_turn is None


def test_raw_completion_is_single_turn():
    s = Session()
    answer(s, "Hello", 0)
    state = RunState(prompt="Once upon", settings=RAW)
    prompt, info = s.begin("Once upon", 5, state)
    assert prompt == "Once upon" and info is None
    assert len(s.conversation) == 0 and s.shown is state and s.shown_turn is None


def test_conversation_from_messages_and_remove():
    conv = Conversation.from_messages(
        None,
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "A"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "B"},
            {"role": "assistant", "content": "b"},
        ],
        first_turn=3,
    )
    assert [(a.user, a.answer) for a in conv.turns] == [("A", "a"), ("B", "b")]
    assert conv.dropped == 3 and conv.prompt("C", 1)[-1] == {"role": "user", "content": "C"}
    last = conv.turns[-1]
    assert conv.remove(last) and len(conv) == 1 and conv.turns[0].next is None
    assert not conv.remove(last)


def test_the_session_model_imports_no_qt():
    """pytest-qt loads Qt in this process: ask a fresh one."""
    code = (
        "import sys, app.session, app.session.run_state; "
        "print(sorted(m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]"
