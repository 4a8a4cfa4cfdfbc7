"""Which token a text is read after (engine/backends/mlx/read_pass.start_token_id)."""

from __future__ import annotations

from types import SimpleNamespace

from engine.backends.mlx.read_pass import start_token_id

VOCAB = {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2, "a": 3}


def tokenizer(adds_bos: bool, vocab=VOCAB, bos=1, eos=2, unk=0):
    ids = {v: k for k, v in vocab.items()}
    return SimpleNamespace(
        bos_token_id=bos,
        eos_token_id=eos,
        unk_token_id=unk,
        encode=lambda text: ([bos] if adds_bos else []) + [vocab["a"]],
        convert_tokens_to_ids=lambda name: vocab.get(name, unk),
        convert_ids_to_tokens=lambda i: ids[i],
    )


def test_the_bos_a_tokenizer_adds_itself_comes_first():
    assert start_token_id(tokenizer(adds_bos=True)) == 1


def test_a_chat_marker_bos_gives_way_to_the_document_separator():
    # SmolLM2: bos <|im_start|> (never added), <|endoftext|> also the unknown token.
    assert start_token_id(tokenizer(adds_bos=False)) == 0


def test_without_a_separator_bos_then_eos():
    vocab = {"<s>": 5, "</s>": 6, "<unk>": 7, "a": 3}
    assert start_token_id(tokenizer(False, vocab, bos=5, eos=6, unk=7)) == 5
    assert start_token_id(tokenizer(False, vocab, bos=None, eos=6, unk=7)) == 6
    assert start_token_id(tokenizer(False, vocab, bos=None, eos=None, unk=7)) is None
