"""Bad command-line input gets one line saying what was wrong, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(args, tmp_path, stdin: bytes | None = None, env_extra=None, shell=False, raw=False):
    env = {**os.environ, "LOGITSCOPE_DATA_DIR": str(tmp_path / "data"), **(env_extra or {})}
    cmd = args if shell or raw else [sys.executable, "-m", "engine", *args]
    return subprocess.run(
        cmd, capture_output=True, input=stdin, env=env, cwd=ROOT, timeout=180, shell=shell
    )


def one_line_error(p) -> str:
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0, err
    assert "Traceback" not in err, err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("[")]  # progress lines
    assert len(lines) == 1 and lines[0].startswith("logitscope: "), err
    return lines[0]


def _export(session=True, runs=True, **extra) -> dict:
    doc = {"schema": "logitscope.session", "schema_version": 1}
    if session:
        doc["session"] = {"session_id": "s1", "started": 0.0}
    if runs:
        doc["runs"] = [
            {
                "run_id": "s1/1",
                "started": 0.0,
                "prompt": "p",
                "settings": {},
                "model": None,
                "records": [],
            }
        ]
    doc.update(extra)
    return doc


BAD_IMPORTS = {
    "no session": _export(session=False),
    "no runs": _export(runs=False),
    "runs as a dict": _export(runs=False) | {"runs": {"a": 1}},
    "schema_version as text": _export(schema_version="1"),
    "schema_version newer": _export(schema_version=99),
    "a run without run_id or prompt": _export() | {"runs": [{"started": 0}]},
    "a list": [1, 2, 3],
}


@pytest.mark.parametrize("case", list(BAD_IMPORTS))
def test_bad_imports(tmp_path, case):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(BAD_IMPORTS[case]))
    p = run(["import", str(path)], tmp_path)
    if p.returncode == 0:  # accepted with the bad run left out, and said so
        assert "left out" in p.stdout.decode() or "imported 0" in p.stdout.decode()
    else:
        one_line_error(p)
    listed = run(["sessions", "--json"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    json.loads(listed.stdout)


def test_deeply_nested_json(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert "nested too deeply" in one_line_error(run(["import", str(path)], tmp_path))


def test_not_utf8_and_missing_files(tmp_path):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    one_line_error(run(["import", str(path)], tmp_path))
    one_line_error(run(["import", str(tmp_path / "nope.json")], tmp_path))


@pytest.mark.parametrize("config", [[1, 2], {"max_position_embeddings": "abc"}, "{not json"])
def test_bad_model_folders(tmp_path, tiny_model_dir, config):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    text = config if isinstance(config, str) else json.dumps(config)
    (folder / "config.json").write_text(text)
    line = one_line_error(run(["generate", "--model", str(folder), "--prompt", "hi"], tmp_path))
    assert "config.json" in line
    # A bad folder among the installed models never hides the others.
    models = tmp_path / "models"
    shutil.copytree(folder, models / "broken")
    shutil.copytree(tiny_model_dir, models / "good")
    p = run(["models", "--json"], tmp_path, env_extra={"LOGITSCOPE_MODELS_DIR": str(models)})
    assert p.returncode == 0 and [m["name"] for m in json.loads(p.stdout)] == ["good"]


def test_broken_chat_template(tmp_path, tiny_model_dir):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    cfg["chat_template"] = "{% for m in messages %}{{ m['content'] }"  # unclosed
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    line = one_line_error(run(["generate", "--model", str(folder), "--prompt", "hi"], tmp_path))
    assert "chat template" in line and "raw" in line


def test_data_dir_is_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    p = run(["sessions"], tmp_path, env_extra={"LOGITSCOPE_DATA_DIR": str(tmp_path / "file")})
    assert "is a file, not a folder" in one_line_error(p)


def test_invalid_text_in_the_prompt(tmp_path, tiny_model_dir):
    model = ["--model", str(tiny_model_dir)]
    p = run(["generate", *model, "--prompt", "-"], tmp_path, stdin=b"caf\xe9 \xff")
    assert "not valid UTF-8" in one_line_error(p)
    # A lone surrogate from argv (what Python makes of undecodable bytes).
    p = run(
        [
            sys.executable,
            "-c",
            "import sys; from engine.cli import main; "
            f"sys.exit(main(['generate', '--model', {str(tiny_model_dir)!r}, "
            "'--prompt', 'a\\udcff b']))",
        ],
        tmp_path,
        raw=True,
    )
    assert "not valid text" in one_line_error(p)


def test_huge_seed(tmp_path, tiny_model_dir):
    p = run(
        ["generate", "--model", str(tiny_model_dir), "--prompt", "hi", "--seed", str(2**64)],
        tmp_path,
    )
    assert "seed" in one_line_error(p)


def test_closed_pipe_and_version(tmp_path, tiny_model_dir):
    cmd = (
        f"{sys.executable} -m engine generate --model {tiny_model_dir} --prompt hello "
        "--json --max-tokens 40 --temp 0.9 | head -n 3"
    )
    p = run(cmd, tmp_path, shell=True)
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 3
    assert b"Traceback" not in p.stderr and b"BrokenPipe" not in p.stderr, p.stderr
    p = run(["--version"], tmp_path)
    assert p.returncode == 0 and p.stdout.decode().startswith("logitscope ")


BAD_GENERATE = {
    "empty endpoint": (["--endpoint", ""], "give the server's address"),
    "bad IPv6": (["--endpoint", "http://[::1"], "Invalid IPv6"),
    "IPv6 not an address": (["--endpoint", "http://[zz]:80/v1"], "not a valid address"),
    "port abc": (["--endpoint", "http://127.0.0.1:abc/v1"], "Port could not be cast"),
    "port too large": (["--endpoint", "127.0.0.1:99999"], "out of range"),
    "javascript:": (["--endpoint", "javascript:alert(1)"], "not an http(s) address"),
    "300-character host": (["--endpoint", "http://" + "a" * 300 + "/v1"], "no valid host"),
    "%00": (["--endpoint", "http://127.0.0.1:8080/v1%00"], "control characters"),
    "surrogate in the endpoint": (["--endpoint", "http://h\udcff/v1"], "invalid text"),
    "huge remote model id": (
        ["--endpoint", "http://127.0.0.1:9/v1", "--remote-model", "m" * 100_000],
        "100000 characters long",
    ),
    "control character in the model id": (
        ["--endpoint", "127.0.0.1:9", "--remote-model", "a\x01"],
        "control characters",
    ),
    "remote model without endpoint": (["--remote-model", ""], "needs --endpoint"),
    "top-k 1e9": (["--endpoint", "127.0.0.1:9", "--top-k", "1000000000"], "top-k must be"),
}


@pytest.mark.parametrize("case", list(BAD_GENERATE))
def test_bad_generate_input_is_exit_2(tmp_path, case):
    args, words = BAD_GENERATE[case]
    p = run(["generate", "--prompt", "hi", *args], tmp_path)
    line = one_line_error(p)
    assert p.returncode == 2 and words in line, line
    assert not (tmp_path / "data" / "models").exists()  # nothing ran locally


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--endpoint", ""], "give the server's address"),
        (["--endpoint", "http://h:abc"], "Port could not be cast"),
        (["--endpoint", "127.0.0.1:9", "--api-key-env", ""], "needs the name of"),
    ],
    ids=["empty endpoint", "port abc", "empty key variable"],
)
def test_bad_server_listing_input_is_exit_2(tmp_path, args, words):
    p = run(["models", *args], tmp_path)
    line = one_line_error(p)
    assert p.returncode == 2 and words in line, line
    assert not (tmp_path / "data" / "models").exists()  # nothing ran locally


@pytest.mark.parametrize(
    "key",
    ["sk-caf\u00e9", "sk-\udcff", "sk-\x01x"],
    ids=["non-ASCII", "invalid UTF-8", "control character"],
)
def test_bad_api_keys_are_exit_2(tmp_path, key):
    p = run(
        ["generate", "--prompt", "hi", "--endpoint", "127.0.0.1:9", "--api-key-env", "K"],
        tmp_path,
        env_extra={"K": key},
    )
    assert p.returncode == 2 and "characters an API key cannot have" in one_line_error(p)


@pytest.mark.parametrize(
    ("name", "words"),
    [("a" * 300 + ".md", "too long (303 bytes"), ("bad\udcff.md", "not valid text")],
    ids=["300-character name", "invalid UTF-8 name"],
)
def test_bad_export_names_are_exit_2(tmp_path, name, words):
    from engine.sessions.journal import Journal

    journal = Journal.create(_sessions(tmp_path))
    run_id = journal.start_run("p", {}, None)
    journal.close()
    p = run(["export", run_id, "--format", "md", "-o", str(tmp_path / name)], tmp_path)
    line = one_line_error(p)
    assert p.returncode == 2 and words in line and "already exists" not in line, line


def _sessions(tmp_path) -> Path:
    folder = tmp_path / "data" / "sessions"
    folder.mkdir(parents=True)
    return folder


BAD_LAB = {
    "quant --bits 4,,4": (["quant", "--prompt", "hi", "--bits", "4,,4"], "each once, not '4,,4'"),
    "quant --bits 4,4": (["quant", "--prompt", "hi", "--bits", "4,4"], "each once, not '4,4'"),
    "quant --bits 8,": (["quant", "--prompt", "hi", "--bits", "8,"], "each once, not '8,'"),
    "batch --sizes ,1": (["batch", "--sizes", ",1"], "each once, not ',1'"),
    "cache --kv-bits 8,,4": (["cache", "--kv-bits", "8,,4"], "each once, not '8,,4'"),
    "cache: a surrogate in the prompt": (["cache", "--prompt", "a\udcff b"], "not valid text"),
}


@pytest.mark.parametrize("case", list(BAD_LAB))
def test_bad_lab_input_is_exit_2(tmp_path, case):
    """Refused before any model loads: the same check as generate's prompt."""
    args, words = BAD_LAB[case]
    p = run(
        [
            sys.executable,
            "-c",
            f"import sys; from engine.cli import main; sys.exit(main({['lab', *args]!r}))",
        ],
        tmp_path,
        raw=True,
    )
    line = one_line_error(p)
    assert p.returncode == 2 and words in line, line


