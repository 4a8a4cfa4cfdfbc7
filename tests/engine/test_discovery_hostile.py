"""Discovery in folders a stranger made: Ollama manifests pointing out of `blobs/`, links
out of the folder scanned or into /proc, a manifest nested 100,000 deep, a FIFO named
like a model, names holding terminal escapes, an unreadable folder, system folders as
roots. Each test builds its tree in tmp_path, points every tool's variable at it, and
asserts what is listed, the reason given for each item left out, and that no file
outside the tree was opened as a model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.models import scan_guard
from engine.models.catalogue import list_discovered_report
from engine.models.discovery import discover_all

HEX = "ab" * 32


@pytest.fixture
def tree(tmp_path, monkeypatch, smollm_gguf):
    """A home whose tools' folders are empty, a data folder of its own, and next to
    them `outside/evil.gguf`: a real model that must never be listed."""
    home = tmp_path / "home"
    home.mkdir()
    for var in ("HF_HOME", "XDG_CACHE_HOME", "OLLAMA_MODELS", "LLAMA_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(home / "hf"))
    monkeypatch.setenv("LOGITSCOPE_DATA_DIR", str(tmp_path / "data"))
    outside = tmp_path / "outside"
    outside.mkdir()
    os.link(smollm_gguf, outside / "evil.gguf")
    return home


@pytest.fixture
def opened(monkeypatch):
    """Every path read as a GGUF model while the test runs."""
    from engine.models import gguf_check

    paths, real = [], gguf_check.check_gguf

    def spy(path, *args, **kwargs):
        paths.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(gguf_check, "check_gguf", spy)
    return paths


def _place(path: Path, source: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.link(source, path)
    return path


def _manifest(path: Path, digest: object) -> None:
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": digest, "size": 1}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schemaVersion": 2, "layers": [layer]}))


def _reasons(skipped) -> dict[str, str]:
    return {s.where: s.reason for s in skipped}


def test_ollama_digest_pointing_out_of_blobs_is_refused(tree, opened, smollm_gguf):
    ollama = tree / ".ollama/models"
    lib = ollama / "manifests/registry.ollama.ai/library"
    _place(ollama / f"blobs/sha256-{HEX}", smollm_gguf)
    _manifest(lib / "good/1b", f"sha256:{HEX}")
    _manifest(lib / "rel/evil", "../../../outside/evil.gguf")
    _manifest(lib / "abs/evil", str(tree.parent / "outside/evil.gguf"))
    _manifest(lib / "half/evil", "sha256:../../../../outside/evil.gguf")
    # a blob of the right name that is a link out of the folder
    os.symlink(tree.parent / "outside/evil.gguf", ollama / f"blobs/sha256-{'cd' * 32}")
    _manifest(lib / "link/evil", f"sha256:{'cd' * 32}")

    listing = list_discovered_report()
    assert [(m.source, m.name) for m in listing.models] == [("Ollama", "good:1b")]
    assert opened == [ollama / f"blobs/sha256-{HEX}"]
    reasons = _reasons(listing.skipped)
    for bad in ("rel", "abs", "half"):
        assert "is not a sha256 digest" in reasons[str(lib / bad / "evil")]
    assert reasons[str(ollama / f"blobs/sha256-{'cd' * 32}")] == (
        f"it links to {tree.parent / 'outside/evil.gguf'}, outside {ollama}"
    )


def test_deep_and_huge_manifests_are_skipped_with_reasons(tree):
    manifests = tree / ".ollama/models/manifests/registry.ollama.ai/library"
    (manifests / "deep").mkdir(parents=True)
    (manifests / "deep/latest").write_text("[" * 100_000 + "]" * 100_000)
    (manifests / "huge").mkdir()
    (manifests / "huge/latest").write_text(" " * 2_000_000 + "{}")
    (manifests / "empty").mkdir()
    (manifests / "empty/latest").write_text(json.dumps({"layers": []}))

    result = discover_all()
    assert result.found == []
    reasons = _reasons(result.skipped)
    assert reasons[str(manifests / "deep/latest")] == (
        "the manifest cannot be read (it nests too deep)"
    )
    assert reasons[str(manifests / "huge/latest")] == (
        "the manifest is 2,000,002 bytes, more than a manifest holds"
    )
    assert reasons[str(manifests / "empty/latest")] == "the manifest has no model layer"


def test_links_out_of_the_folder_or_into_proc_are_not_followed(tree, opened, smollm_gguf):
    repo = tree / ".lmstudio/models/pub/repo"
    _place(repo / "good.gguf", smollm_gguf)
    os.symlink(tree.parent / "outside/evil.gguf", repo / "evil.gguf")
    os.symlink(tree.parent / "outside", repo / "elsewhere")  # a folder outside
    os.symlink("/proc/1/cwd", repo / "proc-link")
    os.symlink("good.gguf", repo / "alias.gguf")  # a link that stays inside: followed

    listing = list_discovered_report()
    names = [m.name for m in listing.models]
    assert names == ["pub/repo/alias.gguf", "pub/repo/good.gguf"]
    assert {p.resolve() for p in opened} == {(repo / "good.gguf").resolve()}
    reasons = _reasons(listing.skipped)
    root = tree / ".lmstudio/models"
    assert reasons[str(repo / "evil.gguf")] == (
        f"it links to {tree.parent / 'outside/evil.gguf'}, outside {root}"
    )
    assert (
        reasons[str(repo / "elsewhere")] == f"it links to {tree.parent / 'outside'}, outside {root}"
    )
    why = reasons[str(repo / "proc-link")]  # EACCES even for root in a container
    assert why.startswith("it links to /")
    assert why.endswith((", which cannot be followed", f", outside {root}"))


def test_hf_cache_snapshot_links_into_its_blobs_are_followed(tree, smollm_gguf):
    repo = tree / "hf/models--org--name"
    _place(repo / "blobs" / HEX, smollm_gguf)
    snap = repo / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    os.symlink(f"../../blobs/{HEX}", snap / "model-q4.gguf")  # the hub's own layout
    os.symlink(tree.parent / "outside/evil.gguf", snap / "evil-q4.gguf")

    result = discover_all()
    assert [(f.source, f.name) for f in result.found] == [
        ("Hugging Face cache", "org/name/model-q4.gguf")
    ]
    assert "outside" in _reasons(result.skipped)[str(snap / "evil-q4.gguf")]


def test_system_folders_and_unreadable_folders_are_named_not_fatal(tree, monkeypatch, capsys):
    from engine.cli import main
    from engine.models.model_prefs import set_user_folders

    monkeypatch.setenv("LLAMA_CACHE", "/proc")
    monkeypatch.setenv("OLLAMA_MODELS", "/sys")
    locked = tree / ".lmstudio/models/locked"
    locked.mkdir(parents=True)
    real_scandir = os.scandir

    def scandir(path):  # root reads any folder, so the refusal is the kernel's stand-in
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(scan_guard.os, "scandir", scandir)
    set_user_folders(["/proc", "/proc/1/cwd", str(tree / "missing")])

    assert main(["models", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert (
        "skipped: /proc (llama.cpp cache): a system folder (/proc, /sys, /dev) is not scanned"
        in out
    )
    assert "skipped: /sys (Ollama): a system folder (/proc, /sys, /dev) is not scanned" in out
    assert f"skipped: {locked} (LM Studio): it cannot be read (permission denied)" in out
    assert "skipped: /proc (folder /proc): a system folder" in out
    assert "skipped: /proc/1/cwd (folder /proc/1/cwd): a system folder" in out
    assert f"skipped: {tree}/missing (folder {tree}/missing): it does not exist" in out


def test_a_root_folder_of_slash_still_lists(tree, monkeypatch):
    monkeypatch.setenv("LLAMA_CACHE", "/")
    result = discover_all()  # bounded by depth, entries and time; /proc never entered
    assert ("/proc", "llama.cpp cache", "a system folder") in {
        (s.where, s.source, s.reason) for s in result.skipped
    }
    assert not any(str(f.path).startswith(("/proc/", "/sys/", "/dev/")) for f in result.found)


def test_a_fifo_named_like_a_model_is_never_opened(tree):
    cache = tree / ".cache/llama.cpp"
    cache.mkdir(parents=True)
    os.mkfifo(cache / "org_repo_q4.gguf")
    result = discover_all()  # opening the FIFO would block forever
    assert result.found == []
    assert _reasons(result.skipped)[str(cache / "org_repo_q4.gguf")] == (
        "it is not a regular file (a FIFO, socket or device)"
    )


def test_names_lose_terminal_escapes_and_undecodable_bytes(tree, smollm_gguf, capsys):
    from engine.cli import main

    repo = tree / ".lmstudio/models/pub/repo"
    _place(repo / "\x1b]0;pwned\x07ev\x9bil\x1b[31m.gguf", smollm_gguf)
    raw = os.fsencode(repo) + b"/bad\xff.gguf"
    os.link(smollm_gguf, raw)

    names = sorted(f.name for f in discover_all().found)
    assert names == ["pub/repo/]0;pwnedevil[31m.gguf", "pub/repo/bad\ufffd.gguf"]
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "pub/repo/]0;pwnedevil[31m.gguf  [LM Studio]" in out
    assert "pub/repo/bad\ufffd.gguf  [LM Studio]" in out
    assert not any(c in out for c in "\x1b\x07\x9b")


def test_each_scan_stops_at_its_entry_and_time_caps(tree, monkeypatch):
    folder = tree / ".lmstudio/models/pub"
    folder.mkdir(parents=True)
    for i in range(10):
        (folder / f"notes-{i}.txt").write_text("x")
    monkeypatch.setattr(scan_guard, "MAX_ENTRIES", 5)
    reasons = _reasons(discover_all().skipped)
    assert reasons[str(tree / ".lmstudio/models")] == (
        "the scan stopped after 5 entries; the rest was not looked at"
    )
    monkeypatch.setattr(scan_guard, "MAX_ENTRIES", 20_000)
    monkeypatch.setattr(scan_guard, "SCAN_SECONDS", -1.0)  # its time is up at once
    reasons = _reasons(discover_all().skipped)
    assert reasons[str(tree / ".lmstudio/models")] == (
        "the scan stopped after -1 s; the rest was not looked at"
    )


def test_verbose_json_lists_what_was_left_out(tree, capsys):
    from engine.cli import main

    cache = tree / ".cache/llama.cpp"
    cache.mkdir(parents=True)
    os.symlink(tree.parent / "outside/evil.gguf", cache / "evil.gguf")
    assert main(["models", "--json", "--verbose"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"where": str(cache / "evil.gguf"), "source": "llama.cpp cache"}.items() <= next(
        s for s in data["skipped"] if s["where"].endswith("evil.gguf")
    ).items()
    assert not any(m["path"].endswith("evil.gguf") for m in data["models"])


def test_all_scans_of_a_listing_share_one_time_budget(tree, monkeypatch):
    from engine.models.model_prefs import set_user_folders

    for name in ("a", "b"):
        (tree / name / "sub").mkdir(parents=True)
    set_user_folders([str(tree / "a"), str(tree / "b"), str(tree / "a") + "/"])
    monkeypatch.setattr(scan_guard, "DISCOVERY_SECONDS", -1.0)  # spent before it begins
    stops = [s for s in discover_all().skipped if "stopped" in s.reason]
    assert {(s.where, s.source) for s in stops} == {
        (str(tree / "a"), f"folder {tree / 'a'}"),  # scanned once, though listed twice
        (str(tree / "b"), f"folder {tree / 'b'}"),
    }
    assert {s.reason for s in stops} == {
        "the scan stopped after the listing's -1 s; the rest was not looked at"
    }


def test_an_mlx_snapshot_whose_config_links_out_of_the_hf_cache_is_left_out(
    tree, default_model_path
):
    from engine.models.catalogue import list_models_report

    repo = tree / "hf/models--org--mlx-model"
    for name, commit in (("good", "a" * 40), ("evil", "b" * 40)):
        snap = repo.with_name(f"models--org--{name}") / "snapshots" / commit
        snap.mkdir(parents=True)
        os.link(default_model_path / "model.safetensors", snap / "model.safetensors")
        (snap.parents[1] / "refs").mkdir()
        (snap.parents[1] / "refs/main").write_text(commit)
        if name == "good":
            os.link(default_model_path / "config.json", snap / "config.json")
    outside = tree.parent / "outside/config.json"
    os.link(default_model_path / "config.json", outside)
    evil = tree / "hf/models--org--evil/snapshots" / ("b" * 40) / "config.json"
    os.symlink(outside, evil)

    listing = list_models_report()
    hf = [m.name for m in listing.models if m.path.startswith(str(tree / "hf"))]
    assert hf == ["org/good"]
    assert _reasons(listing.skipped)[str(evil)] == f"it links to {outside}, outside {tree / 'hf'}"


def test_hf_cache_in_proc_lists_nothing_and_stops_nothing(tree, monkeypatch):
    from engine.models.catalogue import list_models_report

    monkeypatch.setenv("HF_HUB_CACHE", "/proc")
    listing = list_models_report()
    assert not any(m.path.startswith("/proc") for m in listing.models)
    assert ("/proc", "Hugging Face cache") in {(s.where, s.source) for s in listing.skipped}
