"""The lab window on the real default model: each experiment runs in the engine
and its view shows the engine's numbers.

The four views run in one test, one after the other in one Lab window: each Lab
window starts an engine process of its own that loads the model, which four tests
did four times. Each experiment still gets the prompt and mode it had alone (the
fresh window's, where it set none)."""

from __future__ import annotations

import pytest

from engine.backends.mlx.lab_batch import PROMPTS
from engine.lab import BatchParams, CacheParams, QuantParams, SpeculativeParams

RAW = 1  # the sampling panel's "Raw completion": the chat template's system prompt would
# be most of each prefill, in every variant; what the views show is the same


def _run(qtbot, lab, params):
    got = []
    lab.bridge.lab_done.connect(got.append)
    assert lab.start(params)
    qtbot.waitUntil(lambda: bool(got) and not lab.bridge.busy, timeout=240_000)
    return got[0].result  # the result dataclass, as the engine made it


def test_the_lab_views_in_one_lab_window(qtbot, window, default_model_path):
    fresh = window.prompt.toPlainText(), window.controls.mode.currentIndex()
    window.prompt.setPlainText("Name a colour.")
    window.controls.mode.setCurrentIndex(RAW)
    lab = window.open_lab()
    qtbot.addWidget(lab)
    _quantization_ab_view(qtbot, window, lab)
    window.prompt.setPlainText("Count to three.")
    window.controls.mode.setCurrentIndex(RAW)
    _speculative_view(qtbot, lab)
    window.prompt.setPlainText(fresh[0])
    window.controls.mode.setCurrentIndex(fresh[1])
    _batching_view(qtbot, lab)
    window.prompt.setPlainText("Name a planet.")
    _kv_cache_view(qtbot, lab, default_model_path)
    lab.close()


def _quantization_ab_view(qtbot, window, lab):
    assert lab.status.text() == (  # the playground's model and prompt, named before a run
        f"Experiments run on {window.model_record.name} with the prompt “Name a colour.”."
    )
    for box in lab.quant.bits.values():  # no width chosen: refused before the engine is asked
        box.setChecked(False)
    lab.quant.run.click()
    assert "give at least one value" in lab.status.text() and not lab.bridge.busy
    data = _run(qtbot, lab, QuantParams((3,), 4))
    view = lab.quant
    # The reference, the 3-bit variant, and the shipped 4-bit weights as installed.
    assert view.table.rowCount() == 3 and view.table.item(0, 2).text() == "0.0000"
    assert view.table.item(2, 0).text().endswith("as installed")
    assert data.reference.startswith("float32, dequantized from the stored")
    assert view.variant.currentData() == 3
    three = data.variants[1]
    html = view.text.toHtml()
    assert html.count("href=") == len(data.answer)
    view.text.anchorClicked.emit(view.text.source().resolved(view.text.source()))  # no crash
    view._show_token(1)
    assert f"KL {three.kl[1]:.4f}" in view.detail.toPlainText()


def _speculative_view(qtbot, lab):
    data = _run(qtbot, lab, SpeculativeParams((1, 2), 4, 6))
    assert [r.k for r in data.runs] == [1, 2]
    assert all(r.same_as_target for r in data.runs)
    for r in data.runs:
        assert r.accepted + r.rejected == r.drafted
    view = lab.speculative
    xs, ys = view.accept_curve.getData()
    assert list(xs) == [1, 2] and list(ys) == [r.acceptance for r in data.runs]
    assert "Output identical to the target's own: yes" in view.summary.text()
    view.ks.setText("0,x")
    view._on_run()
    assert "whole numbers" in view.error.text()


def _batching_view(qtbot, lab):
    data = _run(qtbot, lab, BatchParams((1, 4), 4))
    rows = data.rows
    for r in rows:  # throughput recomputed from the engine's own timestamps
        assert r.total_tps == pytest.approx(r.generated_tokens / r.seconds)
        assert r.per_sequence_tps * r.batch_size == pytest.approx(r.total_tps)
    assert all(data.unbatched_equal.values())
    # As many prompts as the largest batch: size 4 answers them at once, size 1 in turns
    assert data.prompts == PROMPTS[:4] and all(len(a) == 4 for a in data.answers.values())
    assert sum(r.generated_tokens for r in rows) == 2 * sum(map(len, data.answers["4"]))
    xs, ys = lab.batch.total.getData()  # the y axis is logarithmic
    assert list(xs) == [1, 4] and list(10**ys) == pytest.approx([r.total_tps for r in rows])
    assert "equals the unbatched one: yes" in lab.batch.summary.text()


def _kv_cache_view(qtbot, lab, default_model_path):
    import json

    data = _run(qtbot, lab, CacheParams(turns=3, tokens=4))
    rows = data.rows
    assert [r.turn for r in rows] == [1, 2, 3] and rows[0].message == "Name a planet."
    for before, r in zip(rows, rows[1:], strict=False):
        # The turn before it (prompt and answer) came from the cache; only the new message not.
        assert before.prompt_tokens <= r.cached_tokens < r.prompt_tokens
        assert r.kv_cache_bytes > before.kv_cache_bytes
    config = json.loads((default_model_path / "config.json").read_text())
    per_token = 2 * config["num_hidden_layers"] * config["num_key_value_heads"] * 64 * 4
    for r in rows:
        assert r.same_tokens and r.max_logprob_difference < 1e-4
        assert r.speedup == pytest.approx(r.cold_ttft_s / r.cached_ttft_s)
        held, rest = divmod(r.kv_cache_bytes, per_token)  # float32 keys and values
        assert rest == 0 and r.prompt_tokens <= held <= r.context_tokens
        assert held == r.kv_cache_tokens
    view = lab.cache
    assert f"holds {per_token:,} bytes per token" in view.summary.text()
    assert view.table.rowCount() == 3 and view.table.item(2, 2).text() == str(rows[2].cached_tokens)
    xs, ys = view.cold.getData()
    assert list(xs) == [r.prompt_tokens for r in rows]
