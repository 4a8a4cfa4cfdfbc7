"""Compare reading texts with the real model(s): a shipped statement pair read by one
model in two lanes (per word), one text read twice with one tokenization (per token),
and one text read by SmolLM2 and Gemma (per byte). The numbers on screen are checked
against the lanes' own records in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6.QtCore import Qt

from app.compare.reading import load_pairs
from app.compare.window import SUMMARY_ROWS, CompareWindow
from app.core.bridge import EngineBridge
from engine.sessions.journal import Journal, read_session

RUN_MS = 180_000
LN2 = math.log(2.0)


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


def wait_runs(qtbot, win):
    qtbot.waitUntil(lambda: win.comparison.busy, timeout=5_000)
    qtbot.waitUntil(lambda: not win.comparison.busy and not win.bridge.busy, timeout=RUN_MS)


def cell(win, label, col):
    return win.table.item([r[0] for r in SUMMARY_ROWS].index(label), col).text()


def logprobs(lane) -> np.ndarray:
    return np.array([t.logprob for t in lane.state.tokens], dtype=np.float64)


def test_a_shipped_pair_is_read_in_two_lanes_and_compared_per_word(qtbot, compare):
    pair = next(p for p in load_pairs() if "Australia" in p.name)
    compare.read_pair(pair)
    wait_runs(qtbot, compare)
    a, b = compare.comparison.lanes
    assert (a.state.prompt, b.state.prompt) == (pair.a, pair.b)
    assert a.reading and b.reading and a.model_path == b.model_path
    assert all(t.read for lane in (a, b) for t in lane.state.tokens)
    for col, lane in enumerate((a, b)):
        summary = lane.state.done.reading
        want_bpb = -math.fsum(logprobs(lane)) / LN2 / len(lane.state.prompt.encode())
        assert summary.bits_per_byte == pytest.approx(want_bpb, abs=1e-9)
        assert cell(compare, "bits per byte (reads)", col) == f"{want_bpb:.3f}"
        assert compare.lanes[col].tokens.plain_text() == lane.state.prompt
    # The chart: each word's surprisal; the prefix both texts share costs the same.
    assert compare.divergence_area.currentWidget() is compare.read_view
    c = compare.comparison.read_comparison
    assert c.kind == "words"
    ids_a = [t.token_id for t in a.state.tokens]
    ids_b = [t.token_id for t in b.state.tokens]
    p = next(i for i, (x, y) in enumerate(zip(ids_a, ids_b, strict=False)) if x != y)
    q = next(i for i in range(1, len(ids_a)) if ids_a[-i] != ids_b[-i]) - 1  # shared tail
    la, lb = logprobs(a), logprobs(b)
    row = c.labels.index("Canberra / Sydney")
    shown = compare.read_view.shown
    want_a, want_b = -la[p : len(la) - q].sum() / LN2, -lb[p : len(lb) - q].sum() / LN2
    assert shown["a"][row] == pytest.approx(want_a, abs=1e-9)
    assert shown["b"][row] == pytest.approx(want_b, abs=1e-9)
    assert shown["delta"][row] == pytest.approx(want_b - want_a, abs=1e-9)
    assert np.nansum(shown["a"]) == pytest.approx(-la.sum() / LN2, abs=1e-9)
    assert np.allclose(shown["delta"][:row], 0.0, atol=1e-9)  # same model, same words
    # Clicking where they disagree most points both lanes at their own step there.
    first = compare.read_view.most.item(0)
    top = first.data(Qt.UserRole)
    compare.read_view.most.itemClicked.emit(first)
    assert compare.comparison.read_row == top and compare.read_view.marker.isVisible()
    for lane, steps in zip(compare.lanes, (c.steps_a, c.steps_b), strict=True):
        assert lane.lane.focus == steps[top] and lane.tokens._selected == steps[top]
    # Journaled as Compare's runs, each a read.
    runs = read_session(compare.journal.path).runs
    assert len(runs) == 2 and all(r.done.reading is not None for r in runs)


def test_one_text_one_tokenization_gives_delta_logprob_and_kl(qtbot, compare):
    text = "The capital of Australia is Canberra."
    cmp = compare.comparison
    cmp.set_shared_prompt(text, same=True)
    compare.read_all.click()  # every lane reads
    assert all(lane.sampling.reading() for lane in compare.lanes)
    lane_b = compare.lanes[1]
    lane_b.sampling.system.setPlainText("A quiz answer about geography.")  # B's context
    compare.run_all()
    wait_runs(qtbot, compare)
    a, b = cmp.lanes
    assert b.state.settings.system_prompt and not a.state.settings.system_prompt
    c = cmp.read_comparison
    assert c.kind == "tokens"
    delta = logprobs(b) - logprobs(a)
    assert np.abs(compare.read_view.shown["delta"] - delta).max() < 1e-9
    assert list(c.most_delta) == list(np.argsort(-np.abs(delta), kind="stable")[:5])
    assert (compare.read_view.shown["kl"] >= 0).all()


def test_smollm_and_gemma_read_one_text_compared_per_byte(qtbot, compare, gemma_path):
    text = "The capital of Australia is Canberra."
    cmp = compare.comparison
    cmp.set_shared_prompt(text, same=True)
    cmp.set_reading(None, True)
    cmp.set_model(1, str(gemma_path), "Gemma 3 270M")
    compare.run_all()
    wait_runs(qtbot, compare)
    c = cmp.read_comparison
    assert c.kind == "bytes" and "not defined" in c.why
    n_bytes = len(text.encode())
    bpbs = (c.bits_per_byte_a, c.bits_per_byte_b)
    for col, (lane, bpb) in enumerate(zip(cmp.lanes, bpbs, strict=True)):
        want = -np.sum(logprobs(lane)) / LN2 / n_bytes
        assert bpb == pytest.approx(want, abs=1e-9)
        assert cell(compare, "bits per byte (reads)", col) == f"{want:.3f}"
    assert "not defined" in compare.read_view.why.text()


def test_the_shipped_pairs_are_packaged_and_well_formed():
    import tomllib
    from pathlib import Path

    from app.compare.reading import PAIRS_FILE

    pairs = load_pairs()
    assert 6 <= len(pairs) <= 10 and all(p.a != p.b for p in pairs)
    kinds = {p.kind for p in pairs}
    assert kinds == {"true vs false", "common vs rare wording", "English vs another language"}
    root = Path(__file__).resolve().parents[2]
    assert root / "resources" / "read_pairs.json" == PAIRS_FILE
    # Installed: package-data puts resources/ beside app/; frozen: the spec's datas.
    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "../resources/*" in data["package-data"]["app"]
    spec = (root / "packaging" / "logitscope.spec").read_text()
    assert '(str(ROOT / "resources"), "resources")' in spec
    assert load_pairs(root / "no-such-file.json") == []  # the menu then says so
