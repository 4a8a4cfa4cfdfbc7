"""What a person chose about models, remembered in the data folder's `model_prefs.json`:
each model's load options, the folders they added to be scanned, and named presets of
sampling settings.

This lives in the engine, not in the window's QSettings, because the engine process
reads a model's load options when it loads it, and the command line sets them too.
Read field by field: a damaged file (not JSON, wrong types, NaN, nested deep, huge, a
folder holding a NUL) costs only the choices it spoils, never a start-up or a command.
The damage is said in words once per process (a `logitscope: warning:` line on stderr;
`damage()` for the window), and the file is kept as it is: when a choice must be
written, the damaged file is first renamed aside (`model_prefs.json.damaged`) and a
fresh one written to a temporary name and renamed into place. Nothing here imports
MLX or Qt.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from pathlib import Path

from engine.errors import LogitscopeError, SettingsError
from engine.models.default_model import DEFAULT_MODEL_NAME
from engine.models.load_options import LoadOptions
from engine.store.atomic import write_atomic
from engine.store.bounded_json import FileRefused, read_bounded
from engine.store.paths import data_dir

PREFS_FILE = "model_prefs.json"
MAX_PREFS_BYTES = 1_000_000  # choices of a few hundred models take kilobytes
MAX_CONTEXT = 1 << 24  # tokens: far above any model's context, far below an overflow
MAX_SHOWN = 3  # damaged entries named one by one in the warning
_reported: set[str] = set()


def _path() -> Path:
    return data_dir() / PREFS_FILE


def _load_raw(path: Path) -> tuple[object, str | None]:
    """The file's JSON value, or None and what is wrong with the file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as e:
        return None, f"it cannot be read ({e})"
    if not stat.S_ISREG(st.st_mode):
        return None, "it is not a regular file"
    if st.st_size > MAX_PREFS_BYTES:
        return None, f"it is {st.st_size:,} bytes, more than a preferences file holds"
    try:  # opened without waiting: a FIFO put there since the stat is refused, not awaited
        text = read_bounded(path, MAX_PREFS_BYTES, str(path)).decode("utf-8")
        return json.loads(text), None  # NaN parses; the entry holding it is refused
    except FileRefused as e:
        if e.reason == "missing":  # removed since the stat
            return {}, None
        if e.reason == "special":
            return None, "it is not a regular file"
        if e.reason == "too_large":  # grown since the stat
            return (
                None,
                f"it is more than {MAX_PREFS_BYTES:,} bytes, more than a preferences file holds",
            )
        return None, f"it {e.detail}"
    except UnicodeDecodeError:
        return None, "it is not UTF-8 text"
    except RecursionError:
        return None, "it nests too deep"
    except ValueError as e:
        return None, f"it is not valid JSON ({str(e)[:120]})"


def _valid_folder(entry: object) -> str | None:
    """Why a remembered folder cannot be used, or None if it can."""
    if not isinstance(entry, str) or not entry:
        return "not a folder's path"
    if any(ord(c) < 32 or ord(c) == 127 for c in entry):
        return "its path holds a control character or NUL"
    if not Path(entry).is_absolute():
        return "its path is not absolute"
    return None


def _valid_load(entry: object) -> str | None:
    """Why remembered load options cannot be used, or None if they can."""
    try:
        options = LoadOptions.from_dict(entry)
    except (SettingsError, TypeError, ValueError) as e:
        return str(e)
    if options.context_length is not None and options.context_length > MAX_CONTEXT:
        return f"a context of more than {MAX_CONTEXT:,} tokens"
    return None


def _valid_preset(entry: object) -> str | None:
    """Why a sampling preset cannot be used, or None: its known fields must make valid
    sampling settings (the window applies them as they are)."""
    import dataclasses

    from engine.run.settings import SamplingSettings

    if not isinstance(entry, dict):
        return "not a JSON object"
    if any(isinstance(v, float) and not math.isfinite(v) for v in entry.values()):
        return "it holds NaN or an infinity"
    known = {f.name for f in dataclasses.fields(SamplingSettings)}
    try:
        SamplingSettings().with_(**{k: v for k, v in entry.items() if k in known}).validate()
    except (SettingsError, TypeError, ValueError, OverflowError) as e:
        return str(e)[:200]
    return None


def _shown(key: object) -> str:
    from engine.models.scan_guard import clean_text

    return clean_text(repr(key))[:80]


def _check(raw: dict) -> tuple[dict, list[str]]:
    """The usable part of the file's object, and each damage found, in words."""
    data, damage = dict(raw), []
    kinds = {"load": dict, "folders": list, "presets": dict}
    for key, kind in kinds.items():
        if key in data and not isinstance(data[key], kind):
            damage.append(f"'{key}' is not a {'list' if kind is list else 'JSON object'}")
            del data[key]
    if "load" in data:
        bad = {k: why for k, v in data["load"].items() if (why := _valid_load(v))}
        damage += [f"the load options of {_shown(k)} ({why})" for k, why in bad.items()]
        data["load"] = {k: v for k, v in data["load"].items() if k not in bad}
    if "folders" in data:
        bad = [(f, why) for f in data["folders"] if (why := _valid_folder(f))]
        damage += [f"the added folder {_shown(f)} ({why})" for f, why in bad]
        data["folders"] = [f for f in data["folders"] if _valid_folder(f) is None]
    if "presets" in data:
        bad = {k: why for k, v in data["presets"].items() if (why := _valid_preset(v))}
        damage += [f"the preset {_shown(k)} ({why})" for k, why in bad.items()]
        data["presets"] = {k: v for k, v in data["presets"].items() if k not in bad}
    return data, damage


