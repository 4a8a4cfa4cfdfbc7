"""Render the playground on a thinking model to PNG: a local fake OpenAI-compatible
server (the test suite's) streams `reasoning_content` then the answer, with
logprobs, as DeepSeek-R1 / Qwen3 servers do. No thinking model installs offline.

python scripts/screenshot_thinking.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import open_playground, settle, shoot, wait  # noqa: E402
from tests.fake_server import FakeServer, Script, finish_chunk, vllm_models  # noqa: E402

THINKING = (
    "The user asks which is heavier: a kilogram of feathers or a kilogram of "
    "iron. Both are one kilogram, so they weigh the same. The trick is that iron "
    "is denser, so it looks heavier."
)
ANSWER = " They weigh the same: one kilogram each. Iron is just denser."


def chunks(text: str, field: str, seed: int):
    words = text.replace(" ", " \0").split("\0")
    for i, w in enumerate(words):
        lp = -abs(math.sin(seed + i * 1.7)) * 1.6
        alt = [{"token": w, "logprob": lp}, {"token": " maybe", "logprob": lp - 1.5}]
        yield {
            "choices": [
                {
                    "index": 0,
                    "delta": {field: w},
                    "finish_reason": None,
                    "logprobs": {"content": [{"token": w, "logprob": lp, "top_logprobs": alt}]},
                }
            ]
        }
        yield ("sleep", 0.03)


def main() -> int:
    import tempfile

    from engine.store.paths import models_dir

    # The fake server must not become the model the app remembers: settings elsewhere.
    os.environ.setdefault("LOGITSCOPE_MODELS_DIR", str(models_dir()))
    os.environ["LOGITSCOPE_DATA_DIR"] = tempfile.mkdtemp(prefix="logitscope-shot-")
    server = FakeServer()
    server.script = Script(
        models=vllm_models(32768),
        events=[
            *chunks(THINKING, "reasoning_content", 1),
            *chunks(ANSWER, "content", 2),
            finish_chunk("stop", usage={"prompt_tokens": 24, "completion_tokens": 52}),
        ],
    )
    app, win, out = open_playground()
    win.load_model(f"{server.url}#Qwen/Qwen3-0.6B")
    wait(app, lambda: win.model_record.path.startswith(server.url) and not win.bridge.busy, 120)
    win.controls.mode.setCurrentIndex(0)
    win.prompt.setPlainText("Which is heavier, a kilogram of feathers or of iron?")
    win.run()
    wait(app, lambda: win.state.done is not None and not win.bridge.busy, 120)
    win.select_step(20)
    settle(app)
    shoot(app, win, out / "thinking.png", (1600, 1000))
    win.close()
    server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
