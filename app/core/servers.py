"""Remembered remote servers and their API keys.

The servers (base URL, what they are, their models) live in settings.ini; an
API key never does: it goes to the system keychain through `keyring`. Where no
keychain exists (a bare Linux box), the key is kept in memory until the app
closes, and the user is told so. Keys reach only the engine process, with
each request; they are never journaled or exported.
"""

from __future__ import annotations

import contextlib
import json

from app.core import settings_store
from engine.backends.base import is_remote, parse_remote
from engine.models.display_name import short_model_id
from engine.store import settings_files
from engine.store.paths import data_dir

KEYRING_SERVICE = "Logitscope"
LIST_KEY = "servers/list"
SERVERS_DAMAGED_FILE = "servers.list.damaged"  # beside settings.ini, in the data folder
_memory_keys: dict[str, str] = {}  # base URL -> key, where no keychain is available


def load_servers() -> list[dict]:
    """[{base_url, label, models: [ids]}], most recently added last.

    Checked entry by entry: a damaged list (not JSON, not a list, nested too deeply,
    entries of the wrong shape) is said in words once, its sound entries kept, and the
    stored value left as it is.
    """
    servers, damage = _read()
    if damage:
        settings_files.report(damage)
    return servers


def _read() -> tuple[list[dict], str | None]:
    """(the sound entries, the damage in words or None)."""
    raw = settings_store.value(LIST_KEY, "[]")
    try:
        if not isinstance(raw, str):
            raise settings_files.DamagedFile("not a JSON text")
        if len(raw) > settings_files.MAX_BYTES:
            raise settings_files.DamagedFile(f"{len(raw):,} characters long")
        servers = settings_files.parse_json(raw)
        if not isinstance(servers, list):
            raise settings_files.DamagedFile("not a JSON list")
    except settings_files.DamagedFile as e:
        return [], _damage(str(e), "none are listed")
    out = [entry for entry in (_entry(s) for s in servers) if entry]
    left = len(servers) - len(out)
    return out, _damage(f"{left} entries of the wrong shape", "they are left out") if left else None


def _entry(s) -> dict | None:
    """One remembered server, its fields checked; None when it does not fit."""
    if not isinstance(s, dict) or not isinstance(s.get("base_url"), str):
        return None
    models = s.get("models")
    if not isinstance(models, list) or not s["base_url"].strip():
        return None
    label = s.get("label")
    return {
        "base_url": s["base_url"],
        "label": label if isinstance(label, str) else "server",
        "models": [m for m in models if isinstance(m, str) and m],
    }


def _damage(why: str, then: str) -> str:
    path = data_dir() / settings_store.SETTINGS_FILE
    return f"the remembered servers ({LIST_KEY} in {path}) are damaged ({why}); {then}"


def save_server(info) -> None:
    """Remember a server (a ServerInfo), replacing an entry with the same URL."""
    servers = [s for s in load_servers() if s["base_url"] != info.base_url]
    servers.append(
        {"base_url": info.base_url, "label": info.label, "models": [m.id for m in info.models]}
    )
    _write(servers)


def forget_server(base_url: str) -> None:
    _write([s for s in load_servers() if s["base_url"] != base_url])
    set_api_key(base_url, None)


def _write(servers: list[dict]) -> None:
    """Store the list; a damaged stored value is first kept in SERVERS_DAMAGED_FILE."""
    if _read()[1] is not None:
        _keep_damaged()
    settings_store.set_value(LIST_KEY, json.dumps(servers))


def _keep_damaged() -> None:
    """Copy the damaged stored list to its own file before it is replaced, and say so."""
    from engine.store.atomic import write_atomic

    raw = settings_store.value(LIST_KEY, "")
    path = data_dir() / SERVERS_DAMAGED_FILE
    n = 2
    while path.exists():  # an earlier copy is never overwritten
        path = path.with_name(f"{SERVERS_DAMAGED_FILE}.{n}")
        n += 1
    write_atomic(path, raw if isinstance(raw, str) else repr(raw), overwrite=False)
    settings_files.report(
        f"the damaged remembered servers ({LIST_KEY}) were kept in {path} before a fresh list "
        "was written"
    )


def server_models() -> list[tuple[str, str]]:
    """(label, model spec) of every remembered server's models."""
    out = []
    for s in load_servers():
        host = s["base_url"].split("://", 1)[-1].split("/", 1)[0]
        for m in s["models"]:
            label = f"{short_model_id(m)} · {s['label']} @ {host}"
            out.append((label, f"{s['base_url']}#{m}"))  # the full id: in the tooltip
    return out


def set_api_key(base_url: str, key: str | None) -> str:
    """Store (or with None, delete) a server's key. Returns where it went, for people."""
    _memory_keys.pop(base_url, None)
    try:
        import keyring
        from keyring.errors import KeyringError, PasswordDeleteError

        if key:
            keyring.set_password(KEYRING_SERVICE, base_url, key)
            return "saved in the system keychain"
        with contextlib.suppress(PasswordDeleteError):
            keyring.delete_password(KEYRING_SERVICE, base_url)
        return "removed"
    except (ImportError, RuntimeError, KeyringError):
        if key:
            _memory_keys[base_url] = key
            return (
                "kept until Logitscope closes: this system has no keychain, and keys "
                "are never written to the settings file"
            )
        return "removed"


def api_key_for(spec: str | None) -> str | None:
    """The API key for a model spec's server, if one was given."""
    if not is_remote(spec):
        return None
    try:
        base = parse_remote(spec).base_url
    except Exception:  # noqa: BLE001 - a malformed spec fails later with a clear message
        return None
    if base in _memory_keys:
        return _memory_keys[base]
    try:
        import keyring

        return keyring.get_password(KEYRING_SERVICE, base)
    except Exception:  # noqa: BLE001 - no keychain: no stored key
        return None