def _state() -> tuple[dict, str | None]:
    """The file's usable choices, and its damage in one sentence (None if sound)."""
    path = _path()
    raw, why = _load_raw(path)
    if why is None and not isinstance(raw, dict):
        why = f"it holds a JSON {type(raw).__name__} where an object belongs"
    if why is not None:
        return {}, f"the model preferences file {path} cannot be used: {why}; defaults apply"
    data, damage = _check(raw)
    if not damage:
        return data, None
    more = f" and {len(damage) - MAX_SHOWN} more" if len(damage) > MAX_SHOWN else ""
    listed = "; ".join(damage[:MAX_SHOWN]) + more
    return data, f"the model preferences file {path} has unusable entries, left out: {listed}"


def damage() -> str | None:
    """What is wrong with the preferences file, in one sentence, or None if it is
    sound (the window shows it; the command line has printed it once already)."""
    return _state()[1]


def _report(message: str) -> None:
    """Say `message` on stderr, once per process."""
    from engine.models.scan_guard import clean_text

    if message not in _reported:
        _reported.add(message)
        print(f"logitscope: warning: {clean_text(message)}", file=sys.stderr)


def _read() -> dict:
    try:
        data, why = _state()
    except LogitscopeError as e:  # the data folder itself cannot be used
        data, why = {}, f"the model preferences cannot be read ({e}); defaults apply"
    if why:
        _report(why)
    return data


def _set_aside(path: Path) -> Path:
    """Rename the damaged file to a free `.damaged` name; the name it has now."""
    for n in range(1000):
        aside = path.with_name(f"{path.name}.damaged" + (f".{n}" if n else ""))
        if not os.path.lexists(aside):
            break
    try:
        os.rename(path, aside)
    except OSError as e:
        raise SettingsError(
            f"the damaged model preferences file {path} cannot be set aside ({e.strerror}); "
            "move it away, then choose again"
        ) from e
    return aside


def _write(data: dict) -> None:
    """Write `data` in place of the file; a damaged file is renamed aside first."""
    path = _path()
    if _state()[1] is not None and os.path.lexists(path):
        aside = _set_aside(path)
        _report(f"the damaged model preferences file is kept as {aside}; a fresh one is written")
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True))


def model_key(spec: str | None) -> str:
    """The key a model's choices are kept under: the default model's name, a path made
    absolute, or a repo id / model name as given."""
    if not spec:
        return DEFAULT_MODEL_NAME
    try:
        path = Path(spec).expanduser()
        return str(path.resolve()) if path.exists() else spec
    except (OSError, ValueError, RuntimeError):  # a NUL, a loop, a folder we may not enter
        return spec


def load_options(spec: str | None) -> LoadOptions:
    """The remembered load options of a model (the defaults when none or damaged)."""
    raw = _read().get("load", {}).get(model_key(spec))
    return LoadOptions.from_dict(raw) if raw else LoadOptions()  # checked by _check


def set_load_options(spec: str | None, options: LoadOptions) -> None:
    """Remember `options` for the model `spec` (the defaults forget the entry)."""
    data = _read()
    load = data.get("load", {})
    if options == LoadOptions():
        load.pop(model_key(spec), None)
    else:
        load[model_key(spec)] = options.to_dict()
    data["load"] = load
    _write(data)


def user_folders() -> list[Path]:
    """The folders the person added to be scanned for models."""
    return [Path(f) for f in _read().get("folders", [])]  # each checked by _check


def set_user_folders(folders: list[str | Path]) -> None:
    """Remember the list of added folders (in order, without repeats)."""
    data = _read()
    data["folders"] = list(dict.fromkeys(str(Path(f).expanduser()) for f in folders))
    _write(data)


def sampling_presets() -> dict[str, dict]:
    """Named presets of sampling settings ({name: SamplingSettings fields})."""
    return dict(_read().get("presets", {}))  # each checked by _check


def save_sampling_preset(name: str, settings: dict) -> None:
    """Remember `settings` (SamplingSettings fields) under `name`, replacing one of
    the same name."""
    if not name.strip():
        raise SettingsError("a preset needs a name")
    data = _read()
    presets = data.get("presets", {})
    presets[name.strip()] = dict(settings)
    data["presets"] = presets
    _write(data)


def delete_sampling_preset(name: str) -> None:
    """Forget the preset `name` (nothing happens if there is none)."""
    data = _read()
    presets = data.get("presets", {})
    presets.pop(name, None)
    data["presets"] = presets
    _write(data)
