"""Token counts come from one definition (engine.run.run_kind.answer_tokens): the status
line, the context chart, its explanation and the HTML report give the same number for a
run that ended on its end-of-sequence step, streaming or done."""

from __future__ import annotations

import re

from app.charts.context import ContextChart
from app.charts.explain import context
from app.playground.status_line import status_text
from app.session.run_state import RunState
from engine.run.records import DoneRecord, ModelRecord, TokenRecord
from engine.run.run_kind import answer_tokens


def _token(step: int, text: str, eos: bool = False) -> TokenRecord:
    return TokenRecord(
        step, 7 + step, text, -0.5, 0.6, -0.5, (), (), 1.0, 1.0, 0.1 * step, 0.1, 20 + step,
        eos=eos,
    )  # fmt: skip


MODEL = ModelRecord(
    name="tiny", path="/m", architecture="llama", quantization="4-bit", size_bytes=1,
    context_length=64, device="CPU", load_s=0.0,
)  # fmt: skip


def test_every_view_counts_the_answer_alike(qtbot):
    tokens = [_token(0, "Hi"), _token(1, "!"), _token(2, "", eos=True)]
    assert answer_tokens(tokens) == 2
    state = RunState(prompt="Say hi", model=MODEL)
    state.add_tokens(tokens)
    streaming = status_text(state, MODEL)
    assert re.search(r"· 2 tokens ·", streaming), streaming
    done = DoneRecord("eos", "Hi!", 20, 2, 0.1, 50.0, 9.0, None, None, 64, None, 1.0)
    state.done = done
    assert "· 2 tokens ·" in status_text(state, MODEL)
    chart = ContextChart()
    qtbot.addWidget(chart)
    chart.update_from(state)
    assert chart.counts["output"] == 2 == done.generated_tokens
    assert chart.counts["prompt"] + chart.counts["output"] == 22
    assert "2 output" in context(state)
