"""Find and download models on the Hugging Face hub (`$HF_ENDPOINT`, read at each call).

`search` lists MLX-format repos and GGUF repos matching a name, with downloads,
licence, parameters and size; `repo_files` the files of one (a GGUF repo's quant
choices); `download` fetches into the Hugging Face cache with byte progress events,
cooperative cancel (`should_stop`), and resume (hub_fetch keeps the partial file and
asks for the rest with a Range request).

The hub is talked to directly over its REST API (hub_http), not through
huggingface_hub, so that nothing it says is trusted: repo ids, file names, commit ids
and ETags are checked before any path is built (hub_names), numbers of the wrong type
or size read as unknown, every request has timeouts and a deadline (30 s by default),
listings and pages are capped, and nothing is retried. Every failure is a HubError
with one line saying what happened (a HubInputError, exit 2, for what the person
typed). Offline (`HF_HUB_OFFLINE`) says so at once. Nothing here imports MLX or Qt.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from engine.models import hub_http
from engine.models.hub_names import (
    HubError,
    HubInputError,
    check_file_name,
    check_repo_id,
    count,
    name_problem,
    shown,
)

__all__ = ["HubError", "HubInputError", "DownloadCancelled", "search", "repo_files", "download"]

DEFAULT_ENDPOINT = "https://huggingface.co"
MLX_PATTERNS = ["*.json", "*.safetensors", "*.jinja", "tokenizer.model", "*.tiktoken", "*.txt"]
SEARCH_LIMIT = 30
MAX_PAGES = 3  # search pages per kind (the first one normally holds them all)
MAX_QUERY_CHARS = 200
MAX_FILES = 20_000  # a repo listing longer than this is refused
MAX_MODEL_FILES = 1_000  # files of one MLX model (the largest have a few hundred shards)
_EXPAND = ["downloads", "likes", "tags", "safetensors", "gguf", "usedStorage"]
_QUANT = re.compile(r"(?i)\b(i?q\d_[a-z0-9_]+|q\d_\d|[bf]f?16|f32|\d+-?bit|mxfp4)\b")


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
    from engine.models.hf_paths import hf_cache_root

    return str(hf_cache_root())


def _check_online() -> None:
    """Offline (HF_HUB_OFFLINE) says so at once; an unreachable hub says so within
    hub_http.CONNECT_S seconds (no retries with backoff)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip() not in ("", "0", "false", "False"):
        raise HubError(
            "offline (HF_HUB_OFFLINE is set): the hub cannot be searched or downloaded "
            "from; models already on this machine are listed"
        )


def quantization_of(name: str) -> str:
    """The quantization a repo or file name says (Q4_K_M, 4bit, bf16 …), or ""."""
    m = _QUANT.search(name.replace(".", " "))
    return m.group(1).upper() if m and m.group(1)[0] in "qQiI" else (m.group(1) if m else "")


def _row(row: object) -> HubModel | None:
    """One search answer's row as a HubModel; None for a row that is not one (no valid
    id, not an object). Fields of the wrong type read as unknown."""
    if not isinstance(row, dict) or name_problem(row.get("id")) or "/" not in row["id"]:
        return None
    try:
        repo_id = check_repo_id(row["id"])
    except HubError:
        return None
    tags = (
        [t for t in row.get("tags") or [] if isinstance(t, str)]
        if isinstance(row.get("tags"), list)
        else []
    )
    lic = next((shown(t.split(":", 1)[1], 40) for t in tags if t.startswith("license:")), None)
    params = None
    for key in ("safetensors", "gguf"):
        meta = row.get(key)
        params = params or (count(meta.get("total")) if isinstance(meta, dict) else None) or None
    return HubModel(
        repo_id=repo_id,
        format="GGUF" if "gguf" in tags or isinstance(row.get("gguf"), dict) else "MLX",
        downloads=count(row.get("downloads")) or 0,
        likes=count(row.get("likes")) or 0,
        license=lic,
        quantization=quantization_of(repo_id.split("/")[-1]),
        parameters=params,
        size_bytes=count(row.get("usedStorage")) or None,
    )


