"""The lesson on answering with the right-sized model (app/playground/right_size_flow.py):
one question, the loaded model first, a second installed model below the threshold; the
sentence says which answered, why, and what the second attempt cost, from the runs."""

from __future__ import annotations

from app.tour import steps
from app.tour.host import Sentence

ROUTE_PROMPT = "What is the capital of Australia?"
ROUTE_SIGNAL, ROUTE_THRESHOLD = "min_prob", 0.2


def route(host, ctx: dict):
    large = host.second_model()
    if large is None:
        ctx["failed"] = (
            "This lesson needs a second installed model to hand unsure questions to: "
            "File ▸ Get models… installs one."
        )
        return
    host.right_size(large, ROUTE_SIGNAL, ROUTE_THRESHOLD)
    try:
        tokens = steps.size(host, 8, 4)
        yield from steps.run(host, ctx, ROUTE_PROMPT, mode="chat", max_tokens=tokens)
    finally:
        host.right_size(None, ROUTE_SIGNAL, ROUTE_THRESHOLD)
    ctx["attempts"] = host.turn_runs()


def say_route(ctx: dict) -> Sentence:
    why = steps.missing(ctx)
    if why:
        return Sentence(why)
    attempts = ctx.get("attempts") or [ctx["run"]]
    small = attempts[0]
    note = small.route
    if note is None or small.done is None:
        return Sentence("The answer was not judged: it did not end on its own.")
    value = "not measured" if note.value is None else f"{note.value:.2f}"
    t_small = small.done.elapsed_s
    numbers = {"value": note.value, "threshold": note.threshold, "small_s": t_small}
    head = f"{note.small}'s least likely answer token had p {value}"
    if note.failed:
        return Sentence(
            f"{head}, below {note.threshold:.2f}, but {note.large} did not answer "
            f"({note.failed}): the small answer stands, marked not escalated.",
            numbers,
        )
    if not note.escalated:
        return Sentence(
            f"{head}, at or above {note.threshold:.2f}: its answer was kept, in {t_small:.2f} "
            f"s, and {note.large} was never asked. Below the threshold it would have answered "
            "the same turn instead. Lab ▸ Routing measures, on a question set, which threshold "
            "keeps 95 % of the larger model's accuracy and what it saves.",
            numbers,
        )
    large = attempts[-1]
    t_large = large.done.elapsed_s if large.done is not None else 0.0
    numbers["large_s"] = t_large
    load = large.model.load_s if large.model is not None else None
    loading = f" (plus {load:.1f} s loading it)" if load else ""
    return Sentence(
        f"{head}, below {note.threshold:.2f}: {note.large} answered the same turn, "
        f"{t_large:.2f} s{loading} on top of the small model's {t_small:.2f} s. Both answers "
        "are runs of the turn (‹ run 1/2 ›). Escalating pays only when the larger model is "
        "right more often: Lab ▸ Routing measures that on a question set.",
        numbers,
    )
