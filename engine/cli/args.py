"""Argument helpers every command shares: the prompt from argv or stdin, sampling
settings, a server's address and API key, a model spec, an output file's name."""

from __future__ import annotations

import os
import sys

from engine.errors import SettingsError
from engine.reading.request import MAX_TEXT_CHARS
from engine.run.settings import SamplingSettings

API_KEY_HELP = "name of the environment variable holding the server's API key"


def named(what: str):
    """An argparse `type` refusing an empty or blank value (exit 2, argparse's one line):
    leaving the option out is how to ask for its default."""
    import argparse

    def check(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"is empty: give {what}, or leave the option out")
        return value

    return check


MODEL_ARG = named("a model (an MLX folder, a .gguf file or a name)")


def server_args(g) -> None:
    """Add --endpoint, --remote-model and --api-key-env to an argument parser."""
    g.add_argument(
        "--endpoint",
        default=None,
        metavar="URL",
        help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1",
    )
    g.add_argument(
        "--remote-model",
        default=None,
        metavar="NAME",
        help="the server's model (default: the first it lists)",
    )
    g.add_argument("--api-key-env", default=None, metavar="VAR", help=API_KEY_HELP)


def api_key(args) -> str | None:
    """The API key from the variable --api-key-env names (None without the option).

    Raises:
        SettingsError: the option is empty, or the variable is unset or empty.
    """
    from engine.backends.openai.http import check_api_key

    if args.api_key_env is None:
        return None
    if not args.api_key_env:
        raise SettingsError(
            "--api-key-env needs the name of the environment variable holding the server's API key"
        )
    key = os.environ.get(args.api_key_env)
    if not key:
        raise SettingsError(
            f"the environment variable {args.api_key_env} is not set "
            "(it should hold the server's API key)"
        )
    return check_api_key(key, f"the environment variable {args.api_key_env}")


def base_url(endpoint: str) -> str:
    """--endpoint as a base URL; a malformed one is bad input (exit 2)."""
    from engine.backends.base import normalize_base_url
    from engine.errors import ModelError

    try:
        return normalize_base_url(endpoint)
    except ModelError as e:
        raise SettingsError(f"--endpoint: {e}") from None


def model_spec(args) -> str | None:
    """The model spec of `generate`: a local model, or URL#name with --endpoint."""
    if args.endpoint is None:
        if args.remote_model is not None:
            raise SettingsError("--remote-model needs --endpoint (the server's address)")
        return args.model
    if args.model:
        raise SettingsError("give either --model (local) or --endpoint (a server), not both")
    from engine.backends.openai.http import check_model_id

    return f"{base_url(args.endpoint)}#{check_model_id(args.remote_model or '')}"


def read_prompt(value: str) -> str:
    """The prompt from argv or stdin ('-'), as valid text.

    Raises:
        SettingsError: undecodable bytes or a lone surrogate in the prompt.
    """
    if value == "-":
        return read_stdin_text()
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise SettingsError(
            f"the prompt holds bytes that are not valid text (position {e.start}): "
            "check the terminal's encoding, or pass the prompt on stdin with --prompt -"
        ) from None
    return value


STDIN_CHUNK_BYTES = 1 << 16  # standard input is read this much at a time


def read_stdin_text(max_chars: int = MAX_TEXT_CHARS) -> str:
    """Standard input as UTF-8 text, read in chunks and refused as soon as it passes
    `max_chars` characters or holds a NUL byte: an endless stream (/dev/zero, `yes`)
    costs one chunk of memory and Ctrl-C works while it is read.

    Raises:
        SettingsError: a NUL byte (binary data), invalid UTF-8 or over `max_chars`.
    """
    import codecs

    stream = sys.stdin.buffer
    read = getattr(stream, "read1", stream.read)  # read1: what is there, without waiting for more
    decoder = codecs.getincrementaldecoder("utf-8")()
    parts: list[str] = []
    chars = offset = 0
    while True:
        chunk = read(STDIN_CHUNK_BYTES)
        if b"\x00" in chunk:
            raise SettingsError(
                f"standard input holds a NUL byte (byte {offset + chunk.index(0)}): it is "
                "binary data, not a text; give UTF-8 text"
            )
        pending = len(decoder.getstate()[0])
        try:
            piece = decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as e:
            at = offset - pending + e.start
            raise SettingsError(
                f"the prompt on standard input is not valid UTF-8 (byte {at}): "
                "save it as UTF-8 text"
            ) from None
        chars += len(piece)
        if chars > max_chars:
            raise SettingsError(
                f"standard input is over {max_chars:,} characters, the most read at once: "
                "split the text"
            )
        parts.append(piece)
        if not chunk:
            return "".join(parts)
        offset += len(chunk)


def settings_from(args) -> SamplingSettings:
    """The sampling settings of `generate`'s options, validated."""
    return SamplingSettings(
        temperature=args.temp,
        top_p=args.top_p,
        top_k=args.top_k,
        min_p=args.min_p,
        repetition_penalty=args.repetition_penalty,
        max_tokens=args.max_tokens,
        seed=args.seed,
        stop=tuple(args.stop),
        system_prompt=args.system,
        chat_template=not args.raw,
        top_n=args.top_n,
    ).validate()


MAX_NAME_BYTES = 255  # of one file or folder name, on every common file system


def check_output_name(name: str) -> None:
    """Raise SettingsError for an output name no file system takes."""
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        raise SettingsError(
            "the output name holds bytes that are not valid text: choose a name in UTF-8"
        ) from None
    if b"\0" in encoded:
        raise SettingsError("the output name holds a NUL character: choose another name")
    longest = max(len(part) for part in encoded.split(b"/"))
    if longest > MAX_NAME_BYTES:
        raise SettingsError(
            f"the output name is too long ({longest} bytes; at most "
            f"{MAX_NAME_BYTES}): choose a shorter one"
        )


def silence_stdout() -> None:
    """Point stdout at /dev/null so Python's exit flush does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
