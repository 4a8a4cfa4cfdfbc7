"""The remote backend: a model on an OpenAI-compatible server, streamed over SSE.

What each server reports (see README "Remote servers"):
- OpenAI, vLLM, Ollama, LM Studio: per-token logprobs and top candidates in
  the stream (no ids; entropy and the temperature sweep over the top-k only).
- llama.cpp: the same with ids, the sampled-from distribution when sampling
  (`post_sampling_probs`), and its own prefill/decode timings.
- mlx_lm.server: no logprobs while streaming. The text streams live, then one
  non-streamed pass with the same seed gives the logprobs, with the generated
  token recovered from its unsorted, mislabelled top list; the tokens are
  re-sent with them (a token record for a step already sent supersedes it;
  `generate --json` prints each step once: engine/cli/json_steps.py).
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Iterator

import httpx

from engine.backends.base import Progress, Prompt, parse_remote
from engine.backends.openai.catalogue import TOP_N_LIMIT, ServerInfo, ServerModel, server_info
from engine.backends.openai.http import (
    CONNECT_S,
    check_api_key,
    check_model_id,
    post_json,
    stall_seconds,
)
from engine.backends.openai.run import RemoteRun
from engine.backends.openai.shapes import (
    align_mlx_lm,
    chunk_entries,
    chunk_reasoning,
    parse_entry,
    zip_mlx_lm,
)
from engine.backends.openai.sse import Cancelled, SSEStream, Stalled
from engine.display.units import binary_size
from engine.errors import LogitscopeError, ModelError, ServerError
from engine.run.prompt import as_messages, check_text
from engine.run.records import ModelRecord, ProgressRecord, Record
from engine.run.settings import SamplingSettings
from engine.sessions.sanitize import scrub, scrub_record

BASE_CAPS = ("chosen_logprob", "raw_top", "entropy_top_k")
MODELS_TIMEOUT_S = 10.0  # for /v1/models: a slow listing is skipped, not waited for
MAX_TOKEN_CHARS = 2**20  # one token's (or chunk's) text from a server: 1 MiB, beyond is refused
END_GRACE_S = 5.0  # after max_tokens, how long the usage and finish chunks may take
CAPABILITIES = {
    "llama.cpp": (*BASE_CAPS, "sampled_top", "timings", "token_ids", "context"),
    "vllm": (*BASE_CAPS, "context"),
    "mlx_lm": (*BASE_CAPS, "token_ids"),
}


class OpenAIBackend:
    """A model on an OpenAI-compatible server; records hold what the server reports.

    Args:
        api_key: the server's API key, if it needs one (never recorded).
        stall_s: seconds a server may stall mid-request (None: LOGITSCOPE_SERVER_TIMEOUT).
    """

    kind = "openai"
    local = False  # tokens and logprobs only: nothing inside the model

    def __init__(self, api_key: str | None = None, stall_s: float | None = None):
        self.api_key = api_key
        self.stall_s = stall_s or stall_seconds()  # silence allowed between tokens
        self._http: httpx.Client | None = None
        self.info: ServerInfo | None = None
        self.record: ModelRecord | None = None
        self.model = ""
        self.listing_error: str | None = None  # why /v1/models failed, when it did

    @property
    def http(self) -> httpx.Client:
        """The HTTP client, made on first use."""
        if self._http is None:
            self._http = httpx.Client(timeout=httpx.Timeout(self.stall_s, connect=CONNECT_S))
        return self._http

    def load(self, model: str | None, progress: Progress) -> ModelRecord:
        """Ask the server for its models and pick the spec's one; see Backend.load.

        The API key is scrubbed from every message and from the record (a server
        may echo it)."""
        key = self.api_key
        try:
            self.record = scrub_record(
                self._load(model, lambda m, f: progress(scrub(m, key), f)), key
            )
        except LogitscopeError as e:
            raise _scrubbed(e, key) from None
        return self.record

    def _load(self, model: str | None, progress: Progress) -> ModelRecord:
        spec = parse_remote(model or "")
        check_model_id(spec.model)
        if self.api_key is not None:
            check_api_key(self.api_key)
        t0 = time.perf_counter()
        progress(f"Asking {spec.base_url} for its models…", 0.5)
        self.listing_error = None
        try:
            info = server_info(
                self.http, spec.base_url, self.api_key, min(MODELS_TIMEOUT_S, self.stall_s)
            )
        except ServerError as e:
            if getattr(e, "unreachable", False) or getattr(e, "status", None) in (401, 403):
                raise  # the request itself would fail the same way
            # Some servers list models badly (mlx_lm.server crashes without a Hugging
            # Face cache) yet answer requests: try, and say why only if that fails too.
            self.listing_error = str(e)
            progress(f"The model list failed ({e}); trying the request anyway…", 0.5)
            listed = (ServerModel(spec.model),) if spec.model else ()
            info = ServerInfo(spec.base_url, "openai", listed)
        ids = [m.id for m in info.models]
        if not ids and self.listing_error is None:
            raise ModelError(f"{info.label} at {spec.base_url} lists no models")
        if spec.model and spec.model not in ids:
            raise ModelError(
                f"{info.label} at {spec.base_url} has no model '{spec.model}'; it serves: "
                + ", ".join(ids[:8])
                + (" …" if len(ids) > 8 else "")
            )
        m = info.models[ids.index(spec.model or ids[0])] if ids else ServerModel("")
        host = spec.base_url.split("://", 1)[1].split("/", 1)[0]
        self.info, self.model = info, m.id
        caps = CAPABILITIES.get(info.flavour, BASE_CAPS)
        if m.context_length and "context" not in caps:
            caps = (*caps, "context")
        self.record = ModelRecord(
            name=m.id or "the server's default model",
            path=f"{spec.base_url}#{m.id}",
            architecture="not reported",
            quantization="not reported",
            size_bytes=m.size_bytes,
            context_length=m.context_length,
            device=f"{info.label} at {host}",
            load_s=time.perf_counter() - t0,
            backend="openai",
            capabilities=caps,
        )
        return self.record

    # -- requests -------------------------------------------------------------------
    def _body(self, prompt: Prompt, s: SamplingSettings, seed: int, stream: bool) -> dict:
        flavour = self.info.flavour
        top_n = min(s.top_n, TOP_N_LIMIT.get(flavour, s.top_n))
        body: dict = {
            "stream": stream,
            "max_tokens": s.max_tokens,
            "temperature": s.temperature,
            "seed": seed,
        }
        if self.model:  # unnamed (the listing failed): the server's default model
            body = {"model": self.model, **body}
        if s.chat_template:
            body["messages"] = as_messages(prompt, s)
        elif isinstance(prompt, str):
            body["prompt"] = check_text(prompt)
        else:
            raise ModelError("a conversation needs chat mode: turn the chat template on")
        if top_n > 0:
            # OpenAI's completions route takes a number; mlx_lm.server's takes chat's shape
            chat_shape = s.chat_template or flavour == "mlx_lm"
            body["logprobs"] = True if chat_shape else top_n
            if chat_shape:
                body["top_logprobs"] = top_n
        if stream:
            body["stream_options"] = {"include_usage": True}
        if s.stop:
            body["stop"] = list(s.stop)
        if s.top_p < 1:
            body["top_p"] = s.top_p
        if s.top_k:
            body["top_k"] = s.top_k
        if s.min_p:
            body["min_p"] = s.min_p
        if s.repetition_penalty != 1.0:
            body["repetition_penalty"] = s.repetition_penalty
            if flavour == "llama.cpp":
                body["repeat_penalty"] = s.repetition_penalty
        if flavour == "llama.cpp" and top_n > 0 and s.temperature > 0:
            body["post_sampling_probs"] = True  # what the token was drawn from
        return body

    def _url(self, s: SamplingSettings) -> str:
        route = "chat/completions" if s.chat_template else "completions"
        return f"{self.info.base_url}/{route}"

    def generate(
        self,
        prompt: Prompt,
        settings: SamplingSettings,
        should_stop: Callable[[], bool],
        continuation=None,
    ) -> Iterator[Record]:
        """One streamed generation on the server; see Backend.generate. With a
        `continuation`, a branch of a raw-completion answer (openai/branch.py).
        The API key is scrubbed from every record and error (a server may echo it)."""
        key = self.api_key
        try:
            for record in self._generate(prompt, settings, should_stop, continuation):
                yield scrub_record(record, key)
        except LogitscopeError as e:
            raise _scrubbed(e, key) from None

    def _generate(self, prompt, settings, should_stop, continuation) -> Iterator[Record]:
        if continuation is not None:
            from engine.backends.openai.branch import continue_on_server

            yield from continue_on_server(
                self.generate, prompt, settings, should_stop, continuation
            )
            return
        if self.info is None:
            raise ModelError("no server model is loaded")
        seed = settings.seed if settings.seed is not None else random.randrange(2**31)
        body = self._body(prompt, settings, seed, stream=True)
        t0 = time.perf_counter()
        run = RemoteRun(t0, settings.top_n, seed, self.record.context_length)
        sse = SSEStream(self.http, self._url(settings), body, self.api_key, self.stall_s)
        finish, limit = None, settings.max_tokens
        try:
            for chunk in sse.events(should_stop):
                if isinstance(chunk, float):  # silence: say so (and feed the watchdog)
                    what = "the first token" if not run.tokens else "the next token"
                    yield ProgressRecord(f"Waiting for {what} from the server… {chunk:.0f} s", 0)
                    continue
                run.note_usage(chunk)
                text, entries, reason = chunk_entries(chunk)
                reasoning = chunk_reasoning(chunk)
                if (text or entries or reasoning) and len(run.tokens) >= limit:
                    finish = "length"  # the server ignores max_tokens: stop it here
                    break
                if text or entries or reasoning or reason:
                    sse.progressed()
                infos = [parse_entry(e) for e in entries[: limit - len(run.tokens)]]
                _check_size(text, reasoning, infos)
                if len(infos) < len(entries):
                    text = ""  # cut to max_tokens: the entries' own text counts
                now = time.perf_counter()
                if reasoning:  # logprobs in a reasoning-only chunk are the reasoning's
                    yield from run.add_chunk(reasoning, [] if text else infos, now, True)
                if text or not reasoning:
                    yield from run.add_chunk(text, infos, now)
                finish = reason or finish
                if len(run.tokens) >= limit and finish is None:
                    sse.set_deadline(min(END_GRACE_S, self.stall_s))  # for usage, timings
        except Cancelled:
            yield run.done("cancelled")
            return
        except Stalled as e:
            if not run.tokens:
                raise
            if len(run.tokens) < limit:
                yield run.done("error", str(e))
                return
            finish = "length"  # all tokens came; the server never said it had finished
        except ServerError as e:
            if not run.tokens:
                if self.listing_error:
                    raise ServerError(
                        f"{e} (before that, the model list failed: {self.listing_error})"
                    ) from None
                raise
            yield run.done("error", str(e))
            return
        finally:
            sse.close()
        if (
            self.listing_error
            and self.info.flavour == "openai"
            and sse.server.startswith("basehttp")
        ):
            # Python's http.server answering, no model list: mlx_lm.server, which
            # streams no logprobs (from now on, its own passes fetch them).
            self.info = dataclasses.replace(self.info, flavour="mlx_lm")
        yield from self._finish(prompt, settings, seed, run, finish)

    def _finish(self, prompt, settings, seed, run: RemoteRun, finish) -> Iterator[Record]:
        if finish == "error":
            message = (
                "the server ended the answer with finish_reason 'error' and gave no "
                "reason: check its log"
            )
            if not run.tokens:
                raise ServerError(message)
            yield run.done("error", message + "; the partial answer is kept")
            return
        if finish is None and run.tokens and len(run.tokens) >= settings.max_tokens:
            finish = "length"  # every token asked for came; the server never said so
        if finish is None:
            if not run.tokens:
                raise ServerError("the server ended the stream without an answer")
            yield run.done(
                "error",
                "the stream ended before the answer was finished; the partial answer is kept",
            )
            return
        reason = _finish_reason(finish, settings)
        if self.info.flavour == "mlx_lm" and settings.top_n > 0 and run.tokens:
            yield from self._refine_mlx_lm(prompt, settings, seed, run, finish)
        yield run.done(reason)

    def _refine_mlx_lm(self, prompt, settings, seed, run: RemoteRun, finish) -> Iterator[Record]:
        """Log-probabilities for a finished mlx_lm.server run, from non-streamed passes
        with the same seed (their answer must equal the streamed one)."""
        yield ProgressRecord("Fetching log-probabilities (mlx_lm.server streams none)…", 0.5)
        streamed = run.text + run.stream.flush()
        pieces = [t.text for t in run.tokens]
        run.text = streamed
        body = self._body(prompt, settings, seed, stream=False)
        eos = finish == "stop"
        try:
            text, top_entries, _ = chunk_entries(
                post_json(self.http, self._url(settings), body, self.api_key)
            )
            if text != streamed:
                yield ProgressRecord(
                    "Log-probabilities not shown: the server's second pass gave a different answer",
                    1.0,
                )
                return
            infos = align_mlx_lm(top_entries, text, eos, settings.temperature == 0)
            if infos is None:  # a drawn token outside the top-k: ask for the ids too
                ids_body = {**body, "top_logprobs": 0}
                text2, id_entries, _ = chunk_entries(
                    post_json(self.http, self._url(settings), ids_body, self.api_key)
                )
                if text2 == streamed:
                    infos = zip_mlx_lm(id_entries, top_entries, pieces, eos)
        except ServerError as e:
            yield ProgressRecord(f"Log-probabilities not fetched: {e}", 1.0)
            return
        if infos is None:
            yield ProgressRecord(
                "Log-probabilities not shown: the server's tokens could not "
                "be matched to the streamed text",
                1.0,
            )
            return
        refined = run.refine(infos, eos)
        run.text = streamed
        yield from refined

    def read(self, request, should_stop, progress) -> Iterator[Record]:
        """Read a text through the server's prompt log-probabilities (read_remote.py)."""
        from engine.backends.openai.read_remote import read_records

        return read_records(self, request, should_stop, progress)

    def close(self) -> None:
        """Forget the model and close the HTTP client."""
        self.info = self.record = None
        if self._http is not None:
            self._http.close()
            self._http = None


