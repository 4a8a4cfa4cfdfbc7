"""A replaying engine client: app tests on records captured once from the real model.

A recording ("cassette", tests/data/replay/NAME.json) is what one test asked of the
engine and what the real default model answered: the requests in order (load,
generate, inspect, lab), each with its records as `engine.run.records.to_dict` gives them.
`ReplayClient` has the surface `app.core.bridge.EngineBridge` uses from
`engine.process.client.EngineClient` (load, generate, inspect, inspect_answer, lab, cancel,
close, is_alive, pid, current, restarts, phase) and answers a request with the records
recorded for the same request (prompt, settings, model, continuation and what else
it names), in order; one that was never recorded is answered with an ErrorRecord
saying so and kept in `unmatched`, which the test's fixture asserts empty.

`RecordingClient` wraps a real EngineClient and writes the cassette
(scripts/capture_replay.py runs the replaying tests in that mode); `stable` is what
tests/app/test_replay_recordings.py compares with a fresh real run, so the cassettes
cannot go stale silently: every field but timings, memory and machine-specific ones.
Qt-free: the capture script and the check import it without a window.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path

from engine.run.records import ErrorRecord, record_from_dict, to_dict

REPLAY_DIR = Path(__file__).resolve().parent / "data" / "replay"
RECORD_ENV = "LOGITSCOPE_REPLAY"  # "record": replaying tests capture from the real engine
MODELS = "{models}"  # the models folder, so a cassette holds no machine's home path
DEFAULT = "{default}"  # the default model, however a caller named it (None, "", its path)

# What differs between two real runs of the same request, or between machines.
VOLATILE = {
    "model": {
        "path",
        "device",
        "load_s",
        "compute",
        "memory_gbs",
        "matmul_gflops",
        "limits_source",
    },
    "prefill": {"elapsed_s"},
    "token": {"elapsed_s", "latency_s"},
    "done": {
        "ttft_s",
        "prefill_tps",
        "decode_tps",
        "peak_memory_bytes",
        "elapsed_s",
        "prefill_s",
        "decode_s",
        "energy_j",
        "energy_source",
        "cost",
        "cost_currency",
    },
    "progress": {"message", "fraction"},
}


def recording_mode() -> bool:
    """Whether replaying tests capture from the real engine (LOGITSCOPE_REPLAY=record)."""
    return os.environ.get(RECORD_ENV, "") == "record"


def cassette_path(name: str) -> Path:
    return REPLAY_DIR / f"{name}.json"


def _models_dir() -> str:
    from engine.store.paths import models_dir

    return str(models_dir())


def _portable(path: str | None, default_path: str | None) -> str:
    """A model spec as the cassette keeps it."""
    if not path or (default_path and str(path) == default_path):
        return DEFAULT
    models = _models_dir()
    return str(path).replace(models, MODELS, 1) if str(path).startswith(models) else str(path)


def request_key(op: str, default_path: str | None, **args) -> dict:
    """What identifies a request: its op and arguments, JSON-ready, model made portable.

    Args:
        op: generate | load | inspect | lab.
        default_path: the default model's folder (None, "" and it are the same model).
        **args: the request's arguments (settings and continuation as objects or dicts).

    Returns:
        A dict comparable across machines (api_key and prefer are not part of it).
    """
    key = {"op": op}
    for name, value in sorted(args.items()):
        if name in ("api_key", "prefer"):
            continue
        if name == "model":
            value = _portable(value, default_path)
        elif hasattr(value, "to_dict"):
            value = value.to_dict()
        elif dataclasses.is_dataclass(value):  # an inspect request, lab parameters
            value = dataclasses.asdict(value)
        key[name] = value
    return json.loads(json.dumps(key, sort_keys=True))


def record_to_json(record) -> dict:
    d = json.loads(json.dumps(to_dict(record)))
    if d.get("type") == "model":
        d["path"] = _portable(d["path"], None)
    return d


def record_from_json(d: dict):
    if d.get("type") == "model":
        d = {**d, "path": d["path"].replace(MODELS, _models_dir(), 1)}
    return record_from_dict(d)


READ_VOLATILE = {"read_s", "read_tps"}  # a read's summary: how long it took


def stable(d: dict) -> dict:
    """A record's dict without what differs between runs and machines."""
    out = {k: v for k, v in d.items() if k not in VOLATILE.get(d.get("type"), ())}
    if isinstance(out.get("reading"), dict):
        out["reading"] = {k: v for k, v in out["reading"].items() if k not in READ_VOLATILE}
    return out


