"""Prefill and decode speed of the frozen app against the venv, from their self-tests.

    python scripts/bench_frozen.py [ROUNDS] [--app dist/Logitscope/Logitscope]

Alternates (ABBA) `python -m app --self-test` (this checkout, the venv's packages) and the
frozen app's `--self-test` (each a fresh process: load the default model, answer
"What is the capital of France?" greedily, 37 prompt tokens), so both see the same
machine load, and prints each round, the best and the median of each, and the
frozen/venv ratios. tests/packaging/test_frozen_app.py runs the same self-tests.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DETAILS = "self-test details: "
FIGURES = ("prefill_tps", "ttft_s", "decode_tps")


def self_test(command: list[str]) -> tuple[dict, str]:
    """Run one self-test with no terminal (as a double-click starts it).

    Args:
        command: the app's command line, without `--self-test`.

    Returns:
        The details it printed (compute path, token ids, speeds; {} if none) and its
        whole output, for a failure message.

    Raises:
        RuntimeError: the self-test did not pass.
    """
    p = subprocess.run(
        [*command, "--self-test"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        start_new_session=True,
        cwd=ROOT,
    )
    out = p.stdout + p.stderr[-3000:]
    if p.returncode != 0 or "self-test passed" not in p.stdout:
        raise RuntimeError(f"{command[0]} --self-test failed ({p.returncode}):\n{out}")
    lines = [x for x in p.stdout.splitlines() if x.startswith(DETAILS)]
    return (json.loads(lines[-1].removeprefix(DETAILS)) if lines else {}), out


def main() -> int:
    args = sys.argv[1:]
    app = ROOT / "dist" / "Logitscope" / "Logitscope"
    if "--app" in args:
        i = args.index("--app")
        app = Path(args[i + 1]).resolve()
        del args[i : i + 2]
    rounds = int(args[0]) if args else 5
    runs: dict[str, list[dict]] = {"venv": [], "frozen": []}
    order = [("venv", [sys.executable, "-m", "app"]), ("frozen", [str(app)])]
    for r in range(rounds):
        for name, command in order if r % 2 == 0 else order[::-1]:  # ABBA: no order bias
            details, _ = self_test(command)
            runs[name].append(details)
            figures = "  ".join(f"{k} {details[k]:.3g}" for k in FIGURES)
            print(f"round {r + 1} {name:6}  {figures}", flush=True)
    print(f"compute (venv):   {runs['venv'][0]['compute']}")
    print(f"compute (frozen): {runs['frozen'][0]['compute']}")
    same = all(x["token_ids"] == runs["venv"][0]["token_ids"] for x in runs["frozen"])
    print(f"same greedy token ids: {same}")
    for key, best in (("prefill_tps", max), ("ttft_s", min), ("decode_tps", max)):
        v = [x[key] for x in runs["venv"]]
        f = [x[key] for x in runs["frozen"]]
        print(
            f"{key:12} venv best {best(v):.3g} median {statistics.median(v):.3g} | "
            f"frozen best {best(f):.3g} median {statistics.median(f):.3g} | "
            f"frozen/venv best {best(f) / best(v):.2f} "
            f"median {statistics.median(f) / statistics.median(v):.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
