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
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from engine.models.hf_paths import hf_cache_root
from engine.models.scan_guard import MAX_DEPTH, Scan, ScanLog, Skipped, clean_text

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
OLLAMA_REGISTRY = "registry.ollama.ai"
MAX_MANIFEST_BYTES = 1_000_000  # Ollama's manifests are a few hundred bytes
_DIGEST = re.compile(r"sha256:([0-9a-f]{64})")

__all__ = ["MAX_DEPTH", "Discovered", "Found", "Skipped", "discover", "discover_all"]


@dataclass(frozen=True)
class Found:
    """One model found on disk.

    Attributes:
        name: what its tool calls it ("llama3.2:1b", "org/repo/file.gguf"), cleaned of
            control characters.
        path: the .gguf file (an Ollama blob included) or MLX folder.
        source: "LM Studio", "Ollama", "Hugging Face cache", "llama.cpp cache" or
            "folder <path>".
    """

    name: str
    path: Path
    source: str


@dataclass(frozen=True)
class Discovered:
    """What a discovery found, and what it left out with the reason of each."""

    found: list[Found] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


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


def _is_model_gguf(path: Path) -> bool:
    """A .gguf that is a language model (not a vision projector or a split's later part)."""
    name = path.name.lower()
    return (
        name.endswith(".gguf")
        and not name.startswith("mmproj")
        and "-of-" not in name.replace("-00001-of-", "")
    )


def _is_mlx(scan: Scan, folder: Path) -> bool:
    """An MLX model folder whose config and weights are regular files under the root."""
    from engine.models.hf_cache import is_mlx_folder

    config = folder / "config.json"
    weights = sorted(p for p in folder.glob("*.safetensors") if not p.name.startswith("."))
    if not os.path.lexists(config) or not weights:
        return False
    if scan.regular_file(config) is None or any(scan.regular_file(w) is None for w in weights):
        return False
    return is_mlx_folder(folder)


def _scan_folder(scan: Scan, depth: int = MAX_DEPTH, mlx: bool = True) -> list[Found]:
    found = []
    for entry, st in scan.walk(depth=depth):
        rel = clean_text(entry.relative_to(scan.root).as_posix())
        if stat.S_ISDIR(st.st_mode):
            if mlx and _is_mlx(scan, entry):
                found.append(Found(rel, entry, scan.source))
        elif _is_model_gguf(entry):
            found.append(Found(rel, entry, scan.source))
    return found


def scan_folder(
    root: Path, source: str, depth: int = MAX_DEPTH, log: ScanLog | None = None
) -> list[Found]:
    """GGUF files and MLX folders under `root`, named by their path below it; what is
    left out goes to `log` with its reason."""
    scan = Scan(root, source, log)
    missing_is_skipped = source.startswith("folder ")
    return _scan_folder(scan, depth) if scan.usable_root(missing_is_skipped) else []


def scan_lmstudio(log: ScanLog | None = None) -> list[Found]:
    """LM Studio's `<publisher>/<repo>/*.gguf` files and MLX folders."""
    return [f for r in lmstudio_roots() for f in scan_folder(r, "LM Studio", 3, log)]


def _ollama_name(rel: tuple[str, ...]) -> str:
    """`name:tag` for the library, `namespace/name:tag` or `host/ns/name:tag` otherwise."""
    if len(rel) < 2:
        return clean_text("/".join(rel))
    *where, name, tag = rel
    if where[:2] == [OLLAMA_REGISTRY, "library"]:
        return clean_text(f"{name}:{tag}")
    if where and where[0] == OLLAMA_REGISTRY:
        where = where[1:]
    return clean_text("/".join([*where, name]) + f":{tag}")


def _manifest_digest(scan: Scan, path: Path, size: int) -> str | None:
    """The hex digest of a manifest's model layer, or None (recorded why)."""
    if size > MAX_MANIFEST_BYTES:
        scan.skip(path, f"the manifest is {size:,} bytes, more than a manifest holds")
        return None
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
        layers = manifest["layers"]
        digest = next(x["digest"] for x in layers if x["mediaType"] == OLLAMA_MODEL_LAYER)
    except StopIteration:
        scan.skip(path, "the manifest has no model layer")
        return None
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as e:
        why = "it nests too deep" if isinstance(e, RecursionError) else type(e).__name__
        scan.skip(path, f"the manifest cannot be read ({why})")
        return None
    match = _DIGEST.fullmatch(digest) if isinstance(digest, str) else None
    if match is None:
        shown = clean_text(repr(digest))[:80]
        scan.skip(path, f"its model layer's digest {shown} is not a sha256 digest")
        return None
    return match.group(1)


