"""A hostile hub on 127.0.0.1 (tests/hub_server.py): listings naming files outside the
cache, commit ids and ETags that are paths, repo ids and `--file`s that climb out,
silence, drips, endless pages, redirect loops, HTTP 500, answers of the wrong shape
and absurd numbers. Each ends with one line and the right exit code, within the
(lowered) deadline, and nothing is written outside the Hugging Face cache."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from engine.cli import main
from engine.models import hub, hub_fetch, hub_http
from tests.hub_server import FakeHub

CONFIG = b'{"model_type": "llama"}'
GOOD = {"config.json": CONFIG, "model.safetensors": b"\0" * 5000}


def roomy(monkeypatch) -> None:
    """Deadlines no loaded machine reaches, for tests that do not test them."""
    monkeypatch.setattr(hub_http, "DEADLINE_S", 60.0)
    monkeypatch.setattr(hub_http, "READ_S", 30.0)
    monkeypatch.setattr(hub_fetch, "STALL_S", 30.0)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """HOME, HF_HOME and the working folder in tmp_path; the deadlines lowered."""
    for name in ("home", "hf", "cwd", "abs_target"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.chdir(tmp_path / "cwd")
    roomy(monkeypatch)  # tests of the deadlines themselves ask for `tight`
    return tmp_path


@pytest.fixture
def tight(home, monkeypatch):
    """The deadlines lowered, for the tests of a hub that stalls or drips."""
    monkeypatch.setattr(hub_http, "DEADLINE_S", 1.0)
    monkeypatch.setattr(hub_http, "READ_S", 0.5)
    monkeypatch.setattr(hub_fetch, "STALL_S", 0.3)


@pytest.fixture
def evil(home, monkeypatch):
    """A hub holding one good repo; a test adds the hostile ones."""
    server = FakeHub({"good/model": dict(GOOD)})
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    yield server
    server.close()


def written_outside(root: Path) -> list[str]:
    """Everything under `root` but outside root/hf, and every link in root/hf leading
    out of it."""
    cache = (root / "hf").resolve()
    out = []
    for path in root.rglob("*"):
        if path.is_relative_to(root / "hf"):
            if path.is_symlink() and not path.resolve().is_relative_to(cache):
                out.append(f"{path} -> {os.readlink(path)}")
        elif path.name not in ("home", "hf", "cwd", "abs_target") or path.parent != root:
            out.append(str(path))
    return out


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """Run `logitscope ARGS`: (exit status, stdout, stderr)."""
    code = main(list(args))
    got = capsys.readouterr()
    return code, got.out, got.err


def one_line(err: str) -> str:
    """The single error line (and that it is single and not an internal error)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("logitscope: error: "), err
    assert "internal error" not in err
    return lines[0]


@pytest.mark.parametrize(
    "name",
    [
        "../../../../rel_evil.json",
        "sub/../../../../../x.json",
        "ABS",  # replaced by an absolute path into abs_target
        "a\\..\\..\\evil.json",
        "nul\0.json",
        "C:evil.json",
        "./config.json",
    ],
)
def test_a_listing_naming_files_outside_is_refused(evil, home, capsys, name):
    name = str(home / "abs_target" / "abs_evil.json") if name == "ABS" else name
    evil.repos["evil/repo"] = {**GOOD, name: b'{"pwned": 1}'}
    code, out, err = cli(capsys, "models", "--download", "evil/repo")
    assert code == 1 and out == ""
    assert "is not safe to write" in one_line(err) and "nothing written" in err
    assert written_outside(home) == []
    assert not [r for r in evil.requests if "/resolve/" in r]  # refused before any fetch
    assert [f.name for f in hub.repo_files("evil/repo")] == list(GOOD)  # not offered


@pytest.mark.parametrize("name", ["../../../../evil.gguf", "/etc/passwd", "a/./b.gguf", ""])
def test_a_file_argument_outside_the_repo_is_bad_input(evil, home, capsys, name):
    code, _, err = cli(capsys, "models", "--download", "good/model", "--file", name)
    assert code == 2 and "not safe to write" in one_line(err)
    assert written_outside(home) == [] and evil.requests == []


@pytest.mark.parametrize("repo", ["../../x", "a/b/c", "/etc/passwd", "a b", "", "a--b/c", "x"])
def test_bad_repo_ids_are_bad_input(evil, home, capsys, repo):
    code, out, err = cli(capsys, "models", "--download", repo)
    assert code == 2 and out == ""
    assert "hub repo id" in one_line(err)
    assert written_outside(home) == [] and evil.requests == []


@pytest.mark.parametrize("commit", ["../../../../x", "/tmp/x", "", "0123456789abcdef" * 3])
def test_a_commit_header_never_becomes_a_folder(evil, home, capsys, commit):
    evil.file_headers = {"X-Repo-Commit": commit}
    code, _, err = cli(capsys, "models", "--download", "good/model", "--file", "config.json")
    assert code == 1 and "no valid commit id" in one_line(err)
    assert written_outside(home) == []
    assert not (home / "hf" / "hub" / "models--good--model" / "snapshots").exists()


