"""The records a run yields: small frozen dataclasses of plain Python values.

They are the engine's whole public surface towards the app, the command line and
the session log: nothing from MLX or Qt is in them. `to_dict` gives the JSON
shape documented in the README; `record_from_dict` reverses it.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, fields

from engine.inside.inside_results import InsideResult, result_from
from engine.run.read_summary import ReadSummary

# Temperatures at which each step's distribution is summarised on the device,
# so the temperature chart can be drawn for any step without the model.
SWEEP_TEMPERATURES = tuple(round(0.1 * i, 1) for i in range(1, 21))  # 0.1 .. 2.0

# What a backend can fill (ModelRecord.capabilities); a view whose data a backend
# does not report says so instead of drawing zeros.
CAPABILITIES = {
    "chosen_logprob": "the chosen token's log-probability",
    "raw_top": "the model's own top candidates (temperature 1, before filters)",
    "sampled_top": "the distribution the token was drawn from (after temperature and filters)",
    "entropy": "entropy of the whole distribution",
    "entropy_top_k": "entropy over the returned top candidates only",
    "temperature_sweep": "the distribution's shape at every temperature",
    "timings": "prefill and decode speed measured where the model runs",
    "prefill_progress": "prompt processing progress",
    "context": "the context window and how full it is",
    "kv_bytes": "KV cache and peak memory",
    "token_ids": "token ids",
    "branch": "continuing an answer from any step (needs the model's tokens and KV cache)",
}
LOCAL_CAPABILITIES = tuple(c for c in CAPABILITIES if c != "entropy_top_k")


@dataclass(frozen=True)
class TopToken:
    """One candidate next token.

    Attributes:
        token_id: its vocabulary id, or a negative stand-in id (see `stand_in_id`)
            for a token a server named only by its bytes or text.
        text: its readable form: the decoded text, or `<0xE6><0x97>` for partial UTF-8.
        logprob: its log-probability (natural log: <= 0).
        bytes: its raw bytes, or None when not known.
    """

    token_id: int
    text: str  # readable form: the decoded text, or `<0xE6><0x97>` for partial UTF-8
    logprob: float
    bytes: tuple[int, ...] | None = None  # the token's raw bytes (as OpenAI logprobs give)


def token_label(raw: bytes | tuple[int, ...] | list[int] | None, fallback: str = "") -> str:
    """A token shown on its own: its text if its bytes are whole UTF-8, else its bytes.

    Args:
        raw: the token's raw bytes, or None when not known.
        fallback: what to show when `raw` is None.

    Returns:
        The decoded text, `<0xE6><0x97>`-style hex for bytes that are not whole
        UTF-8, or `fallback`.
    """
    if raw is None:
        return fallback
    raw = bytes(raw)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(f"<0x{b:02X}>" for b in raw)


def stand_in_id(raw: bytes | tuple[int, ...] | None, text: str) -> int:
    """A negative id for a token a server named only by its bytes or text.

    The same token always gets the same id (a CRC-32 of its bytes); it is never a
    vocabulary id.

    Args:
        raw: the token's raw bytes, or None to use `text`.
        text: the token's text (used when `raw` is None).

    Returns:
        An id from -2**31 to -1.
    """
    data = bytes(raw) if raw is not None else text.encode("utf-8", "surrogatepass")
    return -1 - (zlib.crc32(data) & 0x7FFFFFFF)


@dataclass(frozen=True)
class ModelRecord:
    """The model a run uses, sent once before prefill.

    Sizes are in bytes, times in seconds; `None` means not reported (e.g. by a
    server), never an invented value. The speed limits (`weight_bytes`,
    `parameters`, `memory_gbs`, `matmul_gflops`) let a view compare measured speed
    against what the hardware allows.

    Attributes:
        path: where the model is: its folder, or `URL#model` on a server.
        device: where it runs, in words.
        load_s: seconds the load took.
        capabilities: keys of CAPABILITIES: the views this backend can fill.
    """

    name: str
    path: str
    architecture: str
    quantization: str
    size_bytes: int | None  # None: not reported (a remote server)
    context_length: int | None
    device: str
    load_s: float
    backend: str = "mlx"  # mlx | openai
    capabilities: tuple[str, ...] = LOCAL_CAPABILITIES  # keys of CAPABILITIES
    compute: str = ""  # how the weights run, e.g. "float32: float32 on OpenBLAS …"
    # For speed against the limit (None where unknown, e.g. a server):
    weight_bytes: int | None = None  # bytes of weights read per decode step, as they run
    parameters: int | None = None  # prefill does about 2 x parameters FLOPs per token
    memory_gbs: float | None = None  # this device's measured memory bandwidth
    matmul_gflops: float | None = None  # and float32 matrix-product speed
    limits_source: str = ""  # where those limits come from (measured, a published table)
    load_options: str = ""  # the chosen context and KV precision, in words ("" for defaults)
    kv_bits: int | None = None  # a quantized KV cache's bits (None: float)
    type: str = "model"

    def can(self, capability: str) -> bool:
        """Whether the backend reports `capability`.

        Args:
            capability: a key of CAPABILITIES.

        Returns:
            True when it is in `capabilities`.
        """
        return capability in self.capabilities


@dataclass(frozen=True)
class ProgressRecord:
    """Long preparation work (fetching, converting, loading a model); `fraction` is 0..1."""

    message: str
    fraction: float  # 0..1
    type: str = "progress"


@dataclass(frozen=True)
class PrefillRecord:
    """Prompt processing: `processed` of `total` tokens, `elapsed_s` seconds into the run."""

    processed: int
    total: int
    elapsed_s: float
    system_tokens: int = 0  # of `total`, the template's system part
    cached_tokens: int = 0  # of `total`, reused from the previous run's KV cache
    type: str = "prefill"


@dataclass(frozen=True)
class TokenRecord:
    """One generated token and what the model was choosing between.

    `logprob`/`top`/`entropy` describe the model's raw distribution (T=1, before
    repetition penalty and filters); `sampled_*` the distribution the token was
    actually drawn from. `sampled_probs[i]` is the sampled-from probability of
    raw candidate `top[i]` (0.0 when a filter removed it; empty when not
    recorded: unknown, never zero). `sweep_logz[i]` is logsumexp(raw_logprobs / T_i)
    and `sweep_entropy[i]` the entropy at T_i, for T_i in SWEEP_TEMPERATURES.
    Entropies are in nats. `text` is what the token adds to the answer (empty
    for a partial UTF-8 character, completed by a later token, and for the
    end-of-sequence step, flagged `eos`); `bytes` are its raw bytes.
    """

    step: int
    token_id: int  # -1: not reported (a server that sends text only)
    text: str
    logprob: float | None  # None: not reported by the backend, never invented
    prob: float | None
    sampled_logprob: float | None
    top: tuple[TopToken, ...]
    sampled_top: tuple[TopToken, ...]
    entropy: float | None  # over `top` only when the model says entropy_top_k
    sampled_entropy: float | None
    elapsed_s: float
    latency_s: float
    context_tokens: int
    sweep_logz: tuple[float, ...] = ()
    sweep_entropy: tuple[float, ...] = ()
    bytes: tuple[int, ...] | None = None
    eos: bool = False
    sampled_probs: tuple[float, ...] = ()
    thinking: bool = False  # part of the model's reasoning (engine/run/thinking.py), not the answer
    oddities: tuple[str, ...] = ()  # what was invalid as received and how it was made valid
    forced: bool = False  # put here by the person (a branch), not sampled by the model
    rank: int | None = None  # 1 + tokens the model found likelier (None: not reported)
    read: bool = False  # read from a given text (engine/reading), not sampled
    type: str = "token"

    @property
    def label(self) -> str:
        """The token shown on its own (bytes where it is not whole UTF-8)."""
        if self.eos:
            return token_label(self.bytes, "<eos>")
        return token_label(self.bytes, self.text)

    def sampled_prob_of(self, token_id: int) -> float | None:
        """The probability a candidate had in the distribution the token was drawn from.

        Args:
            token_id: a candidate's id.

        Returns:
            Its sampled-from probability (0..1; 0.0 when a filter removed it), or None
            when it was not recorded.
        """
        if token_id == self.token_id >= 0 and self.sampled_logprob is not None:
            return 2.718281828459045**self.sampled_logprob
        for c, p in zip(self.top, self.sampled_probs, strict=False):
            if c.token_id == token_id:
                return p
        for c in self.sampled_top:
            if c.token_id == token_id:
                return 2.718281828459045**c.logprob
        return None


@dataclass(frozen=True)
class DoneRecord:
    """The end of a run and its statistics.

    Times are in seconds and speeds in tokens per second; None means not reported
    or not measurable, never zero.
    """

    finish_reason: str  # eos | stop_string | length | cancelled | error (older logs: stop)
    text: str
    prompt_tokens: int | None  # None: not reported by the server
    generated_tokens: int  # tokens of the answer (the end-of-sequence step not counted)
    ttft_s: float | None  # request -> first token's value known
    prefill_tps: float | None  # prompt tokens / prefill_s
    decode_tps: float | None  # decode steps / decode_s (None: fewer than 2 steps)
    peak_memory_bytes: int | None
    kv_cache_bytes: int | None
    context_length: int | None
    seed: int | None
    elapsed_s: float
    system_tokens: int = 0
    error: str | None = None
    prefill_s: float | None = None  # prefill start -> first token's value known
    decode_s: float | None = None  # first token known -> last step's value known
    # engine: measured where the model runs | server: the server's own report |
    # client: a remote run whose server reports no timings (ttft as received here)
    timings_from: str = "engine"
    cached_tokens: int = 0  # prompt tokens reused from the previous run's KV cache
    thinking_tokens: int = 0  # of the generated tokens, the reasoning ones
    kv_cache_tokens: int | None = None  # tokens the KV cache holds (kv_cache_bytes covers)
    branch_step: int | None = None  # a branch: the answer step it continued from
    # Energy of a local run (engine/machine/energy.py): None for a remote run, never invented.
    energy_j: float | None = None
    energy_source: str | None = None  # "measured (RAPL)" | "estimated from 15 W" | …
    cost: float | None = None  # the energy's price at the person's kWh price (engine/cost/costs.py)
    cost_currency: str | None = None
    reading: ReadSummary | None = None  # a read (engine/reading): its perplexity, ranks…
    type: str = "done"


@dataclass(frozen=True)
class ErrorRecord:
    """A run that could not start or was lost; `message` is for people.

    `kind` says what failed: error (a bug or anything else), model, settings,
    server, engine_died (the engine process exited mid-run) or engine_hung (it went
    silent and was killed).
    """

    message: str
    kind: str = "error"  # error | model | settings | engine_died | engine_hung | server
    type: str = "error"


@dataclass(frozen=True)
class InspectRecord:
    """A look inside the model at one step (see engine/backends/mlx/inside.py).

    `what` is attention | lens | journey | position; `ids`/`labels` are the tokens
    the pass covered (the prompt and the answer before `step`; the last one is the
    query whose prediction is step `step`). `data` is the view's result, a frozen
    dataclass of engine/inside/inside_results.py (its class by `what`), read by attribute;
    the record crosses the process pipe as itself and `to_dict` makes `data` the
    JSON of `logitscope inspect --json`.
    """

    what: str
    step: int | None  # None: the prompt alone (its next token)
    layers: int
    heads: int
    ids: tuple[int, ...]
    labels: tuple[str, ...]
    data: InsideResult
    type: str = "inspect"


@dataclass(frozen=True)
class LabRecord:
    """The numbers of one lab experiment (see engine/backends/mlx/lab_runs.py).

    `result` is the experiment's result dataclass (engine/lab/results.py), sent
    across the process pipe as itself; `result.to_dict()` is its JSON.
    """

    kind: str  # quant | speculative | batch | cache
    result: object  # engine.lab.LabResult (the lab is a layer above these records)
    type: str = "lab"


Record = (
    ProgressRecord
    | ModelRecord
    | PrefillRecord
    | TokenRecord
    | DoneRecord
    | ErrorRecord
    | InspectRecord
    | LabRecord
)
_CLASSES = (
    ProgressRecord,
    ModelRecord,
    PrefillRecord,
    TokenRecord,
    DoneRecord,
    ErrorRecord,
    InspectRecord,
    LabRecord,
)
_TYPES = {c.__dataclass_fields__["type"].default: c for c in _CLASSES}


def to_dict(record: Record) -> dict:
    """A record as a plain dict (the JSON shape documented in the README).

    Args:
        record: any record.

    Returns:
        Its fields, nested dataclasses as dicts; tuples stay tuples (JSON writes
        them as lists).
    """
    return asdict(record)


def record_from_dict(d: dict) -> Record:
    """Rebuild a record from `to_dict` output (or its JSON round-trip).

    Unknown keys are ignored; lists become the record's tuples again.

    Args:
        d: a dict with a `type` key naming the record class.

    Returns:
        The record.

    Raises:
        KeyError: an unknown `type`, or none.
        TypeError: a required field is missing.
    """
    cls = _TYPES[d["type"]]
    names = {f.name for f in fields(cls)}
    kw = {k: v for k, v in d.items() if k in names}
    if cls is TokenRecord:
        for key in ("top", "sampled_top"):
            kw[key] = tuple(_top(t) for t in kw.get(key, ()))
        for key in ("sweep_logz", "sweep_entropy", "sampled_probs", "oddities"):
            kw[key] = tuple(kw.get(key, ()))
        if kw.get("bytes") is not None:
            kw["bytes"] = tuple(kw["bytes"])
    if cls is InspectRecord:
        kw["ids"], kw["labels"] = tuple(kw.get("ids", ())), tuple(kw.get("labels", ()))
        if "data" in kw:
            kw["data"] = result_from(kw["what"], kw["data"])
    if cls is DoneRecord and isinstance(kw.get("reading"), dict):
        kw["reading"] = ReadSummary.from_dict(kw["reading"])
    if cls is ModelRecord and "capabilities" in kw:
        kw["capabilities"] = tuple(kw["capabilities"])
    return cls(**kw)


def _top(t) -> TopToken:
    if isinstance(t, TopToken):
        return t
    raw = t.get("bytes")
    return TopToken(t["token_id"], t["text"], t["logprob"], tuple(raw) if raw else raw)
