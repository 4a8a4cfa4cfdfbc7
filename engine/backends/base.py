"""The seam every backend implements, and how a model spec picks a backend.

A model spec is one string (what the picker, the journal and `--model` hold):
nothing or a path or a name for the local MLX engine, or
`http(s)://host:port/v1#model-name` for a model on an OpenAI-compatible server.
API keys never appear in a spec: they travel beside it, only to the engine.

The engine process loads backends by name (`open_backend`), so nothing that
imports this module pulls in MLX or HTTP code.
"""

from __future__ import annotations

import importlib
import ipaddress
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from engine.errors import ModelError
from engine.inside.inspect_request import InspectRequest
from engine.lab import LabParams, LabResult
from engine.reading.request import ReadRequest
from engine.run.continuation import Continuation
from engine.run.records import InspectRecord, ModelRecord, Record
from engine.run.settings import SamplingSettings

Progress = Callable[[str, float], None]  # (message, fraction 0..1)
Prompt = str | list[dict]  # a user message, or a whole conversation of {role, content}

BACKENDS = {"mlx": "engine.backends.mlx.backend", "openai": "engine.backends.openai.backend"}


class Backend(Protocol):
    """Runs one kind of model and yields the engine's records.

    Fields a backend cannot provide are None (or empty), never invented; its
    ModelRecord's `capabilities` say which views it can fill. `local` declares
    whether it holds the model's weights: a local backend is a `LocalBackend`
    (inspect, lab, a compute preference); the engine dispatches on this flag.
    """

    kind: str
    local: bool

    def load(self, model: str | None, progress: Progress) -> ModelRecord:
        """Make `model` the one this backend runs (a no-op when it already is).

        Args:
            model: the model spec; None or "": the default local model.
            progress: called with (message, fraction 0..1) while the model is
                fetched, converted or loaded.

        Returns:
            The model's record (sent once before prefill).

        Raises:
            ModelError: the model cannot be found, read, converted or loaded.
            ServerError: a server refused, failed or could not be reached.
        """
        ...

    def generate(
        self,
        prompt: Prompt,
        settings: SamplingSettings,
        should_stop: Callable[[], bool],
        continuation: Continuation | None = None,
    ) -> Iterator[Record]:
        """Run one generation with the loaded model.

        Args:
            prompt: the user message, or a whole conversation of {role, content}.
            settings: validated sampling settings.
            should_stop: polled between steps; True ends the run as "cancelled".
            continuation: None, or where a branch of an answer starts
                (engine/run/continuation.py); the records then start at its step.

        Yields:
            Prefill, token (and, from a server, progress) records, then one
            DoneRecord; a run that fails after its first token ends with
            finish_reason "error" and keeps its tokens.

        Raises:
            SettingsError: bad settings, or a prompt that does not fit.
            ModelError: no model loaded, or one that cannot run this prompt.
            ServerError: a server that fails before the first token.
        """
        ...

    def read(
        self,
        request: ReadRequest,
        should_stop: Callable[[], bool],
        progress: Callable[[int, int], None],
    ) -> Iterator[Record]:
        """Read a given text through the loaded model (engine/reading).

        Args:
            request: the validated ReadRequest.
            should_stop: polled between chunks; True ends the read as "cancelled".
            progress: called with (tokens read, tokens in the text).

        Yields:
            Prefill and token records (`read` set, with `rank` where known), then one
            DoneRecord whose `reading` is the ReadSummary.

        Raises:
            SettingsError: an empty text, or one too long when a window is refused.
            ServerError: a server that cannot return a given text's log-probabilities.
        """
        ...

    def close(self) -> None:
        """Let go of the model (and any connection); `load` may be called again."""
        ...


class LocalBackend(Backend, Protocol):
    """A backend that holds the weights: it can also look inside the model and run
    the lab's experiments, and chooses how quantized weights run (`prefer`)."""

    prefer: str  # one of engine.run.settings.COMPUTE_PREFERENCES

    def inspect(
        self, prompt: Prompt, settings: SamplingSettings, request: InspectRequest
    ) -> InspectRecord:
        """Attention, the logit lens, the journey or attention by position at one step
        (see mlx/inspect_step.py).

        Args:
            prompt: the run's prompt or conversation.
            settings: the run's settings (the prompt is encoded as the run did).
            request: what to see, at which step of which answer.

        Returns:
            an InspectRecord.
        """
        ...

    def lab(
        self,
        params: LabParams,
        prompt: Prompt,
        settings: SamplingSettings,
        progress: Progress,
    ) -> LabResult:
        """Run one lab experiment on the loaded model.

        Args:
            params: the experiment's parameter dataclass (engine.lab, validated when
                made); its class says which experiment.
            prompt: the run's prompt or conversation.
            settings: the prompt's settings (chat template, system prompt).
            progress: called with (message, fraction 0..1) as the experiment proceeds.

        Returns:
            The experiment's result dataclass (engine/lab/results.py).
        """
        ...


@dataclass(frozen=True)
class RemoteSpec:
    """A model on a server: its OpenAI-compatible base URL and the model's name."""

    base_url: str  # e.g. http://127.0.0.1:8080/v1 (no trailing slash)
    model: str

    def __str__(self) -> str:
        return f"{self.base_url}#{self.model}"


def is_remote(spec: str | None) -> bool:
    """Whether a model spec names a model on a server.

    Args:
        spec: a model spec, or None.

    Returns:
        True when `spec` starts with http:// or https:// (any case).
    """
    return bool(spec) and spec.lower().startswith(("http://", "https://"))


