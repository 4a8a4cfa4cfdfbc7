"""Compare: lanes side by side, their statistics, divergence and cost."""
