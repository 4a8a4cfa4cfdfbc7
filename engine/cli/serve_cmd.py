"""`logitscope serve`: an OpenAI-compatible endpoint on this machine (engine/serve/).

The API key is read from the environment variable `--api-key-env` names, or with
`--api-key-keychain` from the system keychain (stored there once by `logitscope serve
--set-key`, which reads it from standard input); never from the command line, where
other users of the machine could read it. Without one the server only listens on the
loopback.

`--route SMALL,LARGE --escalate-below SIGNAL=VALUE` serves two models: the small one
answers each request, the large one instead when the small answer's confidence signal
(mean_prob, geo_mean_prob, min_prob, first_prob or first_entropy, the negated
first-step entropy) is below VALUE (engine/serve/app.py). Bad route settings are
one sentence and exit 2 before any model loads.
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
        "--route",
        default=None,
        metavar="SMALL,LARGE",
        help="route every request: the small model answers, the large one when the small "
        "one is not confident enough (with --escalate-below)",
    )
    s.add_argument(
        "--escalate-below",
        default=None,
        metavar="SIGNAL=VALUE",
        help="with --route: escalate when the small answer's mean_prob, geo_mean_prob, "
        "min_prob, first_prob (its token probabilities' mean, geometric mean, least or "
        "first) or first_entropy (the first step's entropy, negated: -50..0 nats) is below "
        "VALUE, e.g. min_prob=0.2",
    )
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
        "--api-key-keychain",
        action="store_true",
        help="take the API key from the system keychain (store it with --set-key)",
    )
    s.add_argument(
        "--set-key",
        action="store_true",
        help="read an API key from standard input, store it in the system keychain, exit",
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


KEYCHAIN_SERVICE, KEYCHAIN_ACCOUNT = "logitscope-serve", "api-key"


def _keychain():
    """The keyring module with a usable backend.

    Raises:
        SettingsError: this system has no keychain (say what to use instead).
    """
    try:
        import keyring
        from keyring.backends.fail import Keyring as NoKeyring
    except ImportError:  # pragma: no cover - a dependency of the project
        raise SettingsError("the keyring package is missing: reinstall Logitscope") from None
    if isinstance(keyring.get_keyring(), NoKeyring):
        raise SettingsError(
            "this system has no keychain: give the key in an environment variable with "
            "--api-key-env VAR instead"
        )
    return keyring


def store_key(stream=None) -> str:
    """`--set-key`: one line from standard input (hidden on a terminal) into the keychain."""
    stream = stream or sys.stdin
    if stream.isatty():
        import getpass

        key = getpass.getpass("API key for logitscope serve: ")
    else:
        key = stream.readline()
    key = key.strip()
    if not key:
        raise SettingsError("no API key was given on standard input: nothing was stored")
    _keychain().set_password(KEYCHAIN_SERVICE, KEYCHAIN_ACCOUNT, key)
    return "stored in the system keychain; serve with --api-key-keychain"


def _keychain_key() -> str:
    key = _keychain().get_password(KEYCHAIN_SERVICE, KEYCHAIN_ACCOUNT)
    if not key:
        raise SettingsError(
            "--api-key-keychain: no key is stored yet: run `logitscope serve --set-key` "
            "and type it (or pipe it in)"
        )
    return key


def _api_key(var: str | None, keychain: bool = False) -> str | None:
    if var is not None and keychain:
        raise SettingsError("give the API key one way: --api-key-env or --api-key-keychain")
    if keychain:
        return _keychain_key()
    if var is None:
        return None
    key = os.environ.get(var, "")
    if not key.strip():
        raise SettingsError(f"--api-key-env {var}: that environment variable is not set or empty")
    return key.strip()


def parse_route(text: str | None) -> tuple[str, ...] | None:
    """`--route SMALL,LARGE` as its model specs (checked by server.check_route)."""
    return None if text is None else tuple(text.split(","))


def parse_escalate(text: str | None) -> tuple[str, float] | None:
    """`--escalate-below SIGNAL=VALUE` as (signal, value).

    Raises:
        SettingsError: not SIGNAL=VALUE with a number.
    """
    if text is None:
        return None
    signal, eq, value = text.partition("=")
    try:
        number = float(value) if eq else None
    except ValueError:
        number = None
    if number is None or not signal.strip():
        raise SettingsError(f"--escalate-below takes SIGNAL=VALUE, e.g. min_prob=0.2, not {text!r}")
    return signal.strip(), number


def cmd_serve(args) -> int:
    """Run the server until interrupted."""
    from engine.backends.base import prepare_process

    if args.set_key:
        print(f"logitscope serve: API key {store_key()}", file=sys.stderr)
        return 0
    prepare_process()  # an optimised BLAS before MLX loads, as the engine process does
    from engine.serve.server import ServeOptions, check_options, serve

    if args.batch < 1 or args.queue < 0:
        raise SettingsError("--batch must be >= 1 and --queue >= 0")
    options = ServeOptions(
        route=parse_route(args.route),
        escalate_below=parse_escalate(args.escalate_below),
        model=args.model,
        host=args.host,
        port=args.port,
        api_key=_api_key(args.api_key_env, args.api_key_keychain),
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
