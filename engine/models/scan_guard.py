"""Walking folders that other tools, or strangers, wrote, without trusting them.

A `Scan` lists one root (LM Studio's folder, Ollama's, the Hugging Face cache, a folder
the person added) and follows nothing outside it: every link is resolved and must stay
under the root; system folders (/proc, /sys, /dev) are never entered; only regular
files are offered (a FIFO or a device never is: opening one would hang or never end).
Each scan stops at a depth, a count of entries and a time, and every item it leaves
out is recorded as a `Skipped` with its reason in words. `clean_text` strips what a
name must not carry to a terminal or a label. Nothing here imports MLX or Qt.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MAX_DEPTH = 4  # how deep a folder is searched
MAX_ENTRIES = 20_000  # entries one scan looks at
SCAN_SECONDS = 5.0  # time one scan may take
DISCOVERY_SECONDS = 15.0  # time all the scans of one listing may take together
MAX_SKIPPED = 50  # reasons one scan records (a scan of / would list thousands)
SYSTEM_FOLDERS = (Path("/proc"), Path("/sys"), Path("/dev"))

# C0, DEL, C1, and the bidirectional overrides that reorder what a terminal shows
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # undecodable bytes of a file name


def clean_text(text: object) -> str:
    """`text` without control characters (terminal escapes, C0/C1, DEL, bidi
    overrides), undecodable bytes shown as U+FFFD."""
    return _SURROGATE.sub("\ufffd", _CONTROL.sub("", str(text)))


@dataclass(frozen=True)
class Skipped:
    """An item a scan left out, and why.

    Attributes:
        where: the path (or name) left out, cleaned for display.
        source: the scan it belongs to ("Ollama", "folder /x" …).
        reason: why, in words.
    """

    where: str
    source: str
    reason: str

    def text(self) -> str:
        """One line: `where (source): reason`."""
        return f"{self.where} ({self.source}): {self.reason}"


def _discovery_deadline() -> float:
    return time.monotonic() + DISCOVERY_SECONDS


@dataclass
class ScanLog:
    """What the scans of one listing share: the items left out, and the time they
    have together (however many folders a damaged preferences file lists)."""

    skipped: list[Skipped] = field(default_factory=list)
    deadline: float = field(default_factory=_discovery_deadline)


def _why(e: OSError | ValueError) -> str:
    if isinstance(e, ValueError):
        return "its name cannot be used (it holds a NUL byte)"
    return f"it cannot be read ({(e.strerror or type(e).__name__).lower()})"


def resolve(path: Path) -> Path | None:
    """`path` with every link resolved, or None if that fails (a loop, a NUL, EACCES)."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError, RuntimeError):
        return None


def is_system_folder(real: Path) -> bool:
    """True for a resolved path in /proc, /sys or /dev (never scanned)."""
    return any(real == s or s in real.parents for s in SYSTEM_FOLDERS)


