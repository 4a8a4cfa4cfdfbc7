"""A damaged `model_prefs.json` (not JSON, wrong types, NaN, nested deep, 10 MB, a
folder holding a NUL, `/` or `/proc` stored as folders): every command still works,
the damage is said once in words, the file is kept as it is, and set aside under a
`.damaged` name only when a fresh one must be written."""

from __future__ import annotations

import json

import pytest

from engine.models import model_prefs
from engine.models.load_options import LoadOptions


@pytest.fixture
def prefs(tmp_path, monkeypatch):
    """The preferences file of a data folder of this test's own."""
    monkeypatch.setenv("LOGITSCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(model_prefs, "_reported", set())  # each test hears its warning
    (tmp_path / "data").mkdir()
    return tmp_path / "data" / model_prefs.PREFS_FILE


UNUSABLE = {
    "invalid JSON": (b'{"load": {', "it is not valid JSON"),
    "a string": (b'"5"', "it holds a JSON str where an object belongs"),
    "a list": (b"[1, 2]", "it holds a JSON list where an object belongs"),
    "nested deep": (b"[" * 100_000 + b"]" * 100_000, "it nests too deep"),
    "10 MB": (b'{"x": "' + b"a" * 10_000_000 + b'"}', "it is 10,000,009 bytes, more than"),
    "binary": (b"\xff\xfe\x00garbage", "it is not UTF-8 text"),
}


@pytest.mark.parametrize("case", UNUSABLE)
def test_an_unusable_file_gives_defaults_a_warning_and_stays(prefs, capsys, case):
    content, why = UNUSABLE[case]
    prefs.write_bytes(content)
    assert model_prefs.load_options("m") == LoadOptions()
    assert model_prefs.user_folders() == []
    assert model_prefs.sampling_presets() == {}
    err = capsys.readouterr().err
    assert err.count("logitscope: warning:") == 1  # said once, however often it is read
    assert f"the model preferences file {prefs} cannot be used: {why}" in err
    assert err.rstrip().endswith("defaults apply")
    assert why in model_prefs.damage()
    assert prefs.read_bytes() == content  # kept as it is


PARTLY = {
    "NaN context": (
        {"load": {"m": {"context_length": float("nan")}, "ok": {"kv_bits": 8}}},
        "the load options of 'm' (context length must be a whole number, not nan)",
    ),
    "400-digit context": (
        {"load": {"m": {"context_length": 10**400}, "ok": {"kv_bits": 8}}},
        "the load options of 'm' (a context of more than 16,777,216 tokens)",
    ),
    "folder with a NUL": (
        {"folders": ["/tmp/a\x00b", "/ok"], "load": {"ok": {"kv_bits": 8}}},
        "the added folder '/tmp/a\\x00b' (its path holds a control character or NUL)",
    ),
    "relative folder": ({"folders": ["rel", "/ok"]}, "the added folder 'rel' (its path is not"),
    "folders not a list": ({"folders": "/ok", "load": {"ok": {"kv_bits": 8}}}, "'folders' is not"),
    "load not an object": ({"load": [1], "folders": ["/ok"]}, "'load' is not a JSON object"),
    "preset of Infinity": (
        {"presets": {"hot": {"temperature": float("inf")}, "ok": {"top_k": 3}}},
        "the preset 'hot' (it holds NaN or an infinity)",
    ),
    "preset of a wrong type": (
        {"presets": {"hot": {"temperature": "very"}, "ok": {"top_k": 3}}},
        "the preset 'hot' (",
    ),
}


@pytest.mark.parametrize("case", PARTLY)
def test_damaged_entries_are_left_out_and_named(prefs, capsys, case):
    data, why = PARTLY[case]
    prefs.write_text(json.dumps(data))
    before = prefs.read_bytes()
    assert model_prefs.load_options("m") == LoadOptions()
    if "ok" in data.get("load", {}):
        assert model_prefs.load_options("ok") == LoadOptions(kv_bits=8)
    if "/ok" in data.get("folders", []) and isinstance(data["folders"], list):
        assert [str(p) for p in model_prefs.user_folders()] == ["/ok"]
    if "presets" in data:
        assert model_prefs.sampling_presets() == {"ok": {"top_k": 3}}
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and why in err
    assert "has unusable entries, left out" in err
    assert prefs.read_bytes() == before


def test_writing_sets_the_damaged_file_aside_first(prefs, capsys):
    damaged = b'{"folders": ["/x\\u0000y", "/ok"], "load": {"a": {"kv_bits": 8}}'  # cut short
    prefs.write_bytes(damaged)
    (prefs.parent / "model_prefs.json.damaged").write_text("an older one, never replaced")

    model_prefs.set_load_options("b", LoadOptions(kv_bits=4))

    aside = prefs.parent / "model_prefs.json.damaged.1"
    assert aside.read_bytes() == damaged
    assert (prefs.parent / "model_prefs.json.damaged").read_text() == "an older one, never replaced"
    assert json.loads(prefs.read_text()) == {
        "load": {"b": {"context_length": None, "context_mode": "capped", "kv_bits": 4}}
    }
    err = capsys.readouterr().err
    assert f"the damaged model preferences file is kept as {aside}; a fresh one is written" in err
    assert model_prefs.damage() is None
    model_prefs.set_load_options("c", LoadOptions(kv_bits=8))  # sound now: nothing set aside
    assert sorted(p.name for p in prefs.parent.glob("*.damaged*")) == [
        "model_prefs.json.damaged",
        "model_prefs.json.damaged.1",
    ]


def test_a_partly_damaged_file_keeps_its_good_choices_when_rewritten(prefs):
    prefs.write_text(json.dumps({"folders": ["/ok", 5], "load": {"a": {"kv_bits": 8}}}))
    model_prefs.set_load_options("b", LoadOptions(kv_bits=4))
    assert (prefs.parent / "model_prefs.json.damaged").exists()
    assert model_prefs.load_options("a") == LoadOptions(kv_bits=8)
    assert [str(p) for p in model_prefs.user_folders()] == ["/ok"]


def test_a_folder_in_place_of_the_file_is_said_and_set_aside(prefs, capsys):
    prefs.mkdir()
    assert model_prefs.load_options("m") == LoadOptions()
    assert "it is not a regular file" in capsys.readouterr().err
    model_prefs.set_user_folders(["/ok"])
    assert (prefs.parent / "model_prefs.json.damaged").is_dir()
    assert model_prefs.user_folders()[0].as_posix() == "/ok"


@pytest.mark.parametrize("folders", [["/"], ["/proc"], ["/tmp/a\x00b"], "5"])
def test_models_lists_whatever_folders_were_stored(prefs, capsys, folders):
    from engine.cli import main

    prefs.write_text(json.dumps({"folders": folders}))
    assert main(["models", "--verbose"]) == 0
    out, err = capsys.readouterr()
    assert "internal error" not in out + err
    assert "SmolLM2-135M-Instruct  [" in out  # the shared models folder still lists
    if folders == ["/proc"]:
        assert "skipped: /proc (folder /proc): a system folder" in out
    if folders == ["/"]:
        assert "skipped: /proc (folder /): a system folder" in out
    if folders in (["/tmp/a\x00b"], "5"):
        assert err.count("logitscope: warning: the model preferences file") == 1


def test_a_spec_holding_a_nul_or_an_unreadable_path_has_default_options(prefs):
    assert model_prefs.load_options("a\x00b") == LoadOptions()
    assert model_prefs.load_options("/proc/1/cwd/x") == LoadOptions()
