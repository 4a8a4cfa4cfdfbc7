"""How the playground is laid out: the prompt/answer column, the probability legend,
and a first window size that fits the screen. Widgets are set on the window
(`win.run_button`, `win.output`, …) so the window's own code reads as before."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.controls import SamplingPanel
from app.conversation_view import ConversationView, TurnLabel
from app.history import HistoryPanel
from app.theme import gradient_stops
from app.thinking_view import AnswerViews, ThinkingBlock
from app.token_view import TokenView

DEFAULT_SIZE = (1560, 940)
COMPACT_BELOW = 1280  # window width under which the side panel starts hidden
SIDE_MIN, CENTER_MIN, CHARTS_MIN = 270, 300, 320  # px: no panel is ever dragged to nothing
SIDE_WIDTH = 360


def legend_widget() -> QLabel:
    stops = ", ".join(f"stop:{p} {c}" for p, c in gradient_stops())
    label = QLabel("unlikely  ·  chosen-token probability  ·  likely")
    label.setAlignment(Qt.AlignCenter)
    label.setToolTip("Each token is shaded by the probability the model gave it (0 → 1)")
    label.setStyleSheet(
        "QLabel { background: qlineargradient(x1:0, y1:0, x2:1, y2:0, " + stops + ");"
        " border-radius: 3px; padding: 2px 6px; font-size: 8pt; color: #222; }"
    )
    return label


def build_side(win) -> QTabWidget:
    """The Settings (sampling controls, never scrolled sideways) and History tabs."""
    win.controls = SamplingPanel()
    scroll = QScrollArea()
    scroll.setWidget(win.controls)
    scroll.setWidgetResizable(True)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    win.history = HistoryPanel()
    win.side_tabs = side = QTabWidget()
    side.addTab(scroll, "Settings")
    side.addTab(win.history, "History")
    return side


def build_status(win) -> None:
    """The status line and a progress bar hidden when idle (its space kept: no re-layout)."""
    win.progress = QProgressBar()
    win.progress.setMaximumWidth(260)
    win.progress.setRange(0, 1000)
    policy = win.progress.sizePolicy()
    policy.setRetainSizeWhenHidden(True)
    win.progress.setSizePolicy(policy)
    win.status_label = QLabel("Starting…")
    win.statusBar().addWidget(win.status_label, 1)
    win.statusBar().addPermanentWidget(win.progress)


def progress_idle(bar: QProgressBar) -> None:
    """Hidden with its space kept (retainSizeWhenHidden): no empty box, no re-layout."""
    bar.setRange(0, 1000)
    bar.setValue(0)
    bar.setFormat("")
    bar.setVisible(False)


def show_prefill(bar: QProgressBar, record) -> None:
    if record.processed < record.total:
        bar.setVisible(True)
        bar.setValue(int(1000 * record.processed / max(record.total, 1)))
        bar.setFormat(f"Prefill {record.processed}/{record.total}")
    else:
        progress_idle(bar)


def build_center(win) -> QWidget:
    """The prompt, its bar of buttons, the error banner and the streamed answer."""
    win.run_button = QPushButton("▶ Run")
    win.run_button.setToolTip("Run the prompt (Ctrl+Enter)")
    win.run_button.setDefault(True)
    win.stop_button = QPushButton("■ Stop")
    win.stop_button.setToolTip("Stop; the partial answer is kept (Esc)")
    win.stop_button.setEnabled(False)
    win.follow_button = QPushButton("Follow")
    win.follow_button.setToolTip("Charts follow the newest token again (Ctrl+L)")
    win.follow_button.setEnabled(False)
    win.regen_button = QPushButton("↻ Regenerate")
    win.regen_button.setToolTip("Run the last turn again with the current settings (Ctrl+R)")
    win.ab_button = QPushButton("Cold vs cached")
    win.ab_button.setToolTip("Rerun the last turn without the prompt cache, then with it, "
                             "and show both times to first token (Ctrl+Shift+R)")  # fmt: skip
    for b in (win.regen_button, win.ab_button):
        b.setEnabled(False)
    # Two rows, so every button keeps its whole label down to a 1024-px window.
    count_bar = QHBoxLayout()
    win.token_count.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # clip, not squeeze
    count_bar.addWidget(win.token_count, 1)
    for w in (win.show_tokens, win.ab_button):
        count_bar.addWidget(w)
    prompt_bar = QHBoxLayout()
    prompt_bar.addWidget(win.follow_button)
    prompt_bar.addStretch(1)
    for w in (win.regen_button, win.stop_button, win.run_button):
        prompt_bar.addWidget(w)

    win.banner = QLabel()
    win.banner.setWordWrap(True)
    win.banner.setObjectName("errorBanner")
    win.banner.setStyleSheet(
        "#errorBanner { background: #fde2e1; color: #8a1c1c; border: 1px solid #e8a4a1;"
        " border-radius: 4px; padding: 6px; }"
    )
    win.banner.hide()
    win.viewing_label = QLabel()
    win.viewing_label.setStyleSheet("color: #555; font-style: italic;")
    win.viewing_label.setWordWrap(True)
    win.output = TokenView()
    win.thinking = ThinkingBlock()
    win.answer = AnswerViews(win.output, win.thinking)
    win.transcript = ConversationView()
    win.turn_label = TurnLabel()
    win.ab_label = QLabel()
    win.ab_label.setWordWrap(True)
    win.ab_label.setStyleSheet("background:#eef4fb; border:1px solid #c9dbef; padding:4px;")
    win.ab_label.hide()
    center = QWidget()
    cl = QVBoxLayout(center)
    cl.addWidget(win.transcript, 3)
    cl.addWidget(win.prompt_stack, 2)
    cl.addLayout(count_bar)
    cl.addLayout(prompt_bar)
    cl.addWidget(win.banner)
    cl.addWidget(win.ab_label)
    cl.addWidget(win.viewing_label)
    cl.addWidget(win.turn_label)
    cl.addWidget(win.thinking)
    cl.addWidget(win.output, 5)
    cl.addWidget(legend_widget())
    return center


def fit_to_screen(win) -> None:
    """A first size that fits the screen; small screens start with the side panel
    hidden (View ▸ Settings and history panel, Ctrl+B, brings it back)."""
    screen = win.screen().availableGeometry() if win.screen() else None
    width = min(DEFAULT_SIZE[0], int(screen.width() * 0.95)) if screen else DEFAULT_SIZE[0]
    height = min(DEFAULT_SIZE[1], int(screen.height() * 0.95)) if screen else DEFAULT_SIZE[1]
    win.resize(width, height)
    side = SIDE_WIDTH if width >= COMPACT_BELOW else 0
    rest = max(width - side - 30, CENTER_MIN + CHARTS_MIN)
    win.split.setSizes([side or SIDE_MIN, int(rest * 0.4), rest - int(rest * 0.4)])
    if width < COMPACT_BELOW:
        win.toggle_side_panel(False)
