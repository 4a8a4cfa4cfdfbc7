"""`logitscope models --set/--add-folder/--context/--kv-bits/--file` check what they are
given: one line and exit 2 for a mistake, nothing remembered; a relative folder is
made absolute."""

from __future__ import annotations

import pytest

from engine.models import model_prefs
from engine.models.load_options import LoadOptions
from tests.engine.test_hub_hostile import cli, one_line


@pytest.fixture(autouse=True)
def private_prefs(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGITSCOPE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    ("folder", "message"),
    [
        ("", "is empty"),
        ("no/such/folder", "does not exist"),
        ("a-file", "is a file, not a folder"),
        ("bad-\udcff-utf8", "is not valid UTF-8"),
        ("line\nbreak", "holds a control character"),
        ("/", "/ is a system folder"),
        ("/proc", "/proc is a system folder"),
        ("/proc/self/root", "/ is a system folder"),  # a link to the root, resolved
        ("/sys/kernel", "/sys/kernel is a system folder"),
    ],
)
def test_add_folder_refuses_what_is_not_a_folder_of_models(tmp_path, capsys, folder, message):
    (tmp_path / "a-file").write_text("x")
    code, out, err = cli(capsys, "models", "--add-folder", folder)
    assert code == 2 and out == "" and message in one_line(err)
    assert model_prefs.user_folders() == []


def test_add_folder_makes_a_relative_folder_absolute(tmp_path, capsys):
    (tmp_path / "models").mkdir()
    code, out, _ = cli(capsys, "models", "--add-folder", "models")
    where = (tmp_path / "models").resolve()
    assert code == 0 and out == f"{where} will be scanned for models (from 'models')\n"
    assert model_prefs.user_folders() == [where]


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("", "the model to --set is empty"),
        ("/etc/passwd", "/etc/passwd is not a model (give a model folder or .gguf file)"),
        ("no-such-model", "no model 'no-such-model': give a model folder, a .gguf file"),
        ("org/not-cached", "no model 'org/not-cached'"),
        ("empty-folder", "no model 'empty-folder'"),
    ],
)
def test_set_refuses_a_model_that_does_not_exist(tmp_path, capsys, model, message):
    (tmp_path / "empty-folder").mkdir()
    code, _, err = cli(capsys, "models", "--set", model, "--context", "2048")
    assert code == 2 and message in one_line(err)
    assert model_prefs._read() == {}


def test_set_remembers_options_of_a_real_model(capsys, default_model_path):
    code, out, _ = cli(capsys, "models", "--set", str(default_model_path), "--context", "2048")
    assert code == 0 and out.endswith(": context 2,048 (capped) · KV float\n")
    assert model_prefs.load_options(str(default_model_path)) == LoadOptions(2048)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--context", "2048"], "--context goes with --set MODEL"),
        (["--kv-bits", "8"], "--kv-bits goes with --set MODEL"),
        (["--rotating"], "--rotating goes with --set MODEL"),
        (["--file", "x.gguf"], "--file goes with --download REPO"),
    ],
)
def test_an_option_without_its_partner_is_bad_input(capsys, args, message):
    code, out, err = cli(capsys, "models", *args)
    assert code == 2 and out == "" and message in one_line(err)
