"""What a server is and what it serves: `/v1/models`, plus llama.cpp's `/props`."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from engine.backends.openai.http import CONNECT_S, get_json
from engine.errors import ServerError
from engine.sessions.sanitize import clean_text

FLAVOURS = {
    "llama.cpp": "llama.cpp server",
    "vllm": "vLLM",
    "mlx_lm": "mlx_lm.server",
    "ollama": "Ollama",
    "lmstudio": "LM Studio",
    "openai": "OpenAI-compatible server",
}
# Most top candidates each server returns per token.
TOP_N_LIMIT = {"mlx_lm": 10, "openai": 20, "vllm": 20, "ollama": 20, "lmstudio": 20}


@dataclass(frozen=True)
class ServerModel:
    """One model a server lists; sizes and lengths None where it does not say."""

    id: str
    owned_by: str | None = None
    context_length: int | None = None
    size_bytes: int | None = None
    parameters: int | None = None


@dataclass(frozen=True)
class ServerInfo:
    """A server: its base URL, which kind it is (`flavour`) and its models."""

    base_url: str
    flavour: str  # a key of FLAVOURS
    models: tuple[ServerModel, ...]

    @property
    def label(self) -> str:
        """The server kind's name for people."""
        return FLAVOURS[self.flavour]


def _int_or_none(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _flavour(models: list[dict], headers: httpx.Headers) -> str:
    server = headers.get("server", "").lower()
    owners = {m.get("owned_by") for m in models if isinstance(m, dict)}
    if "llamacpp" in owners or "llama.cpp" in server:
        return "llama.cpp"
    if "vllm" in owners:
        return "vllm"
    if "library" in owners or "ollama" in owners:
        return "ollama"
    if "organization_owner" in owners:
        return "lmstudio"
    if server.startswith("basehttp") and not any(owners - {None}):
        return "mlx_lm"  # Python's http.server, as mlx_lm.server uses
    return "openai"


def server_info(
    client: httpx.Client, base_url: str, api_key: str | None, timeout: float | None = None
) -> ServerInfo:
    """Ask a server what it is and which models it serves.

    Args:
        timeout: seconds the listing may take (default: the client's).

    Raises:
        ServerError: unreachable, an HTTP error, or not an OpenAI-compatible answer.
    """
    data, headers = get_json(client, f"{base_url}/models", api_key, timeout)
    entries = data.get("data")
    if not isinstance(entries, list):
        raise ServerError(
            f"{base_url}/models has no model list: is this an OpenAI-compatible server?"
        )
    flavour = _flavour(entries, headers)
    n_ctx = _llama_cpp_context(client, base_url, api_key) if flavour == "llama.cpp" else None
    models = []
    for m in entries:
        if not isinstance(m, dict) or not isinstance(m.get("id"), str) or clean_text(m["id"])[1]:
            continue  # no id, or one no request could name (invalid text, megabytes)
        meta = m.get("meta") if isinstance(m.get("meta"), dict) else {}
        ctx = _int_or_none(m.get("max_model_len")) or n_ctx or _int_or_none(meta.get("n_ctx_train"))
        models.append(
            ServerModel(
                m["id"],
                m.get("owned_by"),
                ctx,
                _int_or_none(meta.get("size")),
                _int_or_none(meta.get("n_params")),
            )
        )
    return ServerInfo(base_url, flavour, tuple(models))


def _llama_cpp_context(client, base_url: str, api_key) -> int | None:
    root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
    try:
        props, _ = get_json(client, f"{root}/props", api_key)
    except ServerError:
        return None
    settings = props.get("default_generation_settings")
    return _int_or_none(settings.get("n_ctx")) if isinstance(settings, dict) else None


def list_server_models(base_url: str, api_key: str | None = None) -> ServerInfo:
    """`server_info` with a short-lived client (for the CLI and the model picker)."""
    with httpx.Client(timeout=httpx.Timeout(30.0, connect=CONNECT_S)) as client:
        return server_info(client, base_url, api_key)
