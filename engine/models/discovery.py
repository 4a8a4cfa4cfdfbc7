"""Models other tools already keep on disk: LM Studio, Ollama, the Hugging Face cache's
GGUF repos, llama.cpp's cache, and folders the person added.

Discovery lists folders, reads Ollama's small JSON manifests and each GGUF's header
(never its tensors, never a hash of gigabytes), and writes nothing in those folders: a
model opened from one is converted once into Logitscope's own models folder
(engine/backends/mlx/loader.py), named from its own metadata. Nothing here imports
MLX or Qt; every root follows its tool's environment variable.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
OLLAMA_REGISTRY = "registry.ollama.ai"
MAX_DEPTH = 4  # how deep a user folder is searched


@dataclass(frozen=True)
class Found:
    """One model found on disk.

    Attributes:
        name: what its tool calls it ("llama3.2:1b", "org/repo/file.gguf").
        path: the .gguf file (an Ollama blob included) or MLX folder.
        source: "LM Studio", "Ollama", "Hugging Face cache", "llama.cpp cache" or
            "folder <path>".
    """

    name: str
    path: Path
    source: str


def _home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def lmstudio_roots() -> list[Path]:
    """LM Studio's models folders: the current one and the older cache location."""
    home = _home()
    return [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]


def ollama_root() -> Path:
    """Ollama's models folder (`$OLLAMA_MODELS`, else ~/.ollama/models)."""
    env = os.environ.get("OLLAMA_MODELS")
    return Path(env).expanduser() if env else _home() / ".ollama" / "models"


def llama_cache_root() -> Path:
    """llama.cpp's download cache (`$LLAMA_CACHE`, else the platform's cache folder)."""
    env = os.environ.get("LLAMA_CACHE")
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        return _home() / "Library" / "Caches" / "llama.cpp"
    base = os.environ.get("XDG_CACHE_HOME") or str(_home() / ".cache")
    return Path(base) / "llama.cpp"


def hf_cache_root() -> Path:
    """The Hugging Face hub cache as set now ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache)."""
    env = os.environ.get("HF_HUB_CACHE")
    if env:
        return Path(env).expanduser()
    home = os.environ.get("HF_HOME")
    return Path(home).expanduser() / "hub" if home else _home() / ".cache" / "huggingface" / "hub"


def _is_model_gguf(path: Path) -> bool:
    """A .gguf that is a language model (not a vision projector or a split's later part)."""
    name = path.name.lower()
    return (
        name.endswith(".gguf")
        and not name.startswith("mmproj")
        and "-of-" not in name.replace("-00001-of-", "")
    )


def _walk(root: Path, depth: int = MAX_DEPTH):
    """Files and folders under `root` up to `depth` levels, hidden ones skipped."""
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        yield entry
        if depth > 1 and entry.is_dir():
            yield from _walk(entry, depth - 1)


def _is_mlx(folder: Path) -> bool:
    from engine.models.hf_cache import is_mlx_folder

    return folder.is_dir() and is_mlx_folder(folder)


def scan_folder(root: Path, source: str, depth: int = MAX_DEPTH) -> list[Found]:
    """GGUF files and MLX folders under `root`, named by their path below it."""
    found = []
    for entry in _walk(root, depth):
        rel = entry.relative_to(root).as_posix()
        gguf = entry.is_file() and _is_model_gguf(entry)
        if gguf or (entry.is_dir() and _is_mlx(entry)):
            found.append(Found(rel, entry, source))
    return found


def scan_lmstudio() -> list[Found]:
    """LM Studio's `<publisher>/<repo>/*.gguf` files and MLX folders."""
    return [f for root in lmstudio_roots() for f in scan_folder(root, "LM Studio", depth=3)]


def _ollama_name(rel: tuple[str, ...]) -> str:
    """`name:tag` for the library, `namespace/name:tag` or `host/ns/name:tag` otherwise."""
    *where, name, tag = rel
    if where[:2] == [OLLAMA_REGISTRY, "library"]:
        return f"{name}:{tag}"
    if where and where[0] == OLLAMA_REGISTRY:
        where = where[1:]
    return "/".join([*where, name]) + f":{tag}"


