"""What a person chose about models, remembered in the data folder's `model_prefs.json`:
each model's load options, the folders they added to be scanned, and named presets of
sampling settings.

This lives in the engine, not in the window's QSettings, because the engine process
reads a model's load options when it loads it, and the command line sets them too.
Read field by field (a damaged file costs the choices, never a start-up); written to
a temporary name and renamed into place. Nothing here imports MLX or Qt.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.atomic import write_atomic
from engine.errors import LogitscopeError, SettingsError
from engine.models.default_model import DEFAULT_MODEL_NAME
from engine.models.load_options import LoadOptions
from engine.paths import data_dir

PREFS_FILE = "model_prefs.json"


def _path() -> Path:
    return data_dir() / PREFS_FILE


def _read() -> dict:
    try:
        data = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError, LogitscopeError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(data: dict) -> None:
    write_atomic(_path(), json.dumps(data, indent=1, sort_keys=True))


def model_key(spec: str | None) -> str:
    """The key a model's choices are kept under: the default model's name, a path made
    absolute, or a repo id / model name as given."""
    if not spec:
        return DEFAULT_MODEL_NAME
    path = Path(spec).expanduser()
    return str(path.resolve()) if path.exists() else spec


def load_options(spec: str | None) -> LoadOptions:
    """The remembered load options of a model (the defaults when none or damaged)."""
    entry = _read().get("load", {})
    raw = entry.get(model_key(spec)) if isinstance(entry, dict) else None
    try:
        return LoadOptions.from_dict(raw) if raw else LoadOptions()
    except SettingsError:
        return LoadOptions()


def set_load_options(spec: str | None, options: LoadOptions) -> None:
    """Remember `options` for the model `spec` (the defaults forget the entry)."""
    data = _read()
    load = data.get("load") if isinstance(data.get("load"), dict) else {}
    if options == LoadOptions():
        load.pop(model_key(spec), None)
    else:
        load[model_key(spec)] = options.to_dict()
    data["load"] = load
    _write(data)


def user_folders() -> list[Path]:
    """The folders the person added to be scanned for models."""
    folders = _read().get("folders", [])
    if not isinstance(folders, list):
        return []
    return [Path(f) for f in folders if isinstance(f, str) and f]


def set_user_folders(folders: list[str | Path]) -> None:
    """Remember the list of added folders (in order, without repeats)."""
    data = _read()
    data["folders"] = list(dict.fromkeys(str(Path(f).expanduser()) for f in folders))
    _write(data)


def sampling_presets() -> dict[str, dict]:
    """Named presets of sampling settings ({name: SamplingSettings fields})."""
    presets = _read().get("presets", {})
    if not isinstance(presets, dict):
        return {}
    return {k: v for k, v in presets.items() if isinstance(k, str) and isinstance(v, dict)}


def save_sampling_preset(name: str, settings: dict) -> None:
    """Remember `settings` (SamplingSettings fields) under `name`, replacing one of
    the same name."""
    if not name.strip():
        raise SettingsError("a preset needs a name")
    data = _read()
    presets = data.get("presets") if isinstance(data.get("presets"), dict) else {}
    presets[name.strip()] = dict(settings)
    data["presets"] = presets
    _write(data)


def delete_sampling_preset(name: str) -> None:
    """Forget the preset `name` (nothing happens if there is none)."""
    data = _read()
    presets = data.get("presets") if isinstance(data.get("presets"), dict) else {}
    presets.pop(name, None)
    data["presets"] = presets
    _write(data)
