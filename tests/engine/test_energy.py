"""Energy and cost arithmetic, exactly: a fake RAPL counter (wrap-around included), the
estimate from time x watts, powermetrics' samples, prices x tokens, the settings files."""

from __future__ import annotations

import json

import pytest

from engine.cost import costs
from engine.machine import energy
from engine.run.records import DoneRecord, record_from_dict, to_dict
from engine.sessions.session_schema import SchemaError, clean_record


def _zone(root, name, uj, top):
    d = root / name
    d.mkdir(parents=True)
    (d / "energy_uj").write_text(f"{uj}\n")
    (d / "max_energy_range_uj").write_text(f"{top}\n")
    return d


def test_rapl_counts_packages_not_their_subzones(tmp_path):
    _zone(tmp_path, "intel-rapl:0", 1_000_000, 262_143_328_850)
    _zone(tmp_path, "intel-rapl:0:0", 5, 262_143_328_850)  # a core sub-zone: inside package 0
    _zone(tmp_path, "intel-rapl:1", 2_000_000, 262_143_328_850)
    (tmp_path / "intel-rapl:2").mkdir()  # no readable counter: left out
    zones = energy.rapl_zones(tmp_path)
    assert [z.energy_file.parent.name for z in zones] == ["intel-rapl:0", "intel-rapl:1"]
    assert zones[0].max_uj == 262_143_328_850


def test_rapl_meter_sums_packages_and_survives_wrap_around(tmp_path):
    a = _zone(tmp_path, "intel-rapl:0", 999_000_000, 1_000_000_000)  # 1 J before it wraps
    b = _zone(tmp_path, "intel-rapl:1", 10_000_000, 1_000_000_000)
    meter = energy.RaplMeter(energy.rapl_zones(tmp_path))
    meter.start()
    (a / "energy_uj").write_text("2500000")  # wrapped: 1 J + 2.5 J
    (b / "energy_uj").write_text("14250000")  # 4.25 J
    assert meter.stop(3.0) == (7.75, "measured (RAPL)")


def test_counter_delta_exactly():
    assert energy.counter_delta(100, 350, 1000) == 250
    assert energy.counter_delta(900, 50, 1000) == 150
    assert energy.counter_delta(0, 0, 1000) == 0


def test_a_counter_gone_unreadable_gives_no_energy(tmp_path):
    a = _zone(tmp_path, "intel-rapl:0", 1, 10**9)
    meter = energy.RaplMeter(energy.rapl_zones(tmp_path))
    meter.start()
    (a / "energy_uj").unlink()
    assert meter.stop(1.0) == (None, "measured (RAPL)")


def test_estimate_is_time_times_watts_and_says_so():
    assert energy.EstimateMeter(15.0).stop(2.5) == (37.5, "estimated from 15 W")
    assert energy.EstimateMeter(7.5).stop(4.0) == (30.0, "estimated from 7.5 W")


