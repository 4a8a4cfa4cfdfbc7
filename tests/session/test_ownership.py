"""One owner per object: outside app/session/, app code sets attributes only on `self`.

The session model (app/session/) is changed only through its methods, and a view's
attributes only by the view itself: `other.attr = value` anywhere else in app/ is a
defect this test names. The one exception is app/charts/base.py, which styles
pyqtgraph's own label and plot items (third-party objects, not views of ours).
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
THIRD_PARTY_STYLING = {APP / "charts" / "base.py"}


def foreign_assignments(path: Path, root: Path = APP.parent) -> list[str]:
    """`x.attr = …` (also augmented and in tuples) where x is not `self` or `cls`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                base = t.value if isinstance(t, ast.Attribute) else None
                if base is not None and not (
                    isinstance(base, ast.Name) and base.id in ("self", "cls")
                ):
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(t)}")
    return found


def test_nothing_outside_the_session_sets_another_objects_attributes():
    files = [
        p
        for p in sorted(APP.rglob("*.py"))
        if "session" not in p.relative_to(APP).parts[:1] and p not in THIRD_PARTY_STYLING
    ]
    assert len(files) > 60  # the whole app, not an empty glob
    found = [line for p in files for line in foreign_assignments(p)]
    assert found == []


def test_the_check_finds_what_it_looks_for(tmp_path):
    sample = tmp_path / "x.py"
    sample.write_text("def f(view, s):\n    view.branches = 1\n    s.shown.done, self.a = 2, 3\n")
    assert [line.split(": ", 1)[1] for line in foreign_assignments(sample, tmp_path)] == [
        "view.branches",
        "s.shown.done",
    ]
