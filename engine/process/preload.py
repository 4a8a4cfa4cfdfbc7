"""What the engine's forkserver imports once for every engine forked from it (Linux; see
`engine.process.start_method`): the worker, and the tokenizer classes mlx-lm imports
from transformers, about a second of each engine's start. Nothing that loads MLX."""

from __future__ import annotations

import contextlib
import os

from engine.process import worker  # noqa: F401 - the target every engine runs

os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")  # as mlx_lm/__init__ sets it
with contextlib.suppress(ImportError):  # without it the engine says so at its first load
    from transformers import (  # noqa: F401
        AutoTokenizer,
        PreTrainedTokenizer,
        PreTrainedTokenizerFast,
    )
