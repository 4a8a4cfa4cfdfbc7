"""Small JSON caches of what was measured on this machine (`runtime/` beside the
models): data, never a dependency.

Anything wrong with a cache file (damaged JSON, nested or numbered past the limits of
bounded_json, too large, a FIFO, a device or a link to one, unreadable) means "measure
again": it is said once per process (settings_files.report: one `logitscope: warning:`
line) and read as empty. A cache that cannot be saved (a read-only folder, a full disk)
keeps what was written in memory for the rest of the process, so it measures once,
and is said once too; the atomic write leaves no temporary file behind.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.store.atomic import WriteError, write_atomic
from engine.store.bounded_json import FileRefused, loads, read_bounded
from engine.store.settings_files import report

MAX_CACHE_BYTES = 1 << 22  # a cache holds a few KB; 4 MiB is far beyond any real one

_unsaved: dict[str, dict] = {}  # name -> what this process wrote but could not save


RUNTIME_ENV = "LOGITSCOPE_RUNTIME_DIR"  # another folder (each test session has its own)


def runtime_dir() -> Path:
    """The folder of runtime measurements cached per machine (beside the models folder,
    or RUNTIME_ENV's)."""
    from engine.store import environment
    from engine.store.paths import models_dir

    env = environment.text(RUNTIME_ENV)
    return Path(env) if env else models_dir().parent / "runtime"


def read_json(name: str) -> dict:
    """The cached JSON object `name` ({} if missing or unusable, said once), with what
    this process wrote but could not save on top."""
    saved = read_cache(runtime_dir() / name)
    unsaved = _unsaved.get(name)
    return {**saved, **unsaved} if unsaved else saved


def read_cache(path: Path) -> dict:
    """The JSON object cached in the file `path`: {} if missing, and {} said once if
    unusable in any way (damaged, past the limits, too large, special, unreadable)."""
    what = f"the runtime cache {path}"
    try:
        data = loads(read_bounded(path, MAX_CACHE_BYTES, what), what=what)
    except FileRefused as e:
        if e.reason != "missing":
            _ignored(path, e.detail)
        return {}
    except UnicodeDecodeError as e:
        _ignored(path, f"is not UTF-8 text (byte {e.start})")
        return {}
    except json.JSONDecodeError as e:
        _ignored(path, f"is not valid JSON ({e.msg}, line {e.lineno})")
        return {}
    except ValueError as e:  # JsonLimitError: too deep, a number too long or too large
        _ignored(path, getattr(e, "detail", str(e)))
        return {}
    if not isinstance(data, dict):
        _ignored(path, "holds no JSON object")
        return {}
    return data


def _ignored(path: Path, detail: str) -> None:
    report(f"the runtime cache {path} {detail}: ignored, what it held is measured again")


def write_json(name: str, data: dict) -> None:
    """Cache `data` as `name`, replaced atomically (a damaged, special or linked file is
    replaced, never written through). If it cannot be saved, `data` is kept in memory
    for this process and that is said once."""
    path = runtime_dir() / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(data, indent=1))
    except (OSError, WriteError) as e:
        _unsaved[name] = data
        cause = e.__cause__ if isinstance(e, WriteError) and e.__cause__ is not None else e
        why = getattr(cause, "strerror", None) or str(cause)
        report(
            f"the runtime cache {path} cannot be saved ({why}): what was measured is kept "
            "for this run only and measured again next time"
        )
        return
    _unsaved.pop(name, None)


def copy_name(key: tuple, suffix: str) -> str:
    """The file name of a kept copy named by `key` (a hash of its repr)."""
    import hashlib

    return hashlib.sha256(repr(key).encode()).hexdigest()[:24] + suffix


def prune_copies(where: Path, pattern: str, keep: int) -> None:
    """Delete all but the `keep` most recently used files matching `pattern` (a copy being
    written, `*.partial.*`, is left alone)."""
    import contextlib

    copies = []
    for p in where.glob(pattern):
        if ".partial." in p.name:
            continue
        with contextlib.suppress(OSError):
            copies.append((p.stat().st_mtime_ns, p))
    for _t, p in sorted(copies, reverse=True)[keep:]:
        with contextlib.suppress(OSError):
            p.unlink()
