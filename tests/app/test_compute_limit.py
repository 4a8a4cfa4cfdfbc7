"""A limit is a ceiling or says it is not: seen was "15 of 13 GFLOP/s" in the status
line, the limit being NumPy's 512 x 512 product on another BLAS. The limit is now MLX's
own product at the model's MLP shape, and an achieved figure above it says so."""

from __future__ import annotations

import json

import pytest

from app.inside.hardware_view import HardwareView
from app.playground.status_line import status_text
from app.session.run_state import RunState
from engine.machine.hardware_timeline import Timeline
from engine.run.records import DoneRecord, ModelRecord

PARAMS = 135_000_000


def _model(gflops: float) -> ModelRecord:
    return ModelRecord(
        name="m",
        path="p",
        architecture="llama",
        quantization="q",
        size_bytes=1,
        context_length=8192,
        device="CPU",
        load_s=0.0,
        weight_bytes=100_000_000,
        parameters=PARAMS,
        memory_gbs=20.0,
        matmul_gflops=gflops,
    )


def _state(prefill_tps: float) -> RunState:
    s = RunState(prompt="x")
    s.done = DoneRecord("length", "", 40, 4, 0.5, prefill_tps, 10.0, None, None, 8192, 0, 1.0)
    return s


@pytest.mark.parametrize("limit", [13.0, 40.0])
def test_status_line_says_when_achieved_is_above_the_limit(limit):
    tps = 15e9 / (2 * PARAMS)  # 15 GFLOP/s achieved
    got = tps * 2 * PARAMS / 1e9
    text = status_text(_state(tps), _model(limit))
    if got > limit:
        assert f"({got:.0f} GFLOP/s, above the {limit:.0f} GFLOP/s estimate)" in text
        assert f"{got:.0f} of {limit:.0f}" not in text
    else:
        assert f"({got:.0f} of {limit:.0f} GFLOP/s)" in text


def test_hardware_view_titles_an_achieved_figure_above_the_limit(qtbot):
    view = HardwareView()
    qtbot.addWidget(view)
    view.show_timeline(
        Timeline(
            prefill_s=1.0,
            prefill_tokens=40,
            prefill_gflops=15.2,
            matmul_gflops=13.0,
            parameters=PARAMS,
        )
    )
    title = view.prefill.getPlotItem().titleLabel.text
    assert "15.2 GFLOP/s, above the 13.0 GFLOP/s estimate" in title and "117%" not in title
    ticks = view.prefill.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert ticks[1][1] == "limit (estimate)"


def test_limit_is_mlx_at_the_models_shape(smollm, default_model_path, monkeypatch):
    """MLX's own product at the model's MLP shape, measured once per shape (no speed is
    asserted: two timings of the same product on a shared machine differ by whatever
    else runs; the product's rate itself is in `logitscope bench`)."""
    import math

    from engine.backends.mlx import gemm_limit as limit

    config = json.loads((default_model_path / "config.json").read_text())
    k, n = config["hidden_size"], config["intermediate_size"]
    cached: dict = {}  # this test's own cache: the machine's may hold the shape already
    monkeypatch.setattr(limit, "read_json", lambda _name: dict(cached))
    monkeypatch.setattr(limit, "write_json", lambda _name, data: cached.update(data))
    measured, real = [], limit.measure_gflops

    def measure(*shape):
        measured.append(shape)
        return real(*shape, reps=1)

    monkeypatch.setattr(limit, "measure_gflops", measure)
    gflops, source = limit.gemm_limit(smollm.model)
    assert measured == [(limit.CHUNK, k, n)]
    assert f"{limit.CHUNK} x {k} x {n} product" in source
    assert 0 < gflops < math.inf
    assert limit.gemm_limit(smollm.model) == (gflops, source) and len(measured) == 1
