"""The runtime caches (runtime/paths.json, limits.json, the models' .hashes.json) are
data, not a dependency: anything wrong with one means "measure again, say so once,
carry on"; a cache that cannot be saved is kept in memory for the process and leaves
no temporary file behind; `logitscope models` says what the next load will do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.store import file_hash, runtime_cache, settings_files
from tests.child_memory import ROOT, run_measured

CEILING = 3  # a huge or endless cache's reader: at most this many times a small one's RSS


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """A private runtime folder; nothing said or kept unsaved from other tests."""
    folder = tmp_path / "runtime"
    folder.mkdir()
    monkeypatch.setattr(runtime_cache, "runtime_dir", lambda: folder)
    monkeypatch.setattr(runtime_cache, "_unsaved", {})
    monkeypatch.setattr(settings_files, "_said", [])
    return folder


def _deep(p):
    p.write_text("[" * 100_000 + "]" * 100_000)


def _long_number(p):
    p.write_text('{"m|1": {"attempts":\n' + "9" * 400 + "}}")


def _overflow(p):
    p.write_text('{"m|1": 1e999}')


def _fifo(p):
    os.mkfifo(p)


def _dev_zero(p):
    p.symlink_to("/dev/zero")


def _too_large(p):
    with open(p, "wb") as f:
        f.truncate(runtime_cache.MAX_CACHE_BYTES + 1)  # sparse: nothing written


DAMAGE = {
    "deep": (_deep, "nests deeper than 64 levels (line 1)"),
    "long number": (_long_number, "holds a number longer than 100 characters (line 2)"),
    "overflow": (_overflow, "holds a number too large for a float (line 1)"),
    "not json": (lambda p: p.write_text("not json"), "is not valid JSON (Expecting value, line 1)"),
    "a list": (lambda p: p.write_text("[1, 2]"), "holds no JSON object"),
    "not utf-8": (lambda p: p.write_bytes(b'{"a": "\xff"}'), "is not UTF-8 text (byte 7)"),
    "fifo": (_fifo, "is not a regular file (a FIFO)"),
    "dev zero": (_dev_zero, "is not a regular file (a character device)"),
    "too large": (_too_large, "is over the limit of 4,194,304 bytes"),
}


def _read_in_thread(name: str) -> dict:
    """read_json in a thread, failing (not hanging) if it blocks."""
    got = {}
    t = threading.Thread(target=lambda: got.update(v=runtime_cache.read_json(name)), daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "reading the cache blocked"
    return got["v"]


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_or_special_cache_is_ignored_said_once_and_replaced(runtime, capsys, damage):
    make, detail = damage
    path = runtime / "paths.json"
    make(path)
    assert _read_in_thread("paths.json") == {}
    assert _read_in_thread("paths.json") == {}
    assert capsys.readouterr().err == (
        f"logitscope: warning: the runtime cache {path} {detail}: ignored, what it held is "
        "measured again\n"
    )  # once, for two reads
    runtime_cache.write_json("paths.json", {"m|1": {"attempts": 1}})
    assert path.is_file() and not path.is_symlink()  # replaced, never written through
    assert runtime_cache.read_json("paths.json") == {"m|1": {"attempts": 1}}
    assert sorted(os.listdir(runtime)) == ["paths.json"]  # no temporary file left
    assert capsys.readouterr().err == ""
    assert os.stat("/dev/zero").st_size == 0 and Path("/dev/zero").is_char_device()


def test_a_missing_cache_is_silent(runtime, capsys):
    assert runtime_cache.read_json("paths.json") == {}
    assert capsys.readouterr().err == ""


def test_an_unsaveable_cache_is_kept_in_memory_said_once_and_leaves_nothing(runtime, capsys):
    path = runtime / "paths.json"
    path.mkdir()  # the rename over it fails after the temporary file is written
    runtime_cache.write_json("paths.json", {"a": 1})
    runtime_cache.write_json("paths.json", {**runtime_cache.read_json("paths.json"), "b": 2})
    assert runtime_cache.read_json("paths.json") == {"a": 1, "b": 2}
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"logitscope: warning: the runtime cache {path} cannot be saved (Is a directory): what "
        "was measured is kept for this run only and measured again next time",
        f"logitscope: warning: the runtime cache {path} is not a regular file (a folder): "
        "ignored, what it held is measured again",
    ]
    assert os.listdir(runtime) == ["paths.json"] and os.listdir(path) == []


def test_a_runtime_folder_that_cannot_be_made_keeps_the_cache_in_memory(
    tmp_path, monkeypatch, capsys
):
    blocked = tmp_path / "runtime"
    blocked.write_text("a file where the folder should be")
    monkeypatch.setattr(runtime_cache, "runtime_dir", lambda: blocked)
    monkeypatch.setattr(runtime_cache, "_unsaved", {})
    monkeypatch.setattr(settings_files, "_said", [])
    runtime_cache.write_json("limits.json", {"key": "k"})
    assert runtime_cache.read_json("limits.json") == {"key": "k"}
    assert capsys.readouterr().err == (
        f"logitscope: warning: the runtime cache {blocked / 'limits.json'} cannot be saved "
        "(File exists): what was measured is kept for this run only and measured again next "
        "time\n"
    )
    assert blocked.read_text() == "a file where the folder should be"
    assert sorted(os.listdir(tmp_path)) == ["runtime"]


def test_the_hash_cache_survives_damage(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(file_hash, "_cache_path", lambda: tmp_path / ".hashes.json")
    monkeypatch.setattr(settings_files, "_said", [])
    (tmp_path / ".hashes.json").write_text("[" * 100_000)
    data = tmp_path / "w.bin"
    data.write_bytes(b"abc")
    import hashlib

    assert file_hash.content_hash(data) == hashlib.sha256(b"abc").hexdigest()
    assert "nests deeper than 64 levels (line 1)" in capsys.readouterr().err
    assert list(json.loads((tmp_path / ".hashes.json").read_text()).values()) == [
        hashlib.sha256(b"abc").hexdigest()
    ]


READ_IN_CHILD = (
    "from engine.store.runtime_cache import read_json; print(len(read_json('paths.json')))"
)


@pytest.mark.parametrize("target", ["/dev/zero", "sparse"])
def test_a_link_to_something_huge_is_not_read_into_memory(tmp_path, target):
    data = tmp_path / "data"
    (data / "runtime").mkdir(parents=True)
    env = {
        "LOGITSCOPE_DATA_DIR": str(data),
        "LOGITSCOPE_MODELS_DIR": str(data / "models"),
        "LOGITSCOPE_RUNTIME_DIR": str(data / "runtime"),
    }
    (data / "runtime" / "paths.json").write_text(json.dumps({"m|1": {"attempts": 1}}))
    base = run_measured([], code=READ_IN_CHILD, env=env)
    assert (base.returncode, base.stdout, base.stderr) == (0, "1\n", "")
    if target == "sparse":
        target = tmp_path / "huge"
        with open(target, "wb") as f:
            f.truncate(2 * 2**30)  # 2 GiB of zeros on no disk: the old reader held it all
    (data / "runtime" / "paths.json").unlink()
    (data / "runtime" / "paths.json").symlink_to(target)
    m = run_measured([], code=READ_IN_CHILD, env=env)
    assert (m.returncode, m.stdout) == (0, "0\n")
    assert "logitscope: warning: the runtime cache" in m.stderr
    assert m.peak_rss_kb < CEILING * base.peak_rss_kb, (m.peak_rss_kb, base.peak_rss_kb)


def _fake_model(data: Path) -> tuple[Path, int]:
    """A quantized MLX folder `logitscope models` lists (never loaded)."""
    folder = data / "models" / "fake-4bit"
    folder.mkdir(parents=True)
    config = {"model_type": "llama", "quantization": {"bits": 4, "group_size": 64}}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    (folder / "tokenizer.json").write_text("{}")
    return folder.resolve(), (folder / "model.safetensors").stat().st_size


def _models(tmp_path, data: Path):
    env = {
        **os.environ,
        "LOGITSCOPE_DATA_DIR": str(data),
        "LOGITSCOPE_MODELS_DIR": str(data / "models"),
        "LOGITSCOPE_RUNTIME_DIR": str(data / "runtime"),
        "HOME": str(tmp_path),
    }
    return subprocess.run(
        [sys.executable, "-m", "engine", "models"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
    )  # fmt: skip


def _entry(others: float, attempts: int, path: str) -> dict:
    m = {
        "stored_prefill_s": 2.0, "stored_decode_s": 1.0, "float32_prefill_s": 1.0,
        "float32_decode_s": 1.0, "rounds": 3, "cores": 2, "others_cores": others,
        "when": "2026-12-06 10:00",
    }  # fmt: skip
    return {"measurements": [m], "attempts": attempts, "path": path, "reason": f"why {path}"}


NEXT_LOAD_MEASURES = (
    "compute (auto): not settled here yet: the next load measures both paths "
    "(--compute speed|memory pins one)"
)


def test_models_says_what_the_next_load_does(tmp_path):
    data = tmp_path / "data"
    folder, size = _fake_model(data)
    (data / "runtime").mkdir()
    cache = data / "runtime" / "paths.json"
    key = f"{folder}|{size}|OpenBLAS (t)|2"
    cache.write_text(json.dumps({key: _entry(0.1, 1, "float32")}))  # idle: settled
    p = _models(tmp_path, data)
    assert p.returncode == 0 and p.stderr == ""
    assert "compute (auto): float32: why float32" in p.stdout
    cache.write_text(json.dumps({key: _entry(1.9, 1, "float32")}))  # busy: measured again
    p = _models(tmp_path, data)
    assert p.returncode == 0 and NEXT_LOAD_MEASURES in p.stdout and "why float32" not in p.stdout


def test_models_with_a_fifo_for_a_cache_does_not_hang(tmp_path):
    data = tmp_path / "data"
    _fake_model(data)
    (data / "runtime").mkdir()
    cache = data / "runtime" / "paths.json"
    os.mkfifo(cache)
    p = _models(tmp_path, data)  # the old reader waited for a writer forever
    assert p.returncode == 0 and NEXT_LOAD_MEASURES in p.stdout
    assert p.stderr == (
        f"logitscope: warning: the runtime cache {cache} is not a regular file (a FIFO): "
        "ignored, what it held is measured again\n"
    )
