"""Write docs/guide/tour.md from the lessons themselves (app/tour/lessons.py, the one
place their texts live), with the screenshots of scripts/screenshot_tour.py.

python scripts/write_tour_page.py        (tests/app/test_tour_lessons.py checks it is current)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PAGE = ROOT / "docs" / "guide" / "tour.md"
PICTURES = ("sampling", "sample-n", "read", "cost")  # docs/tour-<name>.png


def page() -> str:
    """The guide's tour page: the lessons' Markdown, then the screenshots."""
    from app.tour.lessons import as_markdown

    shots = [f"![The tour: {name}](../tour-{name}.png)" for name in PICTURES]
    return as_markdown() + "\n## Screenshots\n\n" + "\n\n".join(shots) + "\n"


def main() -> int:
    tmp = PAGE.with_suffix(".md.tmp")
    tmp.write_text(page(), encoding="utf-8")
    tmp.replace(PAGE)  # written whole, then renamed into place
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
