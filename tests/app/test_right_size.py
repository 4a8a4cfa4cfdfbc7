"""Answer with the right-sized model, in the playground (issue 46 item 4; the rules:
app/session/right_size.py, the flow: app/playground/right_size_flow.py), on the real
models: SmolLM2-135M answers first, Gemma 3 270M when SmolLM2's min token p is below
the threshold. Checked: the decision against the small answer's own token
probabilities recomputed in NumPy from the journal, both attempts journaled and named
(the large one naming the small one's id, on its own model), the large answer equal to
Gemma's own greedy answer run plainly, the loaded model untouched, and a large model
that cannot answer leaving the small answer standing."""

from __future__ import annotations

import numpy as np
import pytest

from app.session.right_size import RightSizing
from app.widgets.model_picker import record_label
from tests.app.conftest import RUN_MS, run_and_wait, start_run

PROMPT = "What is the capital of France?"


@pytest.fixture(autouse=True)
def _off_after(request):
    """Right-sized is remembered in the settings file: off again after each test, so no
    later window or `--self-test` of this test session answers with two models."""
    yield
    from app.core import settings_store

    settings_store.set_value("right_size/on", "false")


def _idle(qtbot, win) -> None:
    """Both attempts ended: the bridge idle and no escalation in flight."""
    qtbot.waitUntil(
        lambda: not win.bridge.busy and win.right_size_flow.escalating is None, timeout=RUN_MS
    )
    qtbot.wait(100)  # the last frame of records and the line


def _journaled(run_id: str):
    from engine.sessions.journal import find

    return find(run_id)[1]


def test_below_the_threshold_the_large_model_answers_the_same_turn(qtbot, window, gemma_path):
    win = window
    small_model = win.model_record
    win.right_size.set(RightSizing(str(gemma_path), "min_prob", 0.999), True)
    run_and_wait(qtbot, win, PROMPT, max_tokens=8)
    _idle(qtbot, win)
    answers, current = win.session.conversation.siblings(0)
    small, large = (a.state for a in answers)  # both attempts are runs of the one turn
    assert win.state is large and current == 1
    assert large.done is not None and large.error is None
    # the decision, recomputed from the small run's journaled tokens
    run = _journaled(small.run_id)
    probs = np.exp([t.logprob for t in run.tokens if not t.eos])
    assert small.route.value == pytest.approx(float(probs.min()), rel=1e-9)
    assert small.route.escalated and float(probs.min()) < 0.999
    assert run.name == f"routed: min token p {probs.min():.2f} < 1.00: escalated" or (
        run.name.startswith("routed: min token p ") and run.name.endswith(": escalated")
    )
    big = _journaled(large.run_id)
    assert big.name.startswith(f"escalated from {small.run_id}: min token p ")
    assert big.model_record.name == large.model.name != small_model.name
    # the loaded model, the picker and the session stay the small one
    assert win.model_record.path == small_model.path == win.picker.current()
    # the conversation goes on from the large answer
    messages = win.session.conversation.prompt("Thanks.", 1)
    assert messages[1]["content"].strip() == answers[1].answer.strip()
    line = win.viewing_label.text()
    assert "Right-sized" in line and "answered, because" in line
    assert record_label(large.model) in line and record_label(small.model) in line
    win.right_size_flow.show_partner()  # the line's link shows the small attempt
    assert win.state is small and "escalated to" in win.viewing_label.text()
    large_ids = [t.token_id for t in large.tokens]
    # Gemma's own greedy answer, run plainly, is the escalated answer
    win.right_size.set(win.right_size.settings, False)
    win.new_conversation()
    win.load_model(str(gemma_path))
    qtbot.waitUntil(lambda: win.model_record.path != small_model.path, timeout=RUN_MS)
    qtbot.waitUntil(lambda: not win.bridge.busy, timeout=RUN_MS)
    plain = run_and_wait(qtbot, win, PROMPT, max_tokens=8)
    assert [t.token_id for t in plain.tokens] == large_ids
    win.load_model(small_model.path)
    qtbot.waitUntil(lambda: win.model_record.path == small_model.path, timeout=RUN_MS)


