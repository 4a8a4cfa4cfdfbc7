"""Remote OpenAI-compatible servers over HTTP (no MLX here)."""
