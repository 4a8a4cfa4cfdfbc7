"""MLX models in the local Hugging Face cache, and downloads into it.

mlx-lm opens a repo id (`mlx-community/…`) from the HF cache, offline. This
lists the cached repos mlx-lm can open (weights MLX wrote, or a model type
mlx-lm runs), opens an id from the cache, and when it is not cached downloads
it (weights, config, tokenizer, template only) with progress. Nothing here
imports MLX or Qt.
"""

from __future__ import annotations

import json
import os
import stat
import struct
from collections.abc import Callable
from pathlib import Path

MAX_CONFIG_BYTES = 8_000_000  # a config.json is kilobytes


def is_repo_id(spec: str) -> bool:
    """`org/name`: one slash, no path-like start, not an existing path."""
    return (
        spec.count("/") == 1
        and not spec.startswith((".", "/", "~"))
        and all(spec.split("/"))
        and not Path(spec).exists()
    )


def hub_cache_dir() -> str:
    """The Hugging Face cache folder, from the environment as it is now, as huggingface_hub
    reads it once at its import. An engine forked from a server that imported it earlier
    (engine/process/start_method.py) would otherwise see the server's folder."""
    env = os.environ
    named = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE")
    if named:
        return os.path.expanduser(named)
    cache = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    home = env.get("HF_HOME") or os.path.join(cache, "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def safetensors_header(path: Path) -> dict:
    """The JSON header of a .safetensors file (tensor names, dtypes, shapes)."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        if not 0 < size < 100_000_000:
            raise ValueError(f"{path.name} has no safetensors header")
        return json.loads(f.read(size))


def mlx_lm_supports(model_type: str) -> bool:
    """True if the installed mlx-lm has a model class for `model_type` (looked up
    on disk: nothing is imported, so the GUI process stays free of MLX)."""
    import importlib.util

    spec = importlib.util.find_spec("mlx_lm")
    if not spec or not spec.origin or not model_type.replace("_", "").isalnum():
        return False
    return (Path(spec.origin).parent / "models" / f"{model_type}.py").exists()


def _small_regular(path: Path, limit: int | None = MAX_CONFIG_BYTES) -> bool:
    """True if `path` is a regular file of at most `limit` bytes (None: any size)."""
    try:
        st = path.stat()
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and (limit is None or st.st_size <= limit)


def is_mlx_folder(folder: Path) -> bool:
    """True if mlx-lm can open the folder: safetensors weights written by MLX, or
    a config whose model type mlx-lm runs (it reads Hugging Face weights too)."""
    weights = sorted(folder.glob("*.safetensors"))
    config_path = folder / "config.json"
    if not _small_regular(config_path) or not weights or not _small_regular(weights[0], None):
        return False  # a FIFO or a device would block the read; a huge file is no config
    try:
        header = safetensors_header(weights[0])
        meta = header.get("__metadata__") if isinstance(header, dict) else None
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError, struct.error):
        return False
    meta = meta if isinstance(meta, dict) else {}
    model_type = config.get("model_type") if isinstance(config, dict) else None
    return meta.get("format") == "mlx" or (
        isinstance(model_type, str) and mlx_lm_supports(model_type)
    )


def cached_mlx_models(log=None) -> list[tuple[str, Path]]:
    """(repo id, snapshot folder) of every MLX model in the local HF cache; a snapshot
    whose config or weights link out of the cache is left out (named in `log`, a
    scan_guard.ScanLog)."""
    from engine.models.scan_guard import Scan, is_system_folder, resolve

    try:
        from huggingface_hub import scan_cache_dir

        folder = hub_cache_dir()
        real = resolve(Path(folder))
        if real is None or is_system_folder(real) or not real.is_dir():
            return []
        cache = scan_cache_dir(folder)
    except Exception:  # noqa: BLE001 - no cache folder, no hub library: nothing cached
        return []
    scan = Scan(Path(folder), "Hugging Face cache", log)
    found = []
    for repo in cache.repos:
        if repo.repo_type != "model" or not repo.revisions:
            continue
        snapshot = Path(max(repo.revisions, key=lambda r: r.last_modified).snapshot_path)
        files = [snapshot / "config.json", *sorted(snapshot.glob("*.safetensors"))]
        inside = all(scan.regular_file(f) is not None for f in files if os.path.lexists(f))
        if inside and is_mlx_folder(snapshot):
            found.append((repo.repo_id, snapshot))
    return sorted(found)


def hf_cached(spec: str) -> Path | None:
    """A repo id already in the local HF cache (offline), else None."""
    if not is_repo_id(spec):
        return None
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(spec, local_files_only=True, cache_dir=hub_cache_dir()))
    except Exception:  # noqa: BLE001 - not cached, not an id, no hub library
        return None


def hf_download(spec: str, progress: Callable[[str, float], None] | None = None) -> Path:
    """Download a repo id's MLX files into the HF cache, with progress, through the one
    hub client (engine/models/hub.py: validated names, timeouts, no retries, resume).

    Raises:
        ModelError: the id does not exist, or the Hub cannot be reached (offline).
    """
    from engine.models.hub import HubError, download
    from engine.models.hub_names import HubInputError

    if progress:
        progress(f"Looking up {spec} on Hugging Face…", 0.0)

    def report(e) -> None:
        if progress and e.total_bytes:
            fraction = min(e.done_bytes / e.total_bytes, 1.0)
            progress(f"Downloading {spec} from Hugging Face…", fraction)

    try:
        return download(spec, None, report)
    except HubInputError:
        raise
    except HubError as e:
        raise HubError(f"model '{spec}' is not in the Hugging Face cache, and {e}") from e
