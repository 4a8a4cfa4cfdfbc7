"""The local MLX backend: resolve and load a model, run instrumented generation."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from engine.backends.base import Progress, Prompt
from engine.records import LOCAL_CAPABILITIES, ModelRecord, Record
from engine.settings import SamplingSettings


class MLXBackend:
    """One model in memory at a time; every view's data is measured here."""

    kind = "mlx"

    def __init__(self):
        self.key: str | None = None
        self.lm = None
        self.record: ModelRecord | None = None
        self.prefer = "auto"  # compute path: auto | speed | memory (the model picker)

    def load(self, model: str | None, progress: Progress) -> ModelRecord:
        from engine.backends.mlx.loader import device_name, load_model, resolve_model

        folder = resolve_model(model, progress)
        key = f"{folder.resolve()}|{self.prefer}"
        if key != self.key:
            progress(f"Loading {folder.name}…", 0.95)
            self.close()  # one model in memory at a time
            lm, info, seconds = load_model(folder, self.prefer)
            self.record = ModelRecord(
                device=device_name(), load_s=seconds, backend="mlx",
                capabilities=LOCAL_CAPABILITIES, compute=lm.compute, **vars(info),
            )  # fmt: skip
            self.lm, self.key = lm, key
        return self.record

    def generate(
        self, prompt: Prompt, settings: SamplingSettings, should_stop: Callable[[], bool]
    ) -> Iterator[Record]:
        from engine.backends.mlx.generate import generate_records

        return generate_records(self.lm, prompt, settings, should_stop)

    def close(self) -> None:
        self.lm = self.key = self.record = None


def create(**_options) -> MLXBackend:
    return MLXBackend()
