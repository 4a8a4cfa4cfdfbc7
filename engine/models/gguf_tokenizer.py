"""Rebuild a Hugging Face `tokenizer.json` and `tokenizer_config.json` from a
GGUF file's vocabulary, with the `tokenizers` library (no PyTorch, no MLX).

Two vocabulary kinds, as llama.cpp names them in `tokenizer.ggml.model`:

- `gpt2`: byte-level BPE from the vocabulary and its merge rules, split first
  by the pre-tokenizer the file names (`tokenizer.ggml.pre`).
- `llama`: SentencePiece (Llama 2, Gemma, Phi-3). Rebuilt as Hugging Face does
  for these models: BPE whose merges are every split of a vocabulary piece into
  two pieces, ranked by the merged piece's score, with byte fallback
  (`<0xE6>` tokens for characters outside the vocabulary), and "▁" for spaces,
  prefixed after each special token when the file says `add_space_prefix`.

Control tokens become special added tokens; user-defined ones are matched
whole, as llama.cpp does. `gguf_reference_tokenizer` checks the result.
"""

from __future__ import annotations

from engine.errors import ModelError
from engine.models.gguf_vocab_check import BOS_RULE, shown, unfit_bos

TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = (
    1,
    2,
    3,
    4,
    5,
    6,
)
SPM_SPACE = "\u2581"
# llama.cpp's pre-tokenizer regexes by `tokenizer.ggml.pre` (llama-vocab.cpp).
_LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
PRE_SPLITS = {
    "gpt2": GPT2_SPLIT,
    "default": GPT2_SPLIT,
    "gpt-2": GPT2_SPLIT,
    "olmo": GPT2_SPLIT,
    "smollm": GPT2_SPLIT,
    "starcoder": GPT2_SPLIT,
    "refact": GPT2_SPLIT,
    "llama3": _LLAMA3,
    "llama-bpe": _LLAMA3,
    "llama-v3": _LLAMA3,
    "dbrx": _LLAMA3,
    "smaug-bpe": _LLAMA3,
    "qwen2": _QWEN2,
    "qwen35": _QWEN2,
    "deepseek-r1-qwen": _QWEN2,
}
DIGITS_ONE_BY_ONE = ("smollm", "starcoder", "refact")


def pre_split(meta: dict) -> tuple[str, bool, str | None]:
    """(regex, split digits one by one, warning) for a byte-level BPE vocabulary."""
    pre = meta.get("tokenizer.ggml.pre") or "default"
    if isinstance(pre, str) and pre in PRE_SPLITS:
        return PRE_SPLITS[pre], pre in DIGITS_ONE_BY_ONE, None
    return GPT2_SPLIT, False, f"pre-tokenizer {shown(pre)} is unknown here: GPT-2's split is used"


def spm_merges(tokens: list[str], scores: list[float], types: list[int]) -> list[tuple[str, str]]:
    """Merge rules equivalent to SentencePiece's highest-score-first merging:
    each split of a normal piece into two normal pieces, best merged score first."""
    normal = {t: i for i, t in enumerate(tokens) if not types or types[i] == TOKEN_NORMAL}
    found = []
    for piece, i in normal.items():
        score = scores[i] if scores else -i
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in normal and right in normal:
                found.append((-score, normal[left], normal[right], left, right))
    found.sort()
    return [(left, right) for *_, left, right in found]


def build_tokenizer_json(meta: dict) -> str:
    """A Hugging Face `tokenizer.json` for this GGUF's vocabulary.

    The metadata is checked first (`gguf_vocab_check`); should the `tokenizers`
    library still refuse it, its message (which quotes tokens whole) is cut short.

    Raises:
        ModelError: the vocabulary cannot be rebuilt, in one line.
    """
    try:
        return _build(meta)
    except ModelError:
        raise
    except Exception as e:  # noqa: BLE001 - the library's own refusal of the file's data
        raise ModelError(_refused(e)) from None
    except BaseException as e:  # a panic in the library's native code
        if type(e).__name__ != "PanicException":
            raise
        raise ModelError(_refused(e)) from None


def _refused(e: BaseException) -> str:
    first = (str(e).splitlines() or [""])[0]
    return f"the GGUF's vocabulary could not be rebuilt as a tokenizer: {shown(first, 120)}"