def _diff(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(a.keys() | b.keys()):
            out += _diff(a.get(k), b.get(k), f"{path}.{k}" if path else k)
        return out
    return [] if a == b else [path or "the value"]


class ReplayClient:
    """Answers requests with recorded records (see the module docstring).

    Args:
        name: the cassette's name (tests/data/replay/NAME.json); None: no recording,
            for a window that must not ask the engine anything (every request fails).
    """

    def __init__(self, name: str | None):
        self.name = name or "an empty recording"
        self.entries = []
        if name is not None:
            path = cassette_path(name)
            if not path.exists():
                raise FileNotFoundError(
                    f"no replay recording {path.name}: capture it with scripts/capture_replay.py"
                )
            self.entries = json.loads(path.read_text(encoding="utf-8"))["requests"]
        self.used = [False] * len(self.entries)
        self.unmatched: list[dict] = []
        self.current = None
        self.phase = "idle"
        self.restarts = 0
        self._alive = False
        self._cancelled = False

    @property
    def pid(self) -> int | None:
        return None

    def is_alive(self) -> bool:
        return self._alive

    def start(self, warm: str | None = None) -> None:
        """As EngineClient.start (app/main.py starts the engine early): nothing to start."""
        self._alive = True

    def close(self) -> None:
        self._alive = False

    def cancel(self) -> None:
        """A recorded run has already ended: cancelling it changes nothing."""
        self._cancelled = True

    def _default_path(self) -> str | None:
        for entry in self.entries:
            for d in entry["records"]:
                if d.get("type") == "model" and entry["key"].get("model") == DEFAULT:
                    return d["path"].replace(MODELS, _models_dir(), 1)
        return None

    def _replay(self, op: str, **args) -> Iterator:
        self._alive = True
        key = request_key(op, self._default_path(), **args)
        for i, entry in enumerate(self.entries):
            if not self.used[i] and entry["key"] == key:
                self.used[i] = True
                self.current = i + 1
                return iter([record_from_json(d) for d in entry["records"]])
        self.unmatched.append(key)
        message = (
            f"replay: no recorded {op} request like this one in {self.name} "
            f"(the next unused {op} differs in {self._differs(key) or 'nothing: all used'}); "
            "re-capture with scripts/capture_replay.py"
        )
        return iter([ErrorRecord(message, "error")])

    def _differs(self, key: dict) -> str:
        """The fields in which `key` differs from the next unused recorded request of
        its op ("settings.seed, prompt"), to say why a request did not match."""
        for i, entry in enumerate(self.entries):
            if not self.used[i] and entry["key"]["op"] == key["op"]:
                return ", ".join(_diff(key, entry["key"]))
        return ""

    def load(self, model=None, api_key=None, prefer=None) -> Iterator:
        return self._replay("load", model=model)

    def generate(
        self, prompt, settings, model=None, api_key=None, prefer=None, continuation=None
    ) -> Iterator:
        return self._replay(
            "generate", prompt=prompt, settings=settings, model=model, continuation=continuation
        )

    def inspect(self, prompt, settings, request, model=None, prefer=None) -> Iterator:
        return self._replay(
            "inspect", prompt=prompt, settings=settings, request=request, model=model
        )

    def inspect_answer(self, prompt, settings, request, model=None, prefer=None) -> Iterator:
        return self._replay(
            "inspect_answer", prompt=prompt, settings=settings, request=request, model=model
        )

    def lab(self, params, prompt, settings, model=None) -> Iterator:
        return self._replay("lab", params=params, prompt=prompt, settings=settings, model=model)

    def read(self, request, model=None, api_key=None) -> Iterator:
        return self._replay("read", request=request, model=model)


class RecordingClient:
    """A real EngineClient whose requests and records are kept for a cassette.

    Args:
        client: the real client (a fresh one: a cassette starts from a fresh engine,
            so the check can replay it on one and get the same cache hits).
        default_path: the default model's folder.
    """

    def __init__(self, client, default_path: str):
        self.client = client
        self.default_path = str(default_path)
        self.entries: list[dict] = []

    def __getattr__(self, name):  # pid, current, restarts, phase, is_alive, cancel, close
        return getattr(self.client, name)

    def _keep(self, op: str, records: Iterator, prefer=None, extra=None, **args) -> Iterator:
        entry = {"key": request_key(op, self.default_path, **args), "prefer": prefer}
        entry.update(extra or {})
        entry["records"] = []
        self.entries.append(entry)
        for record in records:
            entry["records"].append(record_to_json(record))
            yield record

    def load(self, model=None, api_key=None, prefer=None) -> Iterator:
        from engine.models.model_prefs import load_options

        # the engine reads the remembered load options: the check loads with the same
        options = load_options(model or self.default_path).to_dict()
        records = self.client.load(model, api_key, prefer)
        return self._keep("load", records, prefer, {"load_options": options}, model=model)

    def generate(
        self, prompt, settings, model=None, api_key=None, prefer=None, continuation=None
    ) -> Iterator:
        records = self.client.generate(prompt, settings, model, api_key, prefer, continuation)
        return self._keep(
            "generate",
            records,
            prefer,
            prompt=prompt,
            settings=settings,
            model=model,
            continuation=continuation,
        )

    def inspect(self, prompt, settings, request, model=None, prefer=None) -> Iterator:
        records = self.client.inspect(prompt, settings, request, model, prefer)
        return self._keep(
            "inspect",
            records,
            prefer,
            prompt=prompt,
            settings=settings,
            request=request,
            model=model,
        )

    def inspect_answer(self, prompt, settings, request, model=None, prefer=None) -> Iterator:
        records = self.client.inspect_answer(prompt, settings, request, model, prefer)
        args = {"prompt": prompt, "settings": settings, "request": request, "model": model}
        return self._keep("inspect_answer", records, prefer, **args)

    def lab(self, params, prompt, settings, model=None) -> Iterator:
        records = self.client.lab(params, prompt, settings, model)
        args = {"params": params, "prompt": prompt, "settings": settings, "model": model}
        return self._keep("lab", records, None, **args)

    def read(self, request, model=None, api_key=None) -> Iterator:
        records = self.client.read(request, model, api_key)
        return self._keep("read", records, None, request=request, model=model)

    def save(self, name: str) -> Path:
        """Write the cassette (to a temporary name, then renamed into place)."""
        REPLAY_DIR.mkdir(parents=True, exist_ok=True)
        path = cassette_path(name)
        tmp = path.with_suffix(".tmp")
        text = json.dumps({"requests": self.entries}, separators=(",", ":"))
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(path)
        return path
