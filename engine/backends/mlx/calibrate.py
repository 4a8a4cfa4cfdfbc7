"""Confidence against correctness: each question answered greedily and N times sampled in
one batched pass, its confidence signals, then the set's AUROC, calibration and
risk-coverage (engine/lab/confidence_metrics.py).

The prompt asks for the shortest answer (ANSWER_SYSTEM, two worked examples). One
question is one batch of 1 + N rows continuing the same prompt: the prompt is prefilled
once (the part every question shares once a set: prefix_cache.py), its KV cache repeated
for every row, and the rows decode together: row 0 greedy
(the answer that is judged), rows 1..N sampled at `temperature`. A row ends at an
end-of-sequence token or a newline (the answer is its first line) or after `max_tokens`;
a greedy answer stopped by the limit whose next greedy token would not have ended it is
marked `cut` (one more step tells). The greedy row's tokens carry the
signals: the arithmetic and the geometric mean of its answer tokens' probabilities, the
least one, the first token's probability and the entropy of the first step's
distribution. Then P(True) (Kadavath et al., 2022): the model is shown the question and
its own answer and asked "Is the proposed answer true? Answer True or False."
(p_true_ids); the signal is the next token's probability of True renormalised over True
and False (p_true: the first tokens of "True"/" True" against those of "False"/" False";
the raw probability of the True tokens is kept too). The samples are clustered by
meaning (engine/lab/answer_meaning.py: bidirectional whole-word containment of their
normalised cores, number words as digits, the cheap stand-in for semantic entropy's
bidirectional entailment): agreement is the share of samples in the greedy answer's
cluster, the largest cluster's share another signal, cluster entropy the entropy over the
clusters' shares (Farquhar et al.'s discrete semantic entropy). What does not know MLX
lives in engine/lab/confidence.py.
"""

from __future__ import annotations

import math
import time

import mlx.core as mx
import numpy as np

from engine.backends.mlx.prefix_cache import PrefixCache, shared_prefix
from engine.lab.confidence import ConfidenceResult, QuestionRow, cluster_stats, summarise
from engine.lab.questions import Question, is_correct, normalise

ANSWER_SYSTEM = "Answer with only the answer: a word, a number or a name."
# Two worked examples before the question: a small chat model then answers in a few
# words (SmolLM2-135M answered in sentences without them, and sentences never agree).
FEW_SHOT = (
    ("Which animal says moo?", "A cow"),
    ("How many wheels does a tricycle have?", "3"),
)


def question_ids(lm, question: str) -> list[int]:
    """The prompt's token ids: the chat template (ANSWER_SYSTEM, the FEW_SHOT turns, the
    question) when the model has one, else the same as "Question: ...\nAnswer: ..." lines."""
    from engine.run.prompt import encode_prompt
    from engine.run.settings import SamplingSettings

    # an example that is the question itself would hand the model its answer
    shots = [(q, a) for q, a in FEW_SHOT if normalise(q) != normalise(question)]
    if getattr(lm.tokenizer, "has_chat_template", False):
        messages = [{"role": "system", "content": ANSWER_SYSTEM}]
        for q, a in shots:
            messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        messages.append({"role": "user", "content": question})
        return list(encode_prompt(lm.tokenizer, messages, SamplingSettings()).ids)
    lines = "".join(f"Question: {q}\nAnswer: {a}\n\n" for q, a in shots)
    text = f"{ANSWER_SYSTEM}\n\n{lines}Question: {question}\nAnswer:"
    return list(encode_prompt(lm.tokenizer, text, SamplingSettings(chat_template=False)).ids)


TRUE_QUESTION = "Is the proposed answer true? Answer True or False."
TRUE_WORDS, FALSE_WORDS = ("True", " True"), ("False", " False")


def p_true_ids(lm, question: str, answer: str) -> list[int]:
    """The P(True) prompt's token ids: the question, the proposed answer (its first line)
    and TRUE_QUESTION as one user turn through the chat template when the model has one
    (no system prompt), else the same lines ending "Answer:"."""
    from engine.run.prompt import encode_prompt
    from engine.run.settings import SamplingSettings

    proposed = (answer.strip().splitlines() or [""])[0]
    text = f"Question: {question}\nProposed answer: {proposed}\n{TRUE_QUESTION}"
    if getattr(lm.tokenizer, "has_chat_template", False):
        messages = [{"role": "user", "content": text}]
        return list(encode_prompt(lm.tokenizer, messages, SamplingSettings()).ids)
    raw = SamplingSettings(chat_template=False)
    return list(encode_prompt(lm.tokenizer, f"{text}\nAnswer:", raw).ids)


def verdict_ids(lm) -> tuple[list[int], list[int]]:
    """The first token ids of TRUE_WORDS and of FALSE_WORDS (each without repeats)."""

    def firsts(words):
        ids = [lm.tokenizer.encode(w, add_special_tokens=False)[:1] for w in words]
        return sorted({i[0] for i in ids if i})

    return firsts(TRUE_WORDS), firsts(FALSE_WORDS)


