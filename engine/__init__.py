"""Logitscope's engine: models, instrumented generation and the engine process.

Pure Python and MLX; never imports Qt, pyqtgraph or `app` (checked by the
import-linter contract in pyproject.toml). `app/` talks to it only through
`EngineClient` and the records in `engine.run.records`.
"""

__version__ = "0.1.0"
