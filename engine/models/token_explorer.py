"""The tokenizer explorer's numbers: how a text splits into tokens, and what the
same meaning costs in tokens in other languages and under other tokenizers.

Qt-free and MLX-free (it runs in the window's process): tokenizers come from
`LightTokenizer`, which gives the engine's ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.models.display_name import display_name
from engine.run.records import token_label

# The same sentence in each language (and code and emoji for contrast).
SAMPLES = {
    "English": "The weather is nice today, so we are going for a walk in the park.",
    "German": "Das Wetter ist heute schön, also gehen wir im Park spazieren.",
    "Spanish": "Hoy hace buen tiempo, así que vamos a dar un paseo por el parque.",
    "Chinese": "今天天气很好，所以我们去公园散步。",
    "Japanese": "今日は天気がいいので、公園に散歩に行きます。",
    "Hindi": "आज मौसम अच्छा है, इसलिए हम पार्क में टहलने जा रहे हैं।",
    "Arabic": "الطقس جميل اليوم، لذلك سنذهب في نزهة في الحديقة.",
    "Russian": "Сегодня хорошая погода, поэтому мы идём гулять в парк.",
    "Code": "if weather.is_nice(today):\n    go_for_walk(park)",
    "Emoji": "☀️😊 → 🚶‍♀️🌳",
}
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Span:
    """One token's part of the text: `text` is what it covers of the input ('' for
    a byte token finishing a character that an earlier token started showing)."""

    token_id: int
    text: str
    label: str  # the token on its own: text, or <0xE6> bytes for part of a character
    bytes: bytes
    is_bytes: bool  # not whole UTF-8 on its own


def split(tokenizer, text: str) -> list[Span]:
    """`text` as tokens (no BOS): spans whose texts concatenate to `text` exactly."""
    enc = tokenizer._tok.encode(text, add_special_tokens=False)
    spans, cursor = [], 0
    for token_id, (_start, end) in zip(enc.ids, enc.offsets, strict=True):
        raw = tokenizer.token_bytes(token_id)
        label = token_label(raw)
        piece = text[cursor:end] if end > cursor else ""
        cursor = max(cursor, end)
        spans.append(Span(token_id, piece, label, raw, label != raw.decode("utf-8", "replace")))
    if spans and cursor < len(text):  # trailing text no offset claimed (normalizers)
        last = spans[-1]
        spans[-1] = Span(
            last.token_id, last.text + text[cursor:], last.label, last.bytes, last.is_bytes
        )
    return spans


def stats(n_tokens: int, text: str) -> dict:
    """Token, word and character counts of `text` and the ratios between them."""
    words = len(_WORD.findall(text)) or 1
    chars = len(text) or 1
    return {
        "tokens": n_tokens,
        "words": len(_WORD.findall(text)),
        "characters": len(text),
        "tokens_per_word": n_tokens / words,
        "tokens_per_character": n_tokens / chars,
    }


def economy(tokenizer, samples: dict[str, str] = SAMPLES) -> dict[str, dict]:
    """Tokens of each sample and their ratio to English's (the same meaning)."""
    counts = {
        lang: len(tokenizer.encode(t, add_special_tokens=False)) for lang, t in samples.items()
    }
    base = counts.get("English") or 1
    return {lang: {"tokens": n, "vs_english": n / base} for lang, n in counts.items()}


def counts_by_model(text: str, models) -> dict[str, int | str]:
    """The text's token count under each model's tokenizer (name -> count, or why not)."""
    from engine.models.light_tokenizer import shared_tokenizer

    out: dict[str, int | str] = {}
    for m in models:
        name = display_name(m.name, m.path, m.quantization, m.parameters)  # as the picker
        if name in out:  # two copies of one model (another tool's, an added folder)
            name = f"{name} ({m.path})"
        try:
            out[name] = len(shared_tokenizer(m.path).encode(text, add_special_tokens=False))
        except (OSError, ValueError, Exception) as e:  # noqa: BLE001 - one bad folder
            out[name] = f"unreadable ({type(e).__name__})"
    return out
