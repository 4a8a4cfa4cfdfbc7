"""ModelPicker: choose a model (installed, in the Hugging Face cache, a folder, a
.gguf file, or a model on a remote server) and see what it is: architecture,
parameters, quantization (what a GGUF was and what it became), size on disk,
context length, where it comes from, its licence and where it runs."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QWidget,
)

from app.core.preferences import compute_preference, set_compute_preference
from engine.models.catalogue import list_models, list_models_report
from engine.models.default_model import DEFAULT_MODEL_NAME
from engine.models.display_name import display_name, short_model_id
from engine.run.records import ModelRecord
from engine.run.settings import COMPUTE_PREFERENCES


def describe(m: ModelRecord) -> str:
    size = f"{m.size_bytes / 1e6:.0f} MB" if m.size_bytes else "size not reported"
    ctx = f"context {m.context_length:,}" if m.context_length else "context not reported"
    if m.backend != "mlx":
        return f"{short_model_id(m.name)} · {ctx} · {size} · {m.device}"
    runs = f" · runs {m.compute.split(':', 1)[0]}" if m.compute else ""
    params = f"{m.parameters / 1e6:,.0f} M params · " if m.parameters else ""
    return f"{m.architecture} · {params}{m.quantization}{runs} · {size} · {ctx} · {m.device}"


def local_details(path: str) -> str:
    """Everything the catalogue knows about a local model folder ('' if unreadable)."""
    from engine.errors import ModelError
    from engine.models.catalogue import inspect_model

    try:
        return inspect_model(path).details()
    except (ModelError, OSError, ValueError, TypeError):
        return ""


def _label(spec: str) -> str:
    """A model not in the list: its file or folder name, or `model @ host` for a server."""
    from engine.backends.base import is_remote

    if is_remote(spec):
        base, _, model = spec.partition("#")
        host = base.split("://", 1)[-1].split("/", 1)[0]
        return f"{short_model_id(model) if model else 'first model'} @ {host}"
    return spec.rstrip("/").rsplit("/", 1)[-1] or spec


def model_label(spec: str) -> str:
    """A model spec's short name: its folder or file name for a local model, `model @
    host` for a server (record_label once it has loaded)."""
    return _label(spec)


def record_label(record: ModelRecord) -> str:
    """A loaded model's short name, as the picker names it without the quantization
    ("Gemma 3 270M", "SmolLM2-135M-Instruct"); a server's model id."""
    if record.backend != "mlx":
        return short_model_id(record.name)
    name = display_name(record.name, record.path, record.quantization, record.parameters)
    return name.split(" · ", 1)[0]


OTHER_TOOLS = ("LM Studio", "Ollama", "llama.cpp cache")
PRESET_FIELDS = ("temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_tokens")


def model_fit_at_options(info):
    """The memory fit of a catalogue model at its remembered load options."""
    from engine.models.memory_fit import model_fit
    from engine.models.model_prefs import load_options

    opts = load_options(info.path)
    return model_fit(info, opts.context_length, opts.kv_bits)


PICKER_TIP = "Installed models; pick one to load it"
SKIPPED_SHOWN = 12  # lines of the "left out" tooltip (the command line lists them all)


def fill_models(combo: QComboBox) -> list:
    """Installed models (the default first), then every remembered server's models;
    each item's data is the model spec the engine takes (None: the default model).
    Returns what discovery left out (engine.models.scan_guard.Skipped), each with why."""
    from app.core.servers import server_models

    combo.clear()
    listing = list_models_report()
    models = listing.models
    if not any(m.name == DEFAULT_MODEL_NAME for m in models):
        combo.addItem(f"{DEFAULT_MODEL_NAME} (downloads on first use)", None)
    for m in models:
        fit = model_fit_at_options(m)
        label = display_name(m.name, m.path, m.quantization, m.parameters)
        if m.source in OTHER_TOOLS or m.source.startswith("folder "):
            label = f"{label} · {'added folder' if m.source.startswith('folder') else m.source}"
        if fit.verdict and fit.verdict != "fits":
            label = f"{label} ({fit.verdict})"
        combo.addItem(label, m.path)
        tip = f"{m.name}\n{m.details()}\nmemory: {fit.text()}\n{m.path}"
        combo.setItemData(combo.count() - 1, tip, Qt.ToolTipRole)
    remote = server_models()
    if remote:
        combo.insertSeparator(combo.count())
    for label, spec in remote:
        combo.addItem(label, spec)
        base, _, model_id = spec.partition("#")
        combo.setItemData(combo.count() - 1, f"{model_id}\non {base}", Qt.ToolTipRole)
    return list(listing.skipped)


def skipped_text(skipped: list) -> str:
    """The picker's tooltip line about what discovery left out, and why (or "")."""
    if not skipped:
        return ""
    n = len(skipped)
    lines = [f"{n} item{'s' * (n != 1)} left out of this list:"]
    lines += [f"• {s.text()[:200]}" for s in skipped[:SKIPPED_SHOWN]]
    if n > SKIPPED_SHOWN:
        lines.append(f"… and {n - SKIPPED_SHOWN} more (logitscope models --verbose lists all)")
    return "\n".join(lines)


class ModelPicker(QWidget):
    model_chosen = Signal(object)  # str path, or None for the default model
    model_opened = Signal(str)  # a model opened from a file or folder (File ▸ Open Recent)
    session_chosen = Signal(str)  # the Open dialog picked a session export

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.combo = QComboBox()
        self.combo.setMinimumWidth(200)
        self.combo.setMaximumWidth(360)
        self.combo.setToolTip(PICKER_TIP)
        self.open_button = QPushButton("Open…")
        self.open_button.setToolTip("Open an MLX model folder or a .gguf file")
        self.server_button = QPushButton("Server…")
        self.load_button = QPushButton("Load…")
        self.load_button.setToolTip(
            "Load settings of this model: context length, KV cache precision, sampling presets"
        )
        self.sampling_source = None  # the sampling controls (settings(), apply()) for presets
        self.prefer = QComboBox()
        self.prefer.addItems(["Auto", "Speed", "Memory"])
        self.prefer.setCurrentIndex(COMPUTE_PREFERENCES.index(compute_preference()))
        self.prefer.setToolTip(
            "How a quantized model runs on the CPU. Auto: measured once, float32 on an "
            "optimised BLAS where that is faster and fits half the free memory. Speed: "
            "float32 whenever it fits (about 8x the memory of 4-bit weights). Memory: the "
            "quantized weights as stored. The model line says which path is in use."
        )
        self.server_button.setToolTip(
            "Add a model on an OpenAI-compatible server (vLLM, llama.cpp, Ollama, "
            "LM Studio, mlx_lm.server)"
        )
        self.info = QLabel("No model loaded")
        self.info.setObjectName("modelInfo")
        self.info.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # no layout jump
        self.info.setWordWrap(True)  # a narrow window wraps the model line, never cuts it
        layout.addWidget(QLabel("Model"))
        layout.addWidget(self.combo)
        layout.addWidget(self.open_button)
        layout.addWidget(self.server_button)
        layout.addWidget(self.load_button)
        layout.addWidget(self.prefer)
        layout.addWidget(self.info, 1)
        self.refresh()
        self.combo.activated.connect(self._on_activated)
        self.open_button.clicked.connect(self._on_open)
        self.server_button.clicked.connect(self.add_server)
        self.load_button.clicked.connect(self.load_settings)
        self.prefer.activated.connect(self._on_prefer)

    def add_beside(self, widget) -> None:
        """Put `widget` right after the model list (the Right-sized button)."""
        layout = self.layout()
        layout.insertWidget(layout.indexOf(self.combo) + 1, widget)

    def use_sampling(self, controls) -> None:
        """Load settings… offers sampling presets from `controls` (settings(), apply())."""
        self.sampling_source = controls

    def refresh(self, select: str | None = None) -> None:
        self.combo.blockSignals(True)
        self.skipped = fill_models(self.combo)
        self.combo.setToolTip("\n\n".join(x for x in (PICKER_TIP, skipped_text(self.skipped)) if x))
        if select is not None:
            index = self.combo.findData(select)
            if index < 0:
                self.combo.addItem(_label(select), select)
                index = self.combo.count() - 1
            self.combo.setCurrentIndex(index)
        self.combo.blockSignals(False)

    def current(self) -> str | None:
        return self.combo.currentData()

    def label_of(self, spec: str) -> str:
        """The list's short name for `spec` (without the quantization), else model_label."""
        index = self.combo.findData(spec)
        if index < 0:
            return model_label(spec)
        return self.combo.itemText(index).split(" · ", 1)[0]

    def show_model(self, record: ModelRecord) -> None:
        self.info.setText(describe(record))
        details = local_details(record.path) if record.backend == "mlx" else ""
        self.info.setToolTip("\n".join(x for x in (details, record.path, record.compute) if x))
        self.refresh(select=record.path)

    def _on_activated(self, _index: int) -> None:
        self.model_chosen.emit(self.current())

    def _on_prefer(self, index: int) -> None:
        set_compute_preference(COMPUTE_PREFERENCES[index])
        self.model_chosen.emit(self.current())  # reload the model the new way

    def add_server(self) -> None:
        """Model ▸ Add server…: choose a model on a remote server and load it."""
        from app.dialogs.server_dialog import AddServerDialog

        dialog = AddServerDialog(self)
        if dialog.exec() and dialog.spec:
            self.refresh(select=dialog.spec)
            if dialog.key_note:
                self.info.setText(dialog.key_note)
            self.model_chosen.emit(dialog.spec)

    def load_settings(self) -> None:
        """Load…: the current model's load settings; accepted, the model reloads."""
        from app.dialogs.load_settings import LoadSettingsDialog

        spec = self.current()
        info = next((m for m in list_models() if m.path == spec), None)
        get = put = None
        if self.sampling_source is not None:
            controls = self.sampling_source

            def get():
                s = controls.settings(draw_seed=False)
                return {k: getattr(s, k) for k in PRESET_FIELDS}

            def put(preset):
                fields = {k: v for k, v in preset.items() if k in PRESET_FIELDS}
                controls.apply(controls.settings(draw_seed=False).with_(**fields))

        dialog = LoadSettingsDialog(spec, info, get, put, self)
        if dialog.exec():
            self.refresh(select=spec)
            self.model_chosen.emit(spec)

    def get_models_dialog(self) -> None:
        """File ▸ Get models…: search the hub and download; a download is loaded."""
        from app.core.get_models import GetModelsDialog

        dialog = GetModelsDialog(self)
        dialog.downloaded.connect(self._on_downloaded)
        dialog.show()
        self._get_models = dialog  # kept alive while open

    def _on_downloaded(self, path: str) -> None:
        self.refresh(select=path)
        self.model_chosen.emit(path)

    def open_dialog(self) -> None:
        """File ▸ Open model… (Ctrl+O)."""
        self._on_open()

    def _on_open(self) -> None:
        """One dialog: a .gguf, a session export, or a file inside an MLX model folder."""
        from app.dialogs.open_dialog import ask_open_path, kind_of

        path = ask_open_path(self)
        if path and kind_of(path) in ("session", "text"):  # the window opens it
            self.session_chosen.emit(path)
        elif path:
            self.refresh(select=path)
            self.model_opened.emit(path)
            self.model_chosen.emit(path)
