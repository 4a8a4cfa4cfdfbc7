"""Check a GGUF file's tokenizer metadata before the tokenizer is rebuilt from it.

The `tokenizers` library trusts what it is given: a merge rule whose pieces are
not in the vocabulary raises an exception that quotes the whole piece, or
panics in its native code. So every field `gguf_tokenizer` and
`gguf_reference_tokenizer` read is checked here first: its type, how many
items, how long each token and merge rule is, and that every merge rule joins
two vocabulary tokens into a third. A failure is one ModelError line that
quotes at most `QUOTE` characters of the file.
"""

from __future__ import annotations

MAX_TOKENS = 2**21  # vocabulary entries; the largest real vocabularies hold ~262k
MAX_TOKEN_CHARS = 1024  # one token; real ones stay under a few hundred
MAX_VOCAB_CHARS = 16_000_000  # all tokens together (rebuilding is linear in this)
MAX_MERGES = 2**21
MAX_NAME = 200  # tokenizer.ggml.model / .pre: short names
QUOTE = 60  # characters of the file's own text an error message may show
TOKENIZER_KINDS = ("gpt2", "llama")


def shown(value, limit: int = QUOTE) -> str:
    """`repr(value)` cut to about `limit` characters, for error messages.

    Args:
        value: anything read from a file.
        limit: the most characters of it to show.

    Returns:
        The repr, ending in "…" and the full length when it was cut.
    """
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    text = repr(value) if not isinstance(value, list | tuple) else f"a list of {len(value):,}"
    return text if len(text) <= limit else f"{text[:limit]}…"


def check_vocabulary(meta: dict, fail) -> None:
    """Check the tokenizer fields of a GGUF file's metadata.

    Args:
        meta: the file's metadata (tokenizer arrays kept as lists).
        fail: called with one sentence when something is wrong; it raises.
    """
    tokens = meta.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        fail("it has no tokenizer vocabulary (tokenizer.ggml.tokens, a list of text)")
    if len(tokens) > MAX_TOKENS:
        fail(f"its vocabulary has {len(tokens):,} tokens, more than the {MAX_TOKENS:,} allowed")
    longest = max(range(len(tokens)), key=lambda i: len(tokens[i]))
    if len(tokens[longest]) > MAX_TOKEN_CHARS:
        fail(
            f"token {longest} is {len(tokens[longest]):,} characters long, more than the "
            f"{MAX_TOKEN_CHARS:,} a token may have: {shown(tokens[longest])}"
        )
    if sum(map(len, tokens)) > MAX_VOCAB_CHARS:
        fail(f"its vocabulary holds more than {MAX_VOCAB_CHARS:,} characters")
    kind = meta.get("tokenizer.ggml.model")
    if not isinstance(kind, str) or not kind:
        fail("it does not say which tokenizer it uses (tokenizer.ggml.model)")
    if kind not in TOKENIZER_KINDS:
        fail(
            f"its tokenizer kind {shown(kind)} cannot be rebuilt: Logitscope reads byte-level "
            "BPE ('gpt2') and SentencePiece ('llama') vocabularies"
        )
    pre = meta.get("tokenizer.ggml.pre")
    if pre is not None and (not isinstance(pre, str) or len(pre) > MAX_NAME):
        fail(f"tokenizer.ggml.pre is {shown(pre)}, not a short name")
    _check_lists(meta, len(tokens), fail)
    if kind == "gpt2":
        _check_merges(meta.get("tokenizer.ggml.merges", []), tokens, fail)
    template = meta.get("tokenizer.chat_template")
    if template is not None and not isinstance(template, str):
        fail("tokenizer.chat_template is not text")
    for key in ("bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id"):
        value = meta.get(f"tokenizer.ggml.{key}")
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(tokens)
        ):
            fail(f"tokenizer.ggml.{key} is {shown(value)}, outside the vocabulary of {len(tokens)}")
    bos = meta.get("tokenizer.ggml.bos_token_id")
    if meta.get("tokenizer.ggml.add_bos_token") and bos is not None and unfit_bos(tokens[bos]):
        fail(f"its BOS token {shown(tokens[bos])} cannot be prepended: {BOS_RULE}")


BOS_RULE = "it is empty, starts with '$' or holds a space"


def unfit_bos(token: str) -> bool:
    """Whether a BOS token cannot go into a `tokenizers` template (see BOS_RULE)."""
    return not token or token.startswith("$") or any(c.isspace() for c in token)


def _check_lists(meta: dict, n: int, fail) -> None:
    """Token types (whole numbers) and scores (numbers): one per token."""
    for key, kinds, what in (
        ("tokenizer.ggml.token_type", (int,), "whole numbers"),
        ("tokenizer.ggml.scores", (int, float), "numbers"),
    ):
        if key not in meta:
            continue
        value = meta[key]
        if not isinstance(value, list):
            fail(f"{key} is not a list")
        if len(value) != n:
            fail(f"{key} has {len(value)} entries for {n} tokens")
        if not all(isinstance(v, kinds) and not isinstance(v, bool) for v in value):
            fail(f"{key} is not a list of {what}")


def _check_merges(merges, tokens: list[str], fail) -> None:
    """Each merge rule is 'a b' where a, b and ab are all vocabulary tokens."""
    if not isinstance(merges, list) or not all(isinstance(m, str) for m in merges):
        fail("tokenizer.ggml.merges is not a list of 'a b' merge rules")
    if len(merges) > MAX_MERGES:
        fail(f"it has {len(merges):,} merge rules, more than the {MAX_MERGES:,} allowed")
    vocab = set(tokens)
    for i, rule in enumerate(merges):
        left, space, right = rule.partition(" ")
        if not space or not left or not right:
            fail(f"merge rule {i} is {shown(rule)}, not 'a b'")
        if len(rule) > 2 * MAX_TOKEN_CHARS + 1:
            fail(f"merge rule {i} is {len(rule):,} characters long: {shown(rule)}")
        for piece in (left, right, left + right):
            if piece not in vocab:
                fail(f"merge rule {i} ({shown(rule)}) needs {shown(piece)}, not in the vocabulary")
