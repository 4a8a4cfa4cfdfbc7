"""The journey of one token: the seven steps of inference at one step of a run,
with the real numbers of that step, for any mlx-lm model.

The step is fed the way decoding feeds it: the context before the last token
goes into a KV cache (the model's own `make_prompt_cache`), then the last token
alone, with every transformer block's input, call arguments and output recorded
(capture.py).
Each block is then run once more on the same input and a copy of the cache as it
was, with its feed-forward module returning zeros: that output is the residual
stream after attention (a norm after the feed-forward, as Gemma has, maps zeros
to zeros), so attention's and the feed-forward's contributions are separated
without copying any architecture's code. The KV cache's bytes before and after
the last token give the bytes one step adds.

`journey` returns a dict of plain values; `journey_record` makes it the typed
JourneyResult (engine/inside/inside_results.py) an InspectRecord carries.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from engine.backends.mlx.capture import capture
from engine.backends.mlx.funnel import ORDER_NOTE, sampling_funnel
from engine.backends.mlx.host_sweep import top_indices
from engine.backends.mlx.inside import MAX_POSITIONS, Pass, logit_lens
from engine.backends.mlx.run_records import kv_cache_bytes
from engine.inside.inside_results import JourneyResult
from engine.run.records import InspectRecord, token_label

NEIGHBOURS = 8  # nearest tokens in the embedding table
TOP_CANDIDATES = 10  # of the final distribution
EMBED_CHUNK = 16_384  # rows of the embedding table dequantized at a time
FFN_NAMES = ("mlp", "feed_forward", "block_sparse_moe", "ffn")


@dataclass
class StepCapture:
    """The last token's pass through every block (T = 1)."""

    inputs: list[mx.array] = field(default_factory=list)  # per block (1, 1, D)
    outputs: list[mx.array] = field(default_factory=list)  # per block (1, 1, D)
    calls: list[tuple] = field(default_factory=list)  # per block (args, kw)
    logits: mx.array | None = None  # (V,)


class _Zeros(nn.Module):
    """A feed-forward stand-in that contributes nothing."""

    def __call__(self, x, *args, **kw):
        """Zeros shaped like the input."""
        return mx.zeros_like(x)


def _ffn_name(block) -> str | None:
    return next((n for n in FFN_NAMES if isinstance(getattr(block, n, None), nn.Module)), None)


def _swap(value, old, new):
    return new if value is old else value


def after_attention(model, cap: StepCapture, caches_before) -> list[mx.array] | None:
    """Each block's residual after attention (before its feed-forward), (1, 1, D) per
    block; None when a block's feed-forward module cannot be found by name."""
    out = []
    for block, x, (args, kw), cache, before in zip(
        model.layers, cap.inputs, cap.calls, _layer_caches(model, cap), caches_before, strict=True
    ):
        name = _ffn_name(block)
        if name is None:
            return None
        args = tuple(_swap(a, cache, before) for a in args)
        kw = {k: _swap(v, cache, before) for k, v in kw.items()}
        ffn = getattr(block, name)
        setattr(block, name, _Zeros())
        try:
            h = block(x, *args, **kw)
        finally:
            setattr(block, name, ffn)
        out.append(h[0] if isinstance(h, tuple) else h)
    return out


def _layer_caches(model, cap):
    """The cache object each block was called with (None where it took none)."""
    found = []
    for args, kw in cap.calls:
        objs = [*args, *kw.values()]
        found.append(next((o for o in objs if hasattr(o, "update_and_fetch")), None))
    return found


def feed_step(model, ids: list[int]) -> tuple[StepCapture, list, list[int], list[int]]:
    """Feed `ids[:-2]` into a fresh KV cache as one chunk and `ids[-2]` alone (as
    decoding had fed it: a sliding-window cache is back at its window then), then
    `ids[-1]` alone with every block recorded.

    Returns:
        (the capture, a copy of each layer's cache before the last token, each
        layer's KV bytes before it, each layer's KV bytes after it)
    """
    from mlx_lm.models.cache import make_prompt_cache

    cache = make_prompt_cache(model)
    for chunk in (ids[:-2], ids[-2:-1]):
        if chunk:
            model(mx.array(chunk)[None], cache=cache)
            mx.eval([c.state for c in cache])
    before_bytes = [kv_cache_bytes([c]) for c in cache]
    before = copy.deepcopy(cache)
    with capture(model, hidden=True, inputs=True) as seen:
        logits = model(mx.array(ids[-1:])[None], cache=cache)
    cap = StepCapture(
        inputs=seen.inputs,
        outputs=seen.hidden,
        calls=seen.calls,
        logits=logits[0, -1].astype(mx.float32),
    )
    mx.eval(cap.logits, *cap.inputs, *cap.outputs, [c.state for c in cache])
    return cap, before, before_bytes, [kv_cache_bytes([c]) for c in cache]


