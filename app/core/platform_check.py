"""Before Qt starts on Linux: can its xcb (X11) platform plugin load? If a system
library it needs is missing, Qt aborts with "Could not load the Qt platform plugin
'xcb'"; instead we print which packages to install and exit cleanly.

The check runs `ldd` on PySide6's libqxcb.so (no display needed) and maps each
missing library to its Debian/Ubuntu and Fedora package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# soname prefix -> (Debian/Ubuntu package, Fedora package)
PACKAGES = {
    "libxcb-cursor": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxkbcommon-x11": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon": ("libxkbcommon0", "libxkbcommon"),
    "libxcb-xkb": ("libxcb-xkb1", "libxcb"),
    "libxcb-shape": ("libxcb-shape0", "libxcb"),
    "libxcb-randr": ("libxcb-randr0", "libxcb"),
    "libxcb-xinerama": ("libxcb-xinerama0", "libxcb"),
    "libxcb": ("libxcb1", "libxcb"),
    "libEGL": ("libegl1", "libglvnd-egl"),
    "libGL": ("libgl1", "libglvnd-glx"),
    "libfontconfig": ("libfontconfig1", "fontconfig"),
    "libdbus-1": ("libdbus-1-3", "dbus-libs"),
    "libX11-xcb": ("libx11-xcb1", "libX11-xcb"),
    "libX11": ("libx11-6", "libX11"),
}
ALL_DEBIAN = (
    "libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 "
    "libxkbcommon-x11-0 libxcb-xkb1 libxcb-shape0 libxcb-randr0 libegl1 libgl1 libfontconfig1"
)
ALL_FEDORA = (
    "xcb-util-cursor xcb-util-wm xcb-util-keysyms xcb-util-image xcb-util-renderutil "
    "libxkbcommon-x11 libglvnd-egl libglvnd-glx fontconfig"
)


def xcb_plugin() -> Path | None:
    """PySide6's xcb platform plugin, or None where there is none (not Linux, a frozen
    app laid out differently)."""
    try:
        import PySide6
    except ImportError:
        return None
    plugin = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return plugin if plugin.exists() else None


def missing_libraries(ldd_output: str) -> list[str]:
    """The sonames `ldd` reports as 'not found'."""
    return sorted(
        {line.split("=>")[0].strip() for line in ldd_output.splitlines() if "not found" in line}
    )


def packages_for(sonames: list[str]) -> tuple[list[str], list[str]]:
    """(Debian/Ubuntu packages, Fedora packages) that provide `sonames`."""
    debian, fedora = [], []
    for soname in sonames:
        stem = soname.split(".so")[0]
        match = PACKAGES.get(stem) or next(
            (v for k, v in PACKAGES.items() if stem.startswith(k)), (stem, stem)
        )
        for out, name in zip((debian, fedora), match, strict=True):
            if name not in out:
                out.append(name)
    return debian, fedora


def message(sonames: list[str]) -> str:
    """What to tell a person whose system lacks `sonames`."""
    debian, fedora = packages_for(sonames)
    return (
        "Logitscope cannot open a window: Qt's X11 (xcb) platform needs system libraries "
        f"that are missing ({', '.join(sonames)}).\n\n"
        f"  Debian/Ubuntu:  sudo apt install {' '.join(debian)}\n"
        f"  Fedora:         sudo dnf install {' '.join(fedora)}\n\n"
        f"All the libraries Qt may need: Debian/Ubuntu: {ALL_DEBIAN}\n"
        f"Fedora: {ALL_FEDORA}\n"
        "(Or run with QT_QPA_PLATFORM=wayland on a Wayland desktop.)"
    )


def check(env=os.environ, platform: str = sys.platform) -> str | None:
    """None when Qt's xcb platform can load (or is not the one that will be used);
    otherwise the message naming the packages to install."""
    if not platform.startswith("linux") or env.get("QT_QPA_PLATFORM", "xcb") not in ("", "xcb"):
        return None
    plugin = xcb_plugin()
    if plugin is None:
        return None
    try:
        out = subprocess.run(
            ["ldd", str(plugin)], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None  # no ldd: let Qt try and report for itself
    missing = missing_libraries(out)
    from ctypes.util import find_library

    if find_library("xcb-cursor") is None:  # Qt 6.5+ opens it at run time: ldd cannot see it
        missing.append("libxcb-cursor.so.0")
    return message(missing) if missing else None
