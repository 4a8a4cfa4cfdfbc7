"""The playground's menu bar: File, Run, View, Window, Help, with their shortcuts
shown in the menus (Qt draws the key sequence beside each action)."""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence

from app import conversation_flow as flow
from app import window_state
from app.main import quit_app


def _action(menu, text: str, slot, shortcut=None, tip: str = "") -> QAction:
    action = QAction(text, menu)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    if tip:
        action.setStatusTip(tip)
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


def _open_inside(win, step: int | None = None):
    from app.inside.window import open_inside

    return open_inside(win, step)


def _open_lab(win):
    from app.lab.window import open_lab

    return open_lab(win)


def build_menus(win) -> dict[str, QAction]:
    """Create the menus of a PlaygroundWindow; returns the actions by name."""
    from app.about import show_about

    bar = win.menuBar()
    acts = {}
    file = bar.addMenu("&File")
    acts["new"] = _action(file, "&New conversation", win.new_conversation, QKeySequence.New,
                          "Start a new conversation and session (history keeps all)")  # fmt: skip
    acts["open"] = _action(file, "&Open model…", win.picker.open_dialog, QKeySequence.Open,
                           "Open an MLX model folder or a .gguf file")  # fmt: skip
    acts["server"] = _action(file, "Add &server…", win.picker.add_server, "Ctrl+Shift+O",
                             "Use a model on an OpenAI-compatible server")  # fmt: skip
    file.addSeparator()
    acts["import"] = _action(file, "&Import session…", win.history._on_import, "Ctrl+I",
                             "Add an exported JSON session to the history")  # fmt: skip
    acts["export"] = _action(file, "&Export…", win.export_current, "Ctrl+E",
                             "Export the run shown (or the selected history item)")  # fmt: skip
    file.addSeparator()
    acts["quit"] = _action(file, "&Quit", quit_app, "Ctrl+Q",
                           "Close every Logitscope window and end the app")  # fmt: skip
    run = bar.addMenu("&Run")
    acts["run"] = _action(run, "&Run", win.run, "Ctrl+Return", "Run the prompt")
    acts["cold"] = _action(run, "Run &cold (no prompt cache)", lambda: win.run(cold=True),
                           "Ctrl+Shift+Return", "Prefill the whole prompt again, to compare "
                           "its time to first token with a cached run's")  # fmt: skip
    acts["regen"] = _action(
        run,
        "Re&generate last answer",
        lambda: flow.regenerate(win),
        "Ctrl+R",
        "Run the last turn again with the current settings",
    )
    acts["ab"] = _action(
        run,
        "Cold vs cached &A/B",
        lambda: flow.start_ab(win),
        "Ctrl+Shift+R",
        "Rerun the last turn cold, then cached: both TTFTs side by side",
    )
    acts["drop_oldest"] = _action(run, "&Drop oldest turns when the context is full",
                                  lambda on: window_state.remember_drop_oldest(on), None,
                                  "Otherwise a full context stops and asks")  # fmt: skip
    acts["drop_oldest"].setCheckable(True)
    acts["drop_oldest"].setChecked(window_state.drop_oldest())
    run.addSeparator()
    acts["stop"] = _action(run, "&Stop", win.stop, "Esc", "Stop; the partial answer is kept")
    acts["follow"] = _action(run, "&Follow latest token", lambda: win.select_step(None),
                             "Ctrl+L")  # fmt: skip
    view = bar.addMenu("&View")
    acts["side"] = _action(view, "&Settings and history panel", win.toggle_side_panel,
                           "Ctrl+B", "Show or hide the side panel")  # fmt: skip
    acts["side"].setCheckable(True)
    acts["side"].setChecked(True)
    acts["tokens"] = _action(view, "Prompt as &tokens", win.show_tokens.toggle, "Ctrl+T")
    window = bar.addMenu("&Window")
    acts["compare"] = _action(window, "&Compare runs…", win.open_compare, "Ctrl+K")
    acts["inside"] = _action(window, "&Inside the model…", lambda: _open_inside(win),
                             "Ctrl+Shift+I", "Tokenizer, attention, logit lens, and prefill "
                             "vs decode against the hardware, for the selected step")  # fmt: skip
    acts["lab"] = _action(window, "&Lab…", lambda: _open_lab(win), "Ctrl+Shift+L",
                          "Quantization A/B, the KV cache, speculative decoding and batching "
                          "on this model")  # fmt: skip
    help_menu = bar.addMenu("&Help")
    acts["about"] = _action(help_menu, "&About Logitscope", lambda: show_about(
        win, win.model_record.device if win.model_record else None))  # fmt: skip
    win.answer.inspect_requested.connect(lambda step: _open_inside(win, step))
    return acts
