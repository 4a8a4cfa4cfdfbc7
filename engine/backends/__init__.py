"""Backends: where a model runs (the local MLX engine, or a remote server)."""
