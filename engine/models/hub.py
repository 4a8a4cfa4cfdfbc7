"""Find and download models on the Hugging Face hub (`$HF_ENDPOINT`, read at each call).

`search` lists MLX-format repos and GGUF repos matching a name, with downloads,
licence, parameters and size; `repo_files` the files of one (a GGUF repo's quant
choices); `download` fetches into the Hugging Face cache with byte progress events,
cooperative cancel (`should_stop`), and resume (huggingface_hub keeps the partial
file and asks for the rest with a Range request). Every failure is a HubError with
one line saying what happened. Offline (`HF_HUB_OFFLINE`) says so at once. Nothing
here imports MLX or Qt.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ModelError

DEFAULT_ENDPOINT = "https://huggingface.co"
MLX_PATTERNS = ["*.json", "*.safetensors", "*.jinja", "tokenizer.model", "*.tiktoken", "*.txt"]
SEARCH_LIMIT = 30
PROBE_S = 3.0  # seconds to connect before saying the hub cannot be reached
_QUANT = re.compile(r"(?i)\b(i?q\d_[a-z0-9_]+|q\d_\d|[bf]f?16|f32|\d+-?bit|mxfp4)\b")


class HubError(ModelError):
    """The hub search or a download failed; the message says why in one line."""


class DownloadCancelled(HubError):
    """The person cancelled a download; the partial file is kept for resuming."""


@dataclass(frozen=True)
class HubModel:
    """One search result."""

    repo_id: str
    format: str  # "MLX" | "GGUF"
    downloads: int
    likes: int
    license: str | None
    quantization: str  # from the name, e.g. "4bit", "Q4_K_M" ("" when it says none)
    parameters: int | None
    size_bytes: int | None  # the repo's stored bytes (all quantizations of a GGUF repo)


@dataclass(frozen=True)
class HubFile:
    """One file of a repo; for GGUF repos each is a quantization to choose."""

    name: str
    size_bytes: int | None
    quantization: str


@dataclass(frozen=True)
class DownloadProgress:
    """Bytes of a download so far (`total_bytes` None: not known yet)."""

    repo_id: str
    file: str
    done_bytes: int
    total_bytes: int | None


def endpoint() -> str:
    """The hub's address as set now ($HF_ENDPOINT, else huggingface.co)."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def cache_dir() -> str:
    """The Hugging Face cache folder as set now."""
    from engine.models.discovery import hf_cache_root

    return str(hf_cache_root())


def _check_online() -> None:
    """Offline says so at once: HF_HUB_OFFLINE, or no connection to the hub within
    PROBE_S (huggingface_hub would retry with backoff for tens of seconds)."""
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").strip() not in ("", "0", "false", "False"):
        raise HubError(
            "offline (HF_HUB_OFFLINE is set): the hub cannot be searched or downloaded "
            "from; models already on this machine are listed"
        )
    url = urlparse(endpoint())
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=PROBE_S).close()
    except OSError as e:
        raise HubError(f"the hub at {endpoint()} cannot be reached (offline?): {e}") from e


def quantization_of(name: str) -> str:
    """The quantization a repo or file name says (Q4_K_M, 4bit, bf16 …), or ""."""
    m = _QUANT.search(name.replace(".", " "))
    return m.group(1).upper() if m and m.group(1)[0] in "qQiI" else (m.group(1) if m else "")


def _model(m) -> HubModel:
    tags = list(getattr(m, "tags", None) or [])
    is_gguf = "gguf" in tags or getattr(m, "gguf", None) is not None
    lic = next((t.split(":", 1)[1] for t in tags if t.startswith("license:")), None)
    params = None
    for meta in (getattr(m, "safetensors", None), getattr(m, "gguf", None)):
        total = getattr(meta, "total", None) if meta is not None else None
        total = total if total is not None or not isinstance(meta, dict) else meta.get("total")
        params = params or (int(total) if total else None)
    return HubModel(
        repo_id=m.id,
        format="GGUF" if is_gguf else "MLX",
        downloads=int(getattr(m, "downloads", 0) or 0),
        likes=int(getattr(m, "likes", 0) or 0),
        license=lic,
        quantization=quantization_of(m.id.split("/")[-1]),
        parameters=params,
        size_bytes=getattr(m, "used_storage", None),
    )


