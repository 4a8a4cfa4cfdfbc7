"""One home per experiment (engine/lab/registry.py): every experiment's parameters, runner
and command are listed once, the command line's `lab` commands are exactly the registry's,
and no chain of isinstance tests over parameter types decides what runs (the Lab window's
tabs: tests/app/test_lab_views.py)."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from engine.errors import SettingsError
from engine.lab import params as params_module
from engine.lab import routing
from engine.lab.registry import EXPERIMENTS, KINDS, experiment, experiment_of, params_from, resolve

ROOT = Path(__file__).resolve().parents[2]
RUNNER_ARGS = ["record", "params", "prompt", "settings", "progress"]


def _params_classes() -> set[type]:
    """Every experiment parameter dataclass engine/lab defines (a `kind` and a name in
    Params), wherever it lives."""
    found = set()
    for module in (params_module, routing):
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            own = cls.__module__ == module.__name__ and cls.__name__.endswith("Params")
            if own and dataclasses.is_dataclass(cls) and getattr(cls, "kind", None):
                found.add(cls)
    return found


def test_every_parameter_dataclass_is_registered_under_its_kind():
    assert _params_classes() == {e.params for e in EXPERIMENTS.values()}
    for name, e in EXPERIMENTS.items():
        assert e.name == name == e.params.kind and KINDS[name] is e.params
    assert {"quant", "cache", "speculative", "batch", "distill", "distill-train"} < set(KINDS)
    assert {"calibrate", "route"} < set(KINDS)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_experiment_has_a_runner_a_parser_and_a_command(name):
    e = EXPERIMENTS[name]
    runner = resolve(e.runner)
    assert e.runner.startswith("engine.backends.mlx.")
    assert list(inspect.signature(runner).parameters)[:5] == RUNNER_ARGS, e.runner
    assert callable(resolve(e.parser)) and callable(resolve(e.command))
    assert e.parser.startswith("engine.cli.lab") and e.command.startswith("engine.cli.lab")


def test_the_command_line_lab_commands_are_the_registry():
    from engine.cli import _parser
    from engine.cli.help_text import every_parser

    commands = [path.split()[1] for path, _p in every_parser(_parser()) if path.startswith("lab ")]
    assert commands == list(EXPERIMENTS)  # each once, in the registry's order


def test_parameters_find_their_experiment_and_nothing_else_does():
    from engine.lab import CalibrateParams, QuantParams

    assert experiment_of(QuantParams()) is EXPERIMENTS["quant"]
    assert experiment_of(CalibrateParams()).runner.endswith("calibrate_runs:calibrate_lab")
    route = routing.RouteParams(small="a-small-model", large="a-large-model")
    assert experiment_of(route) is EXPERIMENTS["route"]
    with pytest.raises(SettingsError, match="unknown experiment"):
        experiment_of(object())
    with pytest.raises(SettingsError, match=r"unknown experiment 'nope' \(quant, batch"):
        experiment("nope")


def test_run_experiment_refuses_what_is_not_an_experiment():
    from engine.backends.mlx.lab_runs import run_experiment

    with pytest.raises(SettingsError, match="unknown experiment"):
        run_experiment(None, object(), "", None)


def test_params_from_makes_every_experiment_by_name():
    assert params_from("calibrate", {"samples": 2}).samples == 2
    assert params_from("route", {"small": "a", "large": "b"}).large == "b"
    with pytest.raises(SettingsError, match="the quant experiment has no parameter nope"):
        params_from("quant", {"nope": 1})


# `isinstance(params, QuantParams)`, `isinstance(p, (DistillParams, ...))`, ...
_CHAIN = re.compile(r"isinstance\(\s*[\w.]+\s*,\s*\(?\s*(\w+Params)\b")


def test_no_isinstance_chain_over_parameter_types_remains():
    names = {e.params.__name__ for e in EXPERIMENTS.values()}
    found = []
    for folder in ("engine", "app"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                m = _CHAIN.search(line)
                if m and m.group(1) in names:
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "dispatch through engine/lab/registry.py instead:\n" + "\n".join(found)
