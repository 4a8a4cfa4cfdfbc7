"""Every view describes the run on screen (issue 23): the status line with the run's
own model, readouts that reset when the run changes, a reopened run's counter and
KV growth, Inside following a History run, and a turn's sibling runs."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import QPointF

from app.charts.frame import HINT
from app.playground.status_line import status_text
from engine.models.light_tokenizer import LightTokenizer
from engine.run.prompt import encode_prompt
from engine.run.records import to_dict
from engine.sessions.journal import read_session
from tests.app.conftest import run_and_wait

OTHER_PARAMS = 268_098_176  # a model of another size (Gemma 3 270M's parameter count)


def _journal_as_other_model(window, state):
    """The run on screen written again as if another model had made it; its RunLog."""
    other = dataclasses.replace(
        state.model,
        name="Other-270M",
        path="/nowhere/other",
        parameters=OTHER_PARAMS,
        matmul_gflops=None,
    )
    journal = window.journal
    run_id = journal.start_run(state.prompt, state.settings.to_dict(), to_dict(other))
    for record in (*state.tokens, state.done):
        journal.record(run_id, record)
    return read_session(journal.path).run(run_id), other


def _hover_a_bar(window) -> str:
    frame = window.charts.frames["dist"]
    vb = window.dist_chart.getPlotItem().vb
    for x in (0.02, 0.05, 0.1, 0.3):
        text = frame.hover(vb.mapViewToScene(QPointF(x, 0)))
        if text != HINT:
            return text
    raise AssertionError("no bar under the cursor")


def test_the_status_line_and_readouts_follow_the_run_shown(qtbot, replay_window):
    state = run_and_wait(qtbot, replay_window, "Name a colour.", max_tokens=3)
    assert "(id " in _hover_a_bar(replay_window)
    run, other = _journal_as_other_model(replay_window, state)
    replay_window.show_run(run)
    shown = replay_window.state
    assert shown.model.name == "Other-270M" and replay_window.model_record.name != "Other-270M"
    want = status_text(shown, other)
    assert replay_window.status_label.text() == want
    gflops = shown.done.prefill_tps * 2 * OTHER_PARAMS / 1e9
    assert f"({gflops:.0f} GFLOP/s)" in want  # counted with the run's own model
    assert replay_window.charts.frames["dist"].readout.text() == HINT  # nothing from the last run
    # A server added after the run does not rename the run's device or model.
    server = dataclasses.replace(
        replay_window.model_record,
        name="srv",
        path="http://h:1/v1#m",
        backend="openai",
        device="server",
    )
    replay_window.model.set_model(server)
    replay_window.run_view.refresh_status()
    assert replay_window.status_label.text() == want and "server" not in want
    _hover_a_bar(replay_window)
    replay_window.new_conversation()
    assert replay_window.charts.frames["dist"].readout.text() == HINT


def test_a_reopened_single_turn_run_is_shown_alone_and_run_counts_your_own(
    qtbot, replay_window, default_model_path
):
    # default_model_path: the prompt counter reads the model's own tokenizer files
    first = run_and_wait(qtbot, replay_window, "Name a fruit.", max_tokens=3)
    replay_window.prompt.setPlainText("And a vegetable?")
    run_and_wait(qtbot, replay_window, "And a vegetable?", max_tokens=3)
    assert replay_window.state.kv_growth == [first.done.kv_cache_bytes]
    log = read_session(replay_window.journal.path).run(first.run_id)
    replay_window.show_run(log)
    assert replay_window.state.kv_growth == []  # no "KV 1 MB → 1 MB" from itself
    assert (
        len(replay_window.conversation) == 1
        and replay_window.conversation.turns[0].user == "Name a fruit."
    )
    replay_window.prompt.setPlainText("Another one?")
    replay_window.prompt_panel.update_count()
    tok = LightTokenizer(replay_window.model_record.path)
    settings = replay_window.controls.prompt_settings()
    alone = len(encode_prompt(tok, "Another one?", settings).ids)
    # Shown from History, read-only: the counter counts what Run would send, the
    # person's own conversation (its two turns, then this one), not the reopened run's.
    own = [turn.user for turn in replay_window.session.own_conversation.turns]
    assert own == ["Name a fruit.", "And a vegetable?"]
    mine = replay_window.session.next_prompt("Another one?", chat=True)[1]
    total = len(encode_prompt(tok, mine, settings).ids)
    assert replay_window.token_count.text().startswith(f"{alone:,} tokens · turn 3: {total:,}")
    # Continue from here: the reopened conversation becomes the person's own.
    replay_window.continue_here()
    replay_window.prompt_panel.update_count()
    messages = [
        {"role": "user", "content": "Name a fruit."},
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "Another one?"},
    ]
    total = len(encode_prompt(tok, messages, settings).ids)
    assert replay_window.token_count.text().startswith(f"{alone:,} tokens · turn 2: {total:,}")


def test_regenerate_keeps_both_runs_and_switches_between_them(qtbot, replay_window):
    first = run_and_wait(qtbot, replay_window, "Say hi.", max_tokens=2)
    replay_window.flow.regenerate()
    qtbot.waitUntil(
        lambda: replay_window.state is not first and replay_window.state.done is not None,
        timeout=60_000,
    )
    qtbot.waitUntil(lambda: not replay_window.bridge.busy, timeout=10_000)
    second = replay_window.state
    assert "run 2/2" in replay_window.turn_label.text()
    replay_window.flow.on_link("prev", 0)
    assert replay_window.state is first and "run 1/2" in replay_window.turn_label.text()
    assert replay_window.output.toPlainText().startswith(first.text.strip()[:3])
    replay_window.flow.on_link("next", 0)
    assert replay_window.state is second


def test_inside_follows_a_run_opened_from_history(qtbot, window):
    state = run_and_wait(qtbot, window, "Name a river.", max_tokens=2)
    inside = window.open_inside()
    qtbot.addWidget(inside)
    run, _other = _journal_as_other_model(window, state)
    window.show_run(run)
    assert inside.state is window.state
    assert inside.where.text().startswith("Other-270M · the prompt alone of “Name a river.”")
    inside.attention.hover.setText("query ' the' → ' river': 0.412")  # a value read earlier
    window.new_conversation()
    assert inside.where.text().startswith("Run a prompt in the playground")
    assert inside.attention.hover.text() == "Hover a cell for its weight"
    inside.close()
