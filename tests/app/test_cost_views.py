"""The run's cost where the window shows it: the status line, the throughput chart's
`?` Cost section, Compare's cost rows, the thinking header, the token economy in money,
and the Cost settings dialog writing the files the engine reads."""

from __future__ import annotations

import re
from dataclasses import replace
from types import SimpleNamespace

import pytest
from PySide6.QtWidgets import QTableWidget

from app.charts.explain import EXPLAIN
from app.compare.cost import COST_ROWS, LaneCosts
from app.dialogs.cost_dialog import CostDialog
from engine.cost import costs
from tests.app.conftest import run_and_wait
from tests.engine.test_cost_reports import _done


@pytest.fixture
def prices(private_data_dir):
    costs.save_prices([costs.ApiPrice("Acme", "big-1", 1.0, 3.0, date="2025-01", example=False)])
    yield
    for name in (costs.PRICES_FILE, costs.COST_FILE):
        (private_data_dir / name).unlink(missing_ok=True)


def test_a_real_run_shows_its_energy(qtbot, replay_window, prices):
    state = run_and_wait(qtbot, replay_window, "What is the capital of France?", max_tokens=6)
    d = state.done
    assert d.energy_j is not None and d.energy_source
    per = d.energy_j / d.generated_tokens
    status = replay_window.status_label.text()
    assert f"≈ {per:.2g} J/token" in status, status
    if d.energy_source.startswith("estimated"):
        assert f"J/token ({d.energy_source})" in status
    text = EXPLAIN["throughput"](state)
    assert "\n\nCost. Energy" in text and f"{d.energy_j:.3g} J" in text
    cost = 1.0 * d.prompt_tokens / 1e6 + 3.0 * d.generated_tokens / 1e6
    assert f"on Acme big-1 (your price, 2025-01) {costs.money(cost, 'USD')}" in text


def test_a_remote_runs_cost_section_says_energy_is_not_known(prices):
    state = SimpleNamespace(done=_done(), n=1, elapsed=[0.0])
    text = EXPLAIN["throughput"](state)
    assert "energy is not known" in text
    assert "1000 prompt and 200 output tokens: on Acme big-1" in text


def test_compare_cost_rows(qtbot, prices):
    table = QTableWidget(len(COST_ROWS), 2)
    qtbot.addWidget(table)
    tally = LaneCosts()
    a = SimpleNamespace(index=0, state=SimpleNamespace(done=None))
    b = SimpleNamespace(index=1, state=SimpleNamespace(done=None))
    for reason in ("length", "eos", "eos"):  # a cut-off answer still costs
        a.state.done = replace(
            _done(36.0, "estimated from 12 W", 0.01, "EUR"), finish_reason=reason
        )
        tally.add(a, a.state.done)
    b.state.done = _done()  # a server's run
    tally.add(b, b.state.done)
    tally.fill(table, [a, b], 0)
    col = [table.item(r, 0).text() for r in range(len(COST_ROWS))]
    assert col == [
        "0.18 (12 W est.)",
        "0.0100 EUR",
        "0.00160 USD (big-1)",
        "0.0150 EUR (2 of 3 completed)",
    ]
    assert [table.item(r, 1).text() for r in range(len(COST_ROWS))][:2] == ["not known"] * 2


def test_thinking_header_shows_its_share_of_the_cost(qtbot):
    from app.playground.thinking_view import AnswerViews, ThinkingBlock
    from app.widgets.token_view import TokenView
    from engine.run.records import TokenRecord

    out, block = TokenView(), ThinkingBlock()
    qtbot.addWidget(out)
    qtbot.addWidget(block)
    views = AnswerViews(out, block)

    def tok(step, thinking):
        return TokenRecord(
            step, 1, "a", -0.1, 0.9, -0.1, (), (), 0.1, 0.1, 0.5, 0.5, 5, thinking=thinking
        )

    views.append_tokens([tok(0, True), tok(1, True), tok(2, False)])
    views.set_done(_done(36.0, "estimated from 12 W", 0.01, "EUR"))  # 1.0 s of 5.0 s
    assert block.header.text().endswith("· ≈ 20% of the cost (0.00200 EUR)")


def test_token_economy_in_money(qtbot, default_model_path, prices):
    from app.inside.tokenizer_view import TokenizerView
    from engine.models.light_tokenizer import LightTokenizer
    from engine.models.token_explorer import economy

    view = TokenizerView()
    qtbot.addWidget(view)
    tok = LightTokenizer(default_model_path)
    view.set_model(tok, [], prefill_tps=200.0)
    view.economy_in.setCurrentIndex(1)
    table = economy(tok)
    heights = list(view.bars.opts["height"])
    assert heights == [float(table[n]["tokens"]) * 1.0 for n in table]  # tokens x $1 / 1M x 1M
    local = list(view.local_bars.opts["height"])
    watts = float(
        re.search(r"estimated from ([\d.]+) W", view.chart.getPlotItem().titleLabel.text)[1]
    )
    english = table["English"]["tokens"] / 200.0 * watts * 1e6 / 3.6e6 * costs.DEFAULT_PRICE_PER_KWH
    assert local[0] == pytest.approx(english, rel=1e-9)
    view.economy_in.setCurrentIndex(0)
    assert list(view.bars.opts["height"])[0] == 1.0  # English vs English


def test_cost_dialog_writes_what_the_engine_reads(qtbot, prices):
    dialog = CostDialog()
    qtbot.addWidget(dialog)
    dialog.price.setValue(0.31)
    dialog.currency.setText("EUR")
    dialog.watts.setValue(22.0)
    dialog.table.item(0, 2).setText("0.5")
    dialog.accept()
    assert costs.load_settings() == costs.CostSettings(0.31, "EUR", 22.0)
    assert costs.load_prices()[0].input_per_mtok == 0.5
    dialog = CostDialog()
    qtbot.addWidget(dialog)
    dialog.table.item(0, 1).setText("")  # a row without a model does not fit
    dialog.accept()
    assert dialog.error.text() == "Row 1: a model name and prices of at least 0"
    assert dialog.result() == 0
