"""The playground on remote models: a real mlx_lm.server, and a fake server for
the shapes and gaps no real server here produces."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDialogButtonBox

from tests.app.conftest import LOAD_MS, run_and_wait
from tests.fake_server import FakeServer, Script, finish_chunk, vllm_chunk, vllm_models

QUESTION = "What is the capital of France?"


def use_model(qtbot, win, spec: str) -> None:
    win.load_model(spec)
    qtbot.waitUntil(
        lambda: (
            win.model_record is not None
            and win.model_record.path.startswith(spec.split("#")[0])
            and not win.bridge.busy
        ),
        timeout=LOAD_MS,
    )


@pytest.fixture
def fake():
    s = FakeServer()
    yield s
    s.close()


def test_playground_on_a_real_mlx_lm_server(qtbot, window, mlx_server):
    use_model(qtbot, window, f"{mlx_server}#")
    assert "mlx_lm.server" in window.picker.info.text()
    assert "server-side" in window.prompt_panel.token_count.text()
    state = run_and_wait(qtbot, window, QUESTION)
    assert state.error is None and "Paris" in state.done.text
    assert window.output.plain_text() == state.done.text
    # mlx_lm.server streams no logprobs: they arrive after the text and replace the tokens.
    assert all(t.logprob is not None for t in state.tokens)
    assert window.dist_chart.token_ids and not window.dist_chart.empty.isVisible()
    assert "top-k" in window.temp_chart.getPlotItem().titleLabel.text
    assert "top-k" in window.timeline_chart.entropy_label
    assert window.context_chart.empty.isVisible()  # its window size is not reported
    assert "Not reported" in window.context_chart.empty.textItem.toPlainText()


def test_server_without_logprobs_says_so(qtbot, window, fake):
    fake.script = Script(
        models={"data": [{"id": "m"}]},
        events=[
            {"choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {"content": " there"}, "finish_reason": None}]},
            finish_chunk("stop"),
        ],
    )
    use_model(qtbot, window, f"{fake.url}#m")
    state = run_and_wait(qtbot, window, QUESTION)
    assert window.output.plain_text() == "Hello there"
    assert window.dist_chart.empty.isVisible()
    assert "Not reported by this server" in window.dist_chart.empty.textItem.toPlainText()
    assert window.timeline_chart.empty.isVisible()
    assert state.tokens[0].prob is None  # shown as unknown, never as 0


def test_add_server_dialog_remembers_the_server_not_the_key(qtbot, window, fake, monkeypatch):
    from app.core.servers import load_servers
    from app.dialogs.server_dialog import AddServerDialog
    from engine.store.paths import data_dir

    fake.script = Script(
        models=vllm_models(2048),
        events=[vllm_chunk(" Paris", -0.2, [(" Paris", -0.2), (" Lyon", -2.0)]), finish_chunk()],
    )
    dialog = AddServerDialog(window)
    qtbot.addWidget(dialog)
    dialog.url.setCurrentText(fake.url.removesuffix("/v1"))  # /v1 is added
    dialog.key.setText("sk-window-555")
    dialog.connect_server()
    ok = dialog.buttons.button(QDialogButtonBox.Ok)
    qtbot.waitUntil(ok.isEnabled, timeout=10_000)
    assert "vLLM" in dialog.status.text() and dialog.models.count() == 1
    dialog.accept()
    assert dialog.spec == f"{fake.url}#Qwen/Qwen3-0.6B"
    assert load_servers()[-1]["base_url"] == fake.url
    settings_file = (data_dir() / "settings.ini").read_text()
    assert fake.url in settings_file and "sk-window-555" not in settings_file
    window.picker.refresh(select=dialog.spec)
    assert window.picker.current() == dialog.spec
    use_model(qtbot, window, dialog.spec)
    assert "context 2,048" in window.picker.info.text()
    state = run_and_wait(qtbot, window, QUESTION)
    assert state.done.text == " Paris" and state.tokens[0].logprob == -0.2
    assert fake.requests[-1]["headers"]["Authorization"] == "Bearer sk-window-555"
    for f in data_dir().rglob("*"):
        if f.is_file():
            assert b"sk-window-555" not in f.read_bytes(), f
