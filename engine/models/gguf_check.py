"""Check a GGUF file's structure in pure Python before any native code reads it.

MLX's GGUF loader trusts the file: a wrong count, offset or type in a damaged
or crafted file can crash the process. `check_gguf(path)` walks the header with
bounds checks on every read (counts, string lengths, array sizes, tensor dims,
types and data ranges against the file length), then checks the metadata a
conversion needs and that the tensors agree with it. Every failure is a
ModelError naming what is wrong with the file. The quantization tables come
from the `gguf` package (llama.cpp's own Python reader and writer).
"""

from __future__ import annotations

import mmap
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import ModelError
from engine.models.gguf_vocab_check import QUOTE, check_vocabulary, shown

MAGIC = b"GGUF"
MAX_DIMS = 4
MAX_KEY = 65_536
MAX_TENSOR_NAME = 256  # bytes; llama.cpp's own limit is 64 (GGML_MAX_NAME)
# GGUF metadata value types: (struct format, size); 8 = string, 9 = array.
_SCALARS = {
    0: ("<B", 1),
    1: ("<b", 1),
    2: ("<H", 2),
    3: ("<h", 2),
    4: ("<I", 4),
    5: ("<i", 4),
    6: ("<f", 4),
    7: ("<?", 1),
    10: ("<Q", 8),
    11: ("<q", 8),
    12: ("<d", 8),
}
_STRING, _ARRAY = 8, 9
KEEP_ARRAYS = (
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.merges",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.scores",
)
REQUIRED_INTS = (
    "block_count",
    "embedding_length",
    "attention.head_count",
    "context_length",
    "feed_forward_length",
)
_BLOCK = re.compile(r"^blk\.(\d+)\.")


@dataclass
class TensorInfo:
    """One tensor in a GGUF file's header; sizes and offsets in bytes."""

    name: str
    shape: tuple[int, ...]  # GGUF order: fastest-varying dimension first
    type_name: str
    offset: int  # from the start of the data section
    nbytes: int
    header_pos: int = 0  # where its dimension count sits in the file (tools, tests)


@dataclass
class GGUFInfo:
    """What the header says; arrays other than the tokenizer's are summarised."""

    version: int
    metadata: dict = field(default_factory=dict)
    tensors: list[TensorInfo] = field(default_factory=list)
    data_start: int = 0
    file_size: int = 0

    @property
    def architecture(self) -> str:
        """The file's `general.architecture` ("" if missing)."""
        return self.metadata.get("general.architecture", "")

    def get(self, key: str, default=None):
        """The architecture's metadata value `<architecture>.<key>`, or `default`."""
        return self.metadata.get(f"{self.architecture}.{key}", default)

    @property
    def tensor_types(self) -> dict[str, int]:
        """Quant type name -> number of tensors using it."""
        counts: dict[str, int] = {}
        for t in self.tensors:
            counts[t.type_name] = counts.get(t.type_name, 0) + 1
        return counts


