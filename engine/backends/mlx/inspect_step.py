"""One step of a run, inspected: the request the engine receives, the record it sends.

A step is identified the way the window knows it: the prompt and settings (the
prompt is encoded again exactly as the run encoded it) plus the answer's token
ids; step N's prediction comes from the prompt and the answer's first N tokens,
so the pass covers those and the last position is the query. `step: None`
inspects the prompt alone (what it predicts next).
"""

from __future__ import annotations

from engine.backends.mlx.inside import Inspection, attention_weights, logit_lens
from engine.errors import SettingsError
from engine.inspect_request import WHATS, InspectRequest
from engine.prompt import encode_prompt
from engine.records import InspectRecord, token_label
from engine.settings import MAX_LENS_TOP


def _ids(backend, prompt, settings, request: InspectRequest):
    """(prompt and answer tokens before the step, the step, its chosen token, prompt length)."""
    enc = encode_prompt(backend.lm.tokenizer, prompt, settings)
    continuation = [int(i) for i in request.continuation or () if int(i) >= 0]
    step = request.step
    if step is not None and not 0 <= int(step) <= len(continuation):
        raise SettingsError(f"step {step} is outside the run's {len(continuation)} tokens")
    before = continuation[: int(step)] if step is not None else []
    chosen = continuation[int(step)] if step is not None and int(step) < len(continuation) else None
    step = int(step) if step is not None else None
    return list(enc.ids) + before, step, chosen, len(enc.ids)


def inspect_step(backend, prompt, settings, request: InspectRequest) -> InspectRecord:
    """Attention, the logit lens, the journey of the step's token or attention by
    position, at one step of a run (or of the prompt alone).

    Raises:
        SettingsError: an unknown view, a layer or head the model does not have.
    """
    what = request.what
    if what not in WHATS:
        raise SettingsError(f"unknown view '{what}': choose one of {', '.join(WHATS)}")
    if what == "lens":
        _lens_top(request)  # refused before any forward pass
    if backend.inspection is None:
        backend.inspection = Inspection(backend.lm.model)
    ids, step, chosen, n_prompt = _ids(backend, prompt, settings, request)
    if what == "journey":
        from engine.backends.mlx.journey import journey_record

        return journey_record(backend.lm, ids, n_prompt, step, chosen, settings)
    full = len(ids)
    p = backend.inspection.get(ids)
    ids = p.ids  # the last MAX_POSITIONS of them
    layers = len(p.hidden)
    heads = int(p.queries[0].shape[1]) if p.queries else 0
    if what in ("attention", "position") and len(p.queries) != layers:
        raise SettingsError(
            "this architecture computes attention its own way (not through MLX's fused "
            "attention), so its weights cannot be shown; the logit lens still works"
        )
    labels = tuple(token_label(backend.lm.token_bytes(i)) for i in ids)
    # an inspection covers the last MAX_POSITIONS tokens: say how many there were
    data: dict = {"truncated": full > len(ids), "context_tokens": full, "chosen": chosen}
    if what == "position":
        from engine.backends.mlx.position import attention_by_position

        data.update(attention_by_position(p, n_prompt - (full - len(ids))))
    elif what == "attention":
        layer = int(request.layer)
        head = request.head
        weights = attention_weights(p, layer)  # (H, T, T)
        if head is not None and not 0 <= int(head) < heads:
            raise SettingsError(f"head {head} does not exist: layer {layer} has {heads}")
        shown = weights.mean(axis=0) if head is None else weights[int(head)]
        data.update(
            layer=layer,
            head=None if head is None else int(head),
            weights=shown.round(6).tolist(),
            query_row_by_head=weights[:, -1, :].round(6).tolist(),
        )
    else:
        rows = logit_lens(backend.lm.model, p, len(ids) - 1, _lens_top(request), chosen)
        words = {i for r in rows for i, _p in r["top"]} | (
            {chosen} if chosen is not None else set()
        )
        data.update(
            rows=rows, token_labels={str(i): token_label(backend.lm.token_bytes(i)) for i in words}
        )
    return InspectRecord(
        what=what, step=step, layers=layers, heads=heads, ids=tuple(ids), labels=labels, data=data
    )


def _lens_top(request: InspectRequest) -> int:
    """The lens's predictions per layer (`top_k`, LENS_TOP by default), checked."""
    top_k = request.top_k
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_LENS_TOP:
        raise SettingsError(
            f"the lens keeps 1 to {MAX_LENS_TOP} predictions per layer, not {top_k!r}"
        )
    return top_k
