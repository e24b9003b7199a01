"""Structure metrics: Soft Heading Recall (SHR) and Structure Quality (SQS, an LLM judge).

Soft cardinality of a list of headings A, with sim = cosine of heading embeddings::

    S(A) = sum_i 1 / sum_j sim(A_i, A_j)
    S(P and G) = S(P) + S(G) - S(P or G)          SHR = S(P and G) / S(G)

with G the ground-truth headings and P the generated ones.

``reference`` mode (default) reproduces the paper's code:

* G = the title of every GT section whose content has >= 100 characters - the "root" section
  included when its content is that long; duplicates kept;
* P = the generated headings as :meth:`GeneratedSurvey.headings` gives them (each cut to 512
  characters; headings containing "root" or "Abstract:" left out); duplicates kept;
* the union removes identical strings; raw cosines are used, and a row whose similarities sum to 0
  adds 0 (negative cosines are kept);
* no generated heading -> 0; (no GT heading -> 0).

``paper`` mode follows the formula as written, for sets: G and P are de-duplicated, the GT root
section is never a heading, and cosines are clipped at 0 (soft cardinality is defined for
similarities in [0, 1]), so every row sum is at least 1.

SQS: the GT tree and the generated tree, both rendered as Markdown headings, go to the judge with
the ``structure_quality`` prompt; it answers one integer 0-5. A generated outline shorter than 5
characters scores 0. ``reference`` renders both trees as the paper's code does (GT top level at
``#`` with a blank line after each subtree; generated top level at ``##`` because the synthetic root
takes level 1) and accepts only a bare digit as answer; ``paper`` renders both trees from ``#``
without blank lines and reads answers such as "Score: 4" or "4/5" too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..models.judge import SYSTEM_PROMPT, parse_score_lenient, parse_score_strict
from ..schemas import Survey
from .judge_prompts import render_prompt

__all__ = [
    "MODES", "MIN_SECTION_CHARS", "MIN_OUTLINE_CHARS", "SHRParts", "gt_headings", "generated_headings",
    "soft_cardinality", "soft_heading_recall", "soft_heading_recall_parts", "gt_outline", "generated_outline",
    "structure_quality_prompt", "structure_quality", "structure_quality_many",
]

MODES = ("reference", "paper")
#: GT sections with less content than this are not headings for SHR
MIN_SECTION_CHARS = 100
#: a generated outline shorter than this scores SQS 0 without asking the judge
MIN_OUTLINE_CHARS = 5
_MAX_DEPTH = 64


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")


def _gt_root(survey: Survey):
    """The paper takes the first section titled 'root'."""
    return next((s for s in survey.structure if s.title == "root"), None)


# ----------------------------------------------------------------------------------------- SHR

def gt_headings(gt: Survey, mode: str = "reference") -> list[str]:
    """GT headings used by SHR: sections with >= 100 characters of content, in structure order."""
    _check_mode(mode)
    root = _gt_root(gt)
    out = [s.title for s in gt.structure
           if len(s.content or "") >= MIN_SECTION_CHARS and not (mode == "paper" and s is root)]
    return list(dict.fromkeys(out)) if mode == "paper" else out


def generated_headings(gen, mode: str = "reference") -> list[str]:
    """Generated headings used by SHR (the paper's ``get_title_list``), de-duplicated in paper mode."""
    _check_mode(mode)
    out = list(gen.headings())
    return list(dict.fromkeys(out)) if mode == "paper" else out


def _cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    v = v / norms
    return v @ v.T


def soft_cardinality(sim: np.ndarray) -> float:
    """S(A) = sum_i 1 / sum_j sim_ij; a row summing to exactly 0 adds 0 (as the paper's code)."""
    if sim.size == 0:
        return 0.0
    rows = sim.sum(axis=1)
    safe = np.where(rows == 0, 1.0, rows)
    return float(np.where(rows == 0, 0.0, 1.0 / safe).sum())


@dataclass(frozen=True)
class SHRParts:
    """The pieces of one SHR value (kept in results for inspection)."""

    shr: float
    s_gt: float
    s_gen: float
    s_union: float
    n_gt: int
    n_gen: int

    @property
    def s_intersection(self) -> float:
        return self.s_gt + self.s_gen - self.s_union


def soft_heading_recall_parts(gt: Survey, gen, embedder, mode: str = "reference") -> SHRParts:
    """SHR with its soft cardinalities. ``embedder`` needs ``encode(list[str]) -> array [n, dim]``."""
    g, p = gt_headings(gt, mode), generated_headings(gen, mode)
    if not p or not g:
        return SHRParts(0.0, 0.0, 0.0, 0.0, len(g), len(p))
    union = list(dict.fromkeys(g + p))
    distinct = list(dict.fromkeys(union))
    vectors = np.asarray(embedder.encode(distinct))
    row = {t: i for i, t in enumerate(distinct)}
    sim_all = _cosine_matrix(vectors)
    if mode == "paper":
        sim_all = np.clip(sim_all, 0.0, None)

    def card(items: Sequence[str]) -> float:
        idx = [row[t] for t in items]
        return soft_cardinality(sim_all[np.ix_(idx, idx)])

    s_g, s_p, s_u = card(g), card(p), card(union)
    shr = (s_g + s_p - s_u) / s_g if s_g != 0 else 0.0
    return SHRParts(float(shr), s_g, s_p, s_u, len(g), len(p))


def soft_heading_recall(gt: Survey, gen, embedder, mode: str = "reference") -> float:
    """Soft Heading Recall of a generated survey against its GT survey (see the module doc)."""
    return soft_heading_recall_parts(gt, gen, embedder, mode).shr


# ----------------------------------------------------------------------------------------- SQS

def gt_outline(gt: Survey, mode: str = "reference") -> str:
    """The GT heading tree as Markdown headings, from the 'root' section down (root itself not shown)."""
    _check_mode(mode)
    root = _gt_root(gt)
    if root is None:
        return ""
    children: dict[Optional[str], list] = {}
    for s in gt.structure:
        children.setdefault(s.parent_id, []).append(s)
    blank_after_subtree = mode == "reference"

    def render(parent_id: str, level: int, seen: frozenset) -> str:
        if level > _MAX_DEPTH:
            return ""
        out = []
        for s in children.get(parent_id, []):
            if s.id in seen:  # a cycle in malformed data: stop rather than recurse forever
                continue
            out.append("#" * level + " " + s.title + "\n")
            out.append(render(s.id, level + 1, seen | {s.id}))
            if blank_after_subtree:
                out.append("\n")
        return "".join(out)

    return render(root.id, 1, frozenset({root.id}))


def _scored_heading(gen, node) -> bool:
    check = getattr(gen, "_is_scored_heading", None)
    if check is not None:
        return bool(check(node))
    return node is not gen.root and "root" not in node.title and "Abstract:" not in node.title


def generated_outline(gen, mode: str = "reference") -> str:
    """The generated heading tree as Markdown headings (full heading text, no cut)."""
    _check_mode(mode)
    out: list[str] = []
    # reference: the paper starts its synthetic root at level 1, so top-level headings get '##'
    start = 1 if mode == "reference" else 0

    def walk(node, level: int) -> None:
        if _scored_heading(gen, node) and level > 0:
            out.append("#" * level + " " + node.title + "\n")
        for child in node.children:
            walk(child, level + 1)

    walk(gen.root, start)
    return "".join(out)


def structure_quality_prompt(gt: Survey, gen, mode: str = "reference", prompt_dir=None) -> Optional[str]:
    """The SQS judge prompt, or None when the generated outline is too short to judge (SQS = 0)."""
    generated = generated_outline(gen, mode)
    if len(generated) < MIN_OUTLINE_CHARS:
        return None
    return render_prompt("structure_quality", prompt_dir, reference_outline=gt_outline(gt, mode),
                         generated_outline=generated)


def _parser(mode: str):
    return parse_score_strict if mode == "reference" else parse_score_lenient


def structure_quality(gt: Survey, gen, judge, mode: str = "reference", prompt_dir=None) -> Optional[float]:
    """SQS 0-5 from the judge; 0.0 for an outline under 5 characters; None when the judge gave no
    valid answer in its tries (the failure is recorded in ``judge.failures``)."""
    prompt = structure_quality_prompt(gt, gen, mode, prompt_dir)
    if prompt is None:
        return 0.0
    score = judge.score(prompt, system=SYSTEM_PROMPT, parse=_parser(mode))
    return None if score is None else float(score)


def structure_quality_many(pairs: Sequence[tuple[Survey, object]], judge, mode: str = "reference",
                           prompt_dir=None) -> list[Optional[float]]:
    """SQS for many (GT, generated) pairs; the judge may run several prompts at once."""
    prompts = [structure_quality_prompt(gt, gen, mode, prompt_dir) for gt, gen in pairs]
    asked = [p for p in prompts if p is not None]
    scores = iter(judge.score_many(asked, system=SYSTEM_PROMPT, parse=_parser(mode)) if asked else [])
    out: list[Optional[float]] = []
    for p in prompts:
        if p is None:
            out.append(0.0)
        else:
            s = next(scores)
            out.append(None if s is None else float(s))
    return out
