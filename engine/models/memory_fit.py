"""Will a model fit? Its weights plus its KV cache at the chosen context, against this
machine's memory (unified memory on Apple Silicon, where the GPU shares it).

macOS lets the GPU wire about three quarters of unified memory, and the system, the
app and the activations need the rest, so a model needing under 60 % fits, up to
85 % is tight (other programs may have to give way), beyond that it will not fit.
Nothing here imports MLX or Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.machine.hardware import total_memory_bytes

FITS, TIGHT, WONT_FIT = "fits", "tight", "won't fit"
FIT_SHARE = 0.60  # of memory: comfortably fits below this
TIGHT_SHARE = 0.85  # tight up to this; beyond, it will not fit


@dataclass(frozen=True)
class Fit:
    """A memory-fit verdict.

    Attributes:
        verdict: FITS, TIGHT or WONT_FIT ("" when the machine's memory is unknown).
        need_bytes: weights + KV cache.
        memory_bytes: the machine's memory (None: unknown).
    """

    verdict: str
    need_bytes: int
    memory_bytes: int | None

    def text(self) -> str:
        """e.g. "fits: 1.2 GB of 16 GB" or "size 1.2 GB" when memory is unknown."""
        need = f"{self.need_bytes / 1e9:.1f} GB"
        if not self.memory_bytes:
            return f"needs {need}"
        return f"{self.verdict}: {need} of {self.memory_bytes / 1e9:.0f} GB"


def memory_fit(weights_bytes: int, kv_bytes: int | None = 0, memory: int | None = None) -> Fit:
    """The verdict for `weights_bytes` + `kv_bytes` on a machine of `memory` bytes.

    Args:
        weights_bytes: the weights as they load (file size is a close bound).
        kv_bytes: the KV cache at the chosen context (None or 0: not counted).
        memory: the machine's memory; None reads this machine's.

    Returns:
        A Fit.
    """
    memory = total_memory_bytes() if memory is None else memory
    need = int(weights_bytes) + int(kv_bytes or 0)
    if not memory:
        return Fit("", need, None)
    share = need / memory
    verdict = FITS if share <= FIT_SHARE else TIGHT if share <= TIGHT_SHARE else WONT_FIT
    return Fit(verdict, need, memory)


def model_fit(info, context: int | None = None, kv_bits: int | None = None, memory=None) -> Fit:
    """The verdict for a catalogue ModelInfo at `context` tokens (its own by default)
    with a float or `kv_bits` quantized KV cache."""
    kv = info.kv_bytes(context or info.context_length, kv_bits)
    return memory_fit(info.size_bytes, kv, memory)
