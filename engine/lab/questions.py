"""Question sets with accepted answers, and the rule that says an answer is correct.

A set is JSONL (one object a line: `question`, `answers` a list of strings or one
string; `topic`, `lang`, `level` optional) or CSV (a header with `question` and
`answers`, the answers separated by `|`). The bundled set is
resources/questions/factual.jsonl. A bad row is refused with its line number, the
whole file with it: a set half-read would give a figure for questions nobody chose.

The correctness rule (`is_correct`), written down once:
1. Both the model's answer and each accepted answer are normalised: Unicode NFKD
   with accents dropped, lower case, every character that is not a letter or a digit
   becomes a space, the articles in ARTICLES are dropped (unless nothing else is
   left: "A" as a blood group stays), spaces collapsed.
2. Only the answer's first line counts (a model that goes on to another question
   has answered already).
3. Correct when some normalised accepted answer occurs in the normalised answer as a
   whole-word sequence ("paris" in "it is paris", not "12" in "123").
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from engine.display.units import binary_size
from engine.errors import SettingsError
from engine.store import bounded_json

MAX_QUESTIONS = 10_000
MAX_FILE_BYTES = 20 * 2**20
MAX_FIELD = 2_000  # characters in a question or an answer
ARTICLES = frozenset(  # English, French, Spanish, German and Italian articles
    ("the", "a", "an", "le", "la", "les", "l", "un", "une", "des", "el", "los", "las")
    + ("der", "die", "das", "den", "dem", "ein", "eine", "il", "lo", "gli")
)


@dataclass(frozen=True)
class Question:
    """One question, its accepted answers (canonical first) and where it came from."""

    question: str
    answers: tuple[str, ...]
    topic: str = ""
    lang: str = ""
    level: int = 0
    line: int = 0  # its line in the file (1-based)


def bundled_path() -> Path:
    """The question set that ships with Logitscope."""
    return Path(__file__).resolve().parents[2] / "resources" / "questions" / "factual.jsonl"


def normalise(text: str) -> str:
    """The text as the correctness rule compares it (see the module docstring)."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    words = "".join(c if c.isalnum() else " " for c in text).split()
    kept = [w for w in words if w not in ARTICLES]
    return " ".join(kept if kept else words)  # "A" (a blood group) stays itself


def is_correct(answer: str, accepted: tuple[str, ...]) -> bool:
    """Whether `answer`'s first line holds an accepted answer (the module's rule)."""
    lines = [ln for ln in answer.strip().splitlines() if ln.strip()]
    said = f" {normalise(lines[0] if lines else '')} "
    for a in accepted:
        want = normalise(a)
        if want and f" {want} " in said:
            return True
    return False


def load_questions(path: str | Path | None = None) -> list[Question]:
    """The questions of a JSONL or CSV file (None: the bundled set).

    Raises:
        SettingsError: the file cannot be read, is empty, or a row is bad (its line named).
    """
    p = Path(path) if path is not None else bundled_path()
    try:
        text = bounded_json.read_bounded(p, MAX_FILE_BYTES, str(p)).decode("utf-8-sig")
    except bounded_json.FileRefused as e:  # a FIFO or a device: named, never waited on
        if e.reason == "missing":
            raise SettingsError(
                f"{p}: no such question file (give a .jsonl or .csv file)"
            ) from None
        if e.reason == "too_large":
            raise SettingsError(
                f"{p}: over {binary_size(MAX_FILE_BYTES)}: not a question set"
            ) from None
        raise SettingsError(f"{p} {e.detail}: give a .jsonl or .csv file") from None
    except UnicodeDecodeError:
        raise SettingsError(f"{p}: not UTF-8 text: save the question set as UTF-8") from None
    rows = _csv_rows(p, text) if p.suffix.lower() == ".csv" else _jsonl_rows(p, text)
    if not rows:
        raise SettingsError(f"{p}: holds no questions (one per line: question, answers)")
    if len(rows) > MAX_QUESTIONS:
        raise SettingsError(f"{p}: {len(rows):,} questions, at most {MAX_QUESTIONS:,}")
    return rows


def _jsonl_rows(p: Path, text: str) -> list[Question]:
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = bounded_json.loads(line)  # nesting and numbers limited before parsing
        except bounded_json.JsonLimitError as e:
            raise SettingsError(f"{p}, line {n}: {e.words}: not a question") from None
        except json.JSONDecodeError as e:
            raise SettingsError(f"{p}, line {n}: not JSON ({e.msg})") from None
        if not isinstance(item, dict):
            raise SettingsError(f"{p}, line {n}: give an object with question and answers")
        rows.append(_question(p, n, item))
    return rows


def _csv_rows(p: Path, text: str) -> list[Question]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        names = [(f or "").strip().lower() for f in reader.fieldnames or ()]
        if "question" not in names or "answers" not in names:
            raise SettingsError(f"{p}, line 1: the header needs the columns question and answers")
        reader.fieldnames = names
        rows = []
        for item in reader:
            n = reader.line_num
            if None in item:
                raise SettingsError(f"{p}, line {n}: more cells than the header has columns")
            answers = (item.get("answers") or "").split("|")
            rows.append(_question(p, n, {**item, "answers": answers}))
    except csv.Error as e:  # a cell over csv's field limit, a stray quote
        raise SettingsError(f"{p}, line {reader.reader.line_num}: not CSV ({e})") from None
    return rows


def _text(p: Path, n: int, value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{p}, line {n}: {what} must be non-empty text, not {value!r:.60}")
    if len(value) > MAX_FIELD:
        raise SettingsError(f"{p}, line {n}: {what} is over {MAX_FIELD:,} characters")
    return value.strip()


def _question(p: Path, n: int, item: dict) -> Question:
    question = _text(p, n, item.get("question"), "question")
    answers = item.get("answers", item.get("answer"))
    answers = [answers] if isinstance(answers, str) else answers
    if not isinstance(answers, list) or not answers:
        raise SettingsError(f"{p}, line {n}: answers must be a list of accepted answers")
    kept = tuple(
        _text(p, n, a, "each answer") for a in answers if not (isinstance(a, str) and not a.strip())
    )
    if not kept or not any(normalise(a) for a in kept):
        raise SettingsError(f"{p}, line {n}: no accepted answer left after normalising")
    level = item.get("level", 0)
    try:
        if isinstance(level, str) and len(level.strip()) > bounded_json.MAX_NUMBER_CHARS:
            raise ValueError(level)  # int() would take thousands of digits
        level = int(level or 0)
    except (TypeError, ValueError, OverflowError):  # OverflowError: Infinity
        raise SettingsError(f"{p}, line {n}: level must be a whole number") from None
    topic, lang = (str(item.get(k) or "")[:40] for k in ("topic", "lang"))
    return Question(question, kept, topic, lang, level, n)
