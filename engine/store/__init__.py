"""Files and the environment: where data lives (paths.py), atomic writes, bounded
JSON, damaged-tolerant settings files, runtime caches, model file hashes, and
every LOGITSCOPE_* variable (environment.py).

Imports nothing."""