MAX_URL = 2048  # characters of a server address
MAX_HOST = 253  # characters of a host name (DNS), each dot-separated label at most 63
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)?[^/?#]*@")  # `http://user:key@`


def _masked(url: str) -> str:
    """The address as it may be shown: user name, password and query replaced by ***."""
    url = _USERINFO.sub(lambda m: (m.group(1) or "") + "***@", url)
    return url.split("?", 1)[0] + ("?***" if "?" in url else "")


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?!\d)")  # `javascript:`, not `host:8080`


def normalize_base_url(url: str) -> str:
    """A server address made into its OpenAI base URL.

    `host:8080`, `http://host:8080` and `http://host:8080/v1/` all give
    `http://host:8080/v1`; a URL that already has a path keeps it (no `/v1` added).

    Args:
        url: the address as typed (surrounding spaces are ignored).

    Returns:
        The http(s) base URL, without a trailing slash.

    Raises:
        ModelError: not a well-formed http(s) URL (one sentence saying what is wrong).
    """
    url = url.strip()
    if not url:
        raise ModelError("give the server's address, e.g. http://127.0.0.1:8080/v1")
    example = "give one like http://127.0.0.1:8080/v1"
    if len(url) > MAX_URL:
        raise ModelError(f"the server address is {len(url)} characters long: {example}")
    shown = _masked(url).encode("utf-8", "backslashreplace").decode()[:80]
    if _USERINFO.match(url):
        # A key in the address would be stored with the run (model path, journal, exports).
        raise ModelError(
            f"'{shown}' holds a user name or password (user:…@): give the API key "
            "separately (the key field of Add server…, or --api-key-env), not in the address"
        )
    if "?" in url:
        raise ModelError(f"'{shown}' holds a query (?…): give the server's base URL only")
    if "://" not in url and _SCHEME.match(url):
        raise ModelError(f"'{shown}' is not an http(s) address; {example}")
    if "://" not in url:
        url = "http://" + url
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in ("http", "https") or not rest.split("/")[0]:
        raise ModelError(f"'{shown}' is not an http(s) address; {example}")
    if any(c in url for c in "# \t\n"):
        raise ModelError(f"'{shown}' contains a space or '#': give the server's base URL only")
    _check_url(url, shown, example)
    url = url.rstrip("/")
    if not url.endswith("/v1") and url.count("/") <= 2:
        url += "/v1"  # the OpenAI routes live under /v1 on every server we know
    return url


def _check_url(url: str, shown: str, example: str) -> None:
    """Raise ModelError for what no server address holds: control characters or
    invalid text, a malformed IPv6 address or port, an overlong host."""
    from urllib.parse import unquote, urlsplit

    if any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in unquote(url)):
        raise ModelError(f"'{shown}' holds control characters or invalid text: {example}")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises for `abc` or out of range
        host = parts.hostname or ""
    except ValueError as e:
        raise ModelError(f"'{shown}' is not a valid address ({e}): {example}") from None
    if "[" in parts.netloc:
        try:
            ipaddress.IPv6Address(host.split("%")[0])
        except ValueError:
            raise ModelError(f"'{shown}' has a malformed IPv6 address: {example}") from None
    elif (
        not host
        or "%" in host
        or len(host) > MAX_HOST
        or any(len(label) > 63 for label in host.split("."))
    ):
        raise ModelError(f"'{shown}' has no valid host name: {example}")
    if port == 0:
        raise ModelError(f"'{shown}' has port 0: {example}")


def parse_remote(spec: str) -> RemoteSpec:
    """Split a remote spec `URL#model` into its base URL and model name.

    Args:
        spec: `URL#model`; without `#model` the model name is "" (the server's first).

    Returns:
        The RemoteSpec, its URL normalized (see `normalize_base_url`).

    Raises:
        ModelError: the URL part is not a well-formed http(s) address.
    """
    url, _, model = spec.partition("#")
    return RemoteSpec(normalize_base_url(url), model)


def backend_kind(spec: str | None) -> str:
    """The backend a model spec needs.

    Args:
        spec: a model spec, or None (the default local model).

    Returns:
        "openai" for a server URL, else "mlx".
    """
    return "openai" if is_remote(spec) else "mlx"


def open_backend(kind: str, **options) -> Backend:
    """Import and create a backend by name (imported only in the engine process).

    Args:
        kind: a key of BACKENDS (mlx | openai).
        **options: passed to the backend module's `create()`.

    Returns:
        A new backend, no model loaded yet.

    Raises:
        ModelError: an unknown backend name.
    """
    if kind not in BACKENDS:
        raise ModelError(f"unknown backend '{kind}' (known: {', '.join(BACKENDS)})")
    return importlib.import_module(BACKENDS[kind]).create(**options)


def warm_up(kind: str) -> None:
    """Import backend `kind`'s heavy modules now (a local backend's MLX and tokenizer
    libraries); a backend without such a step does nothing. Errors surface at load.

    Args:
        kind: a key of BACKENDS.
    """
    module = importlib.import_module(BACKENDS[kind])
    warm = getattr(module, "warm_up", None)  # a module-level hook, optional per backend
    if warm is not None:
        warm()


def prepare_process() -> str:
    """Set up the engine process before any backend loads.

    On MLX's CPU build this loads an optimised BLAS, which must happen before MLX
    is imported.

    Returns:
        What was done, in words ("MLX backend unavailable" without MLX).
    """
    try:
        module = importlib.import_module("engine.backends.mlx.fast_blas")
    except ImportError:
        return "MLX backend unavailable"
    return module.enable().detail
