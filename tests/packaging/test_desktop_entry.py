"""The Linux desktop integration shipped beside the frozen app: the entry's template,
install.sh (into a throwaway XDG_DATA_HOME) and the window's icon and desktop name."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from pathlib import Path

from app.main import APP_NAME, DESKTOP_FILE_NAME

LINUX = Path(__file__).resolve().parents[2] / "packaging" / "linux"
ROOT = LINUX.parents[1]


def _entry(text: str) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    parser.optionxform = str  # keys are case-sensitive in desktop entries
    parser.read_string(text)
    return dict(parser["Desktop Entry"])


def _unpacked_app(folder: Path) -> Path:
    """What the archive unpacks to, with a stand-in executable."""
    folder.mkdir(parents=True)
    for name in ("install.sh", "logitscope.desktop.in", "logitscope-mime.xml"):
        shutil.copy(LINUX / name, folder / name)
    shutil.copy(ROOT / "resources" / "logitscope.png", folder / "logitscope.png")
    exe = folder / "Logitscope"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    return folder


def _install(app: Path, data: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_DATA_HOME": str(data)}
    return subprocess.run(
        ["sh", str(app / "install.sh"), *args], env=env, capture_output=True, text=True
    )


def test_template_names_the_launcher_file_types_icon_and_window_class():
    entry = _entry((LINUX / f"{DESKTOP_FILE_NAME}.desktop.in").read_text())
    assert entry["Exec"] == '"@APPDIR@/Logitscope" %f'
    assert entry["TryExec"] == "@APPDIR@/Logitscope"
    assert entry["Icon"] == "logitscope"
    assert entry["StartupWMClass"] == APP_NAME
    assert entry["MimeType"] == "application/x-gguf;application/json;application/jsonl;"
    assert entry["Type"] == "Application" and entry["Terminal"] == "false"


def test_install_sh_installs_and_uninstalls_under_xdg_data_home(tmp_path):
    app = _unpacked_app(tmp_path / "apps dir" / "Logitscope")  # a space in the path
    data = tmp_path / "share"
    p = _install(app, data)
    assert p.returncode == 0, p.stderr
    entry = _entry((data / "applications" / "logitscope.desktop").read_text())
    assert entry["Exec"] == f'"{app}/Logitscope" %f'
    assert entry["TryExec"] == f"{app}/Logitscope"
    icon = data / "icons" / "hicolor" / "512x512" / "apps" / "logitscope.png"
    assert icon.read_bytes() == (ROOT / "resources" / "logitscope.png").read_bytes()
    assert (data / "mime" / "packages" / "logitscope.xml").is_file()
    if shutil.which("update-mime-database"):  # the database the file managers read
        globs = (data / "mime" / "globs2").read_text()
        assert ":application/x-gguf:*.gguf" in globs
        assert ":application/jsonl:*.jsonl" in globs
        assert b"GGUF" in (data / "mime" / "magic").read_bytes()
    p = _install(app, data, "--uninstall")
    assert p.returncode == 0, p.stderr
    assert not (data / "applications" / "logitscope.desktop").exists()
    assert not icon.exists()
    assert not (data / "mime" / "packages" / "logitscope.xml").exists()


def test_install_sh_refuses_a_path_the_exec_line_cannot_hold(tmp_path):
    app = _unpacked_app(tmp_path / "a$HOME" / "Logitscope")
    p = _install(app, tmp_path / "share")
    assert p.returncode == 1
    assert "move the folder to a path without" in p.stderr
    assert not (tmp_path / "share" / "applications" / "logitscope.desktop").exists()


def test_install_sh_is_executable():
    assert os.access(LINUX / "install.sh", os.X_OK)


def test_window_icon_and_desktop_file_name(qapp):
    from app.main import _set_identity

    _set_identity(qapp)
    assert qapp.desktopFileName() == DESKTOP_FILE_NAME
    sizes = qapp.windowIcon().availableSizes()
    assert sizes and sizes[0].width() == 512, sizes
