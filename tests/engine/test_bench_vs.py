"""`logitscope bench --vs URL` against a real mlx_lm.server serving the default model:
both sides answer the same raw prompt greedily with the same tokens, and each side
reports its speeds and time to first token."""

from __future__ import annotations

import json

from engine.cli import main


def test_bench_vs_a_real_server(mlx_server, default_model_path, capsys):
    code = main(["bench", "--vs", mlx_server, "--max-tokens", "8", "--rounds", "1", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    r = json.loads(out.out)
    assert r["same_greedy_tokens"] is True
    local, server = r["local"], r["server"]
    assert local["timings_from"] == "engine" and local["decode_tps"] > 0
    assert local["prefill_tps"] > 0 and 0 < local["ttft_s"] < 60
    assert server["device"].startswith("mlx_lm.server") and server["ttft_s"] > 0
    assert local["generated_tokens"] == server["generated_tokens"] == 8
