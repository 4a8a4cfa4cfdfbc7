"""The tour's lessons without a window: each has a title, two to four sentences, an
experiment and a sentence, in issue 41's order; the docs page is made from them."""

from __future__ import annotations

import inspect
import re

from app.tour.lessons import LESSONS, as_markdown

ISSUE_ORDER = (
    "tokenization", "embedding", "attention", "feed_forward", "projection", "sampling",
    "iteration", "sample_n", "branches", "read", "position", "prefill", "kv_cache",
    "quantization", "distillation", "speculative", "batching", "thinking", "cost",
    "routing",  # issue 46: answer with the right-sized model
)  # fmt: skip


def test_lessons_follow_the_issue_order():
    assert tuple(x.key for x in LESSONS) == ISSUE_ORDER


def test_every_lesson_has_text_an_experiment_and_a_sentence():
    for x in LESSONS:
        sentences = [p for p in re.split(r"(?<=[.!?])\s+", x.text) if p]
        assert 2 <= len(sentences) <= 4, (x.key, sentences)
        assert x.title and inspect.isgeneratorfunction(x.show_me), x.key
        assert callable(x.sentence) and x.target.split(".")[0] in ("playground", "inside", "lab")


def test_a_sentence_of_nothing_says_so():
    """A lesson whose run never started says why, never a made-up number."""
    for x in LESSONS:
        if x.key == "distillation":
            continue
        s = x.sentence({"failed": "The run did not start: the playground says why."})
        assert "did not start" in s.text and not s.numbers, x.key


def test_the_docs_page_holds_every_lesson_text():
    page = as_markdown()
    assert all(x.text in page and x.title in page for x in LESSONS)


def test_the_guide_page_is_written_from_the_lessons():
    """docs/guide/tour.md is the lessons' own text (scripts/write_tour_page.py rewrites it)."""
    from scripts.write_tour_page import PAGE, page

    assert PAGE.read_text(encoding="utf-8") == page()
