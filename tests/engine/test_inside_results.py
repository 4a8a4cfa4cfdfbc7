"""Inside's results as frozen dataclasses (engine/inside/inside_results.py): every view the
engine computes (attention, lens, position, journey, and a read's journey) arrives as
its typed result, crosses the process pipe (pickle) as itself, and comes back equal
from `logitscope inspect --json`'s dict (`to_dict` -> JSON -> `record_from_dict`),
whose "data" keys are the fields'."""

from __future__ import annotations

import json
import pickle
from dataclasses import FrozenInstanceError, fields
from types import SimpleNamespace

import pytest

from engine.backends.mlx.inspect_step import inspect_step
from engine.inside.inside_results import (
    RESULTS,
    AttentionResult,
    JourneyResult,
    LensResult,
    PositionResult,
)
from engine.inside.inspect_request import InspectRequest
from engine.run.records import InspectRecord, record_from_dict, to_dict
from engine.run.settings import SamplingSettings

PROMPT = "The cat sat on the mat because"
ANSWER = [279, 3845, 314]  # any three tokens: the steps are teacher-forced


@pytest.fixture(scope="module")
def records(smollm):
    backend = SimpleNamespace(lm=smollm, inspection=None)
    settings = SamplingSettings(chat_template=False, temperature=0.7, top_p=0.9)
    out = {}
    for what, kw in (
        ("attention", {"layer": 3, "head": 1}),
        ("lens", {}),
        ("position", {}),
        ("journey", {}),
    ):
        request = InspectRequest(what, step=2, continuation=ANSWER, **kw)
        out[what] = inspect_step(backend, PROMPT, settings, request)
    read = InspectRequest("journey", step=1, reading=True)
    out["read"] = inspect_step(backend, PROMPT, settings, read)
    return out


def test_each_view_is_its_typed_result(records):
    kinds = {
        "attention": AttentionResult,
        "lens": LensResult,
        "position": PositionResult,
        "journey": JourneyResult,
        "read": JourneyResult,
    }
    for name, record in records.items():
        assert isinstance(record, InspectRecord)
        assert type(record.data) is kinds[name] is RESULTS[record.what]
        with pytest.raises(FrozenInstanceError):
            record.data.chosen = 0
    journey = records["journey"].data
    assert journey.chosen == ANSWER[2] and journey.reading is False
    assert journey.sampling.stages[-1].stage == "temperature 0.7"
    assert journey.projection.chosen.token_id == ANSWER[2]
    assert journey.label(ANSWER[2]) == journey.tokenization.tokens[-1][1]
    assert len(journey.layers) == records["journey"].layers
    lens = records["lens"].data
    assert len(lens.rows) == records["lens"].layers and lens.rows[-1].chosen_rank >= 1
    attention = records["attention"].data
    assert (attention.layer, attention.head) == (3, 1)
    n = len(records["attention"].ids)
    assert len(attention.weights) == n and all(len(r) == n for r in attention.weights)
    position = records["position"].data
    assert sum(position.bins[k] for k in list(position.bins)[:4]) == pytest.approx(1.0)


def test_a_reads_journey_has_one_stage_and_ends_with_its_text(records):
    read = records["read"].data
    assert read.reading is True
    assert [s.stage for s in read.sampling.stages] == ["raw"]
    assert read.iteration.stop_token is False


def test_results_cross_the_pipe_and_come_back_from_json(records):
    for record in records.values():
        assert pickle.loads(pickle.dumps(record)) == record
        line = json.loads(json.dumps(to_dict(record)))
        assert set(line["data"]) == {f.name for f in fields(record.data)}
        assert record_from_dict(line) == record
