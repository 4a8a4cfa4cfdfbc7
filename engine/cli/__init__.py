"""The `logitscope` command line: one module per command group.

    generate  engine/cli/generate.py     models   engine/cli/models.py
    inspect   engine/cli/inspect_cmd.py  lab      engine/cli/lab.py (+ lab_*.py)
    sessions, export, import  engine/cli/sessions.py
    bench     engine/cli/bench.py        branch, sample  engine/cli/branch.py
    serve     engine/cli/serve_cmd.py    read     engine/cli/read_cmd.py
    shared argument helpers: engine/cli/args.py

Every user mistake ends with one line `logitscope: error: ...` on stderr and a
non-zero exit (2 for bad arguments, 1 for a run that failed), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from engine.errors import LogitscopeError, SettingsError
from engine.store import environment

# command -> (module, function); each module's add_parser(sub) declares its options
COMMANDS = {
    "generate": ("engine.cli.generate", "cmd_generate"),
    "inspect": ("engine.cli.inspect_cmd", "cmd_inspect"),
    "lab": ("engine.cli.lab", "cmd_lab"),
    "models": ("engine.cli.models", "cmd_models"),
    "sessions": ("engine.cli.sessions", "cmd_sessions"),
    "export": ("engine.cli.sessions", "cmd_export"),
    "import": ("engine.cli.sessions", "cmd_import"),
    "bench": ("engine.cli.bench", "cmd_bench"),
    "branch": ("engine.cli.branch", "cmd_branch"),
    "sample": ("engine.cli.branch", "cmd_sample"),
    "serve": ("engine.cli.serve_cmd", "cmd_serve"),
    "read": ("engine.cli.read_cmd", "cmd_read"),
}
_PARSERS = (
    "engine.cli.generate",
    "engine.cli.inspect_cmd",
    "engine.cli.lab",
    "engine.cli.models",
    "engine.cli.sessions",
    "engine.cli.bench",
    "engine.cli.branch",
    "engine.cli.serve_cmd",
    "engine.cli.read_cmd",
)


# Commands that run a local model: each takes --compute, the pin of its compute path.
COMPUTE_COMMANDS = ("generate", "inspect", "bench", "branch", "sample", "serve", "read")


def _compute_option(parser: argparse.ArgumentParser) -> None:
    from engine.run.settings import COMPUTE_PREFERENCES

    parser.add_argument(
        "--compute",
        choices=COMPUTE_PREFERENCES,
        default=None,
        help="how a local quantized model runs on the CPU: auto measures both paths once "
        "(alternating rounds, kept in runtime/paths.json); speed pins float32, memory the "
        "stored weights (default: LOGITSCOPE_COMPUTE, else auto; serve: speed)",
    )


def _parser() -> argparse.ArgumentParser:
    from engine import __version__

    p = argparse.ArgumentParser(prog="logitscope", description="Make LLM inference visible.")
    p.add_argument("--version", action="version", version=f"logitscope {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for module in _PARSERS:
        importlib.import_module(module).add_parser(sub)
    for name in COMPUTE_COMMANDS:
        _compute_option(sub.choices[name])
    from engine.cli.help_text import finish

    finish(p)  # every option's default and an example, on every command's --help
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the `logitscope` command line.

    Returns:
        The exit status: 0, 1 (an error), 2 (bad input), 130 (interrupted).
    """
    if argv is None:  # the command line itself (not a caller passing its arguments)
        from engine.process.start_method import one_engine_per_process

        one_engine_per_process()
    args = _parser().parse_args(argv)
    if getattr(args, "compute", None):  # the engine process (and serve) read it there
        import os

        os.environ["LOGITSCOPE_COMPUTE"] = args.compute
    try:
        module, name = COMMANDS[args.command]
        return getattr(importlib.import_module(module), name)(args)
    except LogitscopeError as e:
        print(f"logitscope: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, SettingsError) else 1
    except KeyboardInterrupt:
        print("logitscope: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `logitscope ... | head`: the reader left; leave quietly
        from engine.cli.args import silence_stdout

        silence_stdout()
        return 0
    except Exception as e:  # noqa: BLE001 - a bug: one line, the details on request
        if environment.flag("LOGITSCOPE_DEBUG"):
            raise
        first = (str(e).splitlines() or [""])[0][:300]
        print(
            f"logitscope: internal error: {type(e).__name__}: {first} "
            "(set LOGITSCOPE_DEBUG=1 for details)",
            file=sys.stderr,
        )
        return 1