def p_true_prefix(lm) -> PrefixCache:
    """The KV cache of what every P(True) prompt starts with (p_true_ids: the chat
    template's start, a default system prompt where the template adds one, and
    "Question: "), prefilled once for a question set: 26 of SmolLM2's 57 tokens for a
    short question (its P(True) pass 0.35 s -> 0.26 s on a 2-core CPU), 6 of Gemma 3's 35."""
    prefix = PrefixCache(lm.model)
    prefix.fill(shared_prefix(lambda text: p_true_ids(lm, text, "x")))
    return prefix


def p_true(
    lm, ids: list[int], verdicts: tuple[list[int], list[int]], prefix=None
) -> tuple[float, float]:
    """(P(True) renormalised over the True and False tokens, the raw P(True)) of the next
    token after `ids` (p_true_ids), from a float32 forward pass (`prefix`: p_true_prefix,
    whose part of `ids` is not prefilled again)."""
    cache, held = (prefix or PrefixCache(lm.model)).cache_for(ids)
    logits = lm.model(mx.array([ids[held:]]), cache=cache)[0, -1, :].astype(mx.float32)  # (V,)
    probs = np.array(mx.softmax(logits, axis=-1), dtype=np.float64)  # (V,)
    true, false = float(probs[verdicts[0]].sum()), float(probs[verdicts[1]].sum())
    return (true / (true + false) if true + false > 0 else 0.5), true


def stop_ids(lm) -> set[int]:
    """End-of-sequence ids and every token whose text holds a newline."""
    stops = set(lm.tokenizer.eos_token_ids)
    for i in range(lm.vocab_size):
        if b"\n" in lm.token_bytes(i):
            stops.add(i)
    return stops


def question_prefix(lm) -> PrefixCache:
    """The KV cache of what every question's prompt starts with (the system prompt and
    the worked examples, question_ids), prefilled once for a question set."""
    prefix = PrefixCache(lm.model)
    prefix.fill(shared_prefix(lambda text: question_ids(lm, text)))
    return prefix


def answer_batch(
    lm, ids: list[int], samples: int, temperature: float, max_tokens: int, key, stops, prefix=None
):
    """Greedy and `samples` sampled answers to one prompt, in one batched pass; a row
    ends at a token of `stops` (stop_ids). With `prefix` (a PrefixCache: question_prefix)
    the prompt's part it holds is not prefilled again.

    Returns:
        (per row: answer token ids, per row: their log-probabilities,
        first step's (probability of the greedy token, entropy in nats),
        per row: whether it ended: at a stop token within `max_tokens`, or, for the
        greedy row, when its next greedy token would have been one,
        per row: the stop token it ended at, None for none).
    """
    rows = 1 + samples
    cache, held = (prefix or PrefixCache(lm.model)).cache_for(ids)
    last = lm.model(mx.array([ids[held:]]), cache=cache)[:, -1, :]  # (1, V): the prompt once
    for c in cache:  # every row continues the same prompt: its KV cache, repeated
        c.keys, c.values = (mx.repeat(v, rows, axis=0) for v in (c.keys, c.values))
    tokens: list[list[int]] = [[] for _ in range(rows)]
    lps: list[list[float]] = [[] for _ in range(rows)]
    done = [False] * rows
    stopped: list[int | None] = [None] * rows
    first = (0.0, 0.0)
    x = None  # (B, 1): the tokens the rows took at the step before
    for step in range(max_tokens):
        if step == 0:
            logits = mx.repeat(last, rows, axis=0).astype(mx.float32)  # (B, V)
        else:
            logits = lm.model(x, cache=cache)[:, -1, :].astype(mx.float32)  # (B, V)
        logp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)  # (B, V)
        greedy = mx.argmax(logp[:1], axis=-1)  # (1,)
        key, sub = mx.random.split(key)
        drawn = mx.random.categorical(logp[1:] / temperature, key=sub) if samples else greedy[:0]
        chosen = mx.concatenate([greedy, drawn])  # (B,)
        picked = mx.take_along_axis(logp, chosen[:, None], axis=-1)[:, 0]  # (B,)
        if step == 0:  # the entropy summed in float64: 49k float32 terms drift by 2e-4
            lp0 = np.array(logp[0], dtype=np.float64)  # (V,)
            p0 = np.exp(lp0)
            entropy = float(-(p0[p0 > 0] * lp0[p0 > 0]).sum())  # 0 log 0 = 0
            first = (math.exp(picked[0].item()), max(entropy, 0.0))
        mx.eval(chosen, picked)
        for r, (t, lp) in enumerate(zip(chosen.tolist(), picked.tolist(), strict=True)):
            if done[r]:
                continue
            if t in stops:
                done[r] = True
                stopped[r] = t
                if not tokens[r]:  # an empty answer: its stop token is what it said
                    lps[r].append(lp)
                continue
            tokens[r].append(t)
            lps[r].append(lp)
        if all(done):
            break
        x = chosen[:, None]  # (B, 1)
    ended = list(done)
    if not done[0] and x is not None:  # at the limit: would the greedy answer have ended?
        logits = lm.model(x, cache=cache)[:1, -1, :]  # (1, V)
        ended[0] = int(mx.argmax(logits, axis=-1).item()) in stops
    return tokens, lps, first, ended, stopped


