"""An optimised BLAS for MLX's CPU build, from a PyPI wheel, loaded before MLX.

MLX's Linux CPU wheel links a reference BLAS (`mlx_cpu.libs/libblas-*.so`):
float32 matrix products run at a few GFLOP/s. OpenBLAS from the
`ngsolve-openblas` wheel exports the same unprefixed `cblas_*` symbols; loaded
with RTLD_GLOBAL before `libmlx.so`, it is found first when MLX binds them, so
MLX's float32 matmuls run on OpenBLAS. That OpenBLAS needs `libgfortran.so.5`,
which a bare machine lacks: MLX's wheel vendors one under another name, so a
copy whose SONAME reads `libgfortran.so.5` is made once and loaded first.

`enable()` must run before anything imports `mlx.core` in the process; it never
raises: where the library cannot be had it says why, once, and MLX keeps its own.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from engine.store import environment

_STATUS = None


@dataclass(frozen=True)
class BlasStatus:
    """Whether an optimised BLAS was loaded (`ok`), what or why not, and its threads."""

    ok: bool
    detail: str  # the library loaded, or why none was
    threads: int = 1


def _site_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _openblas() -> Path | None:
    folder = _site_dir("ngsolve_openblas")
    found = sorted(folder.glob("libopenblas*.so*")) if folder else []
    return found[0] if found else None


def _renamed_copy(src: Path, soname: bytes, dest_dir: Path) -> Path:
    """A copy of `src` whose SONAME is `soname` (same length or shorter, NUL-padded),
    so the dynamic linker takes it for the library that name stands for."""
    dest = dest_dir / f"{soname.decode()}-{src.stat().st_size}"
    if dest.exists():
        return dest
    data = src.read_bytes()
    old = src.name.encode() + b"\0"
    if len(soname) + 1 > len(old) or data.count(old) != 1:
        raise OSError(f"unexpected layout of {src.name}")
    data = data.replace(old, soname + b"\0" * (len(old) - len(soname)))
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")  # two processes may race here
    tmp.write_bytes(data)
    os.replace(tmp, dest)
    return dest


def enable(threads: int | None = None) -> BlasStatus:
    """Load OpenBLAS for MLX's CPU build (once per process; before mlx.core)."""
    global _STATUS
    if _STATUS is not None:
        return _STATUS
    _STATUS = _enable(threads)
    return _STATUS


def _enable(threads: int | None) -> BlasStatus:
    if environment.flag("LOGITSCOPE_NO_FAST_BLAS"):
        return BlasStatus(False, "turned off (LOGITSCOPE_NO_FAST_BLAS)")
    if sys.platform != "linux":
        return BlasStatus(False, "not needed here (MLX uses the platform's BLAS)")
    if "mlx.core" in sys.modules:
        return BlasStatus(False, "MLX was loaded first (this process keeps its own BLAS)")
    libs = _site_dir("mlx")
    libs = libs.parent / "mlx_cpu.libs" if libs else None
    frozen = getattr(sys, "frozen", False)  # the packaged app: a build left it out
    if libs is None or not libs.is_dir():
        return BlasStatus(
            False, "mlx_cpu.libs not in this build" if frozen else "not MLX's CPU build"
        )
    blas = _openblas()
    if blas is None:
        if frozen:
            return BlasStatus(False, "OpenBLAS not in this build (packaging/logitscope.spec)")
        return BlasStatus(
            False, "the ngsolve-openblas wheel is not installed (run the setup command again)"
        )
    try:
        from engine.store.runtime_cache import runtime_dir

        gfortran = next(iter(libs.glob("libgfortran-*.so*")))
        quadmath = next(iter(libs.glob("libquadmath-*.so*")))
        ctypes.CDLL(str(quadmath), mode=ctypes.RTLD_GLOBAL)
        runtime = runtime_dir()
        ctypes.CDLL(
            str(_renamed_copy(gfortran, b"libgfortran.so.5", runtime)), mode=ctypes.RTLD_GLOBAL
        )
        lib = ctypes.CDLL(str(blas), mode=ctypes.RTLD_GLOBAL)
    except (OSError, StopIteration) as e:
        return BlasStatus(False, f"OpenBLAS could not be loaded ({e})")
    # One thread: decode is matrix-vector work that more threads slow down here, and
    # the engine shares the machine with the window (LOGITSCOPE_BLAS_THREADS overrides).
    n = threads or environment.whole("LOGITSCOPE_BLAS_THREADS", 1)
    with contextlib.suppress(AttributeError):
        lib.openblas_set_num_threads(ctypes.c_int(n))
    return BlasStatus(True, f"OpenBLAS ({blas.name}, {n} thread{'s' * (n > 1)})", n)


def status() -> BlasStatus:
    """This process's BLAS status (not tried yet: ok False), without trying to load one."""
    return _STATUS or BlasStatus(False, "not tried in this process")
