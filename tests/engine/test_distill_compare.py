"""Teacher vs student on one text: KL, agreement, the student's p of the teacher's top-1
and cross-entropy equal NumPy float64 from bare mlx-lm logits (one vocabulary: the
default model at float32 vs a 3-bit copy of it); across tokenizers (SmolLM2 vs Gemma)
bits per byte and per-word surprisal, and KL said to be undefined."""

from __future__ import annotations

import math
import subprocess
import sys

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest

from engine.backends.mlx.distill_compare import compare_models, same_vocabulary
from engine.lab import DistillParams
from engine.reading.compare_reads import NO_TOKEN_KL

TEXT = "The cat sat on the mat because it was warm."
TOL = 1e-5


def _ids(lm, text: str) -> list[int]:
    """The start token the engine reads after, then the text's ids."""
    from engine.backends.mlx.read_pass import encode_read
    from engine.reading.request import ReadRequest

    return encode_read(lm, ReadRequest(text))[0]


def _log_softmax64(lm, ids) -> np.ndarray:
    """(T-1, V) float64 log-probabilities from one bare forward pass over ids[:-1]."""
    logits = lm.model(mx.array(ids[:-1])[None])[0].astype(mx.float32)
    x = np.array(logits, dtype=np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


@pytest.fixture(scope="module")
def three_bit(default_model_path, smollm):
    """A fresh copy of the default model (bare mlx-lm load, dequantized to float32)
    re-quantized to 3 bits: its own weights, nothing shared with `smollm`."""
    from mlx_lm import load

    from engine.backends.mlx.compute_path import dequantize_float32
    from engine.backends.mlx.generate import LoadedModel

    model = dequantize_float32(load(str(default_model_path))[0])
    nn.quantize(model, group_size=64, bits=3)
    mx.eval(model.parameters())
    return LoadedModel(model, smollm.tokenizer, smollm.context_length, smollm.vocab_size)


def test_same_vocabulary_against_numpy(smollm, three_bit):
    assert same_vocabulary(smollm, three_bit)
    params = DistillParams("student", TEXT, top=5, most=4)  # one chunk: the bare pass's shapes
    r = compare_models(smollm, three_bit, params)
    ids = _ids(smollm, TEXT)
    tlp, slp = _log_softmax64(smollm, ids), _log_softmax64(three_bit, ids)
    targets = np.array(ids[1:])
    rows = np.arange(len(targets))
    kl = (np.exp(tlp) * (tlp - slp)).sum(-1)
    assert r.same_tokenizer and len(r.kl) == len(targets) == len(r.labels)
    np.testing.assert_allclose(r.kl, kl, atol=TOL)
    assert kl.max() > 1e-3  # 3 bits move the distribution: the comparison is not vacuous
    assert r.agree == tuple(bool(a) for a in tlp.argmax(-1) == slp.argmax(-1))
    np.testing.assert_allclose(r.p_teacher_top, np.exp(slp[rows, tlp.argmax(-1)]), atol=TOL)
    np.testing.assert_allclose(r.teacher_logprob, tlp[rows, targets], atol=TOL)
    np.testing.assert_allclose(r.student_logprob, slp[rows, targets], atol=TOL)
    assert r.teacher_ce == pytest.approx(-tlp[rows, targets].mean(), abs=TOL)
    assert r.student_ce == pytest.approx(-slp[rows, targets].mean(), abs=TOL)
    assert r.mean_kl == pytest.approx(kl.mean(), abs=TOL)
    assert r.agreement == pytest.approx(np.mean(tlp.argmax(-1) == slp.argmax(-1)))
    assert list(r.most) == list(np.argsort(-kl, kind="stable")[:4])
    worst = r.most[0]  # its two distributions, side by side
    best_t = np.argsort(-tlp[worst])[:5]
    assert [t for t, _p in r.top["teacher"][str(worst)]] == best_t.tolist()
    np.testing.assert_allclose(
        [p for _t, p in r.top["student"][str(worst)]],
        np.sort(np.exp(slp[worst]))[::-1][:5],
        atol=TOL,
    )
    assert r.labels[1] == " cat"
    chunked = compare_models(smollm, three_bit, DistillParams("s", TEXT, chunk_tokens=4))
    np.testing.assert_allclose(chunked.kl, kl, atol=1e-4)  # 3 chunks: other kernel shapes


def test_across_tokenizers_per_byte(smollm, gemma):
    text = "Water boils at a hundred degrees."
    assert not same_vocabulary(smollm, gemma)
    r = compare_models(smollm, gemma, DistillParams("gemma", text, top=5, most=3))
    assert not r.same_tokenizer and r.kl == () and r.why == NO_TOKEN_KL
    nbytes = len(text.encode())
    for lm, bpb, words in (
        (smollm, r.teacher_bits_per_byte, r.teacher_bits),
        (gemma, r.student_bits_per_byte, r.student_bits),
    ):
        ids = _ids(lm, text)
        lp = _log_softmax64(lm, ids)
        bits = -lp[np.arange(len(ids) - 1), ids[1:]].sum() / math.log(2)
        assert bpb == pytest.approx(bits / nbytes, abs=TOL)
        assert math.fsum(w for w in words if w is not None) == pytest.approx(bits, abs=1e-4)
    assert r.labels[:3] == ("Water", "boils", "at")
    assert len(r.most) == 3 and set(r.top) == {"teacher", "student"}


def _distill_json(student, tmp_path, words: str):
    """`logitscope lab distill --student STUDENT --text FILE --json` on `words`: the text
    file and the printed JSON (the command must succeed)."""
    import json

    text = tmp_path / "t.txt"
    text.write_text(words)
    cmd = [sys.executable, "-m", "engine", "lab", "distill", "--student", str(student)]
    done = subprocess.run(
        [*cmd, "--text", str(text), "--json"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return text, json.loads(done.stdout)


def test_command_line(default_model_path, tmp_path):
    """`lab distill` with the model as its own stored student; bad input: one line, exit 2."""

    cmd = [sys.executable, "-m", "engine", "lab", "distill", "--student", str(default_model_path)]
    text, out = _distill_json(default_model_path, tmp_path, "Paris is the capital of France.")
    assert out["same_tokenizer"] and "as stored" in out["student"]
    assert len(out["kl"]) == len(out["labels"]) and out["mean_kl"] < 1e-2
    bad = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "--text-str" in bad.stderr


REFERENCE = """
import json, sys
import numpy as np, mlx.core as mx, mlx.nn as nn
from mlx_lm import load
teacher, student, text_file = sys.argv[1:4]
text = open(text_file, encoding="utf-8").read()
def float32(model):
    wide = [(k, v.astype(mx.float32)) for k, v in nn.utils.tree_flatten(model.parameters())
            if v.dtype in (mx.float16, mx.bfloat16)]
    model.load_weights(wide, strict=False)
    return model
(tm, tok), (sm, _) = load(teacher), load(student)
ids = [tok.convert_tokens_to_ids("<|endoftext|>")] + tok.encode(text, add_special_tokens=False)
def logp(m):
    x = np.array(float32(m)(mx.array(ids[:-1])[None])[0].astype(mx.float32), dtype=np.float64)
    x -= x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))
t, s = logp(tm), logp(sm)
print(json.dumps((np.exp(t) * (t - s)).sum(-1).tolist()))
"""


def test_command_line_against_an_independent_reference(default_model_path, tmp_path):
    """`lab distill` against a 3-bit copy made by `mlx_lm convert`, equal to NumPy float64
    on bare mlx-lm logits computed in a separate process that imports nothing of the
    project (float32 scales and activations; the text read after <|endoftext|>, the start
    token the engine reads SmolLM2's texts after). The default model is stored quantized:
    `mlx_lm convert -q` on it keeps its 4-bit layers as they are (the copy is identical,
    KL 0), so the copy is dequantized first (`-d`), then quantized to 3 bits."""
    import json

    from mlx_lm.convert import convert  # what `mlx_lm convert` runs, here in-process

    wide, small = tmp_path / "f16", tmp_path / "q3"
    convert(str(default_model_path), str(wide), dequantize=True)
    convert(str(wide), str(small), quantize=True, q_bits=3, q_group_size=32)
    assert json.loads((small / "config.json").read_text())["quantization"]["bits"] == 3
    fox = "The quick brown fox jumps over the lazy dog while the farmer watches."
    text, engine = _distill_json(small, tmp_path, fox)
    ref = subprocess.run(
        [sys.executable, "-c", REFERENCE, str(default_model_path), str(small), str(text)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert ref.returncode == 0, ref.stderr
    kl = np.array(json.loads(ref.stdout))
    assert len(engine["kl"]) == len(kl) and kl.mean() > 0.1  # 3 bits move it: not vacuous
    np.testing.assert_allclose(engine["kl"], kl, atol=1e-3)
    assert engine["mean_kl"] == pytest.approx(kl.mean(), abs=1e-4)


def test_the_quick_student_is_the_teacher_requantized_and_differs(default_model_path, three_bit):
    """The Lab's and the tour's quick default: the teacher's own folder re-quantized to
    QUICK_STUDENT_BITS equals the bare mlx-lm 3-bit copy, and is a real student (KL > 0)."""
    from engine.backends.mlx.distill_runs import compare_experiment
    from engine.backends.mlx.loader import load_model
    from engine.lab.params import QUICK_STUDENT_BITS

    assert QUICK_STUDENT_BITS == 3
    teacher = load_model(default_model_path, prefer="speed")[0]
    params = DistillParams(str(default_model_path), TEXT, student_bits=QUICK_STUDENT_BITS)
    r = compare_experiment(teacher, default_model_path, params, lambda *a: None)
    bare = compare_models(teacher, three_bit, DistillParams("s", TEXT))
    np.testing.assert_allclose(r.kl, bare.kl, atol=1e-4)
    assert r.mean_kl > 0.05 and r.agreement < 1.0  # not the teacher against itself
    assert r.student.endswith("re-quantized to 3-bit")
    with pytest.raises(Exception, match="2, 3, 4, 5, 6 or 8 bits"):
        DistillParams("s", TEXT, student_bits=7)
