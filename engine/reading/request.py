"""What to read and how: one frozen dataclass of plain values (`ReadRequest`).

The text is read after an optional context: plain text (fed as raw tokens), or a
chat conversation (rendered by the model's chat template with the assistant's turn
opened, so the text is read as the assistant's answer). Without a context the text
is read after the model's start token, as lm-evaluation-harness does (the
beginning-of-sequence token, else the end-of-text one), so its first token is
scored too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.errors import SettingsError

LONG_TEXT = ("window", "refuse")  # a text longer than the context: slide, or refuse
DEFAULT_TOP_N = 10  # candidates kept per token (as a generated token's default)
MAX_TOP_N = 50
MIN_CHUNK, MAX_CHUNK = 1, 4096
MAX_TEXT_CHARS = 5_000_000  # about a million tokens: beyond that, split the file


@dataclass(frozen=True)
class ReadRequest:
    """One text to read.

    Attributes:
        text: the text whose every token is scored.
        context: None, text read before it (not scored), or a conversation of
            {role, content} messages (the text is then the assistant's answer).
        long_text: "window" reads a text longer than the context with a sliding
            window; "refuse" raises with the numbers instead.
        chunk_tokens: tokens per forward pass; None picks from the vocabulary size
            (the chunk's logits stay within a few tens of MB on the device).
        top_n: candidates kept per token.
        sweep: compute each token's temperature sweep (the temperature chart's data).
    """

    text: str
    context: str | list[dict] | None = None
    long_text: str = "window"
    chunk_tokens: int | None = None
    top_n: int = DEFAULT_TOP_N
    sweep: bool = True

    def validate(self) -> ReadRequest:
        """Check every field; the request itself.

        Raises:
            SettingsError: an empty or invalid text, a bad context, an unknown
                long-text choice, a chunk or top-n out of range.
        """
        if not isinstance(self.text, str) or not self.text.strip():
            raise SettingsError("the text is empty: give some text to read")
        if len(self.text) > MAX_TEXT_CHARS:
            raise SettingsError(
                f"the text is {len(self.text):,} characters; at most {MAX_TEXT_CHARS:,} "
                "are read at once: split it"
            )
        _check_utf8(self.text, "the text")
        if isinstance(self.context, str):
            _check_utf8(self.context, "the context")
        elif self.context is not None and not _is_conversation(self.context):
            raise SettingsError("the context is text or a list of {role, content} messages")
        if self.long_text not in LONG_TEXT:
            raise SettingsError(f"long_text must be window or refuse, not {self.long_text!r}")
        chunk = self.chunk_tokens
        if chunk is not None and (
            isinstance(chunk, bool)
            or not isinstance(chunk, int)
            or not MIN_CHUNK <= chunk <= MAX_CHUNK
        ):
            raise SettingsError(f"chunk_tokens must be {MIN_CHUNK} to {MAX_CHUNK}, not {chunk!r}")
        if isinstance(self.top_n, bool) or not isinstance(self.top_n, int):
            raise SettingsError(f"top_n must be a whole number, not {self.top_n!r}")
        if not 1 <= self.top_n <= MAX_TOP_N:
            raise SettingsError(f"top_n must be 1 to {MAX_TOP_N}, not {self.top_n}")
        return self

    def with_(self, **changes) -> ReadRequest:
        """A copy with some fields changed."""
        return replace(self, **changes)


def _check_utf8(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise SettingsError(
            f"{what} holds a character that is not valid text (position {e.start})"
        ) from None


def _is_conversation(value) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in value)
    )
