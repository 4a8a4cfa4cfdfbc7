"""Agreement by meaning: whether two short answers say the same thing, and the samples
grouped by it.

The cheap stand-in for semantic entropy's bidirectional entailment (Kuhn et al., 2023;
Farquhar et al., 2024, who ask a language model whether each answer entails the other):
here an answer "entails" another when the other holds its core as whole words.

1. Normalised as the correctness rule does (engine/lab/questions.normalise: accents,
   punctuation and articles dropped, lower case), then English number words become
   digits: "six" -> "6", "twenty one" -> "21", "a hundred" -> "100" (zero to nineteen,
   the tens, hundred, thousand, million; other languages' number words stay words).
2. An answer's core is its words less those of the question it answers and less a few
   function words (FUNCTION_WORDS: "is", "has", "of", ...): "A hexagon has six sides."
   to "How many sides does a hexagon have?" has the core {"6"}. An answer that is only
   such words keeps them all ("The Sun" to "Which is larger, the Sun or the Moon?").
3. Two answers mean the same when each one's core occurs among the other's words
   (bidirectional whole-word containment): "6", "six" and "A hexagon has six sides." do;
   "Paris" and "Lyon" do not, nor "Paris" and "Paris or Lyon".
4. Clusters as semantic entropy builds them: each answer joins the first cluster whose
   first answer means the same as it, else starts one (the relation need not be
   transitive; the order decides, as there).
"""

from __future__ import annotations

from engine.lab.questions import normalise


def _words(text: str) -> list[str]:
    return text.split()


UNITS = {
    w: i
    for i, w in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen"
        )
    )
}
TENS = {
    w: 10 * i
    for i, w in enumerate(_words("twenty thirty forty fifty sixty seventy eighty ninety"), 2)
}
SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
FUNCTION_WORDS = frozenset(
    _words(
        "is are was were be been am has have had do does did it its this that these those "
        "there of in on at to for from by with as and or s answer "
        "est sont de du des en et es del y ist sind von und"
    )
)


def _number_word(w: str) -> bool:
    return w in UNITS or w in TENS or w in SCALES


def digits_for_number_words(words: list[str]) -> list[str]:
    """`words` with each run of English number words as one number in digits.

    A unit after a unit, or a ten after a unit or a ten, starts a new number ("one two"
    stays two numbers); "and" joins within a number after hundred or thousand ("one
    hundred and five" -> "105").
    """
    out: list[str] = []
    i = 0
    while i < len(words):
        if not _number_word(words[i]):
            out.append(words[i])
            i += 1
            continue
        total, current, last = 0, 0, ""
        while i < len(words):
            w = words[i]
            if w == "and" and last == "scale" and i + 1 < len(words):
                if words[i + 1] in UNITS or words[i + 1] in TENS:
                    i += 1
                    continue
                break
            if w in UNITS:
                if last == "unit" or last == "ten" and not 1 <= UNITS[w] <= 9:
                    break
                current += UNITS[w]
                last = "unit"
            elif w in TENS:
                if last in ("unit", "ten"):
                    break
                current += TENS[w]
                last = "ten"
            elif w in SCALES:
                scale = SCALES[w]
                if scale == 100:
                    if current >= 100:
                        break
                    current = (current or 1) * 100
                else:
                    total += (current or 1) * scale
                    current = 0
                last = "scale"
            else:
                break
            i += 1
        out.append(str(total + current))
    return out


def answer_words(text: str) -> list[str]:
    """The answer's words as compared: its first line normalised, numbers in digits."""
    first = (text.strip().splitlines() or [""])[0]
    return digits_for_number_words(normalise(first).split())


def core(words: list[str], question_words: frozenset[str] = frozenset()) -> frozenset[str]:
    """An answer's core: its words less the question's and the function words (all of
    its words when nothing else is left)."""
    kept = frozenset(w for w in words if w not in question_words and w not in FUNCTION_WORDS)
    return kept or frozenset(words)


class Meaning:
    """Answers compared by meaning against one question (the module's rule)."""

    def __init__(self, question: str = ""):
        self.question_words = frozenset(digits_for_number_words(normalise(question).split()))

    def key(self, text: str) -> tuple[frozenset[str], frozenset[str]]:
        """(the answer's core, its words)."""
        words = answer_words(text)
        return core(words, self.question_words), frozenset(words)

    def same(self, a: str, b: str) -> bool:
        """Whether answers `a` and `b` hold each other's core as whole words."""
        (core_a, words_a), (core_b, words_b) = self.key(a), self.key(b)
        return core_a <= words_b and core_b <= words_a

    def clusters(self, answers: list[str], seeds: list[str] = ()) -> list[list[int]]:
        """The answers' clusters (indices into `answers`), one per seed first (a seed,
        e.g. the greedy answer, is a cluster's first member but not counted in it; its
        cluster may stay empty), then in order of their first answer."""
        heads = [self.key(s) for s in seeds]
        members: list[list[int]] = [[] for _ in seeds]
        for i, a in enumerate(answers):
            k = self.key(a)
            for c, h in enumerate(heads):
                if h[0] <= k[1] and k[0] <= h[1]:
                    members[c].append(i)
                    break
            else:
                heads.append(k)
                members.append([i])
        return members