def scan_ollama(log: ScanLog | None = None) -> list[Found]:
    """Ollama's models: each manifest's model layer, a GGUF blob `blobs/sha256-…`; a
    digest that is not 64 hex digits, or a blob outside `blobs/`, is refused."""
    scan = Scan(ollama_root(), "Ollama", log)
    manifests = scan.root / "manifests"
    if not scan.usable_root() or not os.path.isdir(manifests):
        return []
    found = []
    for path, st in scan.walk(manifests, depth=MAX_DEPTH + 1):
        if not stat.S_ISREG(st.st_mode):
            continue  # a folder of the registry/namespace/name/tag tree
        digest = _manifest_digest(scan, path, st.st_size)
        if digest is None:
            continue
        blob = scan.root / "blobs" / f"sha256-{digest}"
        if not os.path.lexists(blob):
            scan.skip(path, f"its model blob sha256-{digest[:12]}… is missing")
        elif scan.regular_file(blob) is not None:
            found.append(Found(_ollama_name(path.relative_to(manifests).parts), blob, "Ollama"))
    return found


def scan_hf_gguf(log: ScanLog | None = None) -> list[Found]:
    """GGUF files in the Hugging Face cache's repos (`models--org--name/snapshots/*/`);
    the newest snapshot of each repo, named `org/name/file.gguf`."""
    scan = Scan(hf_cache_root(), "Hugging Face cache", log)
    if not scan.usable_root():
        return []
    found = []
    for repo, st in scan.walk(depth=1):
        if not repo.name.startswith("models--") or not stat.S_ISDIR(st.st_mode):
            continue
        snaps = [(s.st_mtime, p) for p, s in scan.walk(repo / "snapshots", 1)]
        snaps = [(t, p) for t, p in snaps if os.path.isdir(p)]
        if not snaps:
            continue
        newest = max(snaps)[1]
        repo_id = clean_text(repo.name.removeprefix("models--").replace("--", "/", 1))
        for f, st in scan.walk(newest):
            if stat.S_ISREG(st.st_mode) and _is_model_gguf(f):
                rel = clean_text(f.relative_to(newest).as_posix())
                found.append(Found(f"{repo_id}/{rel}", f, "Hugging Face cache"))
    return found


def scan_llama_cache(log: ScanLog | None = None) -> list[Found]:
    """GGUF files llama.cpp's `-hf` downloads keep in its cache folder."""
    found = scan_folder(llama_cache_root(), "llama.cpp cache", 3, log)
    return [f for f in found if f.path.suffix.lower() == ".gguf"]


def scan_user_folders(log: ScanLog | None = None) -> list[Found]:
    """The folders the person added (Settings), scanned as LM Studio's are; a folder
    listed twice (`/x` and `/x/`, or through a link) is scanned once."""
    from engine.models.model_prefs import user_folders
    from engine.models.scan_guard import resolve

    found, seen = [], set()
    for folder in user_folders():
        real = resolve(folder) or folder
        if real not in seen:
            seen.add(real)
            found += scan_folder(folder, f"folder {clean_text(folder)}", log=log)
    return found


SCANS = (scan_lmstudio, scan_ollama, scan_hf_gguf, scan_llama_cache, scan_user_folders)


def discover_all(log: ScanLog | None = None) -> Discovered:
    """Every model the other tools keep, each path once (first source wins: an added
    folder inside a tool's folder lists nothing twice), and every item left out with
    its reason. Links are followed only within the folder scanned, and not to merge
    entries: a file two tools link to is listed under both. `log` shares the
    listing's time and reasons with other scans (a fresh one if None)."""
    log = log if log is not None else ScanLog()
    result = Discovered(skipped=log.skipped)
    seen: set[Path] = set()
    for scan in SCANS:
        for f in scan(log):
            key = f.path.absolute()
            if key not in seen:
                seen.add(key)
                result.found.append(f)
    return result


def discover() -> list[Found]:
    """The models of discover_all(), without what was left out."""
    return discover_all().found


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
    name, licence = info.metadata.get("general.name"), info.metadata.get("general.license")
    return {  # the header's words are a stranger's: cleaned before they are shown
        "name": clean_text(name)[:200] if name is not None else None,
        "architecture": clean_text(info.architecture or "unknown")[:100],
        "file_type": clean_text(gguf_file_type(info)),
        "context_length": int(info.get("context_length") or 2048),
        "parameters": sum(math.prod(t.shape) for t in info.tensors) or None,
        "license": clean_text(licence)[:200] if licence is not None else None,
        "layers": int(info.get("block_count") or 0),
        "kv_heads": int(kv_heads),
        "head_dim": int(info.get("attention.key_length") or (embed // heads if heads else 0)),
    }
