"""The Linux start-up check names the packages Qt's xcb platform needs (no display)."""

from __future__ import annotations

from app.core import platform_check

LDD = """\tlinux-vdso.so.1 (0x00007ffd)
\tlibxcb-icccm.so.4 => not found
\tlibxkbcommon-x11.so.0 => not found
\tlibEGL.so.1 => /lib/x86_64-linux-gnu/libEGL.so.1 (0x00007f)
"""


def test_missing_libraries_become_package_names():
    missing = platform_check.missing_libraries(LDD)
    assert missing == ["libxcb-icccm.so.4", "libxkbcommon-x11.so.0"]
    debian, fedora = platform_check.packages_for(missing + ["libxcb-cursor.so.0"])
    assert debian == ["libxcb-icccm4", "libxkbcommon-x11-0", "libxcb-cursor0"]
    assert fedora == ["xcb-util-wm", "libxkbcommon-x11", "xcb-util-cursor"]
    text = platform_check.message(missing)
    assert "sudo apt install libxcb-icccm4 libxkbcommon-x11-0" in text
    assert "sudo dnf install xcb-util-wm libxkbcommon-x11" in text


def test_check_runs_only_for_xcb_on_linux(monkeypatch):
    assert platform_check.check({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None
    assert platform_check.check({}, "darwin") is None
    monkeypatch.setattr(
        platform_check.subprocess, "run", lambda *a, **k: type("R", (), {"stdout": LDD})()
    )
    monkeypatch.setattr("ctypes.util.find_library", lambda name: None)
    text = platform_check.check({}, "linux")
    assert text is not None and "libxcb-cursor0" in text and "libxcb-icccm4" in text
