"""The Lab window's side of the experiment registry: for each experiment, by the name
engine/lab/registry.py gives it (its parameters' and its result's `kind`), the tab that
asks for its parameters and draws its result. The engine never imports the app, so the
views are listed here, keyed by the same names; tests/app/test_lab_views.py checks that
both registries name the same experiments.

Every view has `run_requested` (a Signal), `params()` (its parameters, checked; a
SettingsError says what is wrong), `show_result(result)` and a `run` button; some have
`show_params(params)` (the window shows what it started from elsewhere, the tour).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.lab.batch_view import BatchView
from app.lab.cache_view import CacheView
from app.lab.confidence_view import ConfidenceView
from app.lab.distill_view import DistillView
from app.lab.quant_view import QuantView
from app.lab.routing_view import RoutingView
from app.lab.speculative_view import SpeculativeView


@dataclass(frozen=True)
class Tab:
    """One tab of the Lab window.

    Attributes:
        attr: the window's attribute holding the view (`lab.quant`, `lab.confidence`).
        title: the tab's title.
        make: bridge -> the view (the views that talk to the engine themselves take it).
        own_input: what the experiment runs on besides the playground's model, in words,
            when it does not run the playground's prompt (None: it runs the prompt).
        prompt_field: the parameter the playground's prompt is put in before the run
            (the cache experiment's conversation starts with it); None: none.
    """

    attr: str
    title: str
    make: Callable
    own_input: str | None = None
    prompt_field: str | None = None


# experiment name -> its tab, in the order the tabs are shown
TABS: dict[str, Tab] = {
    "quant": Tab("quant", "Quantization A/B", lambda _bridge: QuantView()),
    "cache": Tab("cache", "KV cache", lambda _bridge: CacheView(), prompt_field="first"),
    "speculative": Tab("speculative", "Speculative decoding", lambda _b: SpeculativeView()),
    "batch": Tab("batch", "Batching", lambda _bridge: BatchView()),
    "distill": Tab("distill", "Distillation", DistillView),
    "calibrate": Tab("confidence", "Confidence", ConfidenceView, own_input="its question set"),
    "route": Tab(
        "routing", "Routing", RoutingView, own_input="its question set and a larger model"
    ),
}
# an experiment run from another's tab -> that tab's experiment
SHARED = {"distill-train": "distill"}


def tab_of(kind: str) -> str:
    """The name of the tab that runs and shows experiment `kind`."""
    return SHARED.get(kind, kind)


def names() -> set[str]:
    """Every experiment a tab runs."""
    return set(TABS) | set(SHARED)