def _build(meta: dict) -> str:
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

    kind = meta.get("tokenizer.ggml.model")
    tokens = list(meta["tokenizer.ggml.tokens"])
    types = list(meta.get("tokenizer.ggml.token_type") or [])
    vocab = {tok: i for i, tok in enumerate(tokens)}
    if kind == "gpt2":
        merges = [tuple(m.split(" ", 1)) for m in meta.get("tokenizer.ggml.merges", [])]
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
        regex, digits, _ = pre_split(meta)
        from tokenizers import Regex

        pre = [
            pre_tokenizers.Split(Regex(regex), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
        if digits:
            pre.insert(0, pre_tokenizers.Digits(individual_digits=True))
        tok.pre_tokenizer = pre_tokenizers.Sequence(pre)
        tok.decoder = decoders.ByteLevel()
    elif kind == "llama":
        scores = list(meta.get("tokenizer.ggml.scores") or [])
        unk_id = meta.get("tokenizer.ggml.unknown_token_id")
        unk = tokens[unk_id] if isinstance(unk_id, int) else None
        model = models.BPE(
            vocab=vocab,
            merges=spm_merges(tokens, scores, types),
            unk_token=unk,
            fuse_unk=True,
            byte_fallback=True,
        )
        tok = Tokenizer(model)
        steps = [normalizers.Replace(" ", SPM_SPACE)]
        decode = [decoders.Replace(SPM_SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
        if meta.get("tokenizer.ggml.add_space_prefix", True):
            steps.insert(0, normalizers.Prepend(SPM_SPACE))
            decode.append(decoders.Strip(" ", 1, 0))
        tok.normalizer = normalizers.Sequence(steps)
        tok.decoder = decoders.Sequence(decode)
    else:
        raise ModelError(
            f"the GGUF's tokenizer kind {shown(kind)} cannot be rebuilt: Logitscope reads "
            "byte-level BPE ('gpt2') and SentencePiece ('llama') vocabularies"
        )
    tok.add_special_tokens(
        [
            AddedToken(tokens[i], special=True, normalized=False)
            for i, t in enumerate(types)
            if t == TOKEN_CONTROL
        ]
    )
    tok.add_tokens(
        [
            AddedToken(tokens[i], special=False, normalized=False)
            for i, t in enumerate(types)
            if t == TOKEN_USER_DEFINED
        ]
    )
    _bos_processor(tok, meta, tokens)
    return tok.to_str(pretty=False)


def _bos_processor(tok, meta: dict, tokens: list[str]) -> None:
    """Prepend BOS to encoded text when the file says so (never to chat-templated
    text, which the template starts with BOS itself and encodes without specials)."""
    from tokenizers import processors

    bos_id = meta.get("tokenizer.ggml.bos_token_id")
    if meta.get("tokenizer.ggml.add_bos_token") and isinstance(bos_id, int):
        bos = tokens[bos_id]
        if unfit_bos(bos):  # the template syntax would read it as something else
            raise ModelError(f"the GGUF's BOS token {shown(bos)} cannot be prepended: {BOS_RULE}")
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)]
        )


def build_tokenizer_config(meta: dict, context_length: int | None = None) -> dict:
    """`tokenizer_config.json`: special tokens and the chat template (the file's own;
    the architecture's standard one when the file has none, see chat_templates)."""
    from engine.models.chat_templates import default_template

    tokens = meta["tokenizer.ggml.tokens"]

    def name(key):
        """The token whose id the metadata `key` holds, or None."""
        idx = meta.get(key)
        return tokens[idx] if isinstance(idx, int) and 0 <= idx < len(tokens) else None

    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": name("tokenizer.ggml.bos_token_id"),
        "eos_token": name("tokenizer.ggml.eos_token_id"),
        "unk_token": name("tokenizer.ggml.unknown_token_id"),
        "pad_token": name("tokenizer.ggml.padding_token_id"),
        "add_bos_token": bool(meta.get("tokenizer.ggml.add_bos_token", False)),
        "clean_up_tokenization_spaces": False,
        "model_max_length": context_length or 2048,
    }
    template = meta.get("tokenizer.chat_template")
    if not template:
        template = default_template(meta.get("general.architecture", ""), set(tokens[:300_000]))
        if template:
            config["logitscope_template"] = (
                "the architecture's standard template (the file has none)"
            )
    if template:
        config["chat_template"] = template
    return {k: v for k, v in config.items() if v is not None}