class _Reader:
    def __init__(self, buf, name: str):
        self.buf, self.pos, self.size, self.name = buf, 0, len(buf), name

    def fail(self, what: str):
        """Raise ModelError: the file is not a usable GGUF file, and why."""
        raise ModelError(f"{self.name} is not a usable GGUF file: {what}")

    def take(self, n: int, what: str) -> bytes:
        """The next `n` bytes; fails if they run past the end of the file."""
        if n < 0 or self.pos + n > self.size:
            self.fail(
                f"{what} runs past the end of the file (offset {self.pos}, "
                f"{self.size} bytes): the file is truncated or damaged"
            )
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def scalar(self, vtype: int, what: str):
        """The next scalar of GGUF value type `vtype`."""
        fmt, size = _SCALARS[vtype]
        return struct.unpack(fmt, self.take(size, what))[0]

    def u32(self, what: str) -> int:
        """The next unsigned 32-bit integer."""
        return self.scalar(4, what)

    def u64(self, what: str) -> int:
        """The next unsigned 64-bit integer."""
        return self.scalar(10, what)

    def string(self, what: str, limit: int | None = None) -> str:
        """The next length-prefixed UTF-8 string (at most `limit` bytes when given)."""
        n = self.u64(f"the length of {what}")
        if limit is not None and n > limit:
            self.fail(f"{what} claims {n:,} bytes, more than the {limit:,} allowed")
        raw = self.take(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.fail(f"{what} is not valid UTF-8 text")

    def value(self, vtype: int, key: str, keep_array: bool):
        """The next metadata value of type `vtype` (an array kept only with `keep_array`)."""
        if vtype in _SCALARS:
            return self.scalar(vtype, f"the value of '{_q(key)}'")
        if vtype == _STRING:
            return self.string(f"the value of '{_q(key)}'")
        if vtype != _ARRAY:
            self.fail(f"metadata '{_q(key)}' has unknown value type {vtype}")
        item = self.u32(f"the item type of '{_q(key)}'")
        count = self.u64(f"the length of '{_q(key)}'")
        if item == _ARRAY:
            self.fail(f"metadata '{_q(key)}' is an array of arrays, which no model file uses")
        if item not in _SCALARS and item != _STRING:
            self.fail(f"metadata '{_q(key)}' has unknown item type {item}")
        least = 8 if item == _STRING else _SCALARS[item][1]
        if count * least > self.size - self.pos:
            self.fail(f"metadata '{_q(key)}' claims {count:,} items, more than the file holds")
        if item != _STRING:
            fmt, size = _SCALARS[item]
            raw = self.take(count * size, f"the items of '{_q(key)}'")
            if not keep_array:
                return _Summary(count)
            return list(struct.unpack(f"<{count}{fmt[1]}", raw))
        items = [self.string(f"item {i} of '{_q(key)}'") for i in range(count)]
        return items if keep_array else _Summary(count)


def _q(name: str) -> str:
    """A key or tensor name from the file, cut short for an error message."""
    return name if len(name) <= QUOTE else f"{name[:QUOTE]}…"


@dataclass(frozen=True)
class _Summary:
    """An array the conversion does not need, kept only as its length."""

    length: int


def check_gguf(path: Path | str) -> GGUFInfo:
    """Validate a GGUF file's structure and the metadata a conversion needs.

    Raises:
        ModelError: one line naming what is wrong (missing, truncated, bad counts,
            offsets, types or dims, required metadata absent or out of range).
    """
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    path = Path(path)
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            if size < 24:
                raise ModelError(f"{path.name} is not a usable GGUF file: only {size} bytes")
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise ModelError(f"model file not found: {path}") from None
    except OSError as e:
        raise ModelError(f"cannot read model file {path}: {e.strerror}") from e
    try:
        r = _Reader(buf, path.name)
        if r.take(4, "the magic number") != MAGIC:
            raise ModelError(f"{path} is not a GGUF file (it does not start with 'GGUF')")
        info, n_tensors = _header(r, size)
        _tensor_infos(r, info, n_tensors, GGML_QUANT_SIZES, GGMLQuantizationType)
    finally:
        buf.close()
    _check_metadata(info, path.name)
    return info


def _header(r: _Reader, size: int) -> tuple[GGUFInfo, int]:
    version = r.u32("the version")
    if version not in (2, 3):
        r.fail(f"GGUF version {version} is not supported (only versions 2 and 3)")
    n_tensors = r.u64("the tensor count")
    n_kv = r.u64("the metadata count")
    if n_tensors == 0 or n_tensors * 24 > size:
        r.fail(f"the header claims {n_tensors:,} tensors, which the file cannot hold")
    if n_kv * 13 > size:
        r.fail(f"the header claims {n_kv:,} metadata entries, which the file cannot hold")
    info = GGUFInfo(version=version, file_size=size)
    for i in range(n_kv):
        key = r.string(f"metadata key {i}", limit=MAX_KEY)
        if key in info.metadata:
            r.fail(f"metadata key {shown(key)} appears twice")
        vtype = r.u32(f"the type of {shown(key)}")
        info.metadata[key] = r.value(vtype, key, keep_array=key in KEEP_ARRAYS)
    return info, n_tensors


def _tensor_infos(r: _Reader, info: GGUFInfo, n_tensors: int, sizes, types) -> None:
    names = set()
    for i in range(n_tensors):
        name = r.string(f"the name of tensor {i}", limit=MAX_TENSOR_NAME)
        if name in names:
            r.fail(f"tensor {shown(name)} appears twice")
        names.add(name)
        pos = r.pos
        n_dims = r.u32(f"the dimension count of '{_q(name)}'")
        if not 1 <= n_dims <= MAX_DIMS:
            r.fail(f"tensor '{_q(name)}' has {n_dims} dimensions (1 to {MAX_DIMS} allowed)")
        shape = tuple(r.u64(f"a dimension of '{_q(name)}'") for _ in range(n_dims))
        if any(d == 0 or d > 2**31 for d in shape):
            r.fail(f"tensor '{_q(name)}' has an impossible shape {list(shape)}")
        code = r.u32(f"the type of '{_q(name)}'")
        try:
            qtype = types(code)
        except ValueError:
            r.fail(f"tensor '{_q(name)}' has unknown type number {code}")
        block, type_size = sizes[qtype]
        if shape[0] % block:
            r.fail(
                f"tensor '{_q(name)}' ({qtype.name}) has a row of {shape[0]} values, "
                f"not a multiple of its block size {block}"
            )
        count = 1
        for d in shape:
            count *= d
        offset = r.u64(f"the data offset of '{_q(name)}'")
        info.tensors.append(
            TensorInfo(name, shape, qtype.name, offset, count // block * type_size, pos)
        )
    align = info.metadata.get("general.alignment", 32)
    if not isinstance(align, int) or isinstance(align, bool) or align <= 0 or align & (align - 1):
        r.fail(f"general.alignment is {shown(align)}, not a power of two")
    info.data_start = (r.pos + align - 1) // align * align
    end, before = 0, None
    for t in sorted(info.tensors, key=lambda t: t.offset):
        if t.offset % align:
            r.fail(f"tensor '{_q(t.name)}' starts at offset {t.offset}, not aligned to {align}")
        if t.offset < end:
            r.fail(f"tensor '{_q(t.name)}' overlaps the tensor before it")
        if before is not None and t.offset - end >= align:
            # GGUF writers pack tensors back to back: a gap means a type or shape that
            # does not match the data written for it.
            r.fail(
                f"tensor '{_q(before.name)}' ({before.type_name}, {list(before.shape)}) is "
                f"followed by {t.offset - end:,} unused bytes: its type or shape does not "
                "match its data; the file is damaged"
            )
        end, before = t.offset + t.nbytes, t
        if info.data_start + end > info.file_size:
            r.fail(
                f"tensor '{_q(t.name)}' ends at byte {info.data_start + end:,}, past the end "
                f"of the file ({info.file_size:,} bytes): the file is truncated"
            )
    if before is not None and info.file_size - (info.data_start + end) >= align:
        r.fail(
            f"tensor '{_q(before.name)}' ({before.type_name}, {list(before.shape)}) ends "
            f"{info.file_size - info.data_start - end:,} bytes before the end of the file: "
            "its type or shape does not match its data; the file is damaged"
        )


def _check_metadata(info: GGUFInfo, name: str) -> None:
    def fail(what: str):
        """Raise ModelError: the file cannot be converted, and why."""
        raise ModelError(f"{name} cannot be converted: {what}")

    arch = info.metadata.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        fail("it has no general.architecture")
    if len(arch) > 64:
        fail(f"general.architecture is {shown(arch)}, not an architecture's name")
    ints = {}
    for key in REQUIRED_INTS:
        value = info.get(key)
        if value is None:
            fail(f"it lacks {arch}.{key}")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**31:
            fail(f"{arch}.{key} is {shown(value)}, not a positive whole number")
        ints[key] = value
    check_vocabulary(info.metadata, fail)
    tokens = info.metadata["tokenizer.ggml.tokens"]
    heads = ints["attention.head_count"]
    kv = info.get("attention.head_count_kv", heads)
    if not isinstance(kv, int) or kv <= 0 or heads % kv:
        fail(
            f"{arch}.attention.head_count_kv is {shown(kv)}; it must divide the head count {heads}"
        )
    head_dim = info.get("rope.dimension_count", ints["embedding_length"] // heads)
    if not isinstance(head_dim, int) or head_dim <= 0 or head_dim % 2:
        fail(f"the head size {shown(head_dim)} must be a positive even number")
    eps = info.get("attention.layer_norm_rms_epsilon", 1e-5)
    if not isinstance(eps, float | int) or not 0 < eps <= 1e-2:
        fail(f"{arch}.attention.layer_norm_rms_epsilon is {shown(eps)}, outside (0, 0.01]")
    theta = info.get("rope.freq_base", 10000.0)
    if not isinstance(theta, float | int) or not 1 <= theta <= 1e9:
        fail(f"{arch}.rope.freq_base is {shown(theta)}, outside [1, 1e9]")
    if arch == "llama":  # other architectures are refused by the converter itself
        _check_tensors(info, ints, len(tokens), kv * head_dim, heads * head_dim, fail)


def _check_tensors(info: GGUFInfo, ints: dict, vocab: int, kv_dim: int, q_dim: int, fail):
    shapes = {t.name: t.shape for t in info.tensors}
    hidden, ffn, layers = ints["embedding_length"], ints["feed_forward_length"], ints["block_count"]
    expect = {"token_embd.weight": (hidden, vocab), "output_norm.weight": (hidden,)}
    per_layer = {
        "attn_norm.weight": (hidden,),
        "ffn_norm.weight": (hidden,),
        "attn_q.weight": (hidden, q_dim),
        "attn_k.weight": (hidden, kv_dim),
        "attn_v.weight": (hidden, kv_dim),
        "attn_output.weight": (q_dim, hidden),
        "ffn_gate.weight": (hidden, ffn),
        "ffn_up.weight": (hidden, ffn),
        "ffn_down.weight": (ffn, hidden),
    }
    for i in range(layers):
        expect.update({f"blk.{i}.{k}": v for k, v in per_layer.items()})
    if "output.weight" in shapes:
        expect["output.weight"] = (hidden, vocab)
    for tname, shape in expect.items():
        if tname not in shapes:
            fail(f"tensor {tname} is missing")
        if tuple(shapes[tname]) != shape:
            fail(f"tensor {tname} has shape {list(shapes[tname])}, expected {list(shape)}")
    for tname in shapes:
        m = _BLOCK.match(tname)
        if m and int(m.group(1)) >= layers:
            fail(f"tensor {_q(tname)} is beyond the {layers} layers the header declares")
