"""`logitscope serve` takes its API key from the environment or the system keychain,
never from the command line; a system without a keychain is told what to use instead."""

from __future__ import annotations

import io

import keyring
import pytest
from keyring.backend import KeyringBackend

from engine.cli import main, serve_cmd
from engine.errors import SettingsError


class MemoryKeyring(KeyringBackend):
    priority = 1

    def __init__(self):
        super().__init__()
        self.store = {}

    def set_password(self, service, username, password):
        self.store[(service, username)] = password

    def get_password(self, service, username):
        return self.store.get((service, username))

    def delete_password(self, service, username):
        self.store.pop((service, username), None)


@pytest.fixture
def memory_keyring():
    before = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(before)


def test_set_key_stores_what_stdin_gives_and_serve_reads_it(memory_keyring, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("  s3cret-key \n"))
    assert main(["serve", "--set-key"]) == 0
    assert "stored in the system keychain" in capsys.readouterr().err
    assert memory_keyring.store[(serve_cmd.KEYCHAIN_SERVICE, serve_cmd.KEYCHAIN_ACCOUNT)] == (
        "s3cret-key"
    )
    assert serve_cmd._api_key(None, keychain=True) == "s3cret-key"


def test_keychain_refusals_say_what_to_do(memory_keyring, monkeypatch, capsys):
    with pytest.raises(SettingsError, match="no key is stored yet"):
        serve_cmd._api_key(None, keychain=True)
    with pytest.raises(SettingsError, match="one way"):
        serve_cmd._api_key("SOME_VAR", keychain=True)
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    assert main(["serve", "--set-key"]) == 2  # nothing given: nothing stored, one line
    err = capsys.readouterr().err
    assert "no API key was given" in err and "Traceback" not in err
    assert memory_keyring.store == {}


def test_a_system_without_a_keychain_is_pointed_to_the_environment(monkeypatch):
    from keyring.backends.fail import Keyring as NoKeyring

    before = keyring.get_keyring()
    keyring.set_keyring(NoKeyring())
    try:
        with pytest.raises(SettingsError, match="--api-key-env"):
            serve_cmd._api_key(None, keychain=True)
    finally:
        keyring.set_keyring(before)
