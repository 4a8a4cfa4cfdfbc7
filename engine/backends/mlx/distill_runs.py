"""The two distillation experiments as the lab runs them (their runners in
engine/lab/registry.py, run by engine/backends/mlx/lab_runs.run_experiment): load the
teacher (the loaded model, on the lab's float32 path) and, to compare, the student;
then distill_compare or distill_train does the work."""

from __future__ import annotations

from pathlib import Path

from engine.lab import DistillParams, DistillResult, DistillTrainParams, DistillTrainResult
from engine.lab.reporter import reporter_of


def _teacher(record, reporter):
    """The teacher: the model of `record` (a ModelRecord), loaded on the lab's path."""
    from engine.backends.mlx.loader import load_model

    reporter("Loading the teacher…", 0.0)
    return load_model(Path(record.path), prefer="speed")[0]


def compare_run(record, params: DistillParams, prompt, settings, progress=None) -> DistillResult:
    """`lab distill`: the model of `record` (the teacher) and the student of `params` read
    the same text (`prompt` and `settings` are not used).

    Args:
        record: the loaded model, the teacher.
        params: DistillParams.
        progress: a (message, fraction) callback or a LabReporter.
    """
    reporter = reporter_of(progress)
    teacher = _teacher(record, reporter)
    return compare_experiment(teacher, Path(record.path), params, reporter)


def train_run(
    record, params: DistillTrainParams, prompt, settings, progress=None
) -> DistillTrainResult:
    """`lab distill-train`: two small students trained from the model of `record` (the
    teacher), soft targets vs hard labels (`prompt` and `settings` are not used).

    Args:
        record: the loaded model, the teacher.
        params: DistillTrainParams.
        progress: a (message, fraction) callback or a LabReporter (its steps and cancel).
    """
    from engine.backends.mlx.distill_train import train_experiment

    reporter = reporter_of(progress)
    teacher = _teacher(record, reporter)
    return train_experiment(teacher, Path(record.path), params, reporter)


def compare_experiment(teacher, folder: Path, params: DistillParams, reporter) -> DistillResult:
    """Load the student (another model; the teacher's own folder: its weights as stored;
    either re-quantized to `params.student_bits`) and compare."""
    from engine.backends.mlx.distill_compare import compare_models
    from engine.backends.mlx.loader import load_model, resolve_model
    from engine.models.catalogue import inspect_model

    reporter("Loading the student…", 0.05)
    path = resolve_model(params.student)
    itself = path.resolve() == folder.resolve()
    bits = params.student_bits
    student = load_model(path, prefer=None if itself and not bits else "speed")[0]
    if bits:
        student = requantized(student, bits)
    t_info = inspect_model(folder)
    t_name = f"{t_info.name} ({teacher.compute.split(':')[0] or t_info.quantization})"
    if bits:
        s_name = f"{path.name} re-quantized to {bits}-bit"
    elif itself:
        s_name = f"{path.name} (as stored, {inspect_model(path).quantization})"
    else:
        s_name = path.name
    return compare_models(teacher, student, params, (t_name, s_name), reporter)


def requantized(lm, bits: int):
    """`lm` (a LoadedModel) with its weights dequantized to float32 and quantized again
    to `bits` bits (group size 64, as mlx_lm convert -q): a student of its own."""
    import mlx.core as mx
    import mlx.nn as nn

    from engine.backends.mlx.compute_path import dequantize_float32
    from engine.backends.mlx.quantized_blas import blas_products

    model = dequantize_float32(lm.model)
    nn.quantize(model, group_size=64, bits=bits)
    mx.eval(model.parameters())
    blas_products(model)  # its whole-sequence passes on BLAS (quantized_blas.py)
    lm.model = model
    lm.compute = f"{bits}-bit: re-quantized from the stored weights"
    return lm