@pytest.mark.parametrize("etag", ['"/etc/passwd"', '"../../../../x"', 'W/".."', '""'])
def test_an_etag_never_becomes_a_link_outside(evil, home, etag):
    evil.file_headers = {"ETag": etag}
    path = hub.download("good/model", "config.json")
    assert path.read_bytes() == CONFIG
    blob = path.resolve()
    assert blob.parent == (home / "hf" / "hub" / "models--good--model" / "blobs").resolve()
    assert len(blob.name) == 64  # the sha256 of what the hub sent
    assert written_outside(home) == []


def test_a_listing_naming_a_file_also_as_a_folder_is_refused(evil, home, capsys, monkeypatch):
    """`config.json` and `config.json/tokenizer.json` cannot both be laid out (an
    internal FileExistsError before)."""
    roomy(monkeypatch)
    evil.repos["evil/repo"] = {**GOOD, "config.json/tokenizer.json": b"{}"}
    code, out, err = cli(capsys, "models", "--download", "evil/repo")
    assert code == 1 and out == ""
    line = one_line(err)
    assert "lists 'config.json' both as a file and as a folder; nothing written" in line
    assert not [r for r in evil.requests if "/resolve/" in r]
    assert written_outside(home) == []


@pytest.mark.parametrize("second", ["config.json/inner.gguf", "inner.gguf"])
def test_a_file_where_the_cache_holds_the_other_kind_is_one_line(
    evil, home, capsys, monkeypatch, second
):
    """A later --file whose place in the snapshot is taken by an earlier file (or
    whose folder is an earlier file) says so in words (an internal OSError before)."""
    roomy(monkeypatch)
    evil.repos["evil/repo"] = {"config.json": CONFIG, second: b"x"}
    assert cli(capsys, "models", "--download", "evil/repo", "--file", second)[0] == 0
    if second == "inner.gguf":  # now make the earlier file's place a folder
        evil.repos["evil/repo"]["inner.gguf/config.json"] = CONFIG
        second = "inner.gguf/config.json"
    else:
        second = "config.json"
    code, _, err = cli(capsys, "models", "--download", "evil/repo", "--file", second)
    lines = [x for x in err.splitlines() if not x.startswith("[")]  # less the progress
    assert code == 1 and len(lines) == 1 and "internal error" not in err, err
    assert "cannot be placed in the cache, another file of the repo is in the way" in lines[0]
    assert written_outside(home) == []


def test_a_safe_download_lands_in_the_cache(evil, home, capsys):
    code, out, _ = cli(capsys, "models", "--download", "good/model")
    snapshot = home / "hf" / "hub" / "models--good--model" / "snapshots"
    assert code == 0 and Path(out.strip()).parent == snapshot
    assert sorted(p.name for p in Path(out.strip()).iterdir()) == sorted(GOOD)
    assert written_outside(home) == []


@pytest.mark.parametrize(
    ("attack", "message"),
    [
        ("silent", r"stopped answering \(nothing for 0\.5 s\)"),
        ("drip", "did not answer within 1 s"),  # each byte in time, the whole not
        ("loop", "redirected in a loop"),
        ("redirects", "redirected more than 5 times"),
        ("500", "the hub answered HTTP 500"),
    ],
)
def test_a_hub_that_stalls_loops_or_fails_ends_in_one_line(
    tight, evil, home, capsys, attack, message
):
    evil.attack = attack
    code, _, err = cli(capsys, "models", "--search", "smollm2")
    assert code == 1 and re.search(message, one_line(err))
    code, _, err = cli(capsys, "models", "--download", "good/model", "--file", "config.json")
    assert code == 1 and re.search(message, one_line(err))
    if attack == "500":  # answered at once: no retries, no "Retrying in 8s"
        assert len(evil.requests) == 2  # the first search page, then the file's HEAD
    assert written_outside(home) == []


def test_a_500_is_not_retried(tight, evil):
    evil.attack = "500"
    with pytest.raises(
        hub.HubError, match=r"searching the hub for 'x': the hub answered HTTP 500$"
    ):
        hub.search("x")
    assert len(evil.requests) == 1


def test_endless_empty_pages_stop(evil):  # counted, not timed: roomy deadlines
    evil.attack = "pages"
    assert hub.search("smollm2") == []
    assert len(evil.requests) == 2 * hub.MAX_PAGES  # MLX and GGUF, MAX_PAGES each


def test_a_download_dripping_bytes_stops(tight, evil, home):
    evil.attack = "drip_body"
    with pytest.raises(hub.HubError, match=r"sent only \d+ bytes in \d+ s; download again"):
        hub.download("good/model", "model.safetensors")
    assert written_outside(home) == []


def test_a_body_longer_than_announced_is_not_kept(evil, home):
    evil.attack = "oversize"
    with pytest.raises(hub.HubError, match="more than the 5,000 bytes it announced"):
        hub.download("good/model", "model.safetensors")
    blobs = home / "hf" / "hub" / "models--good--model" / "blobs"
    assert [p.stat().st_size for p in blobs.iterdir()] == [0]  # the part file emptied


