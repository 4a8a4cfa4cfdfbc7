"""A read's statistics from its token records: perplexity, bits per byte, GLTR's
rank buckets and the most surprising tokens.

`ReadTally` takes the records one by one (constant memory: the surprising tokens
are kept in a bounded heap), so a 10,000-token read never holds its records
twice; `summary()` gives the ReadSummary. The plain functions compute each figure
from a list of log-probabilities, for callers that hold them anyway.
"""

from __future__ import annotations

import heapq
import math

from engine.run.read_summary import RANK_BUCKETS, ReadSummary, Surprise, rank_bucket
from engine.run.records import TokenRecord

SURPRISING = 10  # tokens listed as the most surprising
LN2 = math.log(2.0)


def perplexity(logprobs) -> float | None:
    """exp(mean negative log-likelihood); None for no tokens.

    Args:
        logprobs: natural-log probabilities of the tokens read.
    """
    values = list(logprobs)
    return math.exp(-math.fsum(values) / len(values)) if values else None


def bits_per_byte(logprobs, n_bytes: int) -> float | None:
    """The tokens' total negative log-likelihood in bits per UTF-8 byte; None
    without bytes.

    Args:
        logprobs: natural-log probabilities of the tokens read.
        n_bytes: UTF-8 bytes of the text they cover.
    """
    return -math.fsum(logprobs) / LN2 / n_bytes if n_bytes > 0 else None


class ReadTally:
    """The running statistics of one read.

    Args:
        keep: how many of the most surprising tokens to keep.
    """

    def __init__(self, keep: int = SURPRISING):
        self.keep = keep
        self.tokens = 0
        self.n_bytes = 0
        self._nll: list[float] = []  # summed with fsum at the end (exact to the last bit)
        self.buckets = [0] * (len(RANK_BUCKETS) + 1)
        self._heap: list[tuple[float, int, Surprise]] = []  # (-nll, -step, …): a min-heap

    def add(self, record: TokenRecord) -> None:
        """Count one token record (one with no log-probability is not scored)."""
        if record.logprob is None:
            return
        self.tokens += 1
        self.n_bytes += len(record.bytes) if record.bytes is not None else len(record.text.encode())
        self._nll.append(-record.logprob)
        rank = getattr(record, "rank", None)
        if rank is not None:
            self.buckets[rank_bucket(rank)] += 1
        expected = record.top[0].text if record.top else ""
        item = Surprise(record.step, record.label, record.logprob, rank, expected)
        entry = (-record.logprob, -record.step, item)
        if len(self._heap) < self.keep:
            heapq.heappush(self._heap, entry)
        elif entry[:2] > self._heap[0][:2]:
            heapq.heapreplace(self._heap, entry)

    def summary(self, **where) -> ReadSummary:
        """The ReadSummary so far.

        Args:
            **where: the fields the tally does not know: context_tokens,
                start_token, window, window_keep, context_length, read_s, complete,
                and text_bytes (the text's own UTF-8 size, used when complete).

        Returns:
            The summary; read_tps is tokens / read_s.
        """
        nll = math.fsum(self._nll)
        complete = where.pop("complete", True)
        text_bytes = where.pop("text_bytes", None)
        n_bytes = text_bytes if complete and text_bytes else self.n_bytes
        read_s = where.pop("read_s")
        worst = sorted(self._heap, key=lambda e: (-e[0], -e[1]))
        return ReadSummary(
            tokens=self.tokens,
            text_bytes=n_bytes,
            nll=nll,
            perplexity=math.exp(nll / self.tokens) if self.tokens else None,
            bits_per_byte=nll / LN2 / n_bytes if n_bytes else None,
            rank_buckets=tuple(self.buckets),
            surprising=tuple(e[2] for e in worst),
            read_s=read_s,
            read_tps=self.tokens / read_s if read_s > 0 and self.tokens else None,
            complete=complete,
            **where,
        )