def test_meter_prefers_a_readable_counter_then_the_users_watts(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGITSCOPE_POWERCAP_DIR", str(tmp_path))
    monkeypatch.delenv("LOGITSCOPE_POWERMETRICS", raising=False)
    assert isinstance(energy.meter_for("CPU", 20.0), energy.EstimateMeter)
    assert energy.meter_for("CPU", 20.0).watts == 20.0
    _zone(tmp_path, "intel-rapl:0", 1, 10**9)
    assert isinstance(energy.meter_for("CPU", 20.0), energy.RaplMeter)
    assert isinstance(energy.meter_for("Metal GPU", 20.0), energy.EstimateMeter)


def test_powermetrics_samples_integrate_over_the_interval():
    text = (
        "*** Sampled system activity\nCPU Power: 900 mW\nGPU Power: 300 mW\n"
        "Combined Power (CPU + GPU + ANE): 1200 mW\n"
        "*** Sampled system activity\nCombined Power (CPU + GPU + ANE): 2800 mW\n"
    )
    assert energy.powermetrics_joules(text, 0.1) == pytest.approx(0.4, abs=1e-12)
    assert energy.powermetrics_joules("powermetrics must be invoked as the superuser", 0.1) is None


def test_typical_watts_table():
    from engine.machine.power_table import typical_watts

    assert typical_watts("Metal GPU", "Apple M2 Pro")[0] == 40
    assert typical_watts("Metal GPU", "Apple M1")[0] == 20
    assert typical_watts("CUDA GPU", "AMD EPYC 7763", "NVIDIA H200")[0] == 700
    watts, source = typical_watts("CPU", "AMD EPYC 7763 64-Core Processor")
    assert "per core" in source and watts % 5.0 == 0 and watts >= 5.0


def test_prices_times_tokens_exactly():
    p = costs.ApiPrice("X", "m", input_per_mtok=0.15, output_per_mtok=0.60)
    assert p.cost(1_000_000, 0) == pytest.approx(0.15, rel=1e-12)
    assert p.cost(2_000, 500) == pytest.approx((2_000 * 0.15 + 500 * 0.60) / 1e6, rel=1e-12)
    assert p.cost(None, 500) is None


def test_energy_figures_exactly():
    assert costs.electricity_cost(3.6e6, 0.25) == 0.25
    assert costs.electricity_cost(36.0, 0.17) == pytest.approx(36 / 3.6e6 * 0.17, rel=1e-12)
    assert costs.electricity_cost(None, 0.17) is None
    assert costs.joules_per_token(12.0, 30) == 0.4
    assert costs.joules_per_token(12.0, 0) is None
    assert costs.wh_per_1000(36.0, 100) == pytest.approx(0.1, rel=1e-12)
    assert costs.money(0.0000123, "USD") == "0.0000123 USD"
    assert costs.money(None, "USD") == "not known"


def test_settings_and_price_table_round_trip(private_data_dir):
    s = costs.CostSettings(price_per_kwh=0.30, currency="EUR", watts=12.5)
    costs.save_settings(s)
    assert costs.load_settings() == s
    (private_data_dir / costs.COST_FILE).write_text('{"price_per_kwh": -1}')
    assert costs.load_settings() == costs.CostSettings()  # a bad file: the defaults
    assert costs.load_prices() == list(costs.EXAMPLE_PRICES)
    assert all(p.example and p.source and p.date for p in costs.EXAMPLE_PRICES)
    mine = [costs.ApiPrice("Me", "local-8b", 0.1, 0.2, example=False)]
    costs.save_prices(mine)
    assert costs.load_prices() == mine
    rows = [{"provider": "A", "model": "b", "input_per_mtok": -3, "output_per_mtok": 1}]
    (private_data_dir / costs.PRICES_FILE).write_text(json.dumps(rows))
    assert costs.load_prices() == []  # a negative price is not a price
    (private_data_dir / costs.PRICES_FILE).unlink()
    (private_data_dir / costs.COST_FILE).unlink()


def _done(**kw) -> DoneRecord:
    base = dict(
        finish_reason="eos",
        text="hi",
        prompt_tokens=10,
        generated_tokens=4,
        ttft_s=0.1,
        prefill_tps=100.0,
        decode_tps=40.0,
        peak_memory_bytes=1,
        kv_cache_bytes=1,
        context_length=2048,
        seed=0,
        elapsed_s=2.0,
    )
    return DoneRecord(**{**base, **kw})


def test_done_record_carries_energy_through_the_schema():
    settings = costs.CostSettings(price_per_kwh=0.36, currency="EUR")
    d = costs.with_cost(_done(), 30.0, "estimated from 15 W", settings)
    assert (d.energy_j, d.energy_source, d.cost_currency) == (30.0, "estimated from 15 W", "EUR")
    assert d.cost == pytest.approx(30.0 / 3.6e6 * 0.36, rel=1e-12)
    clean = clean_record(to_dict(d))
    assert record_from_dict(clean) == d
    remote = clean_record(to_dict(_done()))  # a server's run: no energy, nothing invented
    assert "energy_j" not in remote and record_from_dict(remote).energy_j is None
    with pytest.raises(SchemaError, match="energy_j"):
        clean_record({**to_dict(d), "energy_j": -1.0})
