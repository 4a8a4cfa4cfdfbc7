"""`logitscope models --search/--download/--set/--add-folder`: the hub and the
remembered choices, apart from the listing itself (models.py).

Each argument is checked where it enters, with one line and exit 2 for a mistake:
a repo id or `--file` that could not name a hub file (engine/models/hub_names.py),
`--file` without `--download`, `--context`/`--kv-bits`/`--rotating` without `--set`,
a `--set` model that does not exist, and an `--add-folder` that is not a readable
folder or is a system root (`/`, `/proc` …). A relative folder is made absolute
(and the absolute path printed)."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

from engine.errors import LogitscopeError, SettingsError
from engine.models.hub_names import shown

# Never scanned: the root, the kernel's pseudo file systems (with all below them),
# and the system's own folders (themselves; a models folder below them is fine).
PSEUDO_ROOTS = ("/proc", "/sys", "/dev", "/run")
SYSTEM_FOLDERS = (
    "/",
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/boot",
    "/var",
    "/System",
    "/Library",
    "/private",
)


def hub_command(args) -> int | None:
    """Run the option given, if any; its exit status, or None for the plain listing."""
    _check_pairs(args)
    if args.search is not None:
        return _search(args)
    if args.download is not None:  # '' is a mistake, not "list the models"
        return _download(args)
    if args.set is not None:
        return _set(args)
    if args.add_folder is not None:
        return _add_folder(args.add_folder)
    return None


def _check_pairs(args) -> None:
    """Options that only mean something with another one."""
    if args.file is not None and args.download is None:
        raise SettingsError("--file goes with --download REPO (the GGUF file of that repo)")
    if args.set is None:
        for flag, value in (
            ("--context", args.context),
            ("--kv-bits", args.kv_bits),
            ("--rotating", args.rotating or None),
        ):
            if value is not None:
                raise SettingsError(f"{flag} goes with --set MODEL (the model to remember it for)")


def _search(args) -> int:
    from dataclasses import asdict

    from engine.models.hub import search
    from engine.models.memory_fit import memory_fit

    found = search(args.search)
    if args.json:
        print(json.dumps([asdict(m) for m in found], indent=2, allow_nan=False))
        return 0
    for m in found:
        size = f"{m.size_bytes / 1e9:.2f} GB" if m.size_bytes else "size ?"
        fit = memory_fit(m.size_bytes).text() if m.size_bytes else ""
        params = f"{m.parameters / 1e6:,.0f} M params · " if m.parameters else ""
        print(
            f"{m.repo_id}  [{m.format} {m.quantization}]  {params}{size} · "
            f"{m.downloads:,} downloads · licence {m.license or '?'}  {fit}"
        )
    if not found:
        print(f"nothing on the hub matches '{shown(args.search)}'")
    return 0


def _download(args) -> int:
    from engine.cli.progress import ProgressDisplay
    from engine.models.hub import download

    bar = ProgressDisplay(plain=args.json)
    try:
        path = download(
            args.download,
            args.file,
            lambda e: (
                bar(f"Downloading {shown(e.file)}", min(e.done_bytes / e.total_bytes, 1.0))
                if e.total_bytes
                else None
            ),
        )
    finally:
        bar.close()
    print(path)
    return 0


def _set(args) -> int:
    from engine.models.load_options import LoadOptions
    from engine.models.model_prefs import set_load_options

    mode = "rotating" if args.rotating else "capped"
    options = LoadOptions(args.context, args.kv_bits, mode)
    spec = _known_model(args.set)
    set_load_options(spec, options)
    print(f"{shown(spec, 300)}: {options.label()}")
    return 0


def _plain_text(value: str, what: str) -> str:
    """`value` if it is non-empty, valid UTF-8 text without control characters."""
    if not value.strip():
        raise SettingsError(f"{what} is empty")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:  # argv bytes that were not UTF-8 (surrogate escapes)
        raise SettingsError(f"{what} '{shown(value)}' is not valid UTF-8") from e
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise SettingsError(f"{what} '{shown(value)}' holds a control character")
    return value


def _known_model(spec: str) -> str:
    """`spec` if it names a model Logitscope can open: the default model, a model
    folder or .gguf file, a model under the models folder, a model in the Hugging Face
    cache, or a name `logitscope models` lists (its path is returned then)."""
    from engine.models.catalogue import inspect_model, list_models
    from engine.models.default_model import DEFAULT_MODEL_NAME
    from engine.models.hf_cache import hf_cached
    from engine.store.paths import models_dir

    _plain_text(spec, "the model to --set")
    if spec == DEFAULT_MODEL_NAME:
        return spec
    path = Path(spec).expanduser()
    try:
        if path.is_file():
            if path.suffix.lower() != ".gguf":
                raise SettingsError(
                    f"{shown(spec)} is not a model (give a model folder or .gguf file)"
                )
            return spec
        for folder in (path, models_dir() / spec):
            if folder.is_dir() and (folder / "config.json").is_file():
                inspect_model(folder)
                return spec
        if hf_cached(spec) is not None:
            return spec
        named = [m.path for m in list_models() if m.name == spec]
    except (LogitscopeError, OSError, ValueError) as e:
        if isinstance(e, SettingsError):
            raise
        raise SettingsError(f"{shown(spec)} is not a model Logitscope can open: {e}") from e
    if named:
        return named[0]
    raise SettingsError(
        f"no model '{shown(spec)}': give a model folder, a .gguf file, or a name "
        "'logitscope models' lists"
    )


def _add_folder(raw: str) -> int:
    from engine.models.model_prefs import set_user_folders, user_folders

    _plain_text(raw, "the folder to --add-folder")
    folder = Path(raw).expanduser().resolve()  # relative: from the working folder
    text = str(folder)
    if not folder.exists():
        raise SettingsError(f"{shown(raw)} does not exist: give a folder of models")
    if not folder.is_dir():
        raise SettingsError(f"{shown(raw)} is a file, not a folder: give a folder of models")
    if text in SYSTEM_FOLDERS or any(folder.is_relative_to(p) for p in PSEUDO_ROOTS):
        raise SettingsError(
            f"{text} is a system folder, not a folder of models: give the folder that holds "
            "them (scanning it would read the whole system)"
        )
    if not os.access(folder, os.R_OK | os.X_OK):
        raise SettingsError(f"{text} cannot be read (permission denied)")
    set_user_folders([*user_folders(), folder])
    note = "" if text == raw else f" (from '{shown(raw)}')"
    print(f"{text} will be scanned for models{note}")
    return 0