def search(query: str, fmt: str | None = None, limit: int = SEARCH_LIMIT) -> list[HubModel]:
    """Repos matching `query`, most downloaded first: MLX-format repos (library `mlx`)
    and GGUF repos, or only one kind with `fmt` "MLX" / "GGUF".

    Raises:
        HubError: offline, the hub unreachable, or an error answer.
    """
    _check_online()
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint())
    kinds = [k for k in ("mlx", "gguf") if fmt is None or fmt.lower() == k]
    found: dict[str, HubModel] = {}
    expand = ["downloads", "likes", "tags", "safetensors", "gguf", "usedStorage"]
    for kind in kinds:
        rows = _call(
            lambda k=kind: list(
                api.list_models(
                    search=query or None, filter=k, sort="downloads", limit=limit, expand=expand
                )
            ),
            f"searching the hub for '{query}'",
        )
        for m in rows:
            found.setdefault(m.id, _model(m))
    return sorted(found.values(), key=lambda h: -h.downloads)[:limit]


def repo_files(repo_id: str) -> list[HubFile]:
    """The files of `repo_id` with their sizes (a GGUF repo's quantizations).

    Raises:
        HubError: offline, unreachable, or the repo does not exist.
    """
    _check_online()
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint())
    info = _call(lambda: api.model_info(repo_id, files_metadata=True), f"reading {repo_id}")
    return [
        HubFile(s.rfilename, getattr(s, "size", None), quantization_of(s.rfilename))
        for s in info.siblings or []
    ]


def download(
    repo_id: str,
    filename: str | None = None,
    on_progress: Callable[[DownloadProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Path:
    """Download one GGUF file (`filename`) or an MLX repo's files into the HF cache.

    Args:
        repo_id: "org/name".
        filename: a GGUF file of the repo; None downloads the MLX model's files.
        on_progress: called with a DownloadProgress as bytes arrive.
        should_stop: polled as bytes arrive; True cancels (DownloadCancelled), and the
            next download of the same file resumes where this one stopped.

    Returns:
        The downloaded file (GGUF) or snapshot folder (MLX).

    Raises:
        HubError: offline, unreachable, not found, the connection dropped, cancelled.
    """
    _check_online()
    from fnmatch import fnmatch

    from engine.models.hub_fetch import fetch_file, repo_folder

    what = f"downloading {repo_id}" + (f"/{filename}" if filename else "")
    if filename:
        files = [HubFile(filename, None, quantization_of(filename))]
    else:
        files = [
            f
            for f in repo_files(repo_id)
            if any(fnmatch(f.name.rsplit("/", 1)[-1], p) for p in MLX_PATTERNS)
        ]
    total = sum(f.size_bytes or 0 for f in files) or None
    label, before, last = filename or repo_id, 0, None

    def report(done: int, size: int | None) -> None:
        if on_progress:
            whole = size if filename else total
            on_progress(DownloadProgress(repo_id, label, before + done, whole))

    def cancelled(done: int) -> DownloadCancelled:
        return DownloadCancelled(
            f"download of {label} cancelled after {(before + done) / 1e6:.1f} MB; "
            "download it again to resume"
        )

    stop = should_stop or (lambda: False)
    where = endpoint(), cache_dir()
    for f in files:
        last = _call(lambda f=f: fetch_file(repo_id, f.name, *where, report, stop, cancelled), what)
        before += f.size_bytes or 0
    if filename:
        return last
    return last.parent if last is not None else repo_folder(cache_dir(), repo_id)


def _call(fn, what: str):
    """Run a hub call, turning its failures into one-line HubErrors."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    try:
        return fn()
    except DownloadCancelled:
        raise
    except (RepositoryNotFoundError, EntryNotFoundError) as e:
        raise HubError(f"{what}: not found on the hub (404){_gated(e)}") from e
    except HfHubHTTPError as e:
        status = getattr(getattr(e, "response", None), "status_code", "?")
        raise HubError(f"{what}: the hub answered HTTP {status}") from e
    except LocalEntryNotFoundError as e:
        raise HubError(f"{what}: the hub at {endpoint()} cannot be reached (offline?)") from e
    except Exception as e:  # noqa: BLE001 - the HTTP library's (httpx or httpx2) errors
        name = type(e).__name__
        if name in ("ConnectError", "ConnectTimeout"):
            raise HubError(f"{what}: the hub at {endpoint()} cannot be reached (offline?)") from e
        if name == "HTTPStatusError":
            status = e.response.status_code
            raise HubError(f"{what}: the hub answered HTTP {status}") from e
        if name in ("RemoteProtocolError", "ReadError", "ReadTimeout", "WriteError"):
            raise HubError(
                f"{what}: the connection to the hub dropped ({name}); download again to resume"
            ) from e
        if isinstance(e, OSError):
            raise HubError(f"{what}: {e}") from e
        raise


def _gated(e: Exception) -> str:
    return " or it needs a login" if "401" in str(e) or "gated" in str(e).lower() else ""
