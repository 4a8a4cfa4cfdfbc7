"""`logitscope serve`: an OpenAI-compatible endpoint on this machine (engine/serve/).

The API key is read from the environment variable `--api-key-env` names (never
from the command line, where other users of the machine could read it); without
one the server only listens on the loopback.
"""

from __future__ import annotations

import os
import sys

from engine.cli.args import MODEL_ARG, named
from engine.errors import SettingsError
from engine.serve.scheduler import DEFAULT_BATCH, DEFAULT_QUEUE


def add_parser(sub) -> None:
    """Add the `serve` command."""
    s = sub.add_parser(
        "serve", help="serve a model over an OpenAI-compatible API, every token journaled"
    )
    s.add_argument("--model", default=None, type=MODEL_ARG)
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (beyond the loopback needs an API key)",
    )
    s.add_argument("--port", type=int, default=8080, help="port to listen on (0: any free port)")
    s.add_argument(
        "--api-key-env",
        default=None,
        type=named("an environment variable's name"),
        metavar="VAR",
        help="the environment variable holding the API key clients must send",
    )
    s.add_argument(
        "--cors",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="allow browser requests from this origin (repeatable)",
    )
    s.add_argument(
        "--batch",
        type=int,
        default=DEFAULT_BATCH,
        help="requests decoded together (1: one at a time)",
    )
    s.add_argument(
        "--queue",
        type=int,
        default=DEFAULT_QUEUE,
        help="requests waiting beyond the batch (more get 429)",
    )


def _api_key(var: str | None) -> str | None:
    if var is None:
        return None
    key = os.environ.get(var, "")
    if not key.strip():
        raise SettingsError(f"--api-key-env {var}: that environment variable is not set or empty")
    return key.strip()


def cmd_serve(args) -> int:
    """Run the server until interrupted."""
    from engine.backends.base import prepare_process

    prepare_process()  # an optimised BLAS before MLX loads, as the engine process does
    from engine.serve.server import ServeOptions, check_options, serve

    if args.batch < 1 or args.queue < 0:
        raise SettingsError("--batch must be >= 1 and --queue >= 0")
    options = ServeOptions(
        model=args.model,
        host=args.host,
        port=args.port,
        api_key=_api_key(args.api_key_env),
        cors=tuple(args.cors),
        max_batch=args.batch,
        max_queue=args.queue,
    )
    check_options(options)

    def ready(port: int) -> None:
        host = f"[{args.host}]" if ":" in args.host else args.host
        print(
            f"logitscope serve: listening on http://{host}:{port}/v1 (Ctrl-C stops)",
            file=sys.stderr,
        )

    def progress(message: str, _fraction: float) -> None:
        print(message, file=sys.stderr)

    serve(options, progress, ready)
    return 0
