"""How the playground is laid out: the side tabs, the prompt/answer column, the
status line, the probability legend, and a first window size that fits the
screen. Each builder returns its widgets (a small dataclass); it never touches
the window, which keeps what it needs."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.core.appearance import LEGEND_NAME, paint_legend, themed_style
from app.core.repaint_registry import track
from app.core.theme import note_color, tint
from app.history.panel import HistoryPanel
from app.playground.conversation_view import ConversationView, TurnLabel
from app.playground.shading_bar import ShadingBar
from app.playground.thinking_view import AnswerViews, ThinkingBlock
from app.widgets.controls import SamplingPanel
from app.widgets.fitting_label import FittingLabel
from app.widgets.progress_bar import (  # noqa: F401 - the shell's callers import them here
    DOWNLOAD_DONE,
    progress_idle,
    show_prefill,
    show_progress,
)
from app.widgets.rendered_view import RenderedView
from app.widgets.token_view import TokenView

DEFAULT_SIZE = (1560, 940)
COMPACT_BELOW = 1280  # window width under which the side panel starts hidden
SIDE_MIN, CENTER_MIN, CHARTS_MIN = 270, 300, 320  # px: no panel is ever dragged to nothing
SIDE_WIDTH = 360


def legend_widget() -> QWidget:
    """The probability legend: 'unlikely', the current scale's gradient, 'likely' (the
    words sit beside the colours, readable on any scale and theme)."""
    box = QWidget()
    box.setToolTip("Each token is shaded by the probability the model gave it (0 → 1)")
    box.setAccessibleName("Probability legend: unlikely to likely")
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    bar = QLabel()
    bar.setObjectName(LEGEND_NAME)
    track("legend", bar)
    bar.setFixedHeight(10)
    paint_legend(bar)
    row.addWidget(QLabel("unlikely"))
    row.addWidget(bar, 1)
    row.addWidget(QLabel("likely · chosen-token probability"))
    return box


@dataclass
class Side:
    tabs: QTabWidget
    controls: SamplingPanel
    history: HistoryPanel


def build_side(history=None) -> Side:
    """The Settings (sampling controls, never scrolled sideways) and History tabs.
    The controls sit at the top of their tab at their natural height: spare height
    goes below them, never into gaps between the rows."""
    controls = SamplingPanel()
    page = QWidget()
    column = QVBoxLayout(page)
    column.setContentsMargins(0, 0, 0, 0)
    column.addWidget(controls)
    column.addStretch(1)
    scroll = QScrollArea()
    scroll.setWidget(page)
    scroll.setWidgetResizable(True)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    history = HistoryPanel(history)  # draws the session model's History
    tabs = QTabWidget()
    tabs.addTab(scroll, "Settings")
    tabs.addTab(history, "History")
    return Side(tabs, controls, history)


class ElidedProgressBar(QProgressBar):
    """A progress bar whose text is cut with "…" to fit (the whole of it in the
    tooltip): a long message ("Converting … to MLX") never runs past the bar."""

    PAD = 12  # px left for the frame and the text's margins

    def setFormat(self, text: str) -> None:  # noqa: N802 - Qt's name
        """Set the text (as QProgressBar.setFormat) and show it whole in the tooltip."""
        super().setFormat(text)
        self.setToolTip(text)

    def text(self) -> str:
        """The formatted text, elided to the bar's width (what the style paints)."""
        return self.fontMetrics().elidedText(
            super().text(), Qt.ElideRight, max(self.width() - self.PAD, 0)
        )


def build_status(status_bar) -> tuple[QLabel, QProgressBar]:
    """The status line and a progress bar hidden when idle (its space kept: no re-layout)."""
    progress = ElidedProgressBar()
    progress.setMaximumWidth(260)
    progress.setRange(0, 1000)
    policy = progress.sizePolicy()
    policy.setRetainSizeWhenHidden(True)
    progress.setSizePolicy(policy)
    label = FittingLabel("Starting…")  # a narrow window drops details, never cuts a word
    status_bar.addWidget(label, 1)
    status_bar.addPermanentWidget(progress)
    return label, progress


def box_css(kind: str, selector: str, extra: str = "") -> str:
    """A stylesheet for a tinted box (theme.TINTS `kind`) in the theme in use."""
    bg, fg, border = tint(kind)
    return f"{selector} {{ background: {bg}; color: {fg}; border: 1px solid {border}; {extra} }}"


@dataclass
class Center:
    widget: QWidget
    run_button: QPushButton
    stop_button: QPushButton
    follow_button: QPushButton
    regen_button: QPushButton
    ab_button: QPushButton
    banner: QLabel
    viewing_label: QLabel
    output: TokenView
    thinking: ThinkingBlock
    answer: AnswerViews
    transcript: ConversationView
    turn_label: TurnLabel
    ab_label: QLabel
    answer_tabs: QTabWidget | None = None
    rendered: RenderedView | None = None
    shading: ShadingBar | None = None


def _button(text: str, tip: str, enabled: bool = True) -> QPushButton:
    button = QPushButton(text)
    button.setToolTip(tip)
    button.setEnabled(enabled)
    return button


