"""Reading a text in the playground (Mode: Read a text): what Run sends instead of a
generation, and how the run starts on the engine. A read is a run like any other: it
is put on screen through the session model, journaled, listed in History, exported."""

from __future__ import annotations

from pathlib import Path

from app.session.run_state import RunState
from engine.errors import SettingsError
from engine.reading.request import ReadRequest
from engine.reading.text_file import read_text_file

EMPTY_TEXT = (
    "There is no text to read: type or paste one in the prompt box, or open a file "
    "with File ▸ Read a text file… (Ctrl+Shift+T)."
)


def load_text(path: str | Path) -> str:
    """The UTF-8 text of a file to read through the model (engine.reading.text_file's
    checks, the file named by its name).

    Raises:
        SettingsError: it cannot be read, is empty, binary, not UTF-8 or too large;
            the message says which and what to do.
    """
    p = Path(path)
    text = read_text_file(p, p.name)
    if not text.strip():
        raise SettingsError(f"{p.name} is empty: there is nothing to read")
    return text


def read_request(state: RunState, slide: bool = True) -> ReadRequest:
    """The engine's request for the read `state` (its text; the system box as context)."""
    return ReadRequest(
        text=state.prompt,
        context=state.settings.system_prompt or None,
        long_text="window" if slide else "refuse",
    )


def start_read(flow, text: str) -> bool:
    """Read `text` as a new run (raw, single-turn: the conversation starts afresh)."""
    if flow.bridge.busy:
        return False
    try:
        if not text.strip():
            raise SettingsError(EMPTY_TEXT)
        settings = flow.controls.settings(draw_seed=False).with_(chat_template=False).validate()
        read_request(RunState(prompt=text, settings=settings)).validate()
    except SettingsError as e:
        flow.ui.show_error(str(e))
        return False
    flow.ui.hide_error()
    state = RunState(prompt=text, settings=settings, model=flow.session.model, reading=True)
    prompt, info = flow.model.begin(text, 0, state)
    flow.ui.start_run(state, prompt, info)
    return True


def start_engine_run(bridge, controls, state, prompt, model, sink, branch=(None, ())) -> bool:
    """Start `state` on the engine: a read reads its text, anything else generates
    (`branch`: a branch's continuation and parent tokens)."""
    continuation, parent = branch
    if state.reading:
        return bridge.read(read_request(state, controls.slide.isChecked()), model, sink)
    return bridge.generate(prompt, state.settings, model, sink, continuation, parent)
