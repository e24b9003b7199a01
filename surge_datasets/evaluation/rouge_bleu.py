"""ROUGE-1/2/L (F-measure, Porter-stemmed) and sentence BLEU of generated sections against GT sections.

For each generated section text (>= 100 characters) the best ROUGE F against any GT section text
(>= 100 characters) and sacreBLEU's sentence BLEU against all GT sections at once (effective order,
exp smoothing, 13a tokenizer) are taken; the survey's figures are the means over generated sections.
The numbers are those of ``rouge_score.RougeScorer(['rouge1','rouge2','rougeL'], use_stemmer=True)``
with the generated text as target and the GT text as prediction, and of ``sacrebleu.sentence_bleu``,
as the paper's code computes them; a survey without a generated section of 100 characters scores 0.

Speed: each text is tokenised and stemmed once (stems cached per word); n-gram overlaps of one
generated section against all GT sections are computed with numpy; the LCS of one generated section
against all GT sections runs as one bit-parallel pass (Hyyro's algorithm on a Python integer holding
every GT section, separated by guard bits); BLEU caches the GT references once per survey.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from statistics import mean
from typing import Sequence

import numpy as np

MIN_CHARS = 100
KEYS = ("rouge_1", "rouge_2", "rouge_l", "bleu")


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem import porter

    return porter.PorterStemmer()


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _stemmer().stem(word)


def rouge_tokens(text: str) -> list[str]:
    """Tokens exactly as rouge_score's default tokenizer with the Porter stemmer makes them."""
    from rouge_score import tokenize as rt

    text = rt.NON_ALPHANUM_RE.sub(" ", text.lower())
    tokens = [(_stem(x) if len(x) > 3 else x) for x in rt.SPACES_RE.split(text)]
    return [x for x in tokens if rt.VALID_TOKEN_RE.match(x)]


