"""The automatic compute path: alternating rounds, a margin, a busy measurement taken
again and the quietest deciding, figures and load kept beside the choice.

A tiny quantized model built in memory; the measurement's timer and the BLAS status
are given, so nothing measured on this machine decides these tests."""

from __future__ import annotations

import json

import mlx.core as mx
import mlx.nn as nn
import pytest
from mlx_lm.models import llama

from engine.backends.mlx import compute_path, fast_blas, path_measure
from engine.backends.mlx.path_measure import PathMeasurement


def _model():
    args = llama.ModelArgs(
        model_type="llama",
        hidden_size=64,
        num_hidden_layers=1,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        rms_norm_eps=1e-5,
        vocab_size=128,
    )
    model = llama.Model(args)
    nn.quantize(model, group_size=32, bits=4)
    mx.eval(model.parameters())
    return model


def _measured(stored_prefill: float, others: float | None, cores: int = 2) -> PathMeasurement:
    return PathMeasurement(stored_prefill, 1.0, 1.0, 1.0, 3, cores, others, "2026-12-06 10:00")


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """A private runtime folder, an optimised BLAS said to be there, plenty of memory."""
    monkeypatch.setattr("engine.store.runtime_cache.runtime_dir", lambda: tmp_path)
    monkeypatch.setattr("engine.store.runtime_cache._unsaved", {})
    monkeypatch.setattr("engine.store.settings_files._said", [])
    monkeypatch.setattr(fast_blas, "status", lambda: fast_blas.BlasStatus(True, "OpenBLAS (t)"))
    monkeypatch.setattr(compute_path, "available_memory", lambda: 10**12)
    if mx.default_device().type != mx.DeviceType.cpu:
        pytest.skip("the compute path is chosen on the CPU only")
    return tmp_path


def _queue(monkeypatch, measurements):
    """measure_paths answers these in turn; returns the list of calls made."""
    calls = []

    def fake(stored, float32):
        calls.append((stored, float32))
        return measurements[len(calls) - 1]

    monkeypatch.setattr(compute_path, "measure_paths", fake)
    return calls


def _choose(key="m|1"):
    return compute_path.choose_path(_model(), key, "auto", reload=_model)


def test_a_busy_measurement_is_taken_again_and_the_quietest_decides(runtime, monkeypatch):
    # Busy: float32 looked no faster (1.0x). Idle next time: 12x. Then no more measuring.
    calls = _queue(monkeypatch, [_measured(1.0, others=1.8), _measured(12.0, others=0.1)])
    model, first = _choose()
    assert first.path == compute_path.STORED_CPU
    assert "1.00x prefill" in first.reason and "busy: other processes used 1.8 of 2" in first.reason
    assert "measured again at the next load" in first.reason
    assert isinstance(model.layers[0].mlp.gate_proj, nn.QuantizedLinear)  # kept as stored
    model, second = _choose()
    assert second.path == "float32" and "12.00x prefill" in second.reason
    assert "idle: other processes used 0.1 of 2" in second.reason
    assert "measured again" not in second.reason
    assert type(model.layers[0].mlp.gate_proj) is nn.Linear  # dequantized
    assert model.layers[0].mlp.gate_proj.weight.dtype == mx.float32
    _model3, third = _choose()
    assert len(calls) == 2 and third == second  # settled: the cache decides, same words
    entry = next(iter(json.loads((runtime / "paths.json").read_text()).values()))
    assert entry["attempts"] == 2 and entry["path"] == "float32"
    assert [m["others_cores"] for m in entry["measurements"]] == [1.8, 0.1]


def test_a_machine_busy_every_time_stops_measuring_after_the_last_attempt(runtime, monkeypatch):
    busy = [_measured(2.0, others=1.9), _measured(1.1, others=1.2), _measured(3.0, others=1.5)]
    calls = _queue(monkeypatch, busy)
    reasons = [_choose()[1] for _ in range(5)]
    assert len(calls) == compute_path.MAX_ATTEMPTS == 3
    assert reasons[2].path == "as stored, float32 scales and activations"  # 1.1x: the quietest
    assert "1.10x prefill" in reasons[2].reason and "measured again" not in reasons[2].reason
    assert reasons[0].path == "float32"  # 2.0x while busy, for this load only
    assert reasons[3] == reasons[4] == reasons[2]


def test_a_small_gain_is_under_the_margin(runtime, monkeypatch):
    _queue(monkeypatch, [_measured(compute_path.MARGIN * 0.95, others=0.0)])
    _m, choice = _choose()
    assert choice.path == compute_path.STORED_CPU and "needs 1.2x prefill" in choice.reason


def test_a_slower_decode_keeps_the_stored_path(runtime, monkeypatch):
    slow_decode = PathMeasurement(10.0, 1.0, 1.0, 1.2, 3, 2, 0.0, "2026-12-06 10:00")
    assert slow_decode.decode_gain < compute_path.DECODE_FLOOR
    _queue(monkeypatch, [slow_decode])
    assert _choose()[1].path == compute_path.STORED_CPU


