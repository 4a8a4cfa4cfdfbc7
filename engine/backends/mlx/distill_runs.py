"""The two distillation experiments as the lab runs them (engine/backends/mlx/lab_runs.py):
load the teacher (the loaded model, on the lab's float32 path) and, to compare, the
student; then distill_compare or distill_train does the work."""

from __future__ import annotations

from pathlib import Path

from engine.lab import DistillParams, DistillResult, DistillTrainParams, DistillTrainResult
from engine.lab.reporter import reporter_of


def run_distill(record, params, progress=None) -> DistillResult | DistillTrainResult:
    """Run a distillation experiment with `record` (a ModelRecord) as the teacher.

    Args:
        record: the loaded model, the teacher.
        params: DistillParams (compare a student) or DistillTrainParams (train two).
        progress: a (message, fraction) callback or a LabReporter.

    Returns:
        The experiment's result dataclass.
    """
    from engine.backends.mlx.loader import load_model

    reporter = reporter_of(progress)
    folder = Path(record.path)
    reporter("Loading the teacher…", 0.0)
    teacher = load_model(folder, prefer="speed")[0]
    if isinstance(params, DistillTrainParams):
        from engine.backends.mlx.distill_train import train_experiment

        return train_experiment(teacher, folder, params, reporter)
    return compare_experiment(teacher, folder, params, reporter)


def compare_experiment(teacher, folder: Path, params: DistillParams, reporter) -> DistillResult:
    """Load the student (the teacher's own folder: its weights as stored) and compare."""
    from engine.backends.mlx.distill_compare import compare_models
    from engine.backends.mlx.loader import load_model, resolve_model
    from engine.models.catalogue import inspect_model

    reporter("Loading the student…", 0.05)
    path = resolve_model(params.student)
    itself = path.resolve() == folder.resolve()
    student = load_model(path, prefer=None if itself else "speed")[0]
    t_info = inspect_model(folder)
    t_name = f"{t_info.name} ({teacher.compute.split(':')[0] or t_info.quantization})"
    s_name = f"{path.name} (as stored, {inspect_model(path).quantization})" if itself else path.name
    return compare_models(teacher, student, params, (t_name, s_name), reporter)