def _norm(a: mx.array) -> float:
    return float(np.linalg.norm(np.array(a.astype(mx.float32), dtype=np.float64).ravel()))


def contributions(model, cap: StepCapture, before) -> list[dict]:
    """Per layer: ‖h_in‖, ‖Δh‖ of attention and of the feed-forward, and each
    ‖Δh‖/‖h‖ (h: the residual the contribution is added to)."""
    mids = after_attention(model, cap, before)
    rows = []
    for i, (x, y) in enumerate(zip(cap.inputs, cap.outputs, strict=True)):
        row = {"layer": i, "norm_in": _norm(x), "norm_out": _norm(y)}
        if mids is not None:
            mid = mids[i].astype(mx.float32)
            d_attn, d_ffn = mid - x.astype(mx.float32), y.astype(mx.float32) - mid
            row.update(
                attention=_norm(d_attn) / row["norm_in"],
                ffn=_norm(d_ffn) / _norm(mid),
                attention_norm=_norm(d_attn),
                ffn_norm=_norm(d_ffn),
            )
        rows.append(row)
    return rows


def _embedding_table(model):
    inner = model.model if hasattr(model, "model") else model
    return inner.embed_tokens


def _chunk_cosines(table, unit: mx.array, rows: int):
    """(first row, cosines (C,) float64, row norms (C,)) of the table's rows with the
    unit vector `unit`, in chunks: a float32 table on the CPU in one NumPy pass over
    the table itself (no copy; MLX's gather, norm and product took 1.2 s over Gemma 3's
    262,144 rows), any other (quantized, or on a GPU) dequantized EMBED_CHUNK rows at a
    time by MLX."""
    weight = table.get("weight") if isinstance(table, nn.Embedding) else None
    on_cpu = mx.default_device().type == mx.DeviceType.cpu
    if weight is not None and weight.dtype == mx.float32 and on_cpu:
        w = np.array(weight, copy=False)  # (V, D)
        norms = np.sqrt(np.einsum("ij,ij->i", w, w))  # (V,)
        dots = w @ np.array(unit, copy=False)  # (V,)
        yield 0, dots.astype(np.float64) / np.maximum(norms, 1e-30), norms
        return
    for start in range(0, rows, EMBED_CHUNK):
        chunk = table(mx.arange(start, min(start + EMBED_CHUNK, rows))).astype(mx.float32)
        norms = mx.linalg.norm(chunk, axis=-1)  # (C,)
        cos = np.array((chunk @ unit) / mx.maximum(norms, 1e-30), dtype=np.float64)
        yield start, cos, np.array(norms)


def embedding(model, token_id: int, neighbours: int = NEIGHBOURS) -> dict:
    """The token's row of the embedding table, its norm, and its nearest tokens by
    cosine similarity (itself left out)."""
    table = _embedding_table(model)
    rows = getattr(table, "num_embeddings", None) or table.weight.shape[0]
    vec = table(mx.array([token_id]))[0].astype(mx.float32)  # (D,)
    unit = vec / mx.linalg.norm(vec)
    mx.eval(unit)
    best_ids, best_cos = np.zeros(0, np.int64), np.zeros(0, np.float64)
    for start, cos, norms in _chunk_cosines(table, unit, rows):
        cos[norms == 0] = -np.inf  # empty rows are nobody's neighbour
        keep = top_indices(cos, neighbours + 1)
        best_ids = np.concatenate([best_ids, start + keep])
        best_cos = np.concatenate([best_cos, cos[keep]])
    order = [i for i in np.argsort(-best_cos, kind="stable") if best_ids[i] != token_id]
    values = np.array(vec, dtype=np.float64)
    return {
        "token_id": int(token_id),
        "values": values.round(6).tolist(),
        "norm": float(np.linalg.norm(values)),
        "neighbours": [(int(best_ids[i]), float(best_cos[i])) for i in order[:neighbours]],
    }