def search(query: str, fmt: str | None = None, limit: int = SEARCH_LIMIT) -> list[HubModel]:
    """Repos matching `query`, most downloaded first: MLX-format repos (library `mlx`)
    and GGUF repos, or only one kind with `fmt` "MLX" / "GGUF". Rows that are not
    models (no valid id, wrong shape) are left out. At most MAX_PAGES pages per kind,
    all within the hub deadline (hub_http.DEADLINE_S).

    Raises:
        HubError: offline, the hub unreachable, too slow, an error answer, or an
            answer that is not a list of models.
    """
    _check_online()
    if len(query) > MAX_QUERY_CHARS:
        raise HubInputError(f"a hub search is at most {MAX_QUERY_CHARS} characters")
    what = f"searching the hub for '{shown(query)}'"
    end = time.monotonic() + hub_http.DEADLINE_S
    kinds = [k for k in ("mlx", "gguf") if fmt is None or fmt.lower() == k]
    found: dict[str, HubModel] = {}
    for kind in kinds:
        params = {"filter": kind, "sort": "downloads", "limit": limit, "expand": _EXPAND}
        if query:
            params["search"] = query
        url, got = f"{endpoint()}/api/models", 0
        for _ in range(MAX_PAGES):
            rows, nxt = hub_http.get_json(url, endpoint(), what, params, end)
            if not isinstance(rows, list):
                raise HubError(f"{what}: the hub's answer is not a list of models")
            for m in filter(None, map(_row, rows)):
                found.setdefault(m.repo_id, m)
            got += len(rows)
            if got >= limit or not nxt or urljoin(url, nxt) == url:
                break
            url, params = urljoin(url, nxt), None
            if urlsplit(url)[:2] != urlsplit(endpoint())[:2]:
                break  # pages elsewhere than the hub are not followed
    return sorted(found.values(), key=lambda h: -h.downloads)[:limit]


def repo_files(repo_id: str) -> list[HubFile]:
    """The files of `repo_id` with their sizes (a GGUF repo's quantizations). Names
    that could not be written safely are left out (download refuses them).

    Raises:
        HubError: offline, unreachable, the repo does not exist, its listing is too
            long or of the wrong shape.
    """
    return [f for f in _listing(repo_id) if name_problem(f.name) is None]


def _listing(repo_id: str) -> list[HubFile]:
    _check_online()
    check_repo_id(repo_id)
    what = f"reading {repo_id}"
    url = f"{endpoint()}/api/models/{repo_id}"
    info, _ = hub_http.get_json(url, endpoint(), what, {"blobs": "true"})
    siblings = info.get("siblings") if isinstance(info, dict) else None
    if not isinstance(siblings, list):
        raise HubError(f"{what}: the hub's answer has no list of files")
    if len(siblings) > MAX_FILES:
        raise HubError(
            f"{what}: the hub lists {len(siblings):,} files; more than {MAX_FILES:,} "
            "is not one model"
        )
    rows = [s for s in siblings if isinstance(s, dict) and isinstance(s.get("rfilename"), str)]
    return [
        HubFile(s["rfilename"], count(s.get("size")), quantization_of(s["rfilename"])) for s in rows
    ]


def _check_no_file_is_a_folder(repo_id: str, names: list[str]) -> None:
    """Refuse a listing naming `a.json` and `a.json/b.json`: both cannot be laid out."""
    listed = set(names)
    for name in names:
        parts = name.split("/")
        for i in range(1, len(parts)):
            if (folder := "/".join(parts[:i])) in listed:
                raise HubError(
                    f"downloading {repo_id}: the hub lists '{shown(folder)}' both as a file "
                    "and as a folder; nothing written"
                )


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

    check_repo_id(repo_id)
    if filename is not None:
        files = [HubFile(check_file_name(filename, given=True), None, "")]
    else:
        files = [
            f
            for f in _listing(repo_id)
            if any(fnmatch(f.name.rsplit("/", 1)[-1], p) for p in MLX_PATTERNS)
        ]
        for f in files:
            check_file_name(f.name)  # one unsafe name: the repo is refused whole
        _check_no_file_is_a_folder(repo_id, [f.name for f in files])
        if not files:
            raise HubError(f"downloading {repo_id}: the hub lists no MLX model files in it")
        if len(files) > MAX_MODEL_FILES:
            raise HubError(
                f"downloading {repo_id}: the hub lists {len(files):,} model files; more than "
                f"{MAX_MODEL_FILES:,} is not one model"
            )
    total = sum(f.size_bytes or 0 for f in files) or None
    label, before, last = filename or repo_id, 0, None

    def report(done: int, size: int | None) -> None:
        if on_progress:
            whole = size if filename else total
            on_progress(DownloadProgress(repo_id, label, before + done, whole))

    def cancelled(done: int) -> DownloadCancelled:
        return DownloadCancelled(
            f"download of {shown(label)} cancelled after {(before + done) / 1e6:.1f} MB; "
            "download it again to resume"
        )

    stop = should_stop or (lambda: False)
    for f in files:
        last = fetch_file(repo_id, f.name, endpoint(), cache_dir(), report, stop, cancelled)
        before += last.stat().st_size
    if filename or last is None:
        return last
    return (
        repo_folder(cache_dir(), repo_id)
        / "snapshots"
        / last.relative_to(repo_folder(cache_dir(), repo_id) / "snapshots").parts[0]
    )
