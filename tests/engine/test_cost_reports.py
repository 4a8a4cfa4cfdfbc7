"""A run's energy and money in the exports (JSON fields, Markdown and HTML rows) and
summed by `logitscope sessions --cost`, with exact numbers."""

from __future__ import annotations

import json

import pytest

from engine.cli import main
from engine.cost import costs
from engine.run.records import DoneRecord
from engine.run.settings import SamplingSettings
from engine.sessions.export import render
from engine.sessions.journal import Journal, read_session

PRICE = costs.ApiPrice("Acme", "big-1", 1.0, 3.0, source="acme.test", date="2025-01", example=False)


def _done(energy=None, source=None, cost=None, currency=None) -> DoneRecord:
    return DoneRecord(
        finish_reason="eos",
        text="Paris.",
        prompt_tokens=1_000,
        generated_tokens=200,
        ttft_s=0.1,
        prefill_tps=100.0,
        decode_tps=40.0,
        peak_memory_bytes=1,
        kv_cache_bytes=1,
        context_length=2048,
        seed=0,
        elapsed_s=5.0,
        energy_j=energy,
        energy_source=source,
        cost=cost,
        cost_currency=currency,
    )


@pytest.fixture
def session(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGITSCOPE_DATA_DIR", str(tmp_path))
    costs.save_prices([PRICE])
    journal = Journal.create()
    for done in (_done(72.0, "estimated from 14.4 W", 0.00002, "EUR"), _done()):
        rid = journal.start_run("Capital of France?", SamplingSettings().to_dict(), None)
        journal.record(rid, done)
    journal.close()
    return read_session(journal.path)


def test_exports_carry_the_fields_and_rows(session):
    data = json.loads(render("json", session))
    done = [r for r in data["runs"][0]["records"] if r["type"] == "done"][0]
    assert (done["energy_j"], done["energy_source"]) == (72.0, "estimated from 14.4 W")
    assert (done["cost"], done["cost_currency"]) == (0.00002, "EUR")
    md = render("md", session)
    assert "| energy | `72 J (estimated from 14.4 W)` |" in md
    assert "| energy per token | `0.36 J/token · 0.1 Wh per 1,000 tokens` |" in md
    assert "| electricity | `0.0000200 EUR` |" in md
    # 1,000 x 1.0 + 200 x 3.0 per million = 0.0016
    assert "on Acme big-1 \\(your price, 2025-01\\) | `0.00160 USD` |" in md
    assert "| energy | `not known (a remote run, or recorded before energy was)` |" in md
    html = render("html", session)
    assert "<td>energy</td><td>72 J (estimated from 14.4 W)</td>" in html
    assert "<td>electricity</td><td>0.0000200 EUR</td>" in html


def test_sessions_cost_sums_a_session(session, capsys):
    assert main(["sessions", "--cost", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)[0]
    assert out["runs"][0]["energy_j"] == 72.0 and out["runs"][1]["energy_j"] is None
    t = out["cost"]
    assert (t["runs"], t["with_energy"], t["energy_j"], t["estimated"]) == (2, 1, 72.0, 1)
    assert t["cost"] == {"EUR": 0.00002}
    assert (t["prompt_tokens"], t["generated_tokens"]) == (2_000, 400)
    assert t["api"][0]["cost"] == pytest.approx(0.0032, rel=1e-12)
    assert main(["sessions", "--cost"]) == 0
    text = capsys.readouterr().out
    assert "cost: 72 J = 0.02 Wh over 1 run(s), 1 estimated; electricity 0.0000200 EUR" in text
    assert "on Acme big-1 (your price, 2025-01): 0.00320 USD" in text
    assert main(["sessions"]) == 0
    assert "cost:" not in capsys.readouterr().out