def projection(model, cap: StepCapture, chosen) -> dict:
    """The final distribution: top candidates, the chosen token's logit, p, rank,
    and its rank after each layer (the logit lens)."""
    logits = np.array(cap.logits, dtype=np.float64)  # (V,)
    logp = logits - logits.max()
    logp -= np.log(np.exp(logp).sum())
    top = top_indices(logits, TOP_CANDIDATES)
    out = {
        "top": [(int(i), float(logits[i]), float(np.exp(logp[i]))) for i in top],
        "chosen": None,
    }
    if chosen is not None:
        out["chosen"] = {
            "token_id": int(chosen),
            "logit": float(logits[chosen]),
            "prob": float(np.exp(logp[chosen])),
            "rank": int((logits > logits[chosen]).sum()) + 1,
        }
    p = Pass(ids=[], hidden=cap.outputs)
    lens = logit_lens(model, p, 0, top_k=1, chosen=chosen)
    out["lens"] = [
        {
            "top": r["top"][0][0],
            "chosen_rank": r.get("chosen_rank"),
            "chosen_prob": r.get("chosen_prob"),
        }
        for r in lens
    ]
    return out


def journey(
    lm, ids: list[int], n_prompt: int, chosen, settings, history: list[int], step=None
) -> dict:
    """The seven sections of one step (the pass over `ids` predicts `chosen`).

    Args:
        lm: the LoadedModel.
        ids: the tokens fed so far (prompt, then the answer before this step).
        n_prompt: how many of `ids` are the prompt.
        chosen: the token the run took at this step (None: the prompt alone).
        settings: the run's SamplingSettings.
        history: the token ids the repetition penalty saw (all of `ids`, untruncated).
        step: the answer step inspected (default: the answer tokens in `ids`); given
            when `ids` is the end of a longer context.

    Returns:
        dict with tokenization, embedding, layers (attention and feed-forward),
        projection, sampling, iteration.
    """
    model = lm.model
    cap, before, bytes_before, bytes_after = feed_step(model, ids)
    shown = ids + ([chosen] if chosen is not None else [])
    eos = set(lm.tokenizer.eos_token_ids)
    step = len(ids) - n_prompt if step is None else step
    stop = chosen is not None and chosen in eos
    at_limit = chosen is not None and step + 1 >= settings.max_tokens
    return {
        "tokenization": {
            "tokens": [
                (int(i), token_label(lm.token_bytes(i)), list(lm.token_bytes(i))) for i in shown
            ],
            "prompt_tokens": n_prompt,
            "new": len(ids) if chosen is not None else None,
        },
        "embedding": embedding(model, ids[-1]),
        "layers": contributions(model, cap, before),
        "projection": projection(model, cap, chosen),
        "sampling": {
            "greedy": settings.temperature == 0,
            "order": ORDER_NOTE,
            "stages": sampling_funnel(cap.logits, history, settings, chosen, lm.vocab_size),
        },
        "iteration": {
            "context_tokens": len(shown),
            "context_length": lm.context_length,
            "kv_bytes_before": sum(bytes_before),
            "kv_bytes_added": sum(bytes_after) - sum(bytes_before),
            # sliding-window layers whose cache is full: their oldest entry is overwritten
            "kv_layers_full": sum(a == b for a, b in zip(bytes_after, bytes_before, strict=True)),
            "stop_token": stop,
            "length_limit": at_limit,
            "next_step": step + 1 if chosen is not None and not (stop or at_limit) else None,
        },
    }


def _referenced(data: dict) -> set[int]:
    """Every token id the sections name outside the tokenization."""
    proj = data["projection"]
    found = {i for i, _c in data["embedding"]["neighbours"]} | {i for i, _l, _p in proj["top"]}
    found |= {r["top"] for r in proj["lens"]}
    if proj["chosen"] is not None:
        found.add(proj["chosen"]["token_id"])
    return found


def journey_record(lm, ids: list[int], n_prompt: int, step, chosen, settings) -> InspectRecord:
    """The journey of step `step` as an InspectRecord (what = "journey"); `data` is a
    JourneyResult (engine/inside/inside_results.py): `journey`'s sections and token_labels for
    the ids they name.

    Like every inspection it covers the last MAX_POSITIONS tokens of the context
    (`truncated`, `context_tokens` say so): one pass over a very long prompt would
    take minutes and gigabytes. The repetition penalty still sees every token.
    """
    history, full = list(ids), len(ids)
    ids = ids[-MAX_POSITIONS:]
    kept_prompt = max(0, n_prompt - (full - len(ids)))
    answered = full - n_prompt  # the answer tokens before this step
    data = journey(lm, ids, kept_prompt, chosen, settings, history=history, step=answered)
    data["chosen"] = chosen
    data["truncated"] = full > len(ids)
    data["context_tokens"] = full
    data["reading"] = False
    data["token_labels"] = {str(i): token_label(lm.token_bytes(i)) for i in _referenced(data)}
    result = JourneyResult.from_dict(data)
    return InspectRecord(
        what="journey",
        step=step,
        layers=len(result.layers),
        heads=0,
        ids=tuple(ids),
        labels=tuple(t[1] for t in result.tokenization.tokens[: len(ids)]),
        data=result,
    )
