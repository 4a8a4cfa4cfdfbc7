"""The README is a landing page (under 150 lines) and every link in it and in the user
guide (docs/guide/) resolves: a file it names exists, an `#anchor` is a heading there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = re.match(r"^#{1,6} (.*)", line)
        if m and not fenced:
            found.add(slug(m.group(1)))
    return found


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    return broken


def test_every_link_of_the_readme_and_the_guide_resolves():
    assert len(pages()) > 10  # the README and the guide's pages, not an empty glob
    assert [b for p in pages() for b in broken_links(p)] == []


def test_the_readme_is_a_landing_page_with_the_two_commands_first():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 150
    head = "\n".join(lines[:5])
    assert "python3 dev.py app" in head and "python3 dev.py test" in head


def test_the_check_finds_a_broken_link(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [nowhere](#no-such)\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert broken_links(page) == [
            "p.md: missing.md (no such file)",
            "p.md: #no-such (no such heading)",
        ]
    finally:
        ROOT = saved