def build_center(prompt_panel) -> Center:
    """The prompt, its bar of buttons, the error banner and the streamed answer."""
    run = _button("▶ Run", "Run the prompt (Ctrl+Enter)")
    run.setDefault(True)
    stop = _button("■ Stop", "Stop; the partial answer is kept (Esc)", False)
    follow = _button("Follow", "Charts follow the newest token again (Ctrl+L)", False)
    regen = _button(
        "↻ Regenerate",
        "Run the last turn again with the current settings "
        "(Ctrl+R); the earlier run stays, ‹ › switches between them",
        False,
    )
    ab = _button(
        "Cold vs cached",
        "Rerun the last turn without the prompt cache, then with "
        "it, and show both times to first token (Ctrl+Shift+R)",
        False,
    )
    # Two rows, so every button keeps its whole label down to a 1024-px window.
    count_bar = QHBoxLayout()
    count = prompt_panel.token_count
    count.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # never widens the row
    count.setWordWrap(True)  # "… · turn 3: 118 of 8,192" wraps where narrow, never cut
    count_bar.addWidget(count, 1)
    for w in (prompt_panel.show_tokens, ab):
        count_bar.addWidget(w)
    prompt_bar = QHBoxLayout()
    prompt_bar.addWidget(follow)
    prompt_bar.addStretch(1)
    for w in (regen, stop, run):
        prompt_bar.addWidget(w)

    banner = QLabel()
    banner.setWordWrap(True)
    banner.setObjectName("errorBanner")
    themed_style(
        banner, lambda: box_css("error", "#errorBanner", "border-radius: 4px; padding: 6px;")
    )
    banner.hide()
    viewing = QLabel()  # where a run shown from elsewhere came from, and its two ways on
    themed_style(viewing, lambda: f"color: {note_color()}; font-style: italic;")
    viewing.setWordWrap(True)
    viewing.setTextFormat(Qt.RichText)
    viewing.setTextInteractionFlags(Qt.TextBrowserInteraction)
    viewing.setOpenExternalLinks(False)
    output, thinking = TokenView(), ThinkingBlock()
    transcript, turn_label = ConversationView(), TurnLabel()
    ab_label = QLabel()
    ab_label.setWordWrap(True)
    themed_style(ab_label, lambda: box_css("info", "QLabel", "padding: 4px;"))
    ab_label.hide()
    center = QWidget()
    cl = QVBoxLayout(center)
    cl.addWidget(transcript, 3)
    cl.addWidget(prompt_panel.stack, 2)
    cl.addLayout(count_bar)
    cl.addLayout(prompt_bar)
    for w in (banner, ab_label, viewing, turn_label, thinking):
        cl.addWidget(w)
    answer_tabs, rendered = answer_tabs_of(output)
    cl.addWidget(answer_tabs, 5)
    shading = ShadingBar(legend_widget(), output)  # probability or GLTR rank shading
    cl.addWidget(shading)
    return Center(
        center,
        run,
        stop,
        follow,
        regen,
        ab,
        banner,
        viewing,
        output,
        thinking,
        AnswerViews(output, thinking),
        transcript,
        turn_label,
        ab_label,
        answer_tabs,
        rendered,
        shading,
    )


def answer_tabs_of(output: TokenView) -> tuple[QTabWidget, RenderedView]:
    """Tokens (the default, shaded by probability) | Rendered (the answer as Markdown)."""
    tabs = QTabWidget()
    tabs.setDocumentMode(True)
    tabs.setTabPosition(QTabWidget.South)
    rendered = RenderedView(output.plain_text)
    tabs.addTab(output, "Tokens")
    tabs.addTab(rendered, "Rendered")
    tabs.setTabToolTip(0, "The answer token by token, shaded by probability")
    tabs.setTabToolTip(1, "The answer as Markdown: formatting, code blocks with Copy")
    output.textChanged.connect(rendered.schedule)
    return tabs, rendered


def build_split(side: QWidget, center: QWidget, charts: QWidget, controls) -> QSplitter:
    """Side tabs | prompt and answer | charts. No panel can be dragged to nothing:
    minimum widths, children not collapsible."""
    split = QSplitter()
    split.setChildrenCollapsible(False)
    side_min = max(SIDE_MIN, controls.minimumSizeHint().width() + 40)
    # The centre's rows of buttons keep their whole labels: never narrower than they need
    # ("↻ Regenerat" was cut at CENTER_MIN).
    center_min = max(CENTER_MIN, center.minimumSizeHint().width())
    for widget, minimum, stretch in (
        (side, side_min, 0),
        (center, center_min, 2),
        (charts, CHARTS_MIN, 3),
    ):
        widget.setMinimumWidth(minimum)
        split.addWidget(widget)
        split.setStretchFactor(split.count() - 1, stretch)
    return split


def first_size(available) -> tuple[int, int, list[int], bool]:
    """(width, height, splitter sizes, side panel shown) for a first window on a screen
    with `available` geometry (None: unknown). Small screens start with the side panel
    hidden (View ▸ Settings and history panel, Ctrl+B, brings it back)."""
    width = min(DEFAULT_SIZE[0], int(available.width() * 0.95)) if available else DEFAULT_SIZE[0]
    height = min(DEFAULT_SIZE[1], int(available.height() * 0.95)) if available else DEFAULT_SIZE[1]
    side = SIDE_WIDTH if width >= COMPACT_BELOW else 0
    rest = max(width - side - 30, CENTER_MIN + CHARTS_MIN)
    sizes = [side or SIDE_MIN, int(rest * 0.4), rest - int(rest * 0.4)]
    return width, height, sizes, width >= COMPACT_BELOW