class Scan:
    """One bounded scan of `root`, recording what it leaves out in `log`.

    Args:
        root: the folder scanned; nothing outside it is followed.
        source: the scan's name in each Skipped.
        log: the listing's shared ScanLog (a fresh one if None).
    """

    def __init__(self, root: Path, source: str, log: ScanLog | None = None):
        self.root, self.source = Path(root), source
        self.log = log if log is not None else ScanLog()
        self.skipped = self.log.skipped
        self.real_root = resolve(self.root)
        self.clock = time.monotonic
        self.deadline = min(self.clock() + SCAN_SECONDS, self.log.deadline)
        self.entries = 0
        self.stopped = False
        self._own = 0
        self._seen: set[tuple[int, int]] = set()

    def skip(self, path: Path | str, reason: str) -> None:
        """Record that `path` was left out for `reason` (up to MAX_SKIPPED per scan)."""
        self._own += 1
        if self._own <= MAX_SKIPPED:
            self.skipped.append(Skipped(clean_text(path), self.source, reason))
        elif self._own == MAX_SKIPPED + 1:
            self.skipped.append(Skipped(clean_text(self.root), self.source, "more items left out"))

    def usable_root(self, missing_is_skipped: bool = False) -> bool:
        """True if the root can be scanned; a root in /proc, /sys or /dev, or one that
        is not a folder, is skipped (a missing tool folder silently)."""
        real = self.real_root
        lexical = Path(os.path.abspath(self.root))
        if is_system_folder(lexical) or (real is not None and is_system_folder(real)):
            self.skip(self.root, "a system folder (/proc, /sys, /dev) is not scanned")
            return False
        if real is None:
            self.skip(self.root, "its path cannot be resolved")
            return False
        try:
            st = os.stat(real)
        except FileNotFoundError:
            if missing_is_skipped:
                self.skip(self.root, "it does not exist")
            return False
        except (OSError, ValueError) as e:
            self.skip(self.root, _why(e))
            return False
        if not stat.S_ISDIR(st.st_mode):
            self.skip(self.root, "it is not a folder")
            return False
        return True

    def check(self, path: Path) -> os.stat_result | None:
        """The stat of `path` if it stays under the root once its links are resolved
        and is not in a system folder; None (recorded when it is a model's file)."""
        real = resolve(path)
        if real is None or self.real_root is None:
            try:  # /proc/1/cwd: a link even root may not read
                why = f"it links to {clean_text(os.readlink(path))}, which cannot be followed"
            except (OSError, ValueError):
                why = "its path cannot be resolved"
            self.skip(path, why)
            return None
        if real != self.real_root and self.real_root not in real.parents:
            self.skip(path, f"it links to {clean_text(real)}, outside {clean_text(self.root)}")
            return None
        if is_system_folder(real):
            link = real != Path(os.path.abspath(path))
            self.skip(path, "it links into a system folder" if link else "a system folder")
            return None
        try:
            return os.stat(real)
        except FileNotFoundError:
            self.skip(path, "it is a broken link")
        except (OSError, ValueError) as e:
            self.skip(path, _why(e))
        return None

    def regular_file(self, path: Path) -> os.stat_result | None:
        """The stat of `path` if it is a regular file under the root, else None
        (recorded: a FIFO, a device, a folder, a link outside)."""
        st = self.check(path)
        if st is not None and not stat.S_ISREG(st.st_mode):
            self.skip(path, "it is not a regular file")
            return None
        return st

    def _over(self) -> bool:
        if self.stopped:
            return True
        self.entries += 1
        if self.entries > MAX_ENTRIES:
            why = f"the scan stopped after {MAX_ENTRIES:,} entries; the rest was not looked at"
        elif self.clock() > self.deadline:
            overall = self.deadline == self.log.deadline
            took = f"the listing's {DISCOVERY_SECONDS:g} s" if overall else f"{SCAN_SECONDS:g} s"
            why = f"the scan stopped after {took}; the rest was not looked at"
        else:
            return False
        self.stopped = True
        self.skip(self.root, why)
        return True

    def walk(
        self, folder: Path | None = None, depth: int = MAX_DEPTH
    ) -> Iterator[tuple[Path, os.stat_result]]:
        """(path, stat) of the folders and regular files under `folder` (the root by
        default) up to `depth` levels, sorted by name, hidden ones left out."""
        folder = self.root if folder is None else folder
        try:
            with os.scandir(folder) as it:
                names = sorted(e.name for e in it)
        except (OSError, ValueError) as e:
            if folder != self.root or not isinstance(e, FileNotFoundError):
                self.skip(folder, _why(e))
            return
        for name in names:
            if name.startswith("."):
                continue
            if self._over():
                return
            path = folder / name
            st = self.check(path)
            if st is None:
                continue
            if stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) in self._seen:
                    continue  # a link back up the tree
                self._seen.add((st.st_dev, st.st_ino))
                yield path, st
                if depth > 1:
                    yield from self.walk(path, depth - 1)
            elif stat.S_ISREG(st.st_mode):
                yield path, st
            elif name.lower().endswith(".gguf"):
                self.skip(path, "it is not a regular file (a FIFO, socket or device)")
