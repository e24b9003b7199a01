"""Citation accuracy at document, section and sentence level, judged by an NLI cross-encoder.

For every citation the premise is the cited paper (title and abstract from the corpus) and the
hypothesis says that the paper could be cited in the GT survey (document level), is relevant to the
generated heading (section level) or could be cited in the generated sentence (sentence level).
A citation scores 1 when entailment is the most probable label, 0.5 when neutral is, 0 otherwise;
an unresolved reference (or an ``[n]`` without a reference entry) scores 0; at document level a
cited paper that the GT survey also cites scores 1 without asking the model. Each level is the mean
over its citations: document level over the reference entries, section and sentence level over every
in-text citation instance.

``reference`` mode (the paper's code): neutral earns 0.5 only when p(entailment) > p(contradiction);
section and sentence pairs go to the model as (hypothesis, paper), i.e. swapped; a survey without
references (document) or without citations (section, sentence) scores 0.
``paper`` mode (the paper's formulas): neutral earns 0.5; every pair is (paper, hypothesis); a level
with nothing to score is None (not defined) rather than 0.

The work is split in two so that many surveys share one NLI pass: :func:`plan_citation_accuracy`
lists the pairs a survey needs, the caller scores the distinct pairs of all surveys together, and
:func:`score_plan` turns the probabilities into the three figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from ..citations import Resolution, resolve_references

if TYPE_CHECKING:  # pragma: no cover
    from ..corpus import Corpus
    from ..generated import GeneratedSurvey
    from ..schemas import Survey

LEVELS = ("document", "section", "sentence")
KEYS = tuple(f"citation_accuracy_{lvl}" for lvl in LEVELS)

# the paper's wording (document level quotes the abstract, the other levels do not)
DOC_PREMISE = "There is a paper. Title: '{title}'. Abstract: '{abstract}'"
DOC_HYPOTHESIS = "The paper titled '{title}' with the given abstract could be cited in the paper: '{survey_title}'."
PREMISE = "There is a paper. Title: '{title}'. Abstract: {abstract}"
SECTION_HYPOTHESIS = "The paper titled '{title}' with the given abstract is relevant to the section: '{heading}'."
SENTENCE_HYPOTHESIS = "The paper titled '{title}' with the given abstract could be cited in the sentence: '{sentence}'."

UNRESOLVED = -1  # scores 0 without the model
IN_GT = -2  # document level: cited by the GT survey, scores 1 without the model


def citation_score(p_contradiction: float, p_entailment: float, p_neutral: float, mode: str = "reference") -> float:
    """Score of one citation from its NLI probabilities (or logits: only their order matters)."""
    c, e, n = p_contradiction, p_entailment, p_neutral
    if e > c and e > n:
        return 1.0
    if n > c and n > e:
        if mode == "paper" or e > c:
            return 0.5
    return 0.0


@dataclass
class CitationAccuracyPlan:
    """The NLI pairs one survey needs and, per level, which pair (or fixed score) each citation uses."""

    survey_id: str
    mode: str
    pairs: list[tuple[str, str]] = field(default_factory=list)
    items: dict[str, list[int]] = field(default_factory=lambda: {lvl: [] for lvl in LEVELS})
    _index: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)

    def add(self, level: str, pair: Optional[tuple[str, str]], fixed: int = UNRESOLVED) -> None:
        if pair is None:
            self.items[level].append(fixed)
            return
        i = self._index.get(pair)
        if i is None:
            i = self._index[pair] = len(self.pairs)
            self.pairs.append(pair)
        self.items[level].append(i)

    def counts(self) -> dict[str, int]:
        """Number of scored citations per level and of distinct NLI pairs."""
        out = {f"n_{lvl}": len(v) for lvl, v in self.items.items()}
        out["n_nli_pairs"] = len(self.pairs)
        out["n_unresolved_citations"] = sum(1 for v in self.items["section"] if v == UNRESOLVED)
        return out


def plan_citation_accuracy(
    gen: "GeneratedSurvey",
    gt: "Survey",
    corpus: "Corpus",
    resolutions: Optional[dict[str, Resolution]] = None,
    mode: str = "reference",
    levels: Sequence[str] = LEVELS,
) -> CitationAccuracyPlan:
    """List the NLI pairs of one generated survey (resolving its references when not given)."""
    if mode not in ("reference", "paper"):
        raise ValueError(f"mode must be 'reference' or 'paper', not {mode!r}")
    if resolutions is None:
        resolutions = resolve_references(gen, corpus, mode)
    plan = CitationAccuracyPlan(str(gen.survey_id), mode)
    doc_ids = sorted({r.doc_id for r in resolutions.values() if r.doc_id is not None})
    docs = {d.doc_id: d for d in corpus.get_many(doc_ids)} if doc_ids else {}
    swapped = mode == "reference"

    def ordered(premise: str, hypothesis: str) -> tuple[str, str]:
        return (hypothesis, premise) if swapped else (premise, hypothesis)

    if "document" in levels:
        gt_cites = set(gt.all_cites)
        for res in resolutions.values():
            if res.doc_id is None:
                plan.add("document", None, UNRESOLVED)
            elif res.doc_id in gt_cites:
                plan.add("document", None, IN_GT)
            else:
                d = docs[res.doc_id]
                plan.add("document", (DOC_PREMISE.format(title=d.title, abstract=d.abstract),
                                      DOC_HYPOTHESIS.format(title=d.title, survey_title=gt.title)))
    if "section" in levels or "sentence" in levels:
        for cit in gen.citations():
            res = resolutions.get(cit.number)
            d = docs.get(res.doc_id) if res is not None and res.doc_id is not None else None
            for level, template, value in (("section", SECTION_HYPOTHESIS, "heading"), ("sentence", SENTENCE_HYPOTHESIS, "sentence")):
                if level not in levels:
                    continue
                if d is None:
                    plan.add(level, None, UNRESOLVED)
                    continue
                premise = PREMISE.format(title=d.title, abstract=d.abstract)
                hypothesis = template.format(title=d.title, **{value: cit.heading if value == "heading" else cit.sentence})
                plan.add(level, ordered(premise, hypothesis))
    return plan


def score_plan(plan: CitationAccuracyPlan, probs: np.ndarray, levels: Sequence[str] = LEVELS) -> dict[str, Optional[float]]:
    """The three figures from the probabilities of ``plan.pairs`` (rows aligned with the pairs,
    columns contradiction, entailment, neutral)."""
    probs = np.asarray(probs, dtype=np.float64).reshape(len(plan.pairs), 3) if plan.pairs else np.zeros((0, 3))
    pair_scores = [citation_score(c, e, n, plan.mode) for c, e, n in probs.tolist()]
    out: dict[str, Optional[float]] = {}
    for level in levels:
        items = plan.items[level]
        if not items:
            out[f"citation_accuracy_{level}"] = 0.0 if plan.mode == "reference" else None
            continue
        total = 0.0
        for it in items:
            if it == IN_GT:
                total += 1.0
            elif it >= 0:
                total += pair_scores[it]
        out[f"citation_accuracy_{level}"] = total / len(items)
    return out


def citation_accuracy(
    gen: "GeneratedSurvey",
    gt: "Survey",
    corpus: "Corpus",
    nli,
    mode: str = "reference",
    resolutions: Optional[dict[str, Resolution]] = None,
) -> dict[str, Optional[float]]:
    """Citation accuracy of one survey with an NLI model (``nli.predict(pairs) -> [n, 3]`` probabilities)."""
    plan = plan_citation_accuracy(gen, gt, corpus, resolutions, mode)
    probs = nli.predict(plan.pairs) if plan.pairs else np.zeros((0, 3))
    return score_plan(plan, probs)
