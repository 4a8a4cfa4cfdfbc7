"""The playground's menu bar: File, Run, View, Window, Help, with their shortcuts
shown in the menus (Qt draws the key sequence beside each action)."""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence

from app.core.appearance import add_view_actions
from app.dialogs.cost_dialog import add_cost_action
from app.shell import window_state


def _action(menu, text: str, slot, shortcut=None, tip: str = "") -> QAction:
    action = QAction(text, menu)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    if tip:
        action.setStatusTip(tip)
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


def build_menus(bar, do: dict) -> dict[str, QAction]:
    """Fill the playground's menu `bar`; `do` maps each action's name to its slot
    (new, open, server, import, export, quit, run, cold, regen, ab, stop, follow,
    side, tokens, compare, inside, lab, about). Returns the actions by name."""
    acts = {}
    file = bar.addMenu("&File")
    acts["new"] = _action(
        file,
        "&New conversation",
        do["new"],
        QKeySequence.New,
        "Start a new conversation and session (history keeps all)",
    )
    acts["open"] = _action(
        file,
        "&Open model…",
        do["open"],
        QKeySequence.Open,
        "Open an MLX model folder or a .gguf file",
    )
    acts["server"] = _action(
        file,
        "Add &server…",
        do["server"],
        "Ctrl+Shift+O",
        "Use a model on an OpenAI-compatible server",
    )
    if "get_models" in do:
        acts["get_models"] = _action(
            file,
            "&Get models…",
            do["get_models"],
            "Ctrl+Shift+G",
            "Search the Hugging Face hub for MLX and GGUF models and download one",
        )
    file.addSeparator()
    acts["import"] = _action(
        file,
        "&Import session…",
        do["import"],
        "Ctrl+I",
        "Add an exported JSON session to the history",
    )
    acts["export"] = _action(
        file,
        "&Export…",
        do["export"],
        "Ctrl+E",
        "Export the run shown (or the selected history item)",
    )
    file.addSeparator()
    acts["quit"] = _action(
        file, "&Quit", do["quit"], "Ctrl+Q", "Close every Logitscope window and quit"
    )
    run = bar.addMenu("&Run")
    acts["run"] = _action(run, "&Run", do["run"], "Ctrl+Return", "Run the prompt")
    acts["cold"] = _action(
        run,
        "Run &cold (no prompt cache)",
        do["cold"],
        "Ctrl+Shift+Return",
        "Prefill the whole prompt again, to compare its time to first token with a cached run's",
    )
    acts["regen"] = _action(
        run,
        "Re&generate last answer",
        do["regen"],
        "Ctrl+R",
        "Run the last turn again with the current settings",
    )
    acts["ab"] = _action(
        run,
        "Cold vs cached &A/B",
        do["ab"],
        "Ctrl+Shift+R",
        "Rerun the last turn cold, then cached: both TTFTs side by side",
    )
    acts["drop_oldest"] = _action(
        run,
        "&Drop oldest turns when the context is full",
        lambda on: window_state.remember_drop_oldest(on),
        None,
        "Otherwise a full context stops and asks",
    )
    acts["drop_oldest"].setCheckable(True)
    acts["drop_oldest"].setChecked(window_state.drop_oldest())
    run.addSeparator()
    acts["stop"] = _action(run, "&Stop", do["stop"], "Esc", "Stop; the partial answer is kept")
    acts["follow"] = _action(run, "&Follow latest token", do["follow"], "Ctrl+L")
    view = bar.addMenu("&View")
    acts["side"] = _action(
        view, "&Settings and history panel", do["side"], "Ctrl+B", "Show or hide the side panel"
    )
    acts["side"].setCheckable(True)
    acts["side"].setChecked(True)
    acts["tokens"] = _action(view, "Prompt as &tokens", do["tokens"], "Ctrl+T")
    view.addSeparator()
    acts.update(add_view_actions(view))  # Theme, Probability colours
    acts["cost"] = add_cost_action(view)  # electricity price, watts, API prices
    window = bar.addMenu("&Window")
    acts["compare"] = _action(window, "&Compare runs…", do["compare"], "Ctrl+K")
    acts["inside"] = _action(
        window,
        "&Inside the model…",
        do["inside"],
        "Ctrl+Shift+I",
        "Tokenizer, attention, logit lens, and prefill "
        "vs decode against the hardware, for the selected step",
    )
    acts["lab"] = _action(
        window,
        "&Lab…",
        do["lab"],
        "Ctrl+Shift+L",
        "Quantization A/B, the KV cache, speculative decoding and batching on this model",
    )
    help_menu = bar.addMenu("&Help")
    acts["about"] = _action(help_menu, "&About Logitscope", do["about"])
    return acts


def add_help_action(bar, text: str, slot, tip: str = "") -> QAction:
    """Add an action at the top of the Help menu of `bar` (built by `build_menus`)."""
    help_menu = next(a.menu() for a in bar.actions() if a.text() == "&Help")
    action = _action(help_menu, text, slot, None, tip)
    help_menu.removeAction(action)
    first = help_menu.actions()[0] if help_menu.actions() else None
    help_menu.insertAction(first, action)
    return action
