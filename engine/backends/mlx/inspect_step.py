"""One step of a run, inspected: the request the engine receives, the record it sends.

A step is identified the way the window knows it: the prompt and settings (the
prompt is encoded again exactly as the run encoded it) plus the answer's token
ids; step N's prediction comes from the prompt and the answer's first N tokens,
so the pass covers those and the last position is the query. `step: None`
inspects the prompt alone (what it predicts next).
"""

from __future__ import annotations

from dataclasses import replace

from engine.backends.mlx.inside import Inspection, attention_weights, logit_lens
from engine.errors import SettingsError
from engine.inside.inside_results import AttentionResult, LensResult, PositionResult
from engine.inside.inspect_request import WHATS, InspectRequest
from engine.run.prompt import encode_prompt
from engine.run.records import InspectRecord, token_label
from engine.run.settings import MAX_LENS_TOP


def _ids(backend, prompt, settings, request: InspectRequest):
    """(prompt and answer tokens before the step, the step, its chosen token, prompt
    length, answer length)."""
    if request.reading:
        prompt_ids, text_ids = _read_ids(backend.lm, prompt, settings)
    else:
        prompt_ids, text_ids = list(encode_prompt(backend.lm.tokenizer, prompt, settings).ids), []
    given = request.continuation if request.continuation is not None else text_ids
    continuation = [int(i) for i in given if int(i) >= 0]
    step = request.step
    if step is not None and not 0 <= int(step) <= len(continuation):
        raise SettingsError(f"step {step} is outside the run's {len(continuation)} tokens")
    before = continuation[: int(step)] if step is not None else []
    chosen = continuation[int(step)] if step is not None and int(step) < len(continuation) else None
    step = int(step) if step is not None else None
    return prompt_ids + before, step, chosen, len(prompt_ids), len(continuation)


def _read_ids(lm, text, settings) -> tuple[list[int], list[int]]:
    """A read's context ids (the system prompt, else the model's start token) and its
    text's ids, exactly as engine/backends/mlx/read_pass.py fed them."""
    from engine.backends.mlx.read_pass import encode_read
    from engine.reading.request import ReadRequest

    if not isinstance(text, str):
        raise SettingsError("a read is inspected with its text, not a conversation")
    ids, n_context, _system, _start = encode_read(
        lm, ReadRequest(text=text, context=settings.system_prompt or None)
    )
    return ids[:n_context], ids[n_context:]


def _read_settings(settings):
    """A read's sampling: the model's own distribution (T = 1, no filter, no penalty)."""
    return settings.with_(temperature=1.0, top_p=1.0, top_k=0, min_p=0.0, repetition_penalty=1.0)


READ_ORDER = (
    "a read samples nothing: each token of the text is scored in the model's own "
    "distribution (T = 1, no filter, no penalty)"
)


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
    ids, step, chosen, n_prompt, n_answer = _ids(backend, prompt, settings, request)
    if what == "journey":
        from engine.backends.mlx.journey import journey_record

        if request.reading:
            settings = _read_settings(settings)
        record = journey_record(backend.lm, ids, n_prompt, step, chosen, settings)
        if request.reading:  # the read's one sampling stage, and its end where the text's
            record = replace(record, data=record.data.as_read(READ_ORDER, step, n_answer))
        return record
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
    step_info = {
        "truncated": full > len(ids),
        "context_tokens": full,
        "chosen": chosen,
        "reading": request.reading,
    }
    if what == "position":
        from engine.backends.mlx.position import attention_by_position

        result = PositionResult(
            **step_info, **attention_by_position(p, n_prompt - (full - len(ids)))
        )
    elif what == "attention":
        layer = int(request.layer)
        head = request.head
        weights = attention_weights(p, layer)  # (H, T, T)
        if head is not None and not 0 <= int(head) < heads:
            raise SettingsError(f"head {head} does not exist: layer {layer} has {heads}")
        shown = weights.mean(axis=0) if head is None else weights[int(head)]
        result = AttentionResult(
            **step_info,
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
        result = LensResult(
            **step_info,
            rows=rows,
            token_labels={str(i): token_label(backend.lm.token_bytes(i)) for i in words},
        )
    return InspectRecord(
        what=what, step=step, layers=layers, heads=heads, ids=tuple(ids), labels=labels, data=result
    )


def _lens_top(request: InspectRequest) -> int:
    """The lens's predictions per layer (`top_k`, LENS_TOP by default), checked."""
    top_k = request.top_k
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_LENS_TOP:
        raise SettingsError(
            f"the lens keeps 1 to {MAX_LENS_TOP} predictions per layer, not {top_k!r}"
        )
    return top_k
