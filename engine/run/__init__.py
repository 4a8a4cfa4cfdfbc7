"""One run: its settings and prompt (chat templates, thinking markers, branching),
the records it yields, their fold (run_result.py) and everything derived from the
records alone: series, run kind, read summary, temperature, compare statistics,
OpenAI chunks.

Imports nothing."""