def _check_size(text: str, reasoning: str, infos: list) -> None:
    """Refuse a chunk whose text, or one of its tokens, is over MAX_TOKEN_CHARS.

    Raises:
        ServerError: the size, the bound, and that the partial answer is kept.
    """
    sizes = [len(text), len(reasoning)]
    sizes += [max(len(i.text), len(i.raw or b"")) for i in infos]
    if max(sizes) > MAX_TOKEN_CHARS:
        raise ServerError(
            f"the server sent a token of {max(sizes):,} characters (at most "
            f"{MAX_TOKEN_CHARS:,}, {binary_size(MAX_TOKEN_CHARS)}) and the request was stopped; "
            "the partial answer is kept"
        )


def _scrubbed(error: LogitscopeError, secret: str | None) -> LogitscopeError:
    """The same error (its class and attributes kept) with the API key scrubbed."""
    error.args = tuple(scrub(a, secret) if isinstance(a, str) else a for a in error.args)
    return error


def _finish_reason(finish: str, settings: SamplingSettings) -> str:
    if finish == "length":
        return "length"
    if finish == "stop":
        return "stop" if settings.stop else "eos"  # a server does not say which stop
    return "stop"


def create(api_key: str | None = None, stall_s: float | None = None, **_options) -> OpenAIBackend:
    """A new OpenAIBackend with this API key and stall limit (other options ignored)."""
    return OpenAIBackend(api_key, stall_s)
