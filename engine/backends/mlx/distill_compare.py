"""Teacher and student on the same text: how closely the student follows, token by token.

Both models read the text teacher-forced after the teacher's start token. With one
vocabulary (the same output width and the same bytes for every token id, and the
same ids for the text) both are fed the same chunks through their own KV caches,
and each chunk's two (L, V) logit arrays are reduced on the device to a few numbers
per token: KL(teacher ‖ student) over the FULL vocabulary, top-1 agreement, the
student's probability of the teacher's top-1, each model's log-probability of the
text's token, and each one's top candidates. The host never holds (tokens x V).

With two vocabularies the distributions are over different sets of pieces at
different positions, so KL is not defined: each model reads the text on its own
and they are compared per byte (bits per byte)
and per word (each word's surprisal, engine/reading/compare_reads.py).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import mlx.core as mx

from engine.backends.mlx.read_pass import encode_read, plan_read
from engine.lab import DistillParams, DistillResult
from engine.lab.reporter import LabReporter, reporter_of
from engine.reading.compare_reads import NO_TOKEN_KL, align_words, words_of
from engine.reading.request import ReadRequest
from engine.run.records import TopToken, token_label

LN2 = math.log(2.0)
SAME_WHY = (
    "One vocabulary: per token, KL(teacher ‖ student) over the full vocabulary (nats), "
    "top-1 agreement and each model's cross-entropy against the text."
)


def same_vocabulary(teacher, student) -> bool:
    """The two LoadedModels share a vocabulary: the same output width and the same
    bytes for every token id (a tokenizer.json hash would miss converted copies)."""
    if teacher.vocab_size != student.vocab_size:
        return False
    return all(teacher.token_bytes(i) == student.token_bytes(i) for i in range(teacher.vocab_size))


def compare_models(
    teacher, student, params: DistillParams, names=("teacher", "student"), progress=None
) -> DistillResult:
    """Read `params.text` through both LoadedModels and compare them (see the module).

    Args:
        teacher, student: the two LoadedModels (engine/backends/mlx/generate.py).
        params: the text, the top-n kept, the rows listed, the chunk.
        names: how the result names the teacher and the student.
        progress: a (message, fraction) callback or a LabReporter (its cancel is
            checked between chunks).

    Returns:
        The DistillResult.

    Raises:
        SettingsError: an empty text, or one longer than either model's context.
    """
    reporter = reporter_of(progress)
    t0 = time.perf_counter()
    request = ReadRequest(params.text, long_text="refuse", top_n=params.top, sweep=False)
    same = same_vocabulary(teacher, student)
    if same:
        ids = encode_read(teacher, request)[0]
        same = ids == encode_read(student, request)[0]
    if same:
        fields = _by_tokens(teacher, student, request, params, reporter)
    else:
        fields = _by_words(teacher, student, request, params, reporter)
    return DistillResult(
        teacher=names[0],
        student=names[1],
        text_bytes=len(params.text.encode("utf-8")),
        seconds=time.perf_counter() - t0,
        **fields,
    )


def reduce_pair(t_logits: mx.array, s_logits: mx.array, targets: mx.array, n: int) -> dict:
    """One chunk of both models, reduced on the device.

    Args:
        t_logits, s_logits: (L, V) the teacher's and the student's logits.
        targets: (L,) the text's next tokens.
        n: top candidates kept per model.

    Returns:
        Lists of L values: kl, agree, p_teacher_top, teacher_logprob, student_logprob,
        and (L, n) teacher_top_ids / teacher_top_p / student_top_ids / student_top_p.
    """
    tlp = _log_softmax(t_logits)  # (L, V)
    slp = _log_softmax(s_logits)
    kl = mx.sum(mx.exp(tlp) * (tlp - slp), axis=-1)  # (L,)
    t_top = mx.argmax(tlp, axis=-1)  # (L,)
    agree = t_top == mx.argmax(slp, axis=-1)
    p_t_top = mx.exp(mx.take_along_axis(slp, t_top[:, None], axis=-1)[:, 0])
    col = targets[:, None]  # (L, 1)
    lp_t = mx.take_along_axis(tlp, col, axis=-1)[:, 0]
    lp_s = mx.take_along_axis(slp, col, axis=-1)[:, 0]
    out = {"kl": kl, "agree": agree, "p_teacher_top": p_t_top}
    out |= {"teacher_logprob": lp_t, "student_logprob": lp_s}
    for who, lp in (("teacher", tlp), ("student", slp)):
        idx = mx.argpartition(-lp, kth=n - 1, axis=-1)[:, :n]  # (L, n)
        vals = mx.take_along_axis(lp, idx, axis=-1)
        order = mx.argsort(-vals, axis=-1)
        out[f"{who}_top_ids"] = mx.take_along_axis(idx, order, axis=-1)
        out[f"{who}_top_p"] = mx.exp(mx.take_along_axis(vals, order, axis=-1))
    mx.eval(list(out.values()))
    return {k: v.tolist() for k, v in out.items()}


def _log_softmax(logits: mx.array) -> mx.array:
    """Log-probabilities, in float64 on the CPU: MLX's float32 exp there is off by ~1e-4
    over a 49k vocabulary; a GPU has no float64 and keeps float32."""
    wide = mx.float64 if mx.default_device() == mx.cpu else mx.float32
    x = logits.astype(wide)
    return x - mx.logsumexp(x, axis=-1, keepdims=True)


def _by_tokens(teacher, student, request, params: DistillParams, reporter: LabReporter) -> dict:
    """Both models fed the same chunks; the DistillResult's per-token fields."""
    from mlx_lm.models.cache import make_prompt_cache

    from engine.backends.mlx.prompt_reuse import new_cache

    plan = plan_read(teacher, request)  # refuses a text beyond the teacher's context
    plan_read(student, request)  # … and beyond the student's
    ids, n_ctx = plan.ids, plan.n_context
    chunk = params.chunk_tokens or plan.chunk
    caches = [new_cache(lm, make_prompt_cache) for lm in (teacher, student)]
    n = min(params.top, teacher.vocab_size - 1)
    rows: dict[str, list] = {}
    a = 0
    while a < len(ids) - 1:  # inputs ids[a:b] predict ids[a+1:b+1]
        if reporter.should_stop():
            from engine.errors import SettingsError

            raise SettingsError("cancelled")
        b = min(a + chunk, len(ids) - 1)
        x = mx.array(ids[a:b])[None]  # (1, L)
        t_logits = teacher.model(x, cache=caches[0])[0]  # (L, V)
        s_logits = student.model(x, cache=caches[1])[0]
        stats = reduce_pair(t_logits, s_logits, mx.array(ids[a + 1 : b + 1]), n)
        if a < n_ctx - 1:  # a context's own predictions are not the text's
            stats = {k: v[n_ctx - 1 - a :] for k, v in stats.items()}
        for k, v in stats.items():
            rows.setdefault(k, []).extend(v)
        a = b
        reporter(f"read {a + 1 - n_ctx:,} of {len(ids) - n_ctx:,} tokens", a / (len(ids) - 1))
    text_ids = ids[n_ctx:]
    kl = [max(k, 0.0) for k in rows["kl"]]
    most = tuple(sorted(range(len(kl)), key=lambda i: (-kl[i], i))[: params.most])
    lp_t, lp_s = rows["teacher_logprob"], rows["student_logprob"]
    nbytes = len(request.text.encode("utf-8"))
    top, labels = {}, {}
    for who, lm in (("teacher", teacher), ("student", student)):
        ids, ps = rows[f"{who}_top_ids"], rows[f"{who}_top_p"]
        top[who] = {
            str(i): [(int(t), float(p)) for t, p in zip(ids[i], ps[i], strict=True)] for i in most
        }
        used = {t for pairs in top[who].values() for t, _p in pairs}
        labels[who] = {str(t): token_label(lm.token_bytes(t)) for t in used}
    return dict(
        same_tokenizer=True,
        why=SAME_WHY,
        labels=tuple(token_label(teacher.token_bytes(t), f"<{t}>") for t in text_ids),
        kl=tuple(kl),
        agree=tuple(bool(v) for v in rows["agree"]),
        p_teacher_top=tuple(rows["p_teacher_top"]),
        teacher_logprob=tuple(lp_t),
        student_logprob=tuple(lp_s),
        mean_kl=math.fsum(kl) / len(kl),
        agreement=sum(bool(v) for v in rows["agree"]) / len(kl),
        teacher_ce=-math.fsum(lp_t) / len(lp_t),
        student_ce=-math.fsum(lp_s) / len(lp_s),
        teacher_bits_per_byte=-math.fsum(lp_t) / LN2 / nbytes,
        student_bits_per_byte=-math.fsum(lp_s) / LN2 / nbytes,
        most=most,
        top=top,
        token_labels=labels,
    )


