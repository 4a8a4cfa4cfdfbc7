"""Issue 37 point 2: the loaded model's record, with its load options, is the context
every view uses: loading the same model with another context is a change."""

from __future__ import annotations

import dataclasses

from app.session import Session
from app.session.run_state import RunState
from tests.session.test_session_model import CHAT, model


def test_the_same_model_loaded_with_another_context_is_announced():
    s = Session()
    heard: list = []
    s.events.model_changed.connect(heard.append)
    loaded = model(ctx=8192)
    assert s.set_model(loaded)
    state = RunState(prompt="hi", settings=CHAT)
    s.begin("hi", 0, state)
    capped = dataclasses.replace(loaded, context_length=64, load_options="context 64 (capped)")
    assert s.set_model(capped)  # was False: same path, so no view heard of the new context
    assert heard == [loaded, capped]
    assert s.model.context_length == 64 and state.model.context_length == 64
    assert not s.set_model(capped)  # each run re-announces the same record: no change
    assert heard == [loaded, capped]


def test_a_server_record_loaded_again_is_the_same_model():
    s = Session()
    server = model("srv", "http://h:1/v1#m")
    s.set_model(server)
    assert not s.set_model(dataclasses.replace(server, load_s=0.25))  # timed per request
