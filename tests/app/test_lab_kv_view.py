"""The lab's KV cache tab: the KV precision comparison is asked for and shown."""

from __future__ import annotations

from app.lab.cache_view import CacheView, kv_precision_text
from engine.lab import CacheParams, KVPrecision

ROWS = (
    {
        "kv_bits": None,
        "bytes_per_token": 46080.0,
        "kv_cache_bytes": 2810880,
        "decode_tps": 40.0,
        "same_tokens": True,
        "mean_kl": 0.0,
        "max_kl": 0.0,
    },
    {
        "kv_bits": 8,
        "bytes_per_token": 12960.0,
        "kv_cache_bytes": 790560,
        "decode_tps": 38.5,
        "same_tokens": True,
        "mean_kl": 6.5e-4,
        "max_kl": 3.7e-3,
    },
    {
        "kv_bits": 4,
        "bytes_per_token": 7200.0,
        "kv_cache_bytes": 439200,
        "decode_tps": None,
        "same_tokens": False,
        "mean_kl": 0.18,
        "max_kl": 0.6,
    },
)


def test_kv_precision_is_asked_for_and_shown(qtbot):
    view = CacheView()
    qtbot.addWidget(view)
    assert view.params() == CacheParams(turns=4, tokens=12)  # the defaults, no KV precision
    view.kv_compare.setChecked(True)
    assert view.params() == CacheParams(turns=4, tokens=12, kv_bits=(8, 4))
    rows = [
        KVPrecision.from_dict({"kv_cache_tokens": 61, "ttft_s": 0.1, "tokens": 8, **r})
        for r in ROWS
    ]
    assert kv_precision_text(rows).splitlines() == [
        "KV float: 46,080 bytes per token, 2.81 MB, 40.0 tok/s",
        "KV 8-bit: 12,960 bytes per token, 0.79 MB, 38.5 tok/s, "
        "KL to float mean 6.5e-04 max 3.7e-03 nats",
        "KV 4-bit: 7,200 bytes per token, 0.44 MB, decode not timed, "
        "KL to float mean 1.8e-01 max 6.0e-01 nats, another answer",
    ]
