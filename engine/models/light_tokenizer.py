"""A model folder's tokenizer without MLX or transformers, for the GUI process.

The window counts prompt tokens as the user types and shows the prompt split
into tokens; loading mlx-lm there would pull MLX into the GUI process. This
reads `tokenizer.json` with `tokenizers`, takes the chat template from
`tokenizer_config.json` or `chat_template.jinja` (as `mlx_lm.convert` writes
it), and renders it with `engine.run.chat_template` (transformers' environment,
jinja2 alone), so `engine.run.prompt.encode_prompt` gives the same ids as the engine.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from pathlib import Path

from engine.errors import ModelError
from engine.run.chat_template import SPECIAL_TOKEN_KEYS, apply, pick_template

QUOTE = 120  # characters of the library's message (it may quote a token whole)
FILES = (  # what a LightTokenizer reads; a shared one is kept while these are unchanged
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
)
KEPT = 2  # tokenizers held per process (Gemma 3's takes 290 MB), the least recently used
# dropped first; one still in use elsewhere (the prompt panel's, Inside's) is shared anyway


class TokenizerFileError(ModelError, ValueError):
    """A model folder's tokenizer files cannot be read; one short line says which and why.

    A ValueError too, for callers that treat an unreadable folder as a nicety lost.
    """


class LightTokenizer:
    """A tokenizer and chat template from a model folder, without transformers.

    Raises:
        TokenizerFileError: a tokenizer file is missing, damaged or not what it should be.
        OSError: a file cannot be read.
    """

    def __init__(self, folder: str | Path):
        from tokenizers import Tokenizer

        folder = Path(folder)
        try:
            self._tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as e:  # noqa: BLE001 - the library's refusal quotes the file
            first = (str(e).splitlines() or [""])[0]
            cut = first if len(first) <= QUOTE else f"{first[:QUOTE]}…"
            raise TokenizerFileError(
                f"{folder.name}/tokenizer.json cannot be used: {cut}"
            ) from None
        cfg = _json_object(folder / "tokenizer_config.json")
        mapped = _json_object(folder / "special_tokens_map.json")  # older folders keep these
        named = {k: _token_text(v) for k, v in {**mapped, **cfg}.items() if k in SPECIAL_TOKEN_KEYS}
        self.special_tokens_map = {k: v for k, v in named.items() if v is not None}
        try:
            self.chat_template = pick_template(cfg.get("chat_template"))
        except (AttributeError, KeyError, TypeError):  # a list of something else
            raise TokenizerFileError(
                f"{folder.name}/tokenizer_config.json: chat_template is not a template"
            ) from None
        jinja_file = folder / "chat_template.jinja"
        if not self.chat_template and jinja_file.exists():
            try:
                self.chat_template = jinja_file.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise TokenizerFileError(f"{folder.name}/chat_template.jinja is not text") from None

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
        from engine.run.records import token_label

        return [token_label(self.token_bytes(i)) for i in ids]

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        """Render `messages` with the chat template; token ids if `tokenize`, else text."""
        text = apply(self, messages, add_generation_prompt)
        return self.encode(text, add_special_tokens=False) if tokenize else text


def _token_text(value) -> str | None:
    """A special token's text: the value itself, or an AddedToken dict's `content`."""
    value = value.get("content") if isinstance(value, dict) else value
    return value if isinstance(value, str) else None


def _json_object(path: Path) -> dict:
    """A JSON object from `path` ({} when the file is absent).

    Raises:
        TokenizerFileError: not JSON text, or not an object.
    """
    if not path.exists():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise TokenizerFileError(f"{path.parent.name}/{path.name} is not JSON text") from e
    if not isinstance(value, dict):
        raise TokenizerFileError(f"{path.parent.name}/{path.name} is not a JSON object")
    return value


_shared: OrderedDict[tuple, LightTokenizer] = OrderedDict()  # the KEPT most recent
_alive: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # any still referenced
_lock = threading.Lock()  # guards the three dicts
_building: dict[tuple, threading.Lock] = {}  # a folder being parsed: its callers wait


def shared_tokenizer(folder: str | Path) -> LightTokenizer:
    """The LightTokenizer of `folder`, built once per process while its files are
    unchanged (keyed on their names, sizes and times) and shared: the prompt panel builds
    one for each model loaded, and Inside's token explorer one for every installed model
    on each refresh; Gemma 3's tokenizer.json (33 MB) takes about a second to parse. A
    LightTokenizer is only read once built (its byte table is filled once, the same by
    any thread). A folder that cannot be read is not kept: the next call tries again.

    Raises:
        TokenizerFileError, OSError: as LightTokenizer.
    """
    from engine.store.file_hash import folder_files_key

    key = folder_files_key(folder, *FILES)
    with _lock:
        building = _building.setdefault(key, threading.Lock())
    with building:  # one parse per key (the panel's thread and Inside may ask at once);
        try:  # another folder's parse does not wait for this one
            with _lock:
                tok = _shared.get(key) or _alive.get(key)
            if tok is None:
                tok = LightTokenizer(folder)
            with _lock:
                _alive[key] = tok
                _shared[key] = tok
                _shared.move_to_end(key)
                while len(_shared) > KEPT:
                    _shared.popitem(last=False)
        finally:
            with _lock:
                if _building.get(key) is building:
                    del _building[key]
    return tok
