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

KEYRING_SERVICE = "Logitscope"
_memory_keys: dict[str, str] = {}  # base URL -> key, where no keychain is available


def load_servers() -> list[dict]:
    """[{base_url, label, models: [ids], context: {id: n}}], most recently added last."""
    raw = settings_store.value("servers/list", "[]")
    try:
        servers = json.loads(raw) if isinstance(raw, str) else []
    except ValueError:
        return []
    return [
        s
        for s in servers
        if isinstance(s, dict)
        and isinstance(s.get("base_url"), str)
        and isinstance(s.get("models"), list)
    ]


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
    settings_store.set_value("servers/list", json.dumps(servers))


def server_models() -> list[tuple[str, str]]:
    """(label, model spec) of every remembered server's models."""
    out = []
    for s in load_servers():
        host = s["base_url"].split("://", 1)[-1].split("/", 1)[0]
        for m in s["models"]:
            if isinstance(m, str):
                label = f"{short_model_id(m)} · {s.get('label', 'server')} @ {host}"
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
