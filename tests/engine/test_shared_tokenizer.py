"""The window's tokenizer is parsed once per process while its files are unchanged
(engine.models.light_tokenizer.shared_tokenizer): a changed file is read again, a
folder that cannot be read is not kept, and at most KEPT are held."""

from __future__ import annotations

import gc
import json
import os
import weakref
from collections import OrderedDict
from pathlib import Path

import pytest

from engine.models import light_tokenizer
from engine.models.light_tokenizer import LightTokenizer, TokenizerFileError, shared_tokenizer
from tests.tiny_model import build_tiny_model


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(light_tokenizer, "_shared", OrderedDict())
    monkeypatch.setattr(light_tokenizer, "_alive", weakref.WeakValueDictionary())
    monkeypatch.setattr(light_tokenizer, "_building", {})


@pytest.fixture
def folder(tmp_path):
    return build_tiny_model(tmp_path / "tiny")


def _touch_later(path):
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_one_parse_while_the_files_are_unchanged(folder):
    first = shared_tokenizer(folder)
    assert shared_tokenizer(folder) is first and shared_tokenizer(str(folder)) is first
    fresh = LightTokenizer(folder)
    assert first.encode("héllo") == fresh.encode("héllo") and first.decode([0, 1]) == '!"'


def test_a_changed_file_is_read_again(folder):
    before = shared_tokenizer(folder)
    cfg_path = folder / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["chat_template"] = "{% for m in messages %}[{{ m.content }}]{% endfor %}"
    cfg_path.write_text(json.dumps(cfg))
    _touch_later(cfg_path)  # a coarse clock may give the rewrite the same time
    after = shared_tokenizer(folder)
    assert after is not before and after.chat_template == cfg["chat_template"]
    assert after.apply_chat_template([{"role": "user", "content": "x"}]) == "[x]"


def test_an_unreadable_folder_is_not_kept(folder):
    good = (folder / "tokenizer.json").read_bytes()
    (folder / "tokenizer.json").write_text("{ not json")
    with pytest.raises(TokenizerFileError, match="tokenizer.json cannot be used"):
        shared_tokenizer(folder)
    assert not light_tokenizer._shared
    (folder / "tokenizer.json").write_bytes(good)
    _touch_later(folder / "tokenizer.json")
    assert shared_tokenizer(folder).encode("ab") == LightTokenizer(folder).encode("ab")


def test_at_most_kept_are_held_and_one_in_use_is_shared(tmp_path):
    folders = [build_tiny_model(tmp_path / f"m{i}") for i in range(light_tokenizer.KEPT + 1)]
    held = shared_tokenizer(folders[0])  # still referenced here, as the prompt panel's is
    last = id(shared_tokenizer(folders[-1]))
    for f in folders[1:]:  # not referenced: only the kept hold them
        shared_tokenizer(f)

    def kept():
        return {Path(k[0]).name for k in light_tokenizer._shared}

    def alive():
        return {Path(k[0]).name for k in light_tokenizer._alive}

    assert kept() == {"m1", "m2"}  # KEPT = 2: the least recently used, m0, went first
    assert shared_tokenizer(folders[0]) is held  # in use elsewhere: shared, not parsed again
    gc.collect()
    assert kept() == {"m2", "m0"} and alive() == {"m2", "m0"}  # m1, unreferenced, is gone
    assert id(shared_tokenizer(folders[-1])) == last


def test_threads_asking_at_once_share_one_parse_and_wait_for_no_other_folder(tmp_path, monkeypatch):
    import threading

    a, b = build_tiny_model(tmp_path / "a"), build_tiny_model(tmp_path / "b")
    real, parsed = LightTokenizer.__init__, []
    gate = threading.Event()

    def slow_init(self, folder):
        parsed.append(Path(folder).name)
        if Path(folder).name == "a":
            assert gate.wait(10)  # a's parse holds until b's is done
        real(self, folder)

    monkeypatch.setattr(LightTokenizer, "__init__", slow_init)
    got: dict = {}
    threads = [
        threading.Thread(target=lambda i=i: got.setdefault(i, shared_tokenizer(a)))
        for i in range(3)
    ]
    for t in threads:
        t.start()
    assert shared_tokenizer(b) is not None  # not behind a's parse
    gate.set()
    for t in threads:
        t.join(10)
    assert parsed.count("a") == 1 and parsed.count("b") == 1
    assert got[0] is got[1] is got[2] and not light_tokenizer._building