def _fmeasure(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


@dataclass
class _Prepared:
    ids: list[int]
    n1: dict[int, int]
    n2: dict[int, int]


class _Vocab:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.bigrams: dict[tuple[int, int], int] = {}

    def prepare(self, tokens: list[str]) -> _Prepared:
        ids = [self.ids.setdefault(t, len(self.ids)) for t in tokens]
        n1: dict[int, int] = {}
        for i in ids:
            n1[i] = n1.get(i, 0) + 1
        n2: dict[int, int] = {}
        for pair in zip(ids, ids[1:]):
            b = self.bigrams.setdefault(pair, len(self.bigrams))
            n2[b] = n2.get(b, 0) + 1
        return _Prepared(ids, n1, n2)


def _count_matrix(items: Sequence[dict[int, int]], width: int) -> np.ndarray:
    m = np.zeros((len(items), width), dtype=np.int32)
    for r, counts in enumerate(items):
        if counts:
            m[r, list(counts.keys())] = list(counts.values())
    return m


def _ngram_f(gen_counts: np.ndarray, gen_total: int, gt_counts: np.ndarray, gt_totals: np.ndarray) -> list[float]:
    """rouge_score's n-gram F of one generated text (target) against each GT text (prediction)."""
    inter = np.minimum(gen_counts[None, :], gt_counts).sum(axis=1)
    out = []
    for hit, pred_total in zip(inter.tolist(), gt_totals.tolist()):
        precision = hit / max(pred_total, 1)
        recall = hit / max(gen_total, 1)
        out.append(_fmeasure(precision, recall))
    return out


class _LcsPack:
    """Every GT token sequence packed into one integer for a bit-parallel LCS against a query sequence."""

    def __init__(self, seqs: Sequence[list[int]]):
        self.offsets: list[int] = []
        self.lengths = [len(s) for s in seqs]
        masks: dict[int, int] = {}
        ones = 0
        guards = 0
        pos = 0
        for s in seqs:
            self.offsets.append(pos)
            for j, tok in enumerate(s):
                masks[tok] = masks.get(tok, 0) | (1 << (pos + j))
            ones |= ((1 << len(s)) - 1) << pos
            pos += len(s)
            guards |= 1 << pos
            pos += 1
        self.masks = masks
        self.ones = ones
        self.keep = ((1 << pos) - 1) & ~guards

    def lcs(self, query: list[int]) -> list[int]:
        v = self.ones
        keep = self.keep
        masks = self.masks
        for tok in query:
            m = masks.get(tok)
            if m is None:
                continue
            u = v & m
            v = ((v + u) | (v - u)) & keep
        out = []
        for off, n in zip(self.offsets, self.lengths):
            seg = (v >> off) & ((1 << n) - 1)
            out.append(n - seg.bit_count())
        return out


def rouge_bleu(gen_texts: Sequence[str], gt_texts: Sequence[str]) -> dict[str, float]:
    """Mean best ROUGE-1/2/L F and mean sentence BLEU of ``gen_texts`` against ``gt_texts``
    (both already filtered to sections of >= 100 characters)."""
    if not gen_texts:
        return {k: 0.0 for k in KEYS}
    vocab = _Vocab()
    gt = [vocab.prepare(rouge_tokens(t)) for t in gt_texts]
    gen = [vocab.prepare(rouge_tokens(t)) for t in gen_texts]
    r1: list[float] = []
    r2: list[float] = []
    rl: list[float] = []
    if gt:
        gt1 = _count_matrix([p.n1 for p in gt], len(vocab.ids))
        gt2 = _count_matrix([p.n2 for p in gt], len(vocab.bigrams))
        gt1_tot = gt1.sum(axis=1)
        gt2_tot = gt2.sum(axis=1)
        pack = _LcsPack([p.ids for p in gt])
        gen1 = _count_matrix([p.n1 for p in gen], len(vocab.ids))
        gen2 = _count_matrix([p.n2 for p in gen], len(vocab.bigrams))
        for i, g in enumerate(gen):
            f1 = _ngram_f(gen1[i], len(g.ids), gt1, gt1_tot)
            f2 = _ngram_f(gen2[i], max(len(g.ids) - 1, 0), gt2, gt2_tot)
            lcs = pack.lcs(g.ids)
            fl = []
            for n_lcs, n_gt in zip(lcs, pack.lengths):
                if not g.ids or not n_gt:
                    fl.append(0.0)
                else:
                    fl.append(_fmeasure(n_lcs / n_gt, n_lcs / len(g.ids)))
            r1.append(max([0] + f1))
            r2.append(max([0] + f2))
            rl.append(max([0] + fl))
    else:
        r1 = r2 = rl = [0] * len(gen)
    bleu = sentence_bleus(gen_texts, gt_texts)
    return {"rouge_1": float(mean(r1)), "rouge_2": float(mean(r2)), "rouge_l": float(mean(rl)), "bleu": float(mean(bleu))}


def rouge_bleu_per_pair(gen_texts: Sequence[str], gt_texts: Sequence[str]) -> dict[str, float]:
    """The straightforward computation, as the paper's code does it: every (generated, GT) pair is scored
    by ``rouge_score`` from scratch, BLEU by ``sacrebleu.sentence_bleu``. Slow; kept as the oracle that
    :func:`rouge_bleu` must equal (tests) and as the baseline it is timed against (benchmarks)."""
    import sacrebleu
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    r1, r2, rl, bl = [], [], [], []
    for a in gen_texts:
        m1 = m2 = ml = 0.0
        for b in gt_texts:
            s = scorer.score(a, b)
            m1, m2, ml = max(m1, s["rouge1"].fmeasure), max(m2, s["rouge2"].fmeasure), max(ml, s["rougeL"].fmeasure)
        r1.append(m1)
        r2.append(m2)
        rl.append(ml)
        bl.append(sacrebleu.sentence_bleu(a, list(gt_texts)).score)
    return {"rouge_1": mean(r1), "rouge_2": mean(r2), "rouge_l": mean(rl), "bleu": mean(bl)}


def sentence_bleus(hypotheses: Sequence[str], references: Sequence[str]) -> list[float]:
    """``sacrebleu.sentence_bleu(h, references).score`` for each hypothesis, references cached once."""
    from sacrebleu.metrics import BLEU

    if not references:
        return [0.0] * len(hypotheses)
    bleu = BLEU(effective_order=True, references=[[r] for r in references])
    if not (hasattr(bleu, "_extract_corpus_statistics") and hasattr(bleu, "_aggregate_and_compute")):
        import sacrebleu  # a sacrebleu without the cached path: the plain (slower) call

        return [sacrebleu.sentence_bleu(h, list(references)).score for h in hypotheses]
    # the code path of BLEU.sentence_score, with the references tokenised and counted once
    return [bleu._aggregate_and_compute(bleu._extract_corpus_statistics([h], None)).score for h in hypotheses]


def rouge_bleu_survey(gt, gen) -> dict[str, float]:
    """ROUGE/BLEU of a generated survey (:class:`~surge_datasets.generated.GeneratedSurvey`) against its
    GT survey (:class:`~surge_datasets.schemas.Survey`)."""
    gt_texts = [s.content for s in gt.structure if len(s.content) >= MIN_CHARS]
    return rouge_bleu(gen.section_texts(MIN_CHARS), gt_texts)
