"""The engine's boundaries are typed: operations, inspect requests and lab results
cross the process pipe as dataclasses (pickled as themselves), the worker finds a
handler by an operation's class, and the Backend protocol names every argument
its callers pass. No model: a stand-in backend answers."""

from __future__ import annotations

import inspect
import multiprocessing as mp
import pickle

import pytest

from engine.backends.base import Backend, LocalBackend
from engine.inside.inspect_request import InspectRequest
from engine.lab import BatchParams, BatchResult
from engine.process import operations as ops
from engine.process.worker import HANDLERS, _Worker
from engine.run.continuation import Continuation
from engine.run.records import LabRecord, ModelRecord
from engine.run.settings import SamplingSettings

RESULT = BatchResult(
    rows=(
        {
            "batch_size": 1,
            "seconds": 2.0,
            "generated_tokens": 8,
            "prompt_tokens": 30,
            "total_tps": 4.0,
            "per_sequence_tps": 4.0,
            "peak_memory_bytes": 10_000_000,
        },
    ),
    answers={"1": [[1, 2]]},
    prompts=("Hi.",),
    unbatched_equal={"1": True},
)


class _Pipe:
    """The worker's end of the events pipe: every message pickled as the pipe does."""

    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(pickle.loads(pickle.dumps(msg)))


class _LocalStandIn:
    """A local backend that answers the lab with RESULT and records what it was given."""

    kind, local, prefer = "mlx", True, "auto"

    def __init__(self):
        self.asked = []

    def lab(self, params, prompt, settings, progress):
        self.asked.append((params, prompt, settings))
        progress("measuring…", 0.5)
        return RESULT


def test_every_work_operation_has_one_handler_and_no_other_op_exists():
    assert set(HANDLERS) == set(ops.WORK)
    assert set(ops.OPERATIONS) == {*ops.WORK, ops.Cancel, ops.Shutdown}
    for handler in HANDLERS.values():  # (worker, request id, the operation)
        assert list(inspect.signature(handler).parameters) == ["self", "rid", "op"]


@pytest.mark.parametrize("op", ["generate", {"op": "generate"}, None, BatchParams()])
def test_an_unknown_operation_cannot_be_sent(op):
    with pytest.raises(TypeError, match="not an engine operation"):
        ops.Request(1, op)


def test_operations_cross_the_pipe_as_themselves():
    settings = SamplingSettings(temperature=0.3, stop=("\n",))
    cont = Continuation(prefix=(5, 6), forced=7)
    request = InspectRequest("lens", 2, top_k=3, continuation=[1, 2, 3])
    sent = [
        ops.Generate("hi", settings, "m", "sk-secret", "speed", cont),
        ops.Inspect("hi", settings, request, "m"),
        ops.Lab(BatchParams((1, 2), 4), "hi", settings, "m"),
        ops.Load("m"),
        ops.Cancel(3),
        ops.Shutdown(),
    ]
    ours, theirs = mp.get_context("spawn").Pipe(duplex=False)
    for op in sent:
        theirs.send(ops.Request(9, op))
        got = ours.recv()
        assert type(got.op) is type(op) and got.op == op and got.id == 9
    assert request.continuation == (1, 2, 3)  # a tuple, hashable, whatever was given
    assert "sk-secret" not in repr(sent[0])  # an API key is never printed


def test_a_lab_result_crosses_the_pipe_as_its_dataclass(monkeypatch):
    pipe, backend = _Pipe(), _LocalStandIn()
    worker = _Worker(pipe)
    monkeypatch.setattr(worker, "backend", lambda rid, op: backend)
    params = BatchParams((1,), 4)
    worker.handle(ops.Request(4, ops.Lab(params, "hi", SamplingSettings(), "m")))
    (asked_params, prompt, settings), *_ = backend.asked
    assert asked_params is params and prompt == "hi" and isinstance(settings, SamplingSettings)
    *progress, last = [m["record"] for m in pipe.sent if "record" in m]
    assert [p.message for p in progress] == ["measuring…"]
    assert isinstance(last, LabRecord) and last.kind == "batch"
    assert isinstance(last.result, BatchResult) and last.result == RESULT
    assert last.result.rows[0].total_tps == 4.0  # a row dataclass


def test_a_bad_continuation_is_refused_by_the_worker(monkeypatch):
    pipe = _Pipe()
    worker = _Worker(pipe)
    monkeypatch.setattr(worker, "backend", lambda rid, op: pytest.fail("no model is loaded"))
    bad = Continuation(prefix=("a",))  # ids, not text
    worker.handle(ops.Request(2, ops.Generate("hi", SamplingSettings(), continuation=bad)))
    (msg,) = pipe.sent
    assert msg["record"].kind == "settings" and "token ids" in msg["record"].message


def _params(func) -> list[tuple[str, object, object]]:
    """(name, kind, default) of each parameter after self."""
    return [
        (p.name, p.kind, p.default) for p in list(inspect.signature(func).parameters.values())[1:]
    ]


def _backends():
    from engine.backends.openai.backend import OpenAIBackend

    out = [OpenAIBackend]
    try:
        from engine.backends.mlx.backend import MLXBackend
    except ImportError:  # no MLX on this machine
        return out
    return [*out, MLXBackend]


@pytest.mark.parametrize("backend", _backends(), ids=lambda b: b.__name__)
def test_each_backend_takes_what_the_protocol_declares(backend):
    protocol = LocalBackend if backend.local else Backend
    methods = [
        name
        for name, value in vars(protocol).items()
        if callable(value) and not name.startswith("_")
    ]
    methods += [m for m in ("load", "generate", "close") if m not in methods]
    assert {"generate", "load", "close"} <= set(methods)
    if backend.local:
        assert {"inspect", "lab"} <= set(methods)
    for name in methods:
        ours = getattr(Backend, name, None) or getattr(protocol, name)
        assert _params(getattr(backend, name)) == _params(ours), (backend.__name__, name)


def test_the_protocol_declares_what_the_worker_passes():
    names = list(inspect.signature(Backend.generate).parameters)
    assert names == ["self", "prompt", "settings", "should_stop", "continuation"]
    assert list(inspect.signature(LocalBackend.lab).parameters) == [
        "self",
        "params",
        "prompt",
        "settings",
        "progress",
    ]
    assert inspect.signature(LocalBackend.inspect).parameters["request"].annotation in (
        InspectRequest,
        "InspectRequest",
    )


def test_a_lab_record_is_plain_values():
    record = LabRecord("batch", RESULT)
    assert pickle.loads(pickle.dumps(record)) == record
    assert ModelRecord.__dataclass_fields__  # records stay dataclasses
