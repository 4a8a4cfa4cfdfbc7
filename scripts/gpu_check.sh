#!/usr/bin/env bash
# The GPU check, in one go (a few minutes on an NVIDIA machine): set up with MLX's
# CUDA build, run the engine's tests on the GPU, then the benchmark. Output under
# ${OUT:-gpu-check}/. Run from the repository root: bash scripts/gpu_check.sh
set -euo pipefail
OUT=${OUT:-gpu-check}
mkdir -p "$OUT"
nvidia-smi -L | tee "$OUT/gpu.txt"
python3 dev.py setup 2>&1 | tail -5
.venv/bin/python -c "import mlx.core as mx; print('MLX device:', mx.default_device())" | tee -a "$OUT/gpu.txt"
QT_QPA_PLATFORM=offscreen timeout 420 .venv/bin/python -m pytest -q -x tests/engine \
    -k "generate or instrument or temperature or true_numbers or real_model or fast_path" \
    2>&1 | tail -15 | tee "$OUT/tests.txt"
timeout 240 .venv/bin/logitscope bench --rounds 3 --max-tokens 48 --json | tee "$OUT/bench.json"
