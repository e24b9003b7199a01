"""Content Quality (CQS): an LLM judge scores sampled passages of a generated survey 0-5.

Passages are the section texts of at least 100 characters (:meth:`GeneratedSurvey.section_texts`).
``min(20, n)`` of them are sampled without replacement exactly as the paper's code does - NumPy's
legacy generator seeded with 42 (``np.random.seed(42); np.random.choice(texts, k, replace=False)``,
which is ``RandomState(42).permutation(n)[:k]``) - and each passage longer than 1000 characters is cut.
CQS is the mean score of the sampled passages.

``reference`` mode (default) reproduces the paper's code: the cut keeps the first 1000 characters and,
unless they end with '.', drops everything from the last '.' on (the '.' itself too; with no '.' at
all, only the last character); only a bare digit is accepted as an answer; if any passage gets no
valid answer after the judge's tries, CQS is None (the paper's code could not finish either).

``paper`` mode cuts at the end of the last whole sentence (keeping its '.'; with no '.', the 1000
characters stay), reads answers such as "Score: 4" too, and averages the passages that were scored
(None only when none was).

A survey with no passage of 100 characters scores 0.0 in both modes (the paper's code divides by
zero there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..models.judge import SYSTEM_PROMPT, parse_score_lenient, parse_score_strict
from .judge_prompts import render_prompt

__all__ = [
    "MODES", "SAMPLE_SIZE", "SAMPLE_SEED", "MAX_PASSAGE_CHARS", "MIN_PASSAGE_CHARS", "CQSResult",
    "sample_passages", "cut_passage", "content_passages", "content_quality_prompts", "content_quality",
    "content_quality_result",
]

MODES = ("reference", "paper")
SAMPLE_SIZE = 20
SAMPLE_SEED = 42
MAX_PASSAGE_CHARS = 1000
MIN_PASSAGE_CHARS = 100


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")


def sample_passages(texts: list[str], k: int = SAMPLE_SIZE, seed: int = SAMPLE_SEED) -> list[str]:
    """``min(k, n)`` texts without replacement, in the order NumPy's legacy ``choice`` draws them."""
    n = len(texts)
    if n == 0:
        return []
    order = np.random.RandomState(seed).permutation(n)[:min(k, n)]
    return [texts[i] for i in order]


def cut_passage(text: str, mode: str = "reference", limit: int = MAX_PASSAGE_CHARS) -> str:
    """Cut a passage longer than ``limit`` characters at a '.' (see the module doc for each mode)."""
    _check_mode(mode)
    if len(text) <= limit:
        return text
    head = text[:limit]
    if head.endswith("."):
        return head
    cut = head.rfind(".")
    if mode == "reference":
        return head[:cut]  # rfind == -1 drops the last character, as the paper's slicing does
    return head[:cut + 1] if cut >= 0 else head


def content_passages(gen, mode: str = "reference") -> list[str]:
    """The sampled, cut passages that go to the judge."""
    _check_mode(mode)
    texts = list(gen.section_texts(MIN_PASSAGE_CHARS))
    return [cut_passage(t, mode) for t in sample_passages(texts)]


def content_quality_prompts(gen, mode: str = "reference", prompt_dir=None) -> list[str]:
    return [render_prompt("content_quality", prompt_dir, text=p) for p in content_passages(gen, mode)]


@dataclass
class CQSResult:
    value: Optional[float]
    scores: list[Optional[int]] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(1 for s in self.scores if s is None)


def content_quality_result(gen, judge, mode: str = "reference", prompt_dir=None) -> CQSResult:
    """CQS with the score of every sampled passage (None where the judge failed)."""
    prompts = content_quality_prompts(gen, mode, prompt_dir)
    if not prompts:
        return CQSResult(0.0, [])
    parse = parse_score_strict if mode == "reference" else parse_score_lenient
    scores = list(judge.score_many(prompts, system=SYSTEM_PROMPT, parse=parse))
    valid = [s for s in scores if s is not None]
    if not valid or (mode == "reference" and len(valid) < len(scores)):
        return CQSResult(None, scores)
    return CQSResult(float(sum(valid)) / len(valid), scores)


def content_quality(gen, judge, mode: str = "reference", prompt_dir=None) -> Optional[float]:
    """CQS 0-5 of one generated survey; None when the judge failed (see the module doc)."""
    return content_quality_result(gen, judge, mode, prompt_dir).value
