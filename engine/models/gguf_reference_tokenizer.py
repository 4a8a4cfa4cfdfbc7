"""llama.cpp's tokenizer algorithms in plain Python, to check a rebuilt tokenizer.

`gguf_tokenizer` rebuilds a GGUF vocabulary as a Hugging Face tokenizer; this
module encodes the same text the way llama.cpp's own code does (llama-vocab.cpp:
SentencePiece's highest-score-first bigram merging with byte fallback, and
byte-level BPE by merge rank after the pre-tokenizer's regex split), sharing no
code with the `tokenizers` library. `check_tokenizer` compares the two on a
fixed multilingual string set at conversion time; a mismatch is reported.
"""

from __future__ import annotations

from engine.models.gguf_tokenizer import (
    SPM_SPACE,
    TOKEN_CONTROL,
    TOKEN_NORMAL,
    TOKEN_USER_DEFINED,
    pre_split,
)

CHECK_STRINGS = (
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog 1234567890.",
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.",
    "El pingüino Wenceslao hizo kilómetros bajo exhaustiva lluvia y frío.",
    "我能吞下玻璃而不伤身体。",
    "私はガラスを食べられます。それは私を傷つけません。",
    "मैं काँच खा सकता हूँ और मुझे उससे कोई चोट नहीं पहुंचती।",
    "أنا قادر على أكل الزجاج و هذا لا يؤلمني.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "def f(x):\n    return x ** 2  # square\n\n\tprint(f(3))",
    "Emoji: 🦙🚀👩‍💻 and  double  spaces,\nnew lines\r\n and tabs\t!",
    "  leading spaces and trailing ones  ",
)


class ReferenceTokenizer:
    """A plain-Python tokenizer built from a GGUF file's vocabulary metadata."""

    def __init__(self, meta: dict):
        self.kind = meta.get("tokenizer.ggml.model")
        self.tokens = list(meta["tokenizer.ggml.tokens"])
        self.types = list(meta.get("tokenizer.ggml.token_type") or [])
        self.vocab = {t: i for i, t in enumerate(self.tokens)}
        self.scores = list(meta.get("tokenizer.ggml.scores") or [])
        self.add_space_prefix = bool(meta.get("tokenizer.ggml.add_space_prefix", True))
        self.unk = meta.get("tokenizer.ggml.unknown_token_id")
        # user-defined tokens are matched whole even when specials are not parsed
        whole = [
            t for i, t in enumerate(self.tokens) if self.types[i : i + 1] == [TOKEN_USER_DEFINED]
        ]
        self.whole = sorted(whole, key=len, reverse=True)
        if self.kind == "gpt2":
            merges = meta.get("tokenizer.ggml.merges", [])
            self.ranks = {tuple(m.split(" ", 1)): r for r, m in enumerate(merges)}
            regex, self.digits, _ = pre_split(meta)
            import regex as re

            self.split = re.compile(regex)
            from engine.models.token_bytes import _byte_decoder

            self.byte_char = {b: c for c, b in _byte_decoder().items()}

    def encode(self, text: str) -> list[int]:
        """Token ids of plain text (no BOS, no special-token parsing)."""
        out: list[int] = []
        for part, is_token in self._partition(text):
            if is_token:
                out.append(self.vocab[part])
            elif part:
                # llama.cpp prefixes a space to text that starts the input or follows a token
                out += self._spm(part) if self.kind == "llama" else self._bpe_text(part)
        return out

    def _partition(self, text: str) -> list[tuple[str, bool]]:
        parts, start, i = [], 0, 0
        while i < len(text):
            match = next((t for t in self.whole if text.startswith(t, i)), None)
            if match:
                parts += [(text[start:i], False), (match, True)]
                i = start = i + len(match)
            else:
                i += 1
        parts.append((text[start:], False))
        return parts

    def _spm(self, text: str) -> list[int]:
        if self.add_space_prefix:
            text = " " + text
        symbols = list(text.replace(" ", SPM_SPACE))
        while len(symbols) > 1:
            best, best_score = -1, None
            for j in range(len(symbols) - 1):
                merged = symbols[j] + symbols[j + 1]
                k = self.vocab.get(merged)
                if k is None or (self.types and self.types[k] != TOKEN_NORMAL):
                    continue
                score = self.scores[k] if self.scores else -k
                if best_score is None or score > best_score:
                    best, best_score = j, score
            if best < 0:
                break
            symbols[best : best + 2] = [symbols[best] + symbols[best + 1]]
        out = []
        for s in symbols:
            k = self.vocab.get(s)
            if k is not None and not (self.types and self.types[k] == TOKEN_CONTROL):
                out.append(k)
                continue
            for b in s.encode("utf-8"):
                k = self.vocab.get(f"<0x{b:02X}>", self.unk)
                if k is not None:
                    out.append(k)
        return out

    def _bpe_text(self, text: str) -> list[int]:
        out = []
        for word in self.split.findall(text):
            pieces = [word] if not self.digits else _digits_apart(word)
            for piece in pieces:
                out += self._bpe_word("".join(self.byte_char[b] for b in piece.encode("utf-8")))
        return out

    def _bpe_word(self, word: str) -> list[int]:
        parts = list(word)
        while len(parts) > 1:
            ranked = [(self.ranks.get((parts[j], parts[j + 1])), j) for j in range(len(parts) - 1)]
            ranked = [(r, j) for r, j in ranked if r is not None]
            if not ranked:
                break
            _, j = min(ranked)
            parts[j : j + 2] = [parts[j] + parts[j + 1]]
        return [self.vocab[p] for p in parts if p in self.vocab]


def _digits_apart(word: str) -> list[str]:
    out, current = [], ""
    for ch in word:
        if ch.isdigit():
            out += [current] if current else []
            out.append(ch)
            current = ""
        else:
            current += ch
    return out + ([current] if current else [])


def check_tokenizer(meta: dict, tokenizer_json: str, strings=CHECK_STRINGS) -> dict:
    """Encode `strings` with the rebuilt tokenizer and with llama.cpp's algorithm.

    Returns:
        {"strings": n, "mismatches": [{"text", "rebuilt", "reference"}, …], "notes": […]}
    """
    from tokenizers import Tokenizer

    rebuilt = Tokenizer.from_str(tokenizer_json)
    reference = ReferenceTokenizer(meta)
    mismatches = []
    for text in strings:
        got = rebuilt.encode(text, add_special_tokens=False).ids
        want = reference.encode(text)
        if got != want:
            mismatches.append({"text": text, "rebuilt": got[:40], "reference": want[:40]})
    notes = []
    if meta.get("tokenizer.ggml.model") == "gpt2" and (note := pre_split(meta)[2]):
        notes.append(note)
    return {"strings": len(strings), "mismatches": mismatches, "notes": notes}
