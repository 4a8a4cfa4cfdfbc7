"""`lab route` with the large model on an OpenAI-compatible server (mlx_lm.server serving
the default model, in float32): each question is asked there as calibrate asks it locally, so the
server's greedy answers equal the local model's own (the same weights, the same prompt);
its answers are journaled as the records the server sent, named for the small run; a
small model on a server is refused in one sentence."""

from __future__ import annotations

import pytest

from engine.errors import SettingsError
from engine.lab import routing

N = 2  # questions: each is asked on the server and journaled the same way


def test_a_large_model_on_a_server_answers_as_the_local_one_does(
    default_model_path, mlx_server, served_model
):
    from engine.backends.mlx.route_runs import measure_route
    from engine.sessions.journal import find

    large = f"{mlx_server}#{served_model}"  # the default model, in float32
    r = measure_route(routing.RouteParams(str(default_model_path), large, limit=N))
    assert (r.asked, r.answered, r.compared) == (N, N, N) and not r.large_error
    for row in r.rows:
        assert row.large_answer == row.small_answer and row.large_correct == row.small_correct
        assert row.large_seconds > 0 and row.large_tokens > 0
        _session, run = find(row.large_run)
        assert run.done.text.strip() == row.large_answer
        assert run.name == f"route large: the question of {row.small_run}"
        assert run.settings["stop"] == ["\n"] and run.settings["temperature"] == 0.0
    assert r.small_accuracy == r.large_accuracy and r.apgr is None  # no gap to recover


def test_a_small_model_on_a_server_is_refused():
    with pytest.raises(SettingsError, match="--small must be a local model"):
        routing.RouteParams("http://127.0.0.1:9/v1#m", "/a/folder")
