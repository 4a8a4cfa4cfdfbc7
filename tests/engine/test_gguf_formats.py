"""GGUF files of every architecture, tensor type and tokenizer kind, written in the
test with llama.cpp's own writer: the converted model's logits equal those of the
mlx-lm model holding the file's (dequantized) weights."""

from __future__ import annotations

import json

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.gguf_convert import convert_gguf
from engine.errors import ModelError
from tests.gguf_models import write_model_gguf

IDS = [3, 70, 41, 99, 7, 150, 12, 33, 260, 5, 88, 19]


def _logits(model, ids=IDS) -> np.ndarray:
    return np.array(model(mx.array(ids)[None])[0].astype(mx.float32))


def _convert(tmp_path, arch, qtype, **kw):
    from mlx_lm import load

    path, reference = write_model_gguf(tmp_path / f"{arch}-{qtype}.gguf", arch, qtype, **kw)
    out = tmp_path / f"{arch}-{qtype}"
    convert_gguf(path, out)
    model, tokenizer = load(str(out))
    return model, reference, json.loads((out / "config.json").read_text()), out


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "gemma3", "phi3"])
def test_each_architecture_converts_to_the_same_model(tmp_path, arch):
    model, reference, config, _ = _convert(tmp_path, arch, "F32")
    got, want = _logits(model), _logits(reference)
    assert np.abs(got - want).max() < 1e-4 * max(1.0, np.abs(want).max())
    assert config["logitscope_source"]["label"] == "GGUF F32 → MLX float32"


# Exact: the file's own integers, scales and biases repacked (float16 scales).
# Re-quantized: more bits than the source, a small part of the source's own error.
EXACT = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K"]
REQUANT = ["Q6_K", "Q3_K", "Q2_K", "IQ4_NL", "IQ4_XS", "IQ3_S"]


@pytest.mark.parametrize("qtype", EXACT + REQUANT)
def test_each_quant_type_keeps_the_files_numbers(tmp_path, qtype):
    model, reference, config, _ = _convert(tmp_path, "qwen3", qtype)
    got, want = _logits(model), _logits(reference)
    rel = np.sqrt(((got - want) ** 2).mean()) / want.std()
    # the quantization's own error: the same weights quantized by the source type
    assert rel < (0.01 if qtype in EXACT else 0.05), rel
    assert (got.argmax(-1) == want.argmax(-1)).mean() >= 0.9
    label = config["logitscope_source"]["label"]
    assert label.startswith(f"GGUF {qtype} → MLX ")
    if qtype in EXACT:
        assert f"MLX {8 if qtype == 'Q8_0' else qtype[1]}-bit, group 32" in label
    assert ("re-quantized" in label) == (qtype in REQUANT), label


@pytest.mark.parametrize("qtype", ["F32", "F16", "BF16", "Q8_0", "Q4_K", "Q6_K", "IQ4_XS"])
def test_the_tensor_views_are_what_llama_cpps_reader_gives(tmp_path, qtype):
    """file_tensors (from the checked header) against gguf.GGUFReader on the same file:
    every tensor's name, type, shape and data (dtype, shape, bytes), in the same order."""
    import gguf

    from engine.backends.mlx.gguf_tensors import file_tensors
    from engine.models.gguf_check import check_gguf

    path, _ = write_model_gguf(tmp_path / f"{qtype}.gguf", "qwen3", qtype)
    ours = file_tensors(path, check_gguf(path))
    theirs = gguf.GGUFReader(str(path)).tensors
    assert [t.name for t in ours] == [t.name for t in theirs] and len(ours) > 5
    assert {t.tensor_type.name for t in ours} == {"F32", qtype}  # the norms stay F32
    for a, b in zip(ours, theirs, strict=True):
        assert a.tensor_type == b.tensor_type and a.shape.tolist() == b.shape.tolist()
        assert a.data.dtype == b.data.dtype and a.data.shape == b.data.shape
        assert a.data.tobytes() == b.data.tobytes()


