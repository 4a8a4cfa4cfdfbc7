"""Render the playground following a request to its own server (Server ▸ Serve on
port…, Follow requests) while the answer streams, to PNG.

python scripts/screenshot_serve.py [OUT_DIR]        (default: docs/)
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.screenshots import open_playground, shoot, wait  # noqa: E402

PROMPT = "Write a haiku about the sea."


def _ask(url: str, model: str) -> None:
    import openai

    client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": PROMPT}], max_tokens=40,
        temperature=0.8, seed=7, logprobs=True, top_logprobs=5, stream=True,
    )  # fmt: skip
    for _chunk in stream:
        pass


def main() -> int:
    from app.serve.dialog import ServeChoice

    app, win, out = open_playground(default_model=True)
    serving = win.serving
    serving.actions["follow"].setChecked(True)
    serving.start(ServeChoice("127.0.0.1", 0))
    wait(app, lambda: serving.url is not None, 300)
    wait(app, lambda: serving.following.subscribed, 60)
    client = threading.Thread(target=_ask, args=(serving.url, win.model_record.name))
    client.start()
    wait(app, lambda: serving.following.state is not None and win.state.n >= 12, 300)
    shoot(app, win, out / "serve-follow.png", (1600, 1000))
    wait(app, lambda: not client.is_alive() and win.state.done is not None, 300)
    serving.cleanup()
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
