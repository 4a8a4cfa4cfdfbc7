"""The replaying engine's recordings still equal what the real default model answers.

Each cassette in tests/data/replay/ is replayed request by request on an engine as
fresh as the one it was captured on (its caches dropped by loading another model), and
every record's stable fields (all but timings, memory and machine-specific ones:
tests/replay.py's VOLATILE) must be the same: a change in the engine or the model shows
here, not as app tests passing on stale runs. The compute path is pinned to the one the
recording names (its model record's `compute`), never left to what this machine would
measure: the path-dependent fields (weight bytes, the log-probabilities' last digits)
are then checked against that path, on any machine.
Re-capture with `python scripts/capture_replay.py`.
"""

from __future__ import annotations

import json

import pytest

from tests.replay import DEFAULT, MODELS, REPLAY_DIR, record_to_json, stable

CASSETTES = sorted(p.stem for p in REPLAY_DIR.glob("*.json"))


def _model(spec: str) -> str | None:
    from engine.store.paths import models_dir

    return None if spec == DEFAULT else spec.replace(MODELS, str(models_dir()), 1)


def recorded_path(entries: list[dict]) -> str:
    """The compute preference that pins the path a cassette's model ran on: `speed` for
    float32, `memory` for the stored weights (the first model record says which)."""
    for entry in entries:
        for d in entry["records"]:
            if d["type"] == "model":
                return "speed" if d["compute"].startswith("float32") else "memory"
    return "speed"


def _ask(client, entry: dict, default: str, prefer: str):
    """The recorded request, sent to the real engine on the pinned path; its records."""
    from engine.models.load_options import LoadOptions
    from engine.models.model_prefs import set_load_options
    from engine.run.continuation import Continuation
    from engine.run.settings import SamplingSettings

    key = entry["key"]
    model = _model(key["model"])
    if key["op"] == "load":  # with the load options remembered when it was recorded
        for spec in {model, default}:  # the engine may look them up by either name
            set_load_options(spec, LoadOptions.from_dict(entry["load_options"]))
        return list(client.load(model, prefer=prefer))
    if key["op"] == "generate":
        settings = SamplingSettings.from_dict(key["settings"])
        continuation = Continuation.from_dict(key["continuation"])
        return client.generate(key["prompt"], settings, model, None, prefer, continuation)
    if key["op"] == "read":
        from engine.reading.request import ReadRequest

        return client.read(ReadRequest(**key["request"]), model)
    raise AssertionError(f"the check cannot send a recorded {key['op']} request yet")


def _comparable(records: list[dict]) -> list[dict]:
    """Stable fields of the records but progress and all prefill records but the last
    (how often prefill reports its progress depends on the machine's speed)."""
    kept = [stable(d) for d in records if d["type"] != "progress"]
    last = max((i for i, d in enumerate(kept) if d["type"] == "prefill"), default=None)
    return [d for i, d in enumerate(kept) if d["type"] != "prefill" or i == last]


def _close(a, b, path="record"):
    """Equal, floats within 1e-4 or 1e-5 of their size (the same weights and compute
    path give the same up to float32 rounding). A temperature sweep's log-partition
    log Z(T) = logsumexp(logprob / T) carries the log-probabilities' rounding times 1/T:
    at T_i it is allowed 1e-4 / T_i (1e-3 at T = 0.1; a prefill chunked otherwise, as the
    machine's measured speed decides, moved it 1.1e-4 there)."""
    if isinstance(a, float) or isinstance(b, float):
        tol = 1e-4
        if ".sweep_logz[" in path:
            from engine.run.records import SWEEP_TEMPERATURES

            tol /= SWEEP_TEMPERATURES[int(path.rsplit("[", 1)[1].rstrip("]"))]
        assert a == pytest.approx(b, abs=tol, rel=1e-5), path
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    else:
        assert a == b, path


def _models(want: list[dict], got: list[dict]):
    """Pairs of (recorded, answered) model records."""
    models = [[d for d in records if d["type"] == "model"] for records in (want, got)]
    return zip(*models, strict=True)


def test_the_check_pins_the_path_each_recording_names():
    assert recorded_path([{"records": [{"type": "model", "compute": "float32: on …"}]}]) == "speed"
    stored = {"type": "model", "compute": "as stored, float32 scales and activations: …"}
    assert recorded_path([{"records": [{"type": "progress"}, stored]}]) == "memory"


def test_there_are_recordings():
    assert len(CASSETTES) >= 4


@pytest.fixture(scope="module")
def check_engine(default_model_path):
    """One engine process for every recording (a fresh one each costs ~2 s more)."""
    from engine.process.client import EngineClient

    client = EngineClient()
    yield client
    client.close()


@pytest.mark.parametrize("name", CASSETTES)
def test_a_recording_is_what_the_real_model_answers(
    name, check_engine, tiny_model_dir, default_model_path
):
    from engine.models.load_options import LoadOptions
    from engine.models.model_prefs import set_load_options

    entries = json.loads((REPLAY_DIR / f"{name}.json").read_text(encoding="utf-8"))["requests"]
    client, prefer = check_engine, recorded_path(entries)
    # As fresh as the engine the recording was made on: another model in between drops
    # the default model and every KV cache it kept (engine/backends/mlx/prompt_reuse.py).
    assert list(client.load(str(tiny_model_dir)))[-1].type == "model"
    try:
        for i, entry in enumerate(entries):
            want = _comparable(entry["records"])
            answer = [
                record_to_json(r) for r in _ask(client, entry, str(default_model_path), prefer)
            ]
            for want_model, got_model in _models(entry["records"], answer):
                assert got_model["compute"].split(":")[0] == want_model["compute"].split(":")[0]
            got = _comparable(answer)
            assert [d["type"] for d in got] == [d["type"] for d in want], f"request {i}"
            _close(got, want, f"{name} request {i}")
    finally:
        for spec in (None, str(default_model_path)):
            set_load_options(spec, LoadOptions())
