"""Child process of the GGUF fuzz test: mutates a small GGUF many ways and opens
each copy through the real model-opening path, printing one JSON line per copy.

Run as its own process so a crash in native code shows up as a dead child (a
failed test), not a dead test runner.
"""

import json
import random
import shutil
import struct
import sys
import traceback
from pathlib import Path


def mutations(base: bytes, info, rng: random.Random):
    """Yield (description, mutated bytes) covering header bytes, counts, offsets,
    types, dims and truncations."""
    data_start = info.data_start
    tensors = info.tensors

    def put(buf: bytearray, pos: int, fmt: str, value: int) -> bytearray:
        buf[pos : pos + struct.calcsize(fmt)] = struct.pack(fmt, value)
        return buf

    kinds = ["flip", "truncate", "counts", "type", "dims", "offset", "ndims"]
    while True:
        kind = rng.choice(kinds)
        buf = bytearray(base)
        t = rng.choice(tensors)
        type_pos = t.header_pos + 4 + 8 * len(t.shape)
        if kind == "flip":
            for _ in range(rng.randint(1, 4)):
                buf[rng.randrange(4, data_start)] = rng.randrange(256)
        elif kind == "truncate":
            buf = buf[: rng.randrange(0, len(buf))]
        elif kind == "counts":
            pos = rng.choice([8, 16])  # tensor count, metadata count
            value = rng.choice(
                [
                    0,
                    1,
                    2**63,
                    2**40,
                    struct.unpack_from("<Q", buf, pos)[0] + 1,
                    struct.unpack_from("<Q", buf, pos)[0] - 1,
                ]
            )
            put(buf, pos, "<Q", value % 2**64)
        elif kind == "type":
            put(buf, type_pos, "<I", rng.choice([*range(0, 42), 2**31, 2**32 - 1]))
        elif kind == "dims":
            d = t.header_pos + 4 + 8 * rng.randrange(len(t.shape))
            put(buf, d, "<Q", rng.choice([0, 1, 2**31, 2**62, rng.randrange(1, 4096)]))
        elif kind == "offset":
            value = rng.choice([0, 32, 2**40, rng.randrange(0, len(base)), t.offset + 32])
            put(buf, type_pos + 4, "<Q", value)
        else:
            put(buf, t.header_pos, "<I", rng.choice([0, 3, 5, 2**31]))
        yield kind, bytes(buf)


def main() -> None:
    base_path, out_dir, count, seed = (
        Path(sys.argv[1]),
        Path(sys.argv[2]),
        int(sys.argv[3]),
        int(sys.argv[4]),
    )
    from engine.backends.mlx.loader import load_model, resolve_model
    from engine.errors import LogitscopeError
    from engine.models.gguf_check import check_gguf

    base = base_path.read_bytes()
    info = check_gguf(base_path)
    rng = random.Random(seed)
    gen = mutations(base, info, rng)
    for i in range(count):
        kind, data = next(gen)
        path = out_dir / f"case{i:03}.gguf"
        path.write_bytes(data)
        result = {"case": i, "kind": kind}
        try:
            folder = resolve_model(str(path))
            load_model(folder)  # a converted copy must load
            result["outcome"] = "converted"
            shutil.rmtree(folder, ignore_errors=True)
        except LogitscopeError as e:
            result.update(outcome="error", message=str(e))
        except Exception as e:  # noqa: BLE001 - what the test must never see
            result.update(
                outcome="traceback",
                message=f"{type(e).__name__}: {e}",
                trace=traceback.format_exc()[-800:],
            )
        path.unlink()
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