def scan_ollama() -> list[Found]:
    """Ollama's models: each manifest's model layer, a GGUF blob `blobs/sha256-…`."""
    root = ollama_root()
    manifests = root / "manifests"
    found = []
    paths = sorted(p for p in manifests.rglob("*") if p.is_file()) if manifests.is_dir() else []
    for path in paths:
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
            layers = manifest["layers"]
            digest = next(x["digest"] for x in layers if x["mediaType"] == OLLAMA_MODEL_LAYER)
        except (OSError, ValueError, KeyError, TypeError, StopIteration):
            continue  # not a model manifest (an adapter, a damaged file)
        blob = root / "blobs" / str(digest).replace(":", "-")
        if blob.is_file():
            found.append(Found(_ollama_name(path.relative_to(manifests).parts), blob, "Ollama"))
    return found


def scan_hf_gguf() -> list[Found]:
    """GGUF files in the Hugging Face cache's repos (`models--org--name/snapshots/*/`);
    the newest snapshot of each repo, named `org/name/file.gguf`."""
    found = []
    root = hf_cache_root()
    for repo in sorted(root.glob("models--*")) if root.is_dir() else []:
        snaps = [s for s in (repo / "snapshots").glob("*") if s.is_dir()]
        if not snaps:
            continue
        newest = max(snaps, key=lambda s: s.stat().st_mtime)
        repo_id = repo.name.removeprefix("models--").replace("--", "/", 1)
        for f in sorted(newest.rglob("*.gguf")):
            if _is_model_gguf(f) and f.exists():
                rel = f.relative_to(newest).as_posix()
                found.append(Found(f"{repo_id}/{rel}", f, "Hugging Face cache"))
    return found


def scan_llama_cache() -> list[Found]:
    """GGUF files llama.cpp's `-hf` downloads keep in its cache folder."""
    return [f for f in scan_folder(llama_cache_root(), "llama.cpp cache", 3) if f.path.is_file()]


def scan_user_folders() -> list[Found]:
    """The folders the person added (Settings), scanned as LM Studio's are."""
    from engine.models.model_prefs import user_folders

    return [f for d in user_folders() for f in scan_folder(d, f"folder {d}")]


def discover() -> list[Found]:
    """Every model the other tools keep, each path once (first source wins: an added
    folder inside a tool's folder lists nothing twice). Links are not followed to
    merge entries: a file two tools link to is listed under both."""
    seen: set[Path] = set()
    out = []
    for scan in (scan_lmstudio, scan_ollama, scan_hf_gguf, scan_llama_cache, scan_user_folders):
        for f in scan():
            key = f.path.absolute()
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def gguf_file_type(info) -> str:
    """llama.cpp's name of the file's quantization (Q4_K_M, Q8_0, F16 …)."""
    try:
        import gguf

        ftype = info.metadata["general.file_type"]
        return gguf.LlamaFileType(int(ftype)).name.removeprefix("MOSTLY_").removeprefix("ALL_")
    except (ImportError, KeyError, ValueError, TypeError):
        types = {t: n for t, n in info.tensor_types.items() if t != "F32"}
        return max(types, key=types.get) if types else "F32"


def gguf_facts(path: Path) -> dict:
    """What a GGUF's header says (pure Python, no tensor read): name, architecture,
    file type, context length, parameters, licence and the KV cache's shape.

    Raises:
        ModelError: the header is malformed.
    """
    from engine.models.gguf_check import check_gguf

    info = check_gguf(path)
    heads = info.get("attention.head_count") or 1
    heads = max(heads) if isinstance(heads, list) else heads
    kv_heads = info.get("attention.head_count_kv") or heads
    kv_heads = max(kv_heads) if isinstance(kv_heads, list) else kv_heads
    embed = info.get("embedding_length") or 0
    return {
        "name": info.metadata.get("general.name"),
        "architecture": info.architecture or "unknown",
        "file_type": gguf_file_type(info),
        "context_length": int(info.get("context_length") or 2048),
        "parameters": sum(math.prod(t.shape) for t in info.tensors) or None,
        "license": info.metadata.get("general.license"),
        "layers": int(info.get("block_count") or 0),
        "kv_heads": int(kv_heads),
        "head_dim": int(info.get("attention.key_length") or (embed // heads if heads else 0)),
    }
