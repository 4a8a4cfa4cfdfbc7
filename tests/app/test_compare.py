"""The Compare window with the real model: lanes, summary, divergence, stopping. Set up
through its Comparison (app/session/comparison.py) and the lanes' controls; the runs,
divergences and statuses read from the Comparison."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import Qt

from app.compare.window import SUMMARY_ROWS, CompareWindow
from app.core.bridge import EngineBridge
from engine.run.compare_stats import first_divergence
from engine.sessions.journal import Journal, read_session

PROMPT = "Write one sentence about the moon."
RUN_MS = 180_000


@pytest.fixture
def compare(qtbot, engine_client, default_model_path, tmp_path):
    win = CompareWindow(
        bridge=EngineBridge(client=engine_client, owns_client=False),
        journal=Journal.create(tmp_path),
    )
    qtbot.addWidget(win)
    win.show()
    yield win
    win.cleanup()
    win.journal.close()


def setup_lane(lane, temperature, seed, max_tokens=12):
    lane.temperature.setValue(temperature)
    lane.seed.setValue(seed)
    lane.max_tokens.setValue(max_tokens)


def run_all(qtbot, win):
    qtbot.mouseClick(win.run_button, Qt.LeftButton)
    run_all_wait(qtbot, win)


def run_all_wait(qtbot, win):
    qtbot.waitUntil(lambda: not win.comparison.busy and not win.bridge.busy, timeout=RUN_MS)


def cell(win, label, col):
    row = [r[0] for r in SUMMARY_ROWS].index(label)
    return win.table.item(row, col).text()


def test_greedy_vs_hot_lanes_summary_and_divergence(qtbot, compare):
    compare.comparison.set_shared_prompt(PROMPT, same=True)
    setup_lane(compare.lanes[0], 0.0, 1)
    setup_lane(compare.lanes[1], 1.2, 7)
    run_all(qtbot, compare)
    a, b = compare.comparison.lanes
    for col, lane in enumerate((a, b)):
        d, toks = lane.state.done, lane.state.tokens
        assert d is not None and compare.lanes[col].tokens.plain_text() == d.text
        assert cell(compare, "generated tokens", col) == str(d.generated_tokens)
        assert cell(compare, "prompt tokens", col) == str(d.prompt_tokens)
        assert cell(compare, "decode tok/s", col) == f"{d.decode_tps:.1f}"
        assert toks[-1].eos == (d.finish_reason == "eos")  # the stop is a step too
        assert cell(compare, "TTFT (s)", col) == f"{d.ttft_s:.3f}"
        mean_p = sum(math.exp(t.logprob) for t in toks) / len(toks)
        ppl = math.exp(-sum(t.logprob for t in toks) / len(toks))
        assert cell(compare, "mean p(chosen)", col) == f"{mean_p:.3f}"
        assert cell(compare, "perplexity", col) == f"{ppl:.2f}"
        assert cell(compare, "finish", col) == d.finish_reason
    ids_a = [t.token_id for t in a.state.tokens]
    ids_b = [t.token_id for t in b.state.tokens]
    expected = next(i for i, (x, y) in enumerate(zip(ids_a, ids_b, strict=False)) if x != y)
    assert a.divergence == b.divergence == expected
    assert ids_a[:expected] == ids_b[:expected]
    # Both lanes' distributions at that step on one chart: same raw, two sampled-from.
    bars = compare.divergence_bars
    assert set(bars) == {"raw (T=1)", "Lane A sampled from", "Lane B sampled from"}
    ids = compare.divergence_ids
    rec_b = b.state.tokens[expected]
    # Each lane's own chosen token is on the chart, with its true sampled-from value.
    assert ids_a[expected] in ids and ids_b[expected] in ids
    assert bars["Lane B sampled from"] == pytest.approx([rec_b.sampled_prob_of(i) for i in ids])
    assert bars["Lane B sampled from"][ids.index(ids_b[expected])] == pytest.approx(
        math.exp(rec_b.sampled_logprob)
    )
    assert bars["Lane A sampled from"][ids.index(ids_a[expected])] == pytest.approx(1.0)
    # The comparison is in the session journal, each lane tagged.
    runs = read_session(compare.journal.path).runs
    assert [r.comparison["lane"] for r in runs] == [0, 1]
    assert len({r.comparison["comparison_id"] for r in runs}) == 1
    assert runs[1].tokens == b.state.tokens


def test_identical_lanes_have_no_divergence(qtbot, compare):
    compare.comparison.set_shared_prompt(PROMPT, same=True)
    setup_lane(compare.lanes[0], 0.9, 42, 10)
    compare.lanes[1].copy_from.activated.emit(1)  # "copy from… Lane A"
    run_all(qtbot, compare)
    a, b = compare.comparison.lanes
    assert a.settings == b.settings and a.state.text == b.state.text != ""
    assert compare.lanes[0].tokens.plain_text() == compare.lanes[1].tokens.plain_text()
    assert (
        first_divergence([t.token_id for t in a.state.tokens], [t.token_id for t in b.state.tokens])
        is None
    )
    assert a.divergence is None and b.divergence is None
    assert not compare.lanes[0].div_line.isVisible()
    assert "identical tokens" in compare.divergence_info.text()
    assert compare.divergence_ids == []  # no earlier comparison left on the chart


def test_stopping_one_lane_leaves_the_other_to_finish(qtbot, compare):
    compare.comparison.set_shared_prompt("Tell a long story about a fox.", same=True)
    setup_lane(compare.lanes[0], 0.0, 1, 200)
    setup_lane(compare.lanes[1], 0.0, 1, 10)
    compare.run_all()
    a, b = compare.comparison.lanes
    qtbot.waitUntil(lambda: a.state.n >= 3, timeout=RUN_MS)
    qtbot.mouseClick(compare.lanes[0].stop_button, Qt.LeftButton)
    run_all_wait(qtbot, compare)
    assert a.state.done.finish_reason == "cancelled" and a.state.n < 200
    assert b.state.done.finish_reason in ("length", "stop") and b.state.n > 0
    assert cell(compare, "finish", 0) == "cancelled"


def test_a_failing_lane_shows_its_error_while_the_others_finish(qtbot, compare, tmp_path):
    compare.lane_count.setValue(3)
    compare.comparison.set_shared_prompt(PROMPT, same=True)
    for lane in compare.lanes:
        setup_lane(lane, 0.0, 1, 6)
    compare.comparison.set_model(1, str(tmp_path / "missing-model"), "broken")
    assert compare.lanes[1].model.currentText() == "broken"
    run_all(qtbot, compare)
    a, b, c = compare.comparison.lanes
    assert "not found" in b.error and b.status == "error"
    assert compare.lanes[1].error.isVisible() and compare.lanes[1].error.text() == b.error
    assert cell(compare, "finish", 1) == "error"
    assert a.state.done is not None and c.state.done is not None
    assert a.state.text == c.state.text


def test_lanes_mix_a_local_and_a_remote_model(qtbot, compare):
    from app.core.servers import save_server
    from engine.backends.openai.catalogue import list_server_models
    from tests.fake_server import FakeServer, Script, finish_chunk, vllm_chunk, vllm_models

    server = FakeServer()
    try:
        server.script = Script(
            models=vllm_models(),
            events=[
                vllm_chunk(" Bright", -0.4, [(" Bright", -0.4), (" Pale", -1.3)]),
                finish_chunk(),
            ],
        )
        save_server(list_server_models(server.url))
        compare.comparison.set_shared_prompt(PROMPT, same=True)
        lane_a, lane_b = compare.lanes
        from app.widgets.model_picker import fill_models

        fill_models(lane_b.model)
        lane_b.model.setCurrentIndex(lane_b.model.findData(f"{server.url}#Qwen/Qwen3-0.6B"))
        setup_lane(lane_a, 0.0, 1, max_tokens=4)
        setup_lane(lane_b, 0.5, 2, max_tokens=4)
        lane_b.sampling.top_k.setValue(40)  # settings only the full panel has
        lane_b.sampling.system.setPlainText("Be brief.")
        run_all(qtbot, compare)
        a, b = compare.comparison.lanes
        assert b.model_path == f"{server.url}#Qwen/Qwen3-0.6B"
        assert a.state.model.backend == "mlx" and a.state.done.generated_tokens == 4
        assert b.state.model.backend == "openai" and b.state.done.text == " Bright"
        body = server.requests[-1]["body"]
        assert body["top_k"] == 40 and body["messages"][0] == {
            "role": "system",
            "content": "Be brief.",
        }
        assert "top-k 40" in lane_b.more.text() and "system" in lane_b.more.text()
    finally:
        server.close()
