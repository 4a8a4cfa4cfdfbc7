"""Reading a text in the playground (Mode: Read a text): what Run sends instead of a
generation, and how the run starts on the engine. A read is a run like any other: it
is put on screen through the session model, journaled, listed in History, exported."""

from __future__ import annotations

from pathlib import Path

from app.session.run_state import RunState
from engine.errors import SettingsError
from engine.reading.request import ReadRequest

EMPTY_TEXT = (
    "There is no text to read: type or paste one in the prompt box, or open a file "
    "with File ▸ Read a text file… (Ctrl+Shift+T)."
)


MAX_TEXT_BYTES = 8 * 1024 * 1024  # a text file to read: 8 MB (about 2 million tokens)


def load_text(path: str | Path) -> str:
    """The UTF-8 text of a file to read through the model.

    Raises:
        SettingsError: it cannot be read, is empty, binary, not UTF-8 or too large;
            the message says which and what to do.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_TEXT_BYTES:
            raise SettingsError(
                f"{p.name} is {size / 1e6:,.1f} MB; Logitscope reads texts up to "
                f"{MAX_TEXT_BYTES / 1e6:,.0f} MB: read a part of it (copy it into the prompt box)"
            )
        data = p.read_bytes()
    except OSError as e:
        raise SettingsError(f"{p.name} cannot be read ({e.strerror or e})") from None
    if b"\0" in data:
        raise SettingsError(f"{p.name} is not a text file (it holds binary data)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise SettingsError(
            f"{p.name} is not UTF-8 text (byte {e.start:,} cannot be decoded): save it as UTF-8"
        ) from None
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
