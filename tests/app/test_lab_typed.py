"""A lab experiment's parameters leave the Lab window as their dataclass and its
result arrives as its dataclass, through the engine's worker and a real pickling
pipe (a stand-in backend answers: no model)."""

from __future__ import annotations

from types import SimpleNamespace

from app.core.bridge import EngineBridge
from app.lab.window import DONE, LabWindow
from engine.lab import BatchParams, BatchResult, CacheParams
from engine.process import operations as ops
from engine.process.worker import _Worker
from engine.run.records import LabRecord
from engine.run.settings import SamplingSettings
from tests.engine.test_typed_boundaries import RESULT, _LocalStandIn, _Pipe


class _Client:
    """Stands for EngineClient.lab: the operation is handled by the engine's worker,
    its replies pickled as the pipe does."""

    def __init__(self):
        self.backend = _LocalStandIn()

    def lab(self, params, prompt, settings, model=None):
        pipe = _Pipe()
        worker = _Worker(pipe)
        worker.backend = lambda rid, op: self.backend
        worker.handle(ops.Request(1, ops.Lab(params, prompt, settings, model)))
        return iter([m["record"] for m in pipe.sent if "record" in m])

    def cancel(self):
        pass


def _lab(qtbot, tmp_path):
    model = SimpleNamespace(name="Tiny", backend="mlx", path=str(tmp_path))
    client = _Client()
    bridge = EngineBridge(client, owns_client=False)
    lab = LabWindow(lambda: (model, "Hello there", SamplingSettings()), bridge=bridge)
    qtbot.addWidget(lab)
    return lab, client


def test_a_lab_result_arrives_in_the_window_as_its_dataclass(qtbot, tmp_path):
    lab, client = _lab(qtbot, tmp_path)
    got = []
    lab.bridge.lab_done.connect(got.append)
    lab.tabs.setCurrentWidget(lab.batch)
    lab.batch.tokens.setValue(6)
    lab.batch.run.click()
    qtbot.waitUntil(lambda: bool(got) and not lab.bridge.busy, timeout=5000)
    (params, prompt, _settings), *_ = client.backend.asked
    assert params == BatchParams((1, 2, 4, 8), 6) and prompt == "Hello there"
    (record,) = got
    assert isinstance(record, LabRecord) and isinstance(record.result, BatchResult)
    assert record.result == RESULT
    assert lab.batch.summary.text() == (
        "1 prompts, 8 answer tokens at each size. Every batched answer equals the "
        "unbatched one: yes. Peak memory by batch size: 1: 10 MB."
    )
    assert lab.status.text() == DONE
    lab.close()


def test_the_cache_experiment_starts_with_the_playground_prompt(qtbot, tmp_path):
    lab, client = _lab(qtbot, tmp_path)
    lab.cache.turns.setValue(3)
    lab.cache.run.click()
    qtbot.waitUntil(lambda: bool(client.backend.asked) and not lab.bridge.busy, timeout=5000)
    (params, _prompt, _settings), *_ = client.backend.asked
    assert params == CacheParams(turns=3, tokens=12, first="Hello there")
    lab.close()


def test_the_lab_views_start_from_the_one_place_that_holds_the_defaults(qtbot, tmp_path):
    from engine.lab import WINDOW_QUANT_BITS, QuantParams, SpeculativeParams

    lab, _client = _lab(qtbot, tmp_path)
    assert lab.quant.params() == QuantParams(WINDOW_QUANT_BITS, QuantParams().tokens)
    assert lab.speculative.params() == SpeculativeParams()
    assert lab.batch.params() == BatchParams()
    assert lab.cache.params() == CacheParams()
    lab.close()
