"""The playground is multi-turn: each turn continues the conversation, reuses the
KV cache of the turns before it, is journaled with them and comes back from
History; turns can be edited and regenerated; a full context is a choice."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.sessions.export import to_markdown
from engine.sessions.session_log import read_session
from tests.app.conftest import RUN_MS, run_and_wait


def wait_idle(qtbot, window):
    qtbot.waitUntil(
        lambda: not window.bridge.busy and window.state.done is not None, timeout=RUN_MS
    )
    qtbot.waitUntil(lambda: not window._dirty and not window._stale, timeout=5_000)


def template_ids(window, messages):
    tok = window.prompt_panel.tokenizer
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tok.encode(text, add_special_tokens=False)


def test_second_turn_continues_the_conversation_from_the_cache(
    qtbot, replay_window, default_model_path
):
    # default_model_path: the prompt counter reads the model's own tokenizer files
    first = run_and_wait(qtbot, replay_window, "Name a colour.", max_tokens=6)
    # The message stays in the box, selected: typing replaces it, Run runs it again.
    assert replay_window.prompt.textCursor().selectedText() == "Name a colour."
    answer = "".join(t.text for t in first.tokens)
    second = run_and_wait(qtbot, replay_window, "And another one?", max_tokens=6)
    conv = replay_window.conversation
    assert [t.user for t in conv.turns] == ["Name a colour.", "And another one?"]
    messages = [
        {"role": "user", "content": "Name a colour."},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": "And another one?"},
    ]
    assert second.done.prompt_tokens == len(template_ids(replay_window, messages))
    assert second.engine_prompt == messages  # what Inside the model inspects too
    # Turn 1's prompt and answer were not prefilled again.
    assert second.done.cached_tokens >= first.done.prompt_tokens
    assert second.done.cached_tokens < second.done.prompt_tokens
    text = replay_window.status_label.text()
    assert f"({second.done.cached_tokens} of {second.done.prompt_tokens} tokens from cache)" in text
    # The transcript shows turn 1; the turn line names turn 2; the chart shows both turns.
    assert (
        replay_window.transcript.isVisible()
        and "Name a colour." in replay_window.transcript.toPlainText()
    )
    assert "Turn 2" in replay_window.turn_label.text()
    counts = replay_window.context_chart.counts
    assert counts["cached"] == second.done.cached_tokens
    assert counts["system"] + counts["earlier"] + counts["prompt"] == second.done.prompt_tokens
    assert counts["earlier"] == first.done.prompt_tokens + len(first.tokens) - counts["system"]
    # Journaled with the turns before it, and exported with them.
    session = read_session(replay_window.journal.path)
    run = session.run(second.run_id)
    assert run.conversation["turn"] == 1 and run.messages == messages[:2]
    assert session.run(first.run_id).conversation["turn"] == 0
    assert run.conversation["conversation_id"] == conv.conversation_id
    md = to_markdown(session, [run])
    assert "Conversation so far" in md and answer.strip() in md
    assert "Conversation so far" not in to_markdown(session, [session.run(first.run_id)])

    # The count beside the prompt is the message, then the next turn with the conversation.
    replay_window.prompt.setPlainText("One more?")
    replay_window.prompt_panel.update_count()
    following = [
        *messages,
        {"role": "assistant", "content": conv.turns[1].answer},
        {"role": "user", "content": "One more?"},
    ]
    need = len(template_ids(replay_window, following))
    assert f"turn 3: {need:,} of 8,192" in replay_window.token_count.text()

    # Cold vs cached: the same turn rerun without the cache, then with it; same tokens,
    # same logprobs (1e-4), both TTFTs shown.
    replay_window.flow.start_ab()
    qtbot.waitUntil(
        lambda: replay_window.session.ab is None and not replay_window.bridge.busy,
        timeout=2 * RUN_MS,
    )
    cold, cached = replay_window.session.ab_result
    assert cold.cached_tokens == 0 and cached.cached_tokens == cold.prompt_tokens - 1
    assert len(replay_window.conversation.turns) == 2  # reruns replace the turn, never add one
    runs = read_session(replay_window.journal.path).visible_runs
    cold_run = next(r for r in runs if r.done is not None and r.done.ttft_s == cold.ttft_s)
    assert [t.token_id for t in cold_run.tokens] == [t.token_id for t in replay_window.state.tokens]
    for a, b in zip(cold_run.tokens, replay_window.state.tokens, strict=True):
        assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
    label = replay_window.ab_label.text()
    assert (
        f"cold TTFT {cold.ttft_s:.2f} s" in label and f"cached TTFT {cached.ttft_s:.2f} s" in label
    )

    # Reopened from History in a fresh view, the conversation comes back and continues.
    replay_window.new_conversation()
    assert not replay_window.conversation.turns and not replay_window.transcript.isVisible()
    replay_window.show_run(read_session(session.path).run(second.run_id))
    assert [t.user for t in replay_window.conversation.turns] == [
        "Name a colour.",
        "And another one?",
    ]
    assert replay_window.conversation.turns[0].state is not None  # turn 1's own run, charts and all
    assert replay_window.conversation.turns[0].answer == answer


def test_edit_regenerate_and_a_failed_turn(qtbot, replay_window):
    window = replay_window
    run_and_wait(qtbot, window, "Say hi.", max_tokens=3)
    run_and_wait(qtbot, window, "Say bye.", max_tokens=3)
    window.flow.edit(0)
    assert window.prompt.toPlainText() == "Say hi."
    window.prompt.setPlainText("Say hello.")
    window.run()
    wait_idle(qtbot, window)
    assert [t.user for t in window.conversation.turns] == ["Say hello."]  # turn 2 replaced
    # An earlier turn changed: only the token prefix before the change is reused.
    hi = template_ids(window, [{"role": "user", "content": "Say hi."}])
    hello = template_ids(window, [{"role": "user", "content": "Say hello."}])
    common = next(i for i, (a, b) in enumerate(zip(hi, hello, strict=False)) if a != b)
    assert window.state.done.cached_tokens == common < len(hi)
    # Run with the last turn's message still in the box runs that turn again (same
    # settings: same greedy tokens), as does an empty box; neither adds a turn.
    before = [t.token_id for t in window.state.tokens]
    window.run()
    wait_idle(qtbot, window)
    assert [t.user for t in window.conversation.turns] == ["Say hello."]
    assert [t.token_id for t in window.state.tokens] == before
    window.prompt.clear()
    window.run()
    wait_idle(qtbot, window)
    assert [t.user for t in window.conversation.turns] == ["Say hello."]
    assert [t.token_id for t in window.state.tokens] == before
    # A first turn the engine refuses (longer than the context) gives its message back.
    window.new_conversation()
    long = "word " * 9000
    window.prompt.setPlainText(long)
    window.run()
    qtbot.waitUntil(
        lambda: window.state.error is not None and not window.bridge.busy, timeout=RUN_MS
    )
    assert "context window" in window.banner.text()
    assert window.prompt.toPlainText() == long
    assert window.conversation.turns == []


def test_a_full_context_is_a_choice_never_truncation(qtbot, replay_window):
    run_and_wait(qtbot, replay_window, "Name a fruit.", max_tokens=4)
    first_prompt = replay_window.state.done.prompt_tokens
    # A context that holds one turn but not two (the real one is 8192 tokens).
    replay_window.session.model = replace(
        replay_window.model_record, context_length=first_prompt + 12
    )
    start = len(read_session(replay_window.journal.path).runs)
    replay_window.prompt.setPlainText("Name a vegetable.")
    replay_window.controls.max_tokens.setValue(4)
    replay_window.run()
    assert not replay_window.bridge.busy
    assert "context window" in replay_window.banner.text() and replay_window.banner.isVisible()
    assert replay_window.prompt.toPlainText() == "Name a vegetable."  # nothing sent, nothing lost
    assert len(read_session(replay_window.journal.path).runs) == start
    replay_window.flow.on_banner_link("drop", replay_window.new_conversation)
    wait_idle(qtbot, replay_window)
    conv = replay_window.conversation
    assert [t.user for t in conv.turns] == ["Name a vegetable."] and conv.dropped == 1
    run = read_session(replay_window.journal.path).run(replay_window.state.run_id)
    assert run.conversation["turn"] == 1 and run.messages == []
    assert replay_window.state.done.prompt_tokens + 4 <= replay_window.model_record.context_length
