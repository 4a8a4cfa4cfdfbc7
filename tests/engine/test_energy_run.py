"""A real run of the default model: its DoneRecord says how much energy it took, how
that was found (measured or estimated from N W) and what it cost, consistently with
its own timings."""

from __future__ import annotations

import re

import pytest

from engine.cost import costs
from engine.run.records import DoneRecord
from engine.run.settings import SamplingSettings


@pytest.fixture(autouse=True)
def _own_cost_file(private_data_dir):
    yield
    (private_data_dir / costs.COST_FILE).unlink(missing_ok=True)


def _run(default_model_path) -> tuple[DoneRecord, str]:
    from engine.backends.mlx.backend import MLXBackend

    backend = MLXBackend()
    backend.load(str(default_model_path), lambda *_: None)
    settings = SamplingSettings(temperature=0.0, max_tokens=6, seed=0)
    records = list(backend.generate("What is the capital of France?", settings, lambda: False))
    return records[-1], backend.record.device


def test_a_real_runs_energy_is_labelled_and_matches_its_time(
    default_model_path, monkeypatch, tmp_path
):
    monkeypatch.setenv("LOGITSCOPE_POWERCAP_DIR", str(tmp_path))  # no counter: an estimate
    costs.save_settings(costs.CostSettings(price_per_kwh=0.30, currency="EUR", watts=None))
    done, _device = _run(default_model_path)
    assert done.generated_tokens > 0 and done.elapsed_s > 0
    m = re.fullmatch(r"estimated from ([\d.]+) W", done.energy_source)
    assert m, done.energy_source
    watts = float(m.group(1))
    assert done.energy_j == pytest.approx(watts * done.elapsed_s, rel=1e-9)
    assert done.cost == pytest.approx(done.energy_j / 3.6e6 * 0.30, rel=1e-12)
    assert done.cost_currency == "EUR"
    print(
        f"default model: {costs.joules_per_token(done.energy_j, done.generated_tokens):.3f} "
        f"J/token ({done.energy_source}, {done.generated_tokens} tokens, {done.elapsed_s:.3f} s)"
    )


def test_a_real_run_with_a_counter_is_measured(default_model_path, monkeypatch, tmp_path):
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir()
    (zone / "energy_uj").write_text("5000000")
    (zone / "max_energy_range_uj").write_text("262143328850")
    monkeypatch.setenv("LOGITSCOPE_POWERCAP_DIR", str(tmp_path))
    costs.save_settings(costs.CostSettings(watts=99.0))  # a counter beats the person's watts
    done, device = _run(default_model_path)
    if device != "CPU":  # RAPL counts the CPU package: a GPU run is estimated
        assert done.energy_source == "estimated from 99 W"
        return
    assert (done.energy_j, done.energy_source) == (0.0, "measured (RAPL)")  # it never moved
    assert done.cost == 0.0
