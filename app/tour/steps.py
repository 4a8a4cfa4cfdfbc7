"""Shared pieces of the lessons' experiments: run-and-wait sub-generators and the
formatting of numbers in sentences. An experiment is a generator over a TourHost
that yields predicates (the panel resumes it when one holds) and leaves what ran
in `ctx`; its sentence reads only `ctx`."""

from __future__ import annotations

from collections.abc import Callable, Iterator

Wait = Iterator[Callable[[], bool]]


def run(host, ctx: dict, prompt: str, **settings) -> Wait:
    """Run `prompt` in the playground and keep the finished run as ctx["run"]."""
    if not host.run(prompt, **settings):
        ctx["failed"] = "The run did not start: the playground says why."
        return
    yield host.idle
    ctx["run"] = host.shown()


def inside(host, ctx: dict, step: int | None, tab: str, what: str | None = None) -> Wait:
    """Open Inside on the run on screen at `step` and keep its record as ctx["record"]."""
    if "run" not in ctx:
        return
    host.inside(step, tab)
    if what is None:
        return
    yield lambda: host.inside_record(what) is not None or host.inside_idle()
    ctx["record"] = host.inside_record(what)


def lab(host, ctx: dict, params, prompt: str) -> Wait:
    """Run a lab experiment on `prompt`; its result as ctx["result"]."""
    if not host.lab(params, prompt):
        ctx["failed"] = "The experiment did not start: the Lab says why."
        return
    yield lambda: host.lab_result(params.kind) is not None or host.lab_idle()
    ctx["result"] = host.lab_result(params.kind)


def size(host, normal: int, tiny: int) -> int:
    """`normal`, or `tiny` where the host asks for the smallest experiments (the tests'
    walks on the larger models and on servers)."""
    return tiny if getattr(host, "tiny", False) else normal


def pct(p: float | None) -> str:
    """A probability as a percentage a person reads (one decimal under 10 %, two
    significant digits under 0.1 %, so a small share never reads as 0.0 %)."""
    if p is None:
        return "an unreported share"
    v = 100 * p
    if v < 0.1:
        return f"{v:.2g} %"
    return f"{v:.1f} %" if v < 10 else f"{v:.0f} %"


def quote(text: str) -> str:
    """A token in quotes, its spaces and newlines visible."""
    return "“" + text.replace("\n", "\\n") + "”"


def missing(ctx: dict) -> str | None:
    """Why there is nothing to say (a refused start, a failed run), or None."""
    if "failed" in ctx:
        return ctx["failed"]
    state = ctx.get("run")
    if state is None:
        return "Nothing ran."
    if state.error is not None:
        return f"The run failed: {state.error.message}"
    return None
