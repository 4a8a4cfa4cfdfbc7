"""Reading a text (engine/reading, engine/backends/mlx/read_pass.py): every record of a
read against a bare mlx-lm forward pass over the same token ids, the summary against
NumPy float64, the sliding window, the refusal, cancel, and the journal's round trip."""

from __future__ import annotations

import json
import math

import mlx.core as mx
import numpy as np
import pytest

from engine.backends.mlx.read_pass import TextTooLong, plan_read, read_records
from engine.errors import SettingsError
from engine.models.load_options import LoadOptions
from engine.reading.request import ReadRequest
from engine.run.records import SWEEP_TEMPERATURES

TEXT = (
    "The capital of Australia is Sydney. The capital of France is Paris, and the "
    "capital of Germany is Berlin. Rivers run to the sea."
)
LONG = " ".join(f"Line {i}: the river runs past the mill and on to the sea." for i in range(9))


def _bare_logprobs(lm, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Logits and log-probabilities of one bare mlx-lm forward pass (no cache), on the
    same compute path as the read: float32, logits - logsumexp, as mlx-lm samples."""
    logits = lm.model(mx.array(ids)[None])[0].astype(mx.float32)  # (L, V)
    lp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
    return np.array(logits), np.array(lp)


def _read(lm, request, **kw):
    records = list(read_records(lm, request, **kw))
    return [r for r in records if r.type == "token"], records[-1]


def _check_against(lm, tokens, ids, base_of):
    """Each token record against the bare pass over ids[base:pos] (its window)."""
    passes = {}
    for r in tokens:
        pos = base_of(r)
        base = pos - (r.context_tokens - 1)
        if base not in passes:
            end = max(t_pos for t_pos in (base_of(t) for t in tokens)) + 1
            passes[base] = _bare_logprobs(lm, ids[base : end - 1])
        logits, lp = passes[base]
        row = pos - 1 - base
        target = ids[pos]
        assert r.token_id == target and r.read
        assert abs(r.logprob - lp[row, target]) < 1e-4
        assert r.rank == 1 + int((logits[row] > logits[row, target]).sum())
        x = logits[row].astype(np.float64)
        lp64 = x - x.max() - np.log(np.exp(x - x.max()).sum())
        entropy = float(-(np.exp(lp64) * lp64).sum())
        assert r.entropy == pytest.approx(entropy, rel=1e-3, abs=5e-4)  # float32 sums
        assert r.top[0].token_id == int(np.argmax(logits[row]))
        assert abs(r.top[0].logprob - lp[row].max()) < 1e-4
        if r.sweep_logz:  # log Z(T), H(T) of softmax(lp / T), in float64 here
            temps = np.array(SWEEP_TEMPERATURES)
            scaled = lp[row].astype(np.float64)[None, :] / temps[:, None]  # (G, V)
            logz = np.logaddexp.reduce(scaled, axis=-1)
            p = np.exp(scaled - logz[:, None])
            ent = logz - (p * np.where(p > 0, scaled, 0.0)).sum(-1)
            # the bare pass's log-probabilities differ by up to 1e-4: log Z(T) by 1e-4 / T;
            # a GPU's float32 sweep adds up to 2.3e-4 (the CPU's, NumPy's, 1e-6)
            assert (np.abs(np.array(r.sweep_logz) - logz) < 2e-4 / temps + 3e-4).all()
            assert np.abs(np.array(r.sweep_entropy) - ent).max() < 2e-3
    return passes


@pytest.fixture(scope="module")
def read_smollm(smollm):
    request = ReadRequest(TEXT, chunk_tokens=8)
    tokens, done = _read(smollm, request)
    return request, tokens, done


def test_every_record_equals_a_bare_forward_pass(smollm, read_smollm):
    request, tokens, done = read_smollm
    plan = plan_read(smollm, request)
    n_text = len(plan.ids) - plan.n_context
    assert n_text > 3 * 8  # several chunks
    assert len(tokens) == n_text and [t.step for t in tokens] == list(range(n_text))
    _check_against(smollm, tokens, plan.ids, lambda r: plan.n_context + r.step)
    assert done.finish_reason == "read" and done.text == TEXT
    assert done.prompt_tokens == plan.n_context == 1 and done.generated_tokens == n_text
    # the sweep at T = 1 is the distribution itself: log Z = 0, H = the entropy
    t = tokens[5]
    assert abs(t.sweep_logz[9]) < 1e-4 and abs(t.sweep_entropy[9] - t.entropy) < 1e-3


def test_summary_equals_numpy_float64(smollm, read_smollm):
    request, tokens, done = read_smollm
    plan = plan_read(smollm, request)
    _logits, lp = _bare_logprobs(smollm, plan.ids[:-1])
    ref = np.array([lp[i - 1, plan.ids[i]] for i in range(1, len(plan.ids))], dtype=np.float64)
    s = done.reading
    assert s.tokens == len(ref)
    assert abs(s.perplexity - math.exp(-ref.mean())) / s.perplexity < 1e-4
    mine = np.array([t.logprob for t in tokens], dtype=np.float64)
    assert s.perplexity == pytest.approx(float(np.exp(-mine.mean())), rel=1e-12)
    n_bytes = len(TEXT.encode("utf-8"))
    assert s.text_bytes == n_bytes
    assert s.bits_per_byte == pytest.approx(float(-mine.sum() / np.log(2) / n_bytes), rel=1e-12)
    ranks = np.array([t.rank for t in tokens])
    buckets = (
        int((ranks <= 10).sum()),
        int(((ranks > 10) & (ranks <= 100)).sum()),
        int(((ranks > 100) & (ranks <= 1000)).sum()),
        int((ranks > 1000).sum()),
    )
    assert s.rank_buckets == buckets and sum(buckets) == len(tokens)
    worst = sorted(tokens, key=lambda t: (t.logprob, t.step))[:10]
    assert [w.step for w in s.surprising] == [t.step for t in worst]
    assert s.window is None and s.complete and s.read_tps > 0


def test_after_a_context_only_the_text_is_scored(smollm):
    context = "Question: which city is the capital of Australia? Answer:"
    request = ReadRequest(" Canberra, not Sydney.", context=context, chunk_tokens=4)
    tokens, done = _read(smollm, request)
    plan = plan_read(smollm, request)
    assert plan.ids[: plan.n_context] == list(smollm.tokenizer.encode(context))
    assert done.prompt_tokens == plan.n_context and done.reading.start_token == ""
    _check_against(smollm, tokens, plan.ids, lambda r: plan.n_context + r.step)
    chat = ReadRequest("Canberra.", context=[{"role": "user", "content": "Capital of Australia?"}])
    tokens, done = _read(smollm, chat)
    assert done.text == "Canberra." and done.prompt_tokens > 5  # the template's turn


def test_a_text_longer_than_the_context_slides_or_is_refused(smollm, default_model_path):
    from engine.backends.mlx.loader import apply_load_options
    from engine.models.catalogue import inspect_model

    info = inspect_model(default_model_path)
    apply_load_options(smollm, info, LoadOptions(context_length=64))
    try:
        request = ReadRequest(LONG, chunk_tokens=16)
        plan = plan_read(smollm, request)
        assert len(plan.ids) > 2 * 64 and plan.window == 64 and plan.keep == 32
        tokens, done = _read(smollm, request)
        assert len(tokens) == len(plan.ids) - 1 and done.reading.window == 64
        assert max(t.context_tokens for t in tokens) <= 64 + 1
        passes = _check_against(smollm, tokens, plan.ids, lambda r: 1 + r.step)
        assert len(passes) >= 3  # the window slid at least twice
        with pytest.raises(TextTooLong, match=r"context window is 64 tokens") as e:
            list(read_records(smollm, request.with_(long_text="refuse")))
        assert e.value.tokens == len(plan.ids) and e.value.context_length == 64
    finally:
        apply_load_options(smollm, info, LoadOptions())


def test_cancel_stops_between_chunks_and_keeps_what_was_read(smollm):
    seen = []
    calls = iter(range(1000))
    tokens, done = _read(
        smollm,
        ReadRequest(TEXT, chunk_tokens=6, sweep=False),
        should_stop=lambda: next(calls) >= 2,
        progress=lambda d, t: seen.append((d, t)),
    )
    assert done.finish_reason == "cancelled" and len(tokens) == 12
    assert done.reading.tokens == 12 and not done.reading.complete
    assert seen[0][0] == 6 and seen[1][0] == 12 and seen[0][1] > 12
    assert tokens[0].sweep_logz == ()


def test_a_read_goes_through_the_journal_and_back(read_smollm):
    from engine.run.records import record_from_dict, to_dict
    from engine.sessions.session_schema import clean_record

    _request, tokens, done = read_smollm
    for record in (tokens[3], done):
        line = json.loads(json.dumps(to_dict(record)))
        assert record_from_dict(line) == record
        assert record_from_dict(clean_record(line)) == record
    assert record_from_dict(to_dict(done)).reading.surprising[0].rank >= 1


def test_gemma_reads_a_short_text(gemma):
    # Gemma runs in bfloat16: another chunking of the same ids moves a log-probability
    # by ~3e-3 (activation rounding), so the read is one chunk, the bare pass's shape.
    request = ReadRequest("The sea is salty.", chunk_tokens=64, sweep=False)
    tokens, done = _read(gemma, request)
    plan = plan_read(gemma, request)
    assert plan.ids[0] == gemma.tokenizer.bos_token_id
    _check_against(gemma, tokens, plan.ids, lambda r: plan.n_context + r.step)
    assert done.text == "The sea is salty." and done.reading.tokens == len(tokens)


@pytest.mark.parametrize(
    "request_, message",
    [
        (ReadRequest("  "), "empty"),
        (ReadRequest("a", long_text="crop"), "window or refuse"),
        (ReadRequest("a", chunk_tokens=0), "chunk_tokens"),
        (ReadRequest("a", top_n=0), "top_n"),
        (ReadRequest("a", context=[{"role": "user"}]), "context"),
    ],
)
def test_bad_requests_are_refused_in_one_sentence(request_, message):
    with pytest.raises(SettingsError, match=message):
        request_.validate()


def test_cancel_reaches_a_read_in_the_engine_process(engine_client, default_model_path):
    request = ReadRequest(LONG, chunk_tokens=4, sweep=False)
    records = []
    for record in engine_client.read(request, str(default_model_path)):
        records.append(record)
        if record.type == "token" and record.step == 1:
            engine_client.cancel()
    done = records[-1]
    tokens = [r for r in records if r.type == "token"]
    assert done.type == "done" and done.finish_reason == "cancelled"
    assert 4 <= len(tokens) < 40 and done.reading.tokens == len(tokens)
    assert not done.reading.complete and any(r.type == "progress" for r in records)


def _bare_chunked(lm, ids: list[int], chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """A bare mlx-lm pass fed in the read's chunks (ids[0:c], ids[c:2c], … with one
    prompt cache): the same compute path as the read, so bfloat16 rounds alike."""
    from mlx_lm.models.cache import make_prompt_cache

    cache, rows = make_prompt_cache(lm.model), []
    for s in range(0, len(ids), chunk):
        out = lm.model(mx.array(ids[s : s + chunk])[None], cache=cache)[0].astype(mx.float32)
        mx.eval(out)
        rows.append(out)
    logits = mx.concatenate(rows)
    lp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
    return np.array(logits), np.array(lp)


def test_gemma_reads_over_several_chunks_as_a_chunked_bare_pass(gemma):
    # 14 tokens in chunks of 4: four chunks, the last one short. Gemma's stored layers run
    # MLX's quantized kernel here, about a one-row product per row: every row costs.
    chunk = 4
    text = "The capital of Australia is Sydney. Rivers run to the sea."
    request = ReadRequest(text, chunk_tokens=chunk, sweep=False)
    plan = plan_read(gemma, request)
    assert plan.n_context == 1 and len(plan.ids) > 3 * chunk  # several chunks
    tokens, done = _read(gemma, request)
    logits, lp = _bare_chunked(gemma, plan.ids[:-1], chunk)
    assert len(tokens) == len(plan.ids) - 1 == done.reading.tokens
    for r in tokens:
        row, target = r.step, plan.ids[r.step + 1]
        assert r.token_id == target and abs(r.logprob - lp[row, target]) < 1e-4
        assert r.rank == 1 + int((logits[row] > logits[row, target]).sum())