def test_a_huge_listing_is_refused_before_any_file_is_asked_for(evil):
    siblings = [{"rfilename": f"f{i}.json", "size": 1} for i in range(25_000)]
    evil.info_body = json.dumps({"siblings": siblings}).encode()
    with pytest.raises(hub.HubError, match="the hub lists 25,000 files; more than 20,000"):
        hub.download("good/model")
    assert len(evil.requests) == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"id": "a/b"}', "the hub's answer is not a list of models"),
        (b"not json", "the hub's answer is not valid JSON"),
        (b"[" * 100_000, "the hub's answer is not valid JSON"),
        (b"\xff\xfe[]", "the hub's answer is not valid JSON"),
    ],
)
def test_a_search_answer_of_the_wrong_shape_is_said(evil, capsys, body, message):
    evil.search_body = body
    code, _, err = cli(capsys, "models", "--search", "x")
    assert code == 1 and message in one_line(err)


def test_bad_search_rows_are_skipped_and_bad_fields_unknown(evil, capsys):
    big = "9" * 400
    evil.search_body = (
        b'["a/b", 5, null, {"modelId": "no/id"}, {"id": 5}, {"id": "../../x"},'
        b'{"id": "ok/one", "downloads": NaN, "likes": "many", "tags": "gguf",'
        b' "usedStorage": ' + big.encode() + b', "safetensors": [1], "gguf": 3},'
        b'{"id": "ok/two", "downloads": 1e400, "tags": [1, "license:\\u001b[31mmit"],'
        b' "safetensors": {"total": -5}, "usedStorage": 1.5}]'
    )
    found = hub.search("x", fmt="MLX")
    assert [(m.repo_id, m.downloads, m.likes, m.size_bytes, m.parameters) for m in found] == [
        ("ok/one", 0, 0, None, None),
        ("ok/two", 0, 0, None, None),
    ]
    assert found[1].license == "\\x1b[31mmit"  # the escape shown, not sent to the terminal
    code, out, _ = cli(capsys, "models", "--search", "x", "--json")
    rows = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert code == 0 and [r["repo_id"] for r in rows] == ["ok/one", "ok/two"]


def test_absurd_sizes_in_a_listing_do_not_break_the_download(evil, home):
    files = [{"rfilename": "config.json", "size": 10**400}, {"rfilename": "model.safetensors"}]
    evil.info_body = b'{"siblings": ' + json.dumps(files).encode() + b"}"
    seen = []
    folder = hub.download("good/model", on_progress=seen.append)
    assert sorted(p.name for p in folder.iterdir()) == sorted(GOOD)
    assert {e.total_bytes for e in seen} == {None} and seen[-1].done_bytes == 5023


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"ETag": '"a\0b"'}, "the hub sent a malformed answer"),
        ({"X-Repo-Commit": "0" * 39 + "\0"}, "the hub sent a malformed answer"),
        ({"Content-Length": "9" * 400}, "the hub sent a malformed answer"),
        ({"Location": "file:///etc/passwd"}, "the hub address is not a web address"),
    ],
)
def test_malformed_file_headers_end_in_one_line(evil, home, capsys, headers, message):
    evil.file_headers = headers
    code, _, err = cli(capsys, "models", "--download", "good/model", "--file", "config.json")
    assert code == 1 and message in one_line(err)
    assert written_outside(home) == []


@pytest.mark.parametrize("planted", ["snapshots/COMMIT", "snapshots/COMMIT/sub", "blobs"])
def test_a_link_planted_in_the_cache_is_not_followed(evil, home, capsys, planted):
    from tests.hub_server import COMMIT

    evil.repos["good/model"]["sub/config.json"] = CONFIG
    link = home / "hf" / "hub" / "models--good--model" / planted.replace("COMMIT", COMMIT)
    link.parent.mkdir(parents=True)
    link.symlink_to(home / "abs_target")
    code, _, err = cli(capsys, "models", "--download", "good/model", "--file", "sub/config.json")
    assert code == 1 and "would be written outside" in one_line(err)
    assert list((home / "abs_target").iterdir()) == []


def test_a_model_named_by_repo_id_downloads_through_the_guarded_client(evil, home):
    """`generate --model org/repo` (engine.models.hf_cache.hf_download) uses the same
    checks: a hostile listing writes nothing, a good one lands in the cache."""
    from engine.errors import ModelError
    from engine.models.hf_cache import hf_download

    evil.repos["evil/repo"] = {**GOOD, "../../../../rel_evil.json": b"{}"}
    with pytest.raises(ModelError, match="is not safe to write"):
        hf_download("evil/repo")
    assert written_outside(home) == []
    seen: list[float] = []
    folder = hf_download("good/model", lambda _text, fraction: seen.append(fraction))
    assert (folder / "config.json").read_bytes() == CONFIG
    assert folder.resolve().is_relative_to((home / "hf").resolve())
    assert seen[0] == 0.0 and seen[-1] == 1.0
