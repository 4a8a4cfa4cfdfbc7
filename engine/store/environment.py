"""The engine's environment settings: every `LOGITSCOPE_*` variable, documented
and read here (at call time, so a test or a child process can set one).

Nothing else in `engine/` reads `os.environ` for a Logitscope setting; the README
lists the same table (`python -m engine.store.environment` prints it).
"""

from __future__ import annotations

import os

VARIABLES = {
    "LOGITSCOPE_DATA_DIR": "the data folder (models, sessions, caches); default: the "
    "platform's user data folder",
    "LOGITSCOPE_MODELS_DIR": "the converted models' folder only; default: DATA_DIR/models",
    "LOGITSCOPE_RUNTIME_DIR": "the folder of this machine's cached measurements (paths.json, "
    "gemm_limits.json); default: beside the models folder",
    "LOGITSCOPE_SMOLLM2_GGUF": "a local copy of the default model's GGUF (no download)",
    "LOGITSCOPE_COMPUTE": "how a local quantized model runs: auto | speed | memory",
    "LOGITSCOPE_NO_FAST_BLAS": "set: keep MLX's own BLAS on Linux (no OpenBLAS preload)",
    "LOGITSCOPE_BLAS_THREADS": "OpenBLAS threads in the engine process (default 1)",
    "LOGITSCOPE_ENGINE_TIMEOUT": "seconds of engine silence before a run counts as hung "
    "(default 30)",
    "LOGITSCOPE_LOAD_TIMEOUT": "the same while a model is fetched, converted or loaded "
    "(default 600)",
    "LOGITSCOPE_SERVER_TIMEOUT": "seconds a server may stall mid-request (default 120)",
    "LOGITSCOPE_DEBUG": "set: the command line shows a bug's traceback",
    "LOGITSCOPE_FAULT": "tests only: '<phase>:kill|stop[:n]' makes the engine process "
    "signal itself at load, progress, prefill, decode, inspect or lab",
    "LOGITSCOPE_POWERMETRICS": "macOS opt-in: set to 1 (or to a command such as a sudo rule "
    "you made) to measure each run's energy with powermetrics, which needs root",
    "LOGITSCOPE_POWERCAP_DIR": "tests: a folder standing in for /sys/class/powercap",
    "LOGITSCOPE_CPU_ONLY": "set: `dev.py` installs MLX's CPU build even with an NVIDIA GPU",
}


def _name(name: str) -> str:
    if name not in VARIABLES:
        raise KeyError(f"{name} is not a documented Logitscope variable")
    return name


def text(name: str) -> str:
    """A variable's value.

    Args:
        name: a key of VARIABLES.

    Returns:
        Its value, '' when unset.

    Raises:
        KeyError: `name` is not a documented variable (a bug in the caller).
    """
    return os.environ.get(_name(name), "")


def flag(name: str) -> bool:
    """Whether a switch variable is on.

    Args:
        name: a key of VARIABLES.

    Returns:
        True when set to anything but '', '0', 'false' or 'no' (any case, spaces
        ignored).
    """
    return text(name).strip().lower() not in ("", "0", "false", "no")


def seconds(name: str, default: float) -> float:
    """A duration variable.

    Args:
        name: a key of VARIABLES.
        default: seconds to use when it is unset or not a positive number.

    Returns:
        The number of seconds (a positive float, or `default`).
    """
    try:
        value = float(text(name) or default)
    except ValueError:
        return default
    return value if value > 0 else default


def whole(name: str, default: int) -> int:
    """A count variable.

    Args:
        name: a key of VARIABLES.
        default: used when it is unset or not a positive whole number.

    Returns:
        The number, or `default`.
    """
    value = text(name).strip()
    ok = value.isascii() and value.isdigit()  # '²' is a digit to str.isdigit, not to int()
    return int(value) if ok and int(value) > 0 else default


def describe() -> str:
    """The table of variables, for the README and `--help`.

    Returns:
        One line per variable: its name, padded, then what it does.
    """
    width = max(map(len, VARIABLES))
    return "\n".join(f"{name:<{width}}  {what}" for name, what in VARIABLES.items())


if __name__ == "__main__":
    print(describe())
