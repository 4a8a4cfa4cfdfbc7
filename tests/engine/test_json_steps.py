"""`generate --json` prints each token step once: mlx_lm.server's streamed pass is
held back until its steps come with their log-probabilities; a step re-sent anyway
is marked `"revision": true` (engine/cli/json_steps.py)."""

from __future__ import annotations

from engine.cli.json_steps import JsonSteps
from engine.run.records import DoneRecord, ModelRecord, ProgressRecord, TokenRecord


def model(device: str) -> ModelRecord:
    return ModelRecord("m", "http://h/v1#m", "?", "?", None, None, device, 0.1, "openai")


def token(step: int, logprob: float | None) -> TokenRecord:
    return TokenRecord(
        step, 5, "a", logprob, None, None, (), (), None, None, 0.0, 0.0, step + 1
    )  # fmt: skip


DONE = DoneRecord("length", "aa", 3, 2, 0.1, None, None, None, None, None, 1, 0.2)


def printed(steps: JsonSteps, records) -> list[tuple[str, int | None, float | None, bool]]:
    out = []
    for record in records:
        for r, revision in steps.feed(record):
            out.append((r.type, getattr(r, "step", None), getattr(r, "logprob", None), revision))
    return out


def test_mlx_lm_server_steps_are_printed_once_with_their_logprobs():
    streamed, refined = [token(0, None), token(1, None)], [token(0, -0.5), token(1, -0.1)]
    progress = ProgressRecord("Fetching log-probabilities…", 0.5)
    records = [model("mlx_lm.server at h"), *streamed, progress, *refined, DONE]
    assert printed(JsonSteps(top_n=5), records) == [
        ("model", None, None, False),
        ("progress", None, None, False),
        ("token", 0, -0.5, False),
        ("token", 1, -0.1, False),
        ("done", None, None, False),
    ]


def test_without_logprobs_asked_for_nothing_is_held():
    records = [model("mlx_lm.server at h"), token(0, None), DONE]
    assert [p[0] for p in printed(JsonSteps(top_n=0), records)] == ["model", "token", "done"]


def test_a_step_re_sent_by_another_server_is_marked_a_revision():
    """A server found to be mlx_lm.server only after its answer streamed (its model
    list failed): its steps were printed live, their re-sent form is marked."""
    records = [model("OpenAI-compatible server at h"), token(0, None), token(1, None)]
    records += [token(0, -0.5), token(1, -0.1), DONE]
    assert printed(JsonSteps(top_n=5), records)[1:] == [
        ("token", 0, None, False),
        ("token", 1, None, False),
        ("token", 0, -0.5, True),
        ("token", 1, -0.1, True),
        ("done", None, None, False),
    ]
