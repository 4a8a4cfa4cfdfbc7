"""One home per experiment: for each of the lab's experiments, its name (the `kind` of its
parameters and of its result, and the command `logitscope lab <name>`), its parameter
dataclass, the function that runs it, and the command that runs it from the command line.

The runner runs in the engine process for the Lab window (LocalBackend.lab ->
engine/backends/mlx/lab_runs.run_experiment) and in this process for the command line,
the same function on the same parameters: `runner(record, params, prompt, settings,
progress) -> result`. Runners and commands live in layers above this one
(engine/backends/mlx, engine/cli), so they are named here as "module:function" strings,
imported only when one is used (`resolve`). The Lab window's tabs are keyed by the same
names in app/lab/views.py (the engine never imports the app).

Adding an experiment: its parameter dataclass (its `kind` is its name), its runner, its
command module (a function adding its subparser to `lab`'s, and the command), its view,
then one entry below and one in app/lab/views.py.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from engine.errors import SettingsError
from engine.lab.params import (
    BatchParams,
    CacheParams,
    CalibrateParams,
    DistillParams,
    DistillTrainParams,
    QuantParams,
    SpeculativeParams,
)
from engine.lab.routing import RouteParams


@dataclass(frozen=True)
class Experiment:
    """One experiment, as every side reaches it.

    Attributes:
        params: its frozen parameter dataclass (its `kind` ClassVar is the name).
        runner: "module:function" running it on a loaded model:
            f(record, params, prompt, settings, progress) -> its result dataclass.
        parser: "module:function" adding `logitscope lab <name>` to lab's subparsers.
        command: "module:function" running `logitscope lab <name>`: f(args) -> exit status.
    """

    params: type
    runner: str
    parser: str
    command: str

    @property
    def name(self) -> str:
        """The experiment's name: its parameters' kind, its command's name."""
        return self.params.kind


# In the order `logitscope lab --help` lists the commands.
EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        Experiment(
            QuantParams,
            runner="engine.backends.mlx.lab_runs:quant_experiment",
            parser="engine.cli.lab:add_quant",
            command="engine.cli.lab:cmd_quant",
        ),
        Experiment(
            BatchParams,
            runner="engine.backends.mlx.lab_runs:batching_experiment",
            parser="engine.cli.lab:add_batch",
            command="engine.cli.lab:cmd_batch",
        ),
        Experiment(
            CacheParams,
            runner="engine.backends.mlx.lab_runs:cache_experiment",
            parser="engine.cli.lab:add_cache",
            command="engine.cli.lab:cmd_cache",
        ),
        Experiment(
            SpeculativeParams,
            runner="engine.backends.mlx.lab_runs:speculative_experiment",
            parser="engine.cli.lab:add_speculative",
            command="engine.cli.lab:cmd_speculative",
        ),
        Experiment(
            DistillParams,
            runner="engine.backends.mlx.distill_runs:compare_run",
            parser="engine.cli.lab_distill:add_distill",
            command="engine.cli.lab_distill:cmd_distill",
        ),
        Experiment(
            DistillTrainParams,
            runner="engine.backends.mlx.distill_runs:train_run",
            parser="engine.cli.lab_distill:add_train",
            command="engine.cli.lab_distill:cmd_distill_train",
        ),
        Experiment(
            CalibrateParams,
            runner="engine.backends.mlx.calibrate_runs:calibrate_lab",
            parser="engine.cli.lab_calibrate:add_parser",
            command="engine.cli.lab_calibrate:cmd_calibrate",
        ),
        Experiment(
            RouteParams,
            runner="engine.backends.mlx.lab_runs:route_experiment",
            parser="engine.cli.lab_route:add_parser",
            command="engine.cli.lab_route:cmd_route",
        ),
    )
}
KINDS = {name: e.params for name, e in EXPERIMENTS.items()}  # name -> parameter dataclass


def experiment(name: str) -> Experiment:
    """The experiment called `name`.

    Raises:
        SettingsError: no experiment has that name (the known ones named).
    """
    if name not in EXPERIMENTS:
        raise SettingsError(f"unknown experiment '{name}' ({', '.join(EXPERIMENTS)})")
    return EXPERIMENTS[name]


def experiment_of(params) -> Experiment:
    """The experiment whose parameter dataclass `params` is.

    Raises:
        SettingsError: `params` is no experiment's parameters.
    """
    e = EXPERIMENTS.get(getattr(params, "kind", None))
    if e is None or type(params) is not e.params:
        raise SettingsError(f"unknown experiment {params!r}")
    return e


def resolve(ref: str):
    """The function a "module:function" reference names (its module imported now)."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def params_from(kind: str, values: dict | None = None):
    """The experiment `kind` with `values` (unknown names are refused, not ignored).

    Args:
        kind: a key of EXPERIMENTS (quant | batch | cache | speculative | distill |
            distill-train | calibrate | route).
        values: field names to values (a `kind` key is ignored); None or missing
            fields: the defaults.

    Returns:
        The validated parameter dataclass.

    Raises:
        SettingsError: an unknown experiment, an unknown parameter, a value out of range.
    """
    cls = experiment(kind).params
    values = {k: v for k, v in (values or {}).items() if k != "kind"}
    names = {f for f in cls.__dataclass_fields__ if f != "kind"}
    unknown = sorted(set(values) - names)
    if unknown:
        raise SettingsError(f"the {kind} experiment has no parameter {', '.join(unknown)}")
    return cls(**values)


__all__ = [
    "EXPERIMENTS",
    "KINDS",
    "Experiment",
    "experiment",
    "experiment_of",
    "params_from",
    "resolve",
]