def test_lab_cache_refuses_a_prompt_that_is_not_utf8(tmp_path):
    p = run(["lab", "cache", "--prompt", "-"], tmp_path, stdin=b"caf\xe9 \xff")
    assert p.returncode == 2 and "not valid UTF-8" in one_line_error(p)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["generate", "--prompt", "hi", "--model", ""], "--model"),
        (["generate", "--prompt", "hi", "--model", "  "], "--model"),
        (["inspect", "--prompt", "hi", "--model", ""], "--model"),
        (["lab", "quant", "--model", ""], "--model"),
        (["bench", "--synthetic", "--vs", ""], "--vs"),
    ],
)
def test_an_empty_name_is_bad_input_not_the_default(tmp_path, args, option):
    """An empty --model or --vs is a mistake: leaving it out asks for the default.
    Before, `--model ''` ran the default model and `--vs ''` was ignored. (An empty
    --endpoint or --remote-model has its own one-line refusal: test_bad_generate_input.)"""
    p = run(args, tmp_path)
    err = p.stderr.decode()
    assert p.returncode == 2 and "Traceback" not in err
    last = err.strip().splitlines()[-1]  # argparse's usage, then its one error line
    assert last.startswith("logitscope ") and f"argument {option}: is empty" in last
    assert "leave the option out" in last
