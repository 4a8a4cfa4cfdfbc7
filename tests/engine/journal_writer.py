"""Child process for the kill -9 test: journals token records as fast as it can."""

import json
import sys
from pathlib import Path

from engine.journal import Journal

if __name__ == "__main__":
    path, records = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    journal = Journal(path, path.stem)
    journal._write({"kind": "session", "session_id": path.stem, "started": 0.0})
    print("ready", flush=True)
    n = 0
    while True:
        run_id = journal.start_run(f"prompt {n}", {"temperature": 0.5}, None)
        for i, rec in enumerate(records):
            journal.record(run_id, {**rec, "step": i})
        n += 1
