"""The local MLX backend: the only package that imports mlx or mlx_lm."""
