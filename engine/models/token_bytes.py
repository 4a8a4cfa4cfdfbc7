"""The raw bytes of every token in a vocabulary, and text streamed from them.

A token's text on its own can be part of a UTF-8 character (Japanese, emoji),
which a plain decode turns into "�". The records carry each token's bytes (as
OpenAI-style logprobs do), labels show partial characters as `<0xE6><0x97>`,
and the answer's text is decoded incrementally from the bytes, so a leading
space is never dropped and a character split over tokens is whole in the text.
"""

from __future__ import annotations

import codecs
import contextlib
import re
from functools import lru_cache

_SPM_BYTE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
SPM_SPACE = "\u2581"  # SentencePiece's "▁"


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-ins for bytes, reversed (byte-level BPE vocabularies)."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars, n = list(printable), 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def vocabulary_strings(tokenizer, size: int) -> list[str]:
    """The token strings of ids 0..size-1 ("" beyond the tokenizer's vocabulary)."""
    inner = getattr(tokenizer, "_tokenizer", tokenizer)  # mlx-lm's wrapper
    if hasattr(inner, "convert_ids_to_tokens"):
        out = inner.convert_ids_to_tokens(list(range(size)))
    else:  # a `tokenizers.Tokenizer`
        out = [inner.id_to_token(i) for i in range(size)]
    return [s if isinstance(s, str) else "" for s in out]


def bytes_table(strings: list[str]) -> list[bytes]:
    """Each token string's bytes, for byte-level BPE or SentencePiece vocabularies."""
    dec = _byte_decoder()
    byte_level = sum("Ġ" in s for s in strings) > sum(SPM_SPACE in s for s in strings)
    table = []
    for s in strings:
        if byte_level and s and all(c in dec for c in s):
            table.append(bytes(dec[c] for c in s))
        elif not byte_level and (m := _SPM_BYTE.match(s)):
            table.append(bytes([int(m.group(1), 16)]))
        elif not byte_level:
            table.append(s.replace(SPM_SPACE, " ").encode("utf-8"))
        else:
            table.append(s.encode("utf-8"))
    return table


def kept_table(tokenizer, size: int) -> list[bytes]:
    """`tokenizer`'s byte table for ids 0..size-1, built once and kept on the tokenizer
    object itself (by size): the engine shares one tokenizer among the loads of a model
    (the Lab loads it again per experiment) and keeps a copy of it on disk with the
    table in it (engine/backends/mlx/tokenizer_file.py), so an engine reads Gemma 3's
    262k-token table back instead of building it (0.28 s here)."""
    tables = getattr(tokenizer, "_logitscope_bytes", None)
    if not isinstance(tables, dict):
        tables = {}
        with contextlib.suppress(AttributeError, TypeError):  # one that takes no attributes
            tokenizer._logitscope_bytes = tables
    table = tables.get(size)
    if table is None:
        table = tables[size] = bytes_table(vocabulary_strings(tokenizer, size))
    return table


def has_kept_table(tokenizer, size: int) -> bool:
    """Whether `tokenizer` holds its byte table for `size` ids (kept_table)."""
    tables = getattr(tokenizer, "_logitscope_bytes", None)
    return isinstance(tables, dict) and size in tables


class TextStream:
    """Turns token bytes into text as whole characters become available."""

    def __init__(self):
        self._dec = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def add(self, raw: bytes) -> str:
        """The text completed by this token ('' while a character is unfinished)."""
        return self._dec.decode(raw)

    def flush(self) -> str:
        """The rest of an unfinished character (as U+FFFD), and reset."""
        return self._dec.decode(b"", final=True)