@dataclass(frozen=True)
class _Token:
    """What words_of needs of a read token, and its candidates."""

    step: int
    logprob: float
    bytes: tuple[int, ...]
    text: str
    top: tuple[TopToken, ...]


def _read(lm, request, reporter: LabReporter, share: tuple[float, float]) -> list[_Token]:
    """`lm` reads `request` alone in chunks (the reduction as reduce_pair's, float64 on
    the CPU); its tokens. A cancel raises SettingsError."""
    from mlx_lm.models.cache import make_prompt_cache

    from engine.backends.mlx.prompt_reuse import new_cache
    from engine.errors import SettingsError

    plan = plan_read(lm, request)
    ids, n_ctx, cache = plan.ids, plan.n_context, new_cache(lm, make_prompt_cache)
    n, out, a = min(request.top_n, lm.vocab_size - 1), [], 0
    while a < len(ids) - 1:
        if reporter.should_stop():
            raise SettingsError("cancelled")
        b = min(a + plan.chunk, len(ids) - 1)
        lp = _log_softmax(lm.model(mx.array(ids[a:b])[None], cache=cache)[0])  # (L, V)
        chosen = mx.take_along_axis(lp, mx.array(ids[a + 1 : b + 1])[:, None], axis=-1)[:, 0]
        idx = mx.argpartition(-lp, kth=n - 1, axis=-1)[:, :n]
        vals = mx.take_along_axis(lp, idx, axis=-1)
        mx.eval(chosen, idx, vals)
        for i, (c, row, v) in enumerate(
            zip(chosen.tolist(), idx.tolist(), vals.tolist(), strict=True)
        ):
            pos = a + 1 + i
            if pos < n_ctx:
                continue
            cands = sorted(zip(row, v, strict=True), key=lambda t: -t[1])
            top = tuple(
                TopToken(int(t), token_label(lm.token_bytes(t)), float(q), tuple(lm.token_bytes(t)))
                for t, q in cands
            )
            raw = lm.token_bytes(ids[pos])
            out.append(_Token(pos - n_ctx, c, tuple(raw), raw.decode("utf-8", "replace"), top))
        a = b
        reporter(f"read {a + 1 - n_ctx:,} tokens", share[0] + share[1] * a / (len(ids) - 1))
    return out


