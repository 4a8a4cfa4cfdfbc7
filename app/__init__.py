"""Logitscope's PySide6 views. Talks to the engine only through `engine.process.client`
and the plain records in `engine.run.records`; never imports MLX."""
