"""Reading a text through a model: every token's probability and rank, teacher-forced.

Plain Python, no MLX, no Qt: `request.ReadRequest` says what to read and how,
`ReadSummary` (engine/run/read_summary.py, beside the records) is what a read's
DoneRecord carries (perplexity, bits per byte, GLTR's rank buckets, the most
surprising tokens, the window), and
`read_stats` computes it from the records. The pass itself runs in a backend
(engine/backends/mlx/read_pass.py; a server's prompt log-probabilities in
engine/backends/openai/read_remote.py). Nothing is imported here; reading/
sits above run/ in the layers, with no cycle.
"""