@pytest.mark.parametrize(
    "damage",
    [
        "not json",
        '{"m|1|OpenBLAS (t)|%d": {"quantized_s": [1, 1], "float32_s": [0.1, 1]}}',  # old style
        '{"m|1|OpenBLAS (t)|%d": {"measurements": [{"stored_prefill_s": -1}], "attempts": 9}}',
        '{"m|1|OpenBLAS (t)|%d": {"measurements": [{"stored_prefill_s": "NaN"}]}}',
    ],
)
def test_a_damaged_or_old_cache_entry_is_measured_again(runtime, monkeypatch, damage):
    import os

    text = damage % os.cpu_count() if "%d" in damage else damage
    (runtime / "paths.json").write_text(text)
    calls = _queue(monkeypatch, [_measured(5.0, others=0.0)])
    assert _choose()[1].path == "float32" and len(calls) == 1


def test_pinned_paths_never_measure(runtime, monkeypatch):
    calls = _queue(monkeypatch, [])
    model = compute_path.choose_path(_model(), "m|1", "memory", reload=_model)[0]
    assert isinstance(model.layers[0].mlp.gate_proj, nn.QuantizedLinear)
    assert model.layers[0].input_layernorm.weight.dtype == mx.float32  # float32 scales, norms
    speed = compute_path.choose_path(_model(), "m|1", "speed", reload=_model)
    assert speed[1].path == "float32" and "pinned" in speed[1].reason
    assert calls == [] and not (runtime / "paths.json").exists()


def test_cached_choice_names_what_was_chosen(runtime, monkeypatch):
    _queue(monkeypatch, [_measured(8.0, others=0.0)])
    _m, choice = _choose("/models/smol|98000000")
    assert path_measure.cached_choice("/models/smol", 98000000) == (choice.path, choice.reason)
    assert path_measure.cached_choice("/models/other", 98000000) is None


def test_cached_choice_is_none_when_the_next_load_measures_again(runtime, monkeypatch):
    _queue(monkeypatch, [_measured(8.0, others=1.9)])  # busy: the next load measures again
    _m, choice = _choose("/models/smol|98000000")
    assert "measured again at the next load" in choice.reason
    assert path_measure.cached_choice("/models/smol", 98000000) is None


def test_an_unsaveable_cache_measures_once_per_process_and_leaves_nothing(
    runtime, monkeypatch, capsys
):
    import os

    (runtime / "paths.json").mkdir()  # the cache cannot be replaced: nothing is saved
    calls = _queue(monkeypatch, [_measured(8.0, others=0.0)])
    first, second = _choose()[1], _choose()[1]
    assert len(calls) == 1 and first == second and first.path == "float32"
    assert os.listdir(runtime) == ["paths.json"] and os.listdir(runtime / "paths.json") == []
    err = capsys.readouterr().err
    assert err.count("cannot be saved (Is a directory)") == 1, err


def test_rounds_alternate_and_each_side_keeps_its_median():
    order = []
    times = {"q": iter([(3.0, 1.0), (9.0, 2.0), (4.0, 7.0)]), "f": iter([(1.0, 1.0)] * 3)}

    def timer(model):
        order.append(model)
        return next(times[model])

    m = path_measure.measure_paths("q", "f", rounds=3, timer=timer)
    assert order == ["q", "f", "q", "f", "q", "f"]
    assert (m.stored_prefill_s, m.stored_decode_s) == (4.0, 2.0)
    assert m.prefill_gain == 4.0 and m.rounds == 3
    assert PathMeasurement.from_dict(json.loads(json.dumps(m.to_dict()))) == m


def test_the_load_meter_counts_other_processes_not_this_one(monkeypatch):
    # machine busy ticks, own ticks: 300 busy ticks in 1 s of which 100 are ours -> 2 cores
    ticks = iter([(1000, 50), (1300, 150)])
    clock = iter([10.0, 11.0])
    monkeypatch.setattr(path_measure, "_cpu_ticks", lambda: next(ticks))
    monkeypatch.setattr(path_measure.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(path_measure.os, "sysconf", lambda name: 100)
    assert path_measure.LoadMeter().start().others() == pytest.approx(2.0)


def test_own_cpu_time_shows_in_the_ticks_read():
    import time

    before = path_measure._cpu_ticks()
    if before is None:
        pytest.skip("/proc/stat is Linux's")
    t = time.process_time()
    while time.process_time() - t < 0.3:  # 0.3 s of this process's CPU time
        pass
    after = path_measure._cpu_ticks()
    own = (after[1] - before[1]) / path_measure.os.sysconf("SC_CLK_TCK")
    assert 0.2 < own < 1.0
    assert after[0] - before[0] >= after[1] - before[1] - 2  # the machine counts ours too