def _by_words(teacher, student, request, params: DistillParams, reporter: LabReporter) -> dict:
    """Each model read on its own; the DistillResult's per-word fields."""
    reads = [
        _read(teacher, request, reporter, (0.0, 0.5)),
        _read(student, request, reporter, (0.5, 0.5)),
    ]
    words = [words_of(r) for r in reads]
    rows = align_words(*words)
    bits = [
        [None if r[side] is None else w[r[side]].bits for r in rows] for side, w in enumerate(words)
    ]
    labels = []
    for row in rows:
        names = [w[k].text for w, k in zip(words, row, strict=True) if k is not None]
        labels.append(names[0] if len(set(names)) == 1 else " / ".join(names))
    gaps = [-1.0 if a is None or b is None else abs(b - a) for a, b in zip(*bits, strict=True)]
    most = tuple(sorted(range(len(rows)), key=lambda r: (-gaps[r], r))[: params.most])
    top, token_labels = {}, {}
    for side, who in enumerate(("teacher", "student")):
        firsts = {}  # row -> the step of the word's first token in this read
        for r in most:
            k = rows[r][side]
            if k is not None and words[side][k].steps:
                firsts[str(r)] = words[side][k].steps[0]
        cands = {r: reads[side][s].top for r, s in firsts.items()}
        top[who] = {r: [(c.token_id, math.exp(c.logprob)) for c in cs] for r, cs in cands.items()}
        token_labels[who] = {
            str(c.token_id): token_label(c.bytes, c.text) for cs in cands.values() for c in cs
        }
    nbytes = len(request.text.encode("utf-8"))
    total = [-math.fsum(r.logprob for r in read) / LN2 for read in reads]
    return dict(
        same_tokenizer=False,
        why=NO_TOKEN_KL,
        labels=tuple(labels),
        teacher_bits=tuple(bits[0]),
        student_bits=tuple(bits[1]),
        teacher_bits_per_byte=total[0] / nbytes,
        student_bits_per_byte=total[1] / nbytes,
        most=most,
        top=top,
        token_labels=token_labels,
    )