@pytest.mark.parametrize("bits", range(1, 9))
def test_packed_words_are_a_little_endian_bit_stream(bits):
    """pack_bits against the stream written out bit by bit in Python: value j of a row
    holds bits j*bits .. j*bits+bits-1, the lowest first, in 32-bit words."""
    from engine.backends.mlx.gguf_tensors import pack_bits

    q = np.random.default_rng(bits).integers(0, 2**bits, size=(3, 64))
    words = pack_bits(q, bits)
    assert words.dtype == np.uint32 and words.shape == (3, 64 * bits // 32)
    for row, packed in zip(q, words, strict=True):
        stream = [(int(v) >> b) & 1 for v in row for b in range(bits)]
        want = [
            sum(bit << i for i, bit in enumerate(stream[w : w + 32]))
            for w in range(0, len(stream), 32)
        ]
        assert packed.tolist() == want


def test_the_probe_check_upcasts_only_a_quantized_model(tmp_path, monkeypatch):
    """The converted model's probe runs as the engine's CPU paths run it: a quantized one
    with float32 scales and activations, its rows on BLAS; a float16 one as stored (no
    float32 copy of its weights)."""
    from engine.backends.mlx import compute_path

    upcast = []
    real = compute_path.stored_float32
    monkeypatch.setattr(compute_path, "stored_float32", lambda m: upcast.append(m) or real(m))
    _convert(tmp_path, "qwen3", "F16")
    assert upcast == []
    _convert(tmp_path, "qwen3", "Q8_0")
    assert len(upcast) == 1


def test_a_type_nothing_reads_is_named(tmp_path):
    from engine.backends.mlx.gguf_tensors import layout_for

    with pytest.raises(ModelError, match="tensor type Q4_0_4_4 cannot be read"):
        layout_for("Q4_0_4_4")


def test_sentencepiece_vocabulary_equals_sentencepiece(tmp_path):
    """A SentencePiece BPE model trained here (byte fallback, user-defined pieces),
    written as llama.cpp does, rebuilds into a tokenizer that encodes like the
    sentencepiece library itself, and the conversion's own check agrees."""
    import sentencepiece as spm
    from tokenizers import Tokenizer

    from engine.models.gguf_reference_tokenizer import CHECK_STRINGS

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join([*CHECK_STRINGS[:4]] * 20 + ["the cat sat on the mat"] * 50))
    prefix = str(tmp_path / "sp")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=prefix,
        vocab_size=400,
        model_type="bpe",
        byte_fallback=True,
        character_coverage=1.0,
        user_defined_symbols=["<start_of_turn>"],
        minloglevel=2,
        # as Llama's and Gemma's: no text normalization
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
    )
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    scores = [sp.get_score(i) for i in range(sp.get_piece_size())]
    types = [
        2
        if sp.is_unknown(i)
        else 3
        if sp.is_control(i)
        else 6
        if sp.is_byte(i)
        else 4
        if p == "<start_of_turn>"
        else 1
        for i, p in enumerate(pieces)
    ]
    _model, _ref, config, out = _convert(tmp_path, "llama", "F32", spm=(pieces, scores, types))
    check = config["logitscope_source"]["tokenizer_check"]
    assert check["strings"] == len(CHECK_STRINGS) and check["mismatches"] == []
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    for text in [*CHECK_STRINGS, "the cat sat  on", "x"]:
        assert tok.encode(text, add_special_tokens=False).ids == sp.encode(text), text
        assert tok.decode(sp.encode(text)) == sp.decode(sp.encode(text))
    # A user-defined piece is matched whole; like llama.cpp (not sentencepiece),
    # the text after it gets the space prefix again.
    ids = tok.encode("the cat<start_of_turn>sat", add_special_tokens=False).ids
    turn = pieces.index("<start_of_turn>")
    assert ids == [*sp.encode("the cat"), turn, *sp.encode("sat")]


def test_a_tokenizer_mismatch_is_reported_not_hidden():
    """The conversion-time check compares against llama.cpp's algorithm: a
    rebuilt tokenizer that splits differently shows up in its mismatches."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    from engine.models.gguf_reference_tokenizer import check_tokenizer
    from tests.gguf_fixtures import _vocab

    tokens, merges = _vocab()
    meta = {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.merges": merges,
    }
    wrong = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=[]))
    wrong.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    result = check_tokenizer(meta, wrong.to_str(), strings=("the thing in an inn",))
    assert len(result["mismatches"]) == 1
    assert result["mismatches"][0]["text"] == "the thing in an inn"
