"""Logitscope's PySide6 views. Talks to the engine only through `engine.client`
and the plain records in `engine.records`; never imports MLX."""
