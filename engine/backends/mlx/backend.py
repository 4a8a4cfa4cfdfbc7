"""The local MLX backend: resolve and load a model, run instrumented generation."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator

from engine.backends.base import Progress, Prompt
from engine.inside.inspect_request import InspectRequest
from engine.lab import LabParams, LabResult
from engine.models.catalogue import inspect_model
from engine.run.continuation import Continuation
from engine.run.records import LOCAL_CAPABILITIES, InspectRecord, ModelRecord, Record
from engine.run.settings import SamplingSettings
from engine.store import environment


class MLXBackend:
    """One model in memory at a time; every view's data is measured here."""

    kind = "mlx"
    local = True  # a LocalBackend: inspect, lab, prefer

    def __init__(self):
        self.key: str | None = None
        self.lm = None
        self.inspection = None  # cached forward passes for inspect (inside.py)
        self.options = None  # the LoadOptions the model was loaded with
        self.record: ModelRecord | None = None
        # compute path: auto | speed | memory (the model picker; LOGITSCOPE_COMPUTE)
        self.prefer = environment.text("LOGITSCOPE_COMPUTE") or "auto"

    def load(self, model: str | None, progress: Progress) -> ModelRecord:
        """Resolve `model` (fetching or converting it) and load it, unless already loaded.

        The loaded model is kept per folder and compute preference; see Backend.load.
        """
        from engine.backends.mlx.loader import (
            apply_load_options,
            device_name,
            load_model,
            resolve_model,
        )
        from engine.models.model_prefs import load_options

        folder = resolve_model(model, progress)
        options = load_options(model)
        key = f"{folder.resolve()}|{self.prefer}"
        if key == self.key and self.options != options:  # same weights, another KV cache
            info = inspect_model(folder)
            apply_load_options(self.lm, info, options)
            self.record = _with_options(self.record, self.lm, options)
            self.options = options
        if key != self.key:
            progress(f"Loading {folder.name}…", 0.95)
            self.close()  # one model in memory at a time
            lm, info, seconds = load_model(folder, self.prefer)
            limits = _speed_limits(lm.model)
            limits["parameters"] = info.parameters or limits["parameters"]
            self.record = ModelRecord(
                name=info.name,
                path=info.path,
                architecture=info.architecture,
                quantization=info.quantization,
                size_bytes=info.size_bytes,
                context_length=info.context_length,
                device=device_name(),
                load_s=seconds,
                backend="mlx",
                capabilities=LOCAL_CAPABILITIES,
                compute=lm.compute,
                **limits,
            )
            apply_load_options(lm, info, options)
            self.record = _with_options(self.record, lm, options)
            self.lm, self.key, self.options = lm, key, options
        return self.record

    def generate(
        self,
        prompt: Prompt,
        settings: SamplingSettings,
        should_stop: Callable[[], bool],
        continuation: Continuation | None = None,
    ) -> Iterator[Record]:
        """One instrumented generation with the loaded model; see Backend.generate.
        With a `continuation` (engine/run/continuation.py) the run is a branch of an answer."""
        from engine.backends.mlx.generate import generate_records

        records = generate_records(self.lm, prompt, settings, should_stop, continuation)
        return _with_energy(records, self.record.device if self.record else "CPU")

    def read(self, request, should_stop: Callable[[], bool], progress) -> Iterator[Record]:
        """Read a text through the loaded model (read_pass.py); see Backend.read."""
        from engine.backends.mlx.read_pass import read_records

        records = read_records(self.lm, request, should_stop, progress)
        return _with_energy(records, self.record.device if self.record else "CPU")

    def inspect(
        self, prompt: Prompt, settings: SamplingSettings, request: InspectRequest
    ) -> InspectRecord:
        """One step, looked inside (see inspect_step.py); see LocalBackend.inspect."""
        from engine.backends.mlx.inspect_step import inspect_step

        return inspect_step(self, prompt, settings, request)

    def lab(
        self, params: LabParams, prompt: Prompt, settings: SamplingSettings, progress: Progress
    ) -> LabResult:
        """Run the experiment `params` (engine.lab) on the loaded model; its result
        dataclass. See LocalBackend.lab."""
        from engine.backends.mlx.lab_runs import run_experiment

        return run_experiment(self.record, params, prompt, settings, progress)

    def close(self) -> None:
        """Drop the model and its cached inspection passes."""
        self.lm = self.key = self.record = self.options = None
        self.inspection = None


def _with_energy(records: Iterator[Record], device: str) -> Iterator[Record]:
    """The run's records, its DoneRecord carrying the energy measured (or estimated)
    from the first record asked for to the last, and its electricity cost."""
    from engine.cost.costs import load_settings, with_cost
    from engine.machine.energy import meter_for
    from engine.run.records import DoneRecord

    settings = load_settings()
    meter = meter_for(device, settings.watts, _gpu_name() if "CUDA" in device else "")
    meter.start()
    stopped = False
    try:
        for record in records:
            if isinstance(record, DoneRecord):
                energy, source = meter.stop(record.elapsed_s)
                stopped, record = True, with_cost(record, energy, source, settings)
            yield record
    finally:
        if not stopped:  # a run left unfinished: stop a sampling process too
            meter.stop(0.0)


def _with_options(record: ModelRecord, lm, options) -> ModelRecord:
    """The record with the context the options give and their words."""
    label = "" if options == type(options)() else options.label()
    return dataclasses.replace(
        record, context_length=lm.context_length, load_options=label, kv_bits=lm.kv_bits
    )


def _speed_limits(model) -> dict:
    """Weights read per decode step, parameters, and (on the CPU) the machine's limits."""
    import mlx.core as mx
    from mlx.utils import tree_flatten

    from engine.backends.mlx.compute_path import float32_bytes

    leaves = tree_flatten(model.parameters())
    need, quantized = float32_bytes(model)
    out = {
        "weight_bytes": int(sum(v.nbytes for _k, v in leaves)),
        "parameters": int(need // 4 if quantized else sum(v.size for _k, v in leaves)),
    }
    from engine.machine.hardware import CPU_SOURCE, gpu_limits, machine_limits

    if mx.default_device().type == mx.DeviceType.cpu:
        from engine.backends.mlx.gemm_limit import gemm_limit

        gflops, how = gemm_limit(model)  # on MLX's BLAS at the model's shape, not NumPy's
        limits = dataclasses.replace(machine_limits(), matmul_gflops=gflops)
        source = f"{CPU_SOURCE}; compute: {how}"
    else:
        found = gpu_limits(_gpu_name())
        if found is None:
            return out
        limits, source = found
    out.update(
        memory_gbs=limits.memory_gbs, matmul_gflops=limits.matmul_gflops, limits_source=source
    )
    return out


@functools.cache
def _gpu_name() -> str:
    """The GPU's marketing name: Metal's device info, or nvidia-smi's."""
    import subprocess

    import mlx.core as mx

    try:
        if mx.metal.is_available():
            return str(mx.metal.device_info().get("device_name", ""))
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError, IndexError, AttributeError):
        return ""


def warm_up() -> None:
    """Import what loading a model needs (MLX, mlx-lm and the transformers tokenizer it
    uses, the loader): about 1.5 s of a 2-core CPU, spent by an engine process started
    early while the window builds, not after the first load request arrives."""
    import mlx_lm  # noqa: F401

    from engine.backends.mlx import loader  # noqa: F401


def create(**_options) -> MLXBackend:
    """A new MLXBackend (options are ignored)."""
    return MLXBackend()