def measure_question(
    lm, q: Question, params, key, stops, verdicts=None, prefix=None, true_prefix=None
) -> QuestionRow:
    """One question's row: the greedy answer, whether it is right, every signal
    (`verdicts`: verdict_ids, computed once a run; None: computed here; `prefix` and
    `true_prefix`: the question_prefix and p_true_prefix of the run, None: the whole
    prompt prefilled)."""
    ids = question_ids(lm, q.question)
    t0 = time.perf_counter()
    n, temp, most = params.samples, params.temperature, params.max_tokens
    batch = answer_batch(lm, ids, n, temp, most, key, stops, prefix)
    tokens, lps, (p_first, h_first), ended, stopped = batch
    texts = [lm.tokenizer.decode(t).strip() for t in tokens]
    verdicts = verdicts or verdict_ids(lm)
    p_yes, p_yes_raw = p_true(lm, p_true_ids(lm, q.question, texts[0]), verdicts, true_prefix)
    seconds = time.perf_counter() - t0
    greedy_lps = lps[0] or [0.0]
    agreement, cluster_entropy, clusters, largest = cluster_stats(texts[0], texts[1:], q.question)
    return QuestionRow(
        line=q.line,
        question=q.question,
        accepted=q.answers,
        answer=texts[0],
        correct=is_correct(texts[0], q.answers),
        answer_ids=tuple(tokens[0]),
        prompt_tokens=len(ids),
        token_logprobs=tuple(lps[0]),
        mean_logprob=sum(greedy_lps) / len(greedy_lps),
        min_logprob=min(greedy_lps),
        first_prob=p_first,
        first_entropy=h_first,
        samples=tuple(texts[1:]),
        sample_ids=tuple(tuple(t) for t in tokens[1:]),
        sample_stops=tuple(stopped[1:]),
        agreement=agreement,
        cluster_entropy=cluster_entropy,
        clusters=clusters,
        topic=q.topic,
        lang=q.lang,
        level=q.level,
        normalised=normalise(texts[0]),
        seconds=seconds,
        cut=not ended[0],
        largest_share=largest,
        p_true=p_yes,
        p_true_raw=p_yes_raw,
    )


def _left(done: int, total: int, elapsed: float) -> str:
    """Time left in words, from the questions done so far."""
    if done == 0:
        return ""
    s = elapsed / done * (total - done)
    return f", about {s / 60:.0f} min left" if s >= 90 else f", about {s:.0f} s left"


def calibrate(lm, name: str, params, progress=None, load_seconds: float = 0.0) -> ConfidenceResult:
    """Answer the question set on the loaded model and summarise (see the module).

    Args:
        lm: the LoadedModel.
        name: the model's name, for the result.
        params: CalibrateParams.
        progress: a (message, fraction) callback or a LabReporter (cancel between questions).
        load_seconds: the model's load, when the caller timed it (kept in the result,
            never in its questions per minute).

    Returns:
        The ConfidenceResult (its rows so far and `cancelled` when stopped).
    """
    from engine.lab.questions import bundled_path, load_questions
    from engine.lab.reporter import LabStep, reporter_of

    reporter = reporter_of(progress)
    questions = load_questions(params.questions)
    if params.limit is not None:
        questions = questions[: params.limit]
    stops = stop_ids(lm)
    verdicts = verdict_ids(lm)
    prefix = question_prefix(lm) if questions else None
    true_prefix = p_true_prefix(lm) if questions else None
    key = mx.random.key(params.seed)
    rows, cancelled, t0 = [], False, time.perf_counter()
    for i, q in enumerate(questions):
        if reporter.should_stop():
            cancelled = True
            break
        left = _left(i, len(questions), time.perf_counter() - t0)
        reporter(f"Question {i + 1} of {len(questions)}{left}", i / len(questions))
        key, sub = mx.random.split(key)
        row = measure_question(lm, q, params, sub, stops, verdicts, prefix, true_prefix)
        rows.append(row)
        reporter.partial(LabStep("calibrate", i + 1, {"correct": row.correct, "line": q.line}))
    seconds = time.perf_counter() - t0
    return summarise(
        rows,
        model=name,
        questions_file=str(params.questions or bundled_path().name),
        samples=params.samples,
        temperature=params.temperature,
        asked=len(questions),
        cancelled=cancelled,
        seconds=seconds,
        questions_per_minute=len(rows) / seconds * 60 if seconds > 0 and rows else 0.0,
        max_tokens=params.max_tokens,
        load_seconds=load_seconds,
        rate_basis=(
            f"answering only; the model's load ({load_seconds:.1f} s) is not included"
            if load_seconds
            else "answering only; the model's load is not included"
        ),
    )