def test_at_or_above_the_threshold_the_small_answer_is_kept(qtbot, window, gemma_path):
    win = window
    win.right_size.set(RightSizing(str(gemma_path), "min_prob", 0.0), True)
    small = run_and_wait(qtbot, win, PROMPT, max_tokens=6)
    _idle(qtbot, win)
    assert win.state is small and not small.route.escalated
    assert len(win.session.conversation.siblings(0)[0]) == 1
    assert small.route.reason.endswith("≥ 0.00: kept")
    assert "answered · min token p" in win.viewing_label.text()
    assert _journaled(small.run_id).name == f"routed: {small.route.reason}"


def test_a_large_model_that_cannot_answer_leaves_the_small_answer(qtbot, window):
    win = window
    nowhere = "http://127.0.0.1:9/v1#nowhere"  # nothing listens on the discard port
    win.right_size.set(RightSizing(nowhere, "min_prob", 1.0), True)
    small = run_and_wait(qtbot, win, PROMPT, max_tokens=6)
    _idle(qtbot, win)
    assert win.state is small and small.done is not None
    note = small.route
    assert not note.escalated and note.failed and "the large model failed" in note.reason
    assert note.reason.endswith(": kept")
    assert len(win.session.conversation.siblings(0)[0]) == 1  # the failed attempt left
    assert "answer stands, not escalated" in win.banner.text()
    assert _journaled(small.run_id).name == f"routed: {note.reason}"


@pytest.mark.parametrize(
    "sizing, words",
    [
        (RightSizing("", "min_prob", 0.2), "choose the larger model to escalate to"),
        (RightSizing("{small}", "min_prob", 0.2), "the small and the large model are the same"),
        (RightSizing("/elsewhere", "p_true", 0.2), "a live cascade decides on mean_prob"),
        (RightSizing("/elsewhere", "min_prob", 1.5), "the threshold for min token p is a prob"),
        (RightSizing("/elsewhere", "first_entropy", 0.5), "is a negated entropy in nats"),
    ],
)
def test_settings_that_cannot_work_are_one_sentence_and_nothing_runs(qtbot, sizing, words):
    from app.core.bridge import EngineBridge
    from app.shell.window import PlaygroundWindow
    from engine.store.paths import data_dir
    from tests.replay import ReplayClient

    (data_dir() / "settings.ini").unlink(missing_ok=True)
    client = ReplayClient(None)  # nothing may reach the engine
    win = PlaygroundWindow(
        bridge=EngineBridge(client=client, owns_client=False), load_on_start=False
    )
    qtbot.addWidget(win)
    if sizing.large == "{small}":
        sizing = RightSizing(win.picker.current(), sizing.signal, sizing.threshold)
    win.right_size.set(sizing, True)
    win.prompt.setPlainText(PROMPT)
    win.run()
    assert not win.bridge.busy and not win.session.conversation.turns
    text = win.banner.text()
    assert words in text and "\n" not in text
    assert not client.unmatched
    win.cleanup()


def test_stopping_the_escalation_leaves_the_small_answer(qtbot, window, gemma_path):
    win = window
    win.right_size.set(RightSizing(str(gemma_path), "min_prob", 1.0), True)
    start_run(win, PROMPT, max_tokens=6)
    flow = win.right_size_flow
    qtbot.waitUntil(lambda: flow.escalating is not None and win.bridge.busy, timeout=RUN_MS)
    win.stop()
    _idle(qtbot, win)
    answers, current = win.session.conversation.siblings(0)
    small = answers[0].state
    assert win.state is small and answers[current].state is small
    assert not small.route.escalated and small.route.failed == "stopped before it finished"
    assert "answer stands, not escalated" in win.banner.text()
    assert "did not answer" not in win.viewing_label.text()  # the small one's line
    assert "the large model failed (stopped before it finished): kept" in small.route.reason
