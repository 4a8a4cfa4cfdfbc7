"""Damaged cost files (`cost.json`, `api_prices.json`): every command still works, the
damage is said in words naming the file, and the file's bytes are kept (moved aside to
`<name>.damaged` only when a fresh one is written)."""

from __future__ import annotations

import json
import math

import pytest

from engine.cli import main
from engine.cost import costs
from engine.run.records import DoneRecord
from engine.run.settings import SamplingSettings
from engine.sessions.export import render
from engine.sessions.journal import Journal, read_session
from engine.store import settings_files
from tests.engine.test_cost_reports import _done

DIGITS_400 = "9" * 400
GOOD_ROW = {"provider": "B", "model": "ok", "input_per_mtok": 1.0, "output_per_mtok": 2.0}


def _row(**kw) -> dict:
    return {**GOOD_ROW, "model": "bad", **kw}


# Each kind of damage, for each file: (its bytes, what a reader gets back).
COST_DAMAGE = {
    "invalid JSON": b'{"price_per_kwh": 0.3,',
    "wrong types": b'{"price_per_kwh": "abc", "currency": 5, "watts": [1]}',
    "not an object": b'"5"',
    "NaN": b'{"price_per_kwh": NaN, "watts": Infinity}',
    "400 digits": f'{{"price_per_kwh": {DIGITS_400}}}'.encode(),
    "1e308": b'{"price_per_kwh": 1e308, "watts": 1e308}',
    "deep nesting": b"[" * 100_000,
    "10 MB": b'{"currency": "' + b"A" * 10_000_000 + b'"}',
    "binary garbage": bytes(range(256)) * 40,
}
PRICE_DAMAGE = {
    "invalid JSON": b'[{"model": "x",',
    "wrong types": json.dumps([GOOD_ROW, _row(model=5), _row(output_per_mtok="x")]).encode(),
    "not a list": b'{"model": "x"}',
    "NaN": json.dumps([GOOD_ROW, _row(input_per_mtok=math.nan)]).encode(),
    "400 digits": f'[{json.dumps(GOOD_ROW)}, {{"model": "m", "input_per_mtok": {DIGITS_400}, '
    f'"output_per_mtok": 1}}]'.encode(),
    "1e308": json.dumps([GOOD_ROW, _row(output_per_mtok=1e308)]).encode(),
    "deep nesting": b"[" * 100_000 + b"]" * 100_000,
    "10 MB": b"[" + b" " * 10_000_000 + b"]",
    "binary garbage": bytes(range(256)) * 40,
}
# What the table holds after each: the good row where one survives, else the examples.
SURVIVES = {"wrong types", "NaN", "400 digits", "1e308"}


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    """A data folder of its own, and nothing said yet in this process."""
    monkeypatch.setenv("LOGITSCOPE_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(settings_files, "_said", [])
    return tmp_path


@pytest.fixture
def session(fresh):
    journal = Journal.create()
    rid = journal.start_run("Capital?", SamplingSettings().to_dict(), None)
    journal.record(rid, _done(72.0, "estimated from 14.4 W", 0.00002, "EUR"))
    journal.close()
    return read_session(journal.path)


def _warning(err: str, path) -> str:
    lines = [line for line in err.splitlines() if line.startswith("logitscope: warning: ")]
    assert len(lines) == 1, err
    assert str(path) in lines[0] and "damaged" in lines[0], lines[0]
    assert len(lines[0]) < 600  # one readable line, not the file's contents
    return lines[0]


def _strict_json(text: str):
    def refuse(name):
        raise AssertionError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("kind", COST_DAMAGE)
def test_damaged_cost_settings_give_the_defaults_and_say_so(fresh, capsys, kind):
    path = fresh / costs.COST_FILE
    path.write_bytes(COST_DAMAGE[kind])
    assert costs.load_settings() == costs.CostSettings()
    line = _warning(capsys.readouterr().err, path)
    assert "the defaults" in line
    assert path.read_bytes() == COST_DAMAGE[kind]
    costs.load_settings()  # said once per process, not at every read
    assert capsys.readouterr().err == ""


def test_a_damaged_field_costs_only_that_field(fresh, capsys):
    path = fresh / costs.COST_FILE
    path.write_text(f'{{"price_per_kwh": {DIGITS_400}, "currency": "EUR", "watts": 12}}')
    assert costs.load_settings() == costs.CostSettings(costs.DEFAULT_PRICE_PER_KWH, "EUR", 12.0)
    line = _warning(capsys.readouterr().err, path)
    assert "the price per kWh (a 400-digit number) is not a number from 0 to 100,000" in line


@pytest.mark.parametrize("kind", PRICE_DAMAGE)
def test_a_damaged_price_table_keeps_its_good_rows_and_says_so(fresh, capsys, kind):
    path = fresh / costs.PRICES_FILE
    path.write_bytes(PRICE_DAMAGE[kind])
    prices = costs.load_prices()
    if kind in SURVIVES:
        assert [p.model for p in prices] == ["ok"]
    else:
        assert prices == list(costs.EXAMPLE_PRICES)
    _warning(capsys.readouterr().err, path)
    assert path.read_bytes() == PRICE_DAMAGE[kind]


def test_the_table_says_which_row_and_why(fresh, capsys):
    path = fresh / costs.PRICES_FILE
    path.write_bytes(PRICE_DAMAGE["1e308"])
    costs.load_prices()
    line = _warning(capsys.readouterr().err, path)
    assert "row 2: the output price (1e+308) is not a number from 0 to 1,000,000" in line
    assert line.endswith("those rows are left out")


@pytest.mark.parametrize("kind", PRICE_DAMAGE)
def test_sessions_cost_and_exports_work_on_a_damaged_table(session, capsys, kind):
    path = session.path.parent.parent / costs.PRICES_FILE
    path.write_bytes(PRICE_DAMAGE[kind])
    assert main(["sessions", "--cost", "--json"]) == 0
    out = capsys.readouterr()
    totals = _strict_json(out.out)[0]["cost"]
    assert totals["cost"] == {"EUR": 0.00002}
    ok = [a for a in totals["api"] if a["model"] == "ok"]
    assert len(ok) == (kind in SURVIVES)
    if ok:  # 1,000 prompt x 1.0 + 200 generated x 2.0 per million tokens
        assert ok[0]["cost"] == pytest.approx(0.0014, rel=1e-12)
    _warning(out.err, path)
    assert main(["sessions", "--cost"]) == 0
    assert "the same tokens hosted:" in capsys.readouterr().out
    md, html = render("md", session), render("html", session)
    assert "| electricity | `0.0000200 EUR` |" in md
    assert "<td>electricity</td><td>0.0000200 EUR</td>" in html
    assert path.read_bytes() == PRICE_DAMAGE[kind]


def test_sessions_cost_json_never_prints_infinity(session, capsys):
    """A price table right at the bounds, and a journal's run with absurd token counts."""
    rows = [{"provider": "A", "model": "max", "input_per_mtok": 1e6, "output_per_mtok": 1e6}]
    (session.path.parent.parent / costs.PRICES_FILE).write_text(json.dumps(rows))
    huge = costs.ApiPrice("A", "max", 1e6, 1e6)
    assert huge.cost(10**400, 1) is None  # beyond any float: not known, not an error
    assert main(["sessions", "--cost", "--json"]) == 0
    totals = _strict_json(capsys.readouterr().out)[0]["cost"]
    assert totals["api"][0]["cost"] == pytest.approx(1_200.0, rel=1e-12)


def test_money_of_a_non_number_is_not_known():
    assert costs.money(math.inf, "USD") == "not known"
    assert costs.money(math.nan, "USD") == "not known"


@pytest.mark.parametrize(
    ("name", "fresh_file"),
    [
        (costs.COST_FILE, lambda: costs.save_settings(costs.CostSettings(0.3, "EUR"))),
        (costs.PRICES_FILE, lambda: costs.save_prices([costs.EXAMPLE_PRICES[0]])),
    ],
)
def test_saving_over_a_damaged_file_moves_it_aside_first(fresh, capsys, name, fresh_file):
    path = fresh / name
    path.write_bytes(b"[" * 100_000)
    fresh_file()
    kept = fresh / f"{name}.damaged"
    assert kept.read_bytes() == b"[" * 100_000
    assert "moved aside to " + kept.name in capsys.readouterr().err
    path.write_bytes(b"\x00\xff")
    fresh_file()
    assert kept.read_bytes() == b"[" * 100_000  # an earlier one is never overwritten
    assert (fresh / f"{name}.damaged.2").read_bytes() == b"\x00\xff"
    fresh_file()  # a sound file is simply replaced
    # the files here (a run of an earlier test still ending may list History, which makes
    # an empty sessions folder in whatever data folder is current: not this test's subject)
    files = sorted(p.name for p in fresh.iterdir() if p.is_file())
    assert files == sorted([name, kept.name, f"{name}.damaged.2"])


def test_a_folder_or_fifo_in_place_of_a_cost_file_is_damage(fresh, capsys):
    import os

    (fresh / costs.COST_FILE).mkdir()
    os.mkfifo(fresh / costs.PRICES_FILE)  # reading it would wait forever
    assert costs.load_settings() == costs.CostSettings()
    assert costs.load_prices() == list(costs.EXAMPLE_PRICES)
    assert capsys.readouterr().err.count("it is not a regular file") == 2


def test_a_local_runs_energy_survives_a_400_digit_price(fresh, capsys):
    """The engine's run wrapper read the settings with an OverflowError before."""
    from engine.backends.mlx.backend import _with_energy

    (fresh / costs.COST_FILE).write_text(f'{{"price_per_kwh": {DIGITS_400}}}')
    done = _done()
    out = list(_with_energy(iter([done]), "CPU"))
    assert isinstance(out[-1], DoneRecord)
    assert out[-1].cost == pytest.approx(
        out[-1].energy_j / costs.J_PER_KWH * costs.DEFAULT_PRICE_PER_KWH, rel=1e-12
    )
    _warning(capsys.readouterr().err, fresh / costs.COST_FILE)


def test_a_local_generate_survives_a_400_digit_price(fresh, default_model_path):
    import os
    import subprocess
    import sys

    path = fresh / costs.COST_FILE
    path.write_text(f'{{"price_per_kwh": {DIGITS_400}}}')
    p = subprocess.run(
        [sys.executable, "-m", "engine", "generate", "--prompt", "Hi", "--max-tokens", "2"]
        + ["--temp", "0", "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "LOGITSCOPE_DATA_DIR": str(fresh)},
    )
    assert p.returncode == 0, p.stderr
    done = _strict_json(p.stdout.splitlines()[-1])
    assert done["type"] == "done" and done["cost_currency"] == "USD"
    assert done["cost"] == pytest.approx(
        done["energy_j"] / costs.J_PER_KWH * costs.DEFAULT_PRICE_PER_KWH, rel=1e-12
    )
    line = _warning(p.stderr, path)
    assert "the price per kWh (a 400-digit number) is not a number from 0 to 100,000" in line
    assert path.read_text() == f'{{"price_per_kwh": {DIGITS_400}}}'
