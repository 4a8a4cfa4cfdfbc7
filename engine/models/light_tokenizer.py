"""A model folder's tokenizer without MLX or transformers, for the GUI process.

The window counts prompt tokens as the user types and shows the prompt split
into tokens; loading mlx-lm there would pull MLX into the GUI process. This
reads `tokenizer.json` with `tokenizers`, takes the chat template from
`tokenizer_config.json` or `chat_template.jinja` (as `mlx_lm.convert` writes
it), and renders it with `engine.chat_template` (transformers' environment,
jinja2 alone), so `engine.prompt.encode_prompt` gives the same ids as the engine.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.chat_template import SPECIAL_TOKEN_KEYS, apply, pick_template


class LightTokenizer:
    """A tokenizer and chat template from a model folder, without transformers."""

    def __init__(self, folder: str | Path):
        from tokenizers import Tokenizer

        folder = Path(folder)
        self._tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        cfg_path = folder / "tokenizer_config.json"
        cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
        map_path = folder / "special_tokens_map.json"  # older folders keep them apart
        mapped = json.loads(map_path.read_text()) if map_path.exists() else {}
        self.special_tokens_map = {
            k: (v["content"] if isinstance(v, dict) else v)
            for k, v in {**mapped, **cfg}.items()
            if k in SPECIAL_TOKEN_KEYS and v is not None
        }
        self.chat_template = pick_template(cfg.get("chat_template"))
        jinja_file = folder / "chat_template.jinja"
        if not self.chat_template and jinja_file.exists():
            self.chat_template = jinja_file.read_text(encoding="utf-8")

    @property
    def has_chat_template(self) -> bool:
        """Whether the folder has a chat template."""
        return bool(self.chat_template)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of `text` (with the tokenizer's special tokens unless told not to)."""
        return self._tok.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: list[int]) -> str:
        """The text of `ids`, special tokens included."""
        return self._tok.decode(ids, skip_special_tokens=False)

    def token_bytes(self, token_id: int) -> bytes:
        """A token's raw bytes (the table is built once, on first use)."""
        if getattr(self, "_bytes", None) is None:
            from engine.models.token_bytes import bytes_table, vocabulary_strings

            size = self._tok.get_vocab_size(with_added_tokens=True)
            self._bytes = bytes_table(vocabulary_strings(self._tok, size))
        return self._bytes[token_id] if 0 <= token_id < len(self._bytes) else b""

    def labels(self, ids: list[int]) -> list[str]:
        """Each token shown on its own: text, or `<0xE6>` bytes for part of a character."""
        from engine.records import token_label

        return [token_label(self.token_bytes(i)) for i in ids]

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        """Render `messages` with the chat template; token ids if `tokenize`, else text."""
        text = apply(self, messages, add_generation_prompt)
        return self.encode(text, add_special_tokens=False) if tokenize else text
