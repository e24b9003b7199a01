"""ROUGE/BLEU: identical to rouge_score and sacrebleu called pair by pair, and hand-computed values."""

from __future__ import annotations

import random

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from surge_datasets.evaluation.rouge_bleu import _LcsPack, rouge_bleu, rouge_bleu_per_pair, rouge_bleu_survey, rouge_tokens
from surge_datasets.generated import parse_markdown

from eval_fixtures import GT




def test_hand_computed():
    r = rouge_bleu(["the cat sat on the mat"], ["the cat sat", "a dog ran"])
    # unigrams: 3 shared; P = 3/3, R = 3/6 -> F = 2/3; bigrams: 2 shared of 2 and 5 -> F = 2*1*.4/1.4
    assert r["rouge_1"] == pytest.approx(2 / 3)
    assert r["rouge_2"] == pytest.approx(0.8 / 1.4)
    assert r["rouge_l"] == pytest.approx(2 / 3)  # LCS 'the cat sat' = 3
    assert r["bleu"] == sacrebleu.sentence_bleu("the cat sat on the mat", ["the cat sat", "a dog ran"]).score


def test_identical_to_per_pair_on_varied_text():
    rng = random.Random(3)
    words = "graph neural networks learning models running runs attention transformer data the of a is".split()
    gen = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 80))) + "." for _ in range(6)] + ["!!!", "Numbers 123 and 4.5"]
    gt = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 90))) for _ in range(7)] + ["..."]
    assert rouge_bleu(gen, gt) == rouge_bleu_per_pair(gen, gt)


def test_lcs_pack_matches_dynamic_programming():
    rng = random.Random(0)
    for _ in range(30):
        seqs = [[rng.randrange(6) for _ in range(rng.randint(0, 40))] for _ in range(rng.randint(1, 5))]
        q = [rng.randrange(6) for _ in range(rng.randint(0, 40))]
        got = _LcsPack(seqs).lcs(q)
        for s, n in zip(seqs, got):
            table = [[0] * (len(q) + 1) for _ in range(len(s) + 1)]
            for i in range(1, len(s) + 1):
                for j in range(1, len(q) + 1):
                    table[i][j] = table[i - 1][j - 1] + 1 if s[i - 1] == q[j - 1] else max(table[i - 1][j], table[i][j - 1])
            assert n == table[-1][-1]


def test_tokens_match_rouge_score():
    text = "Running runners ran; the GPUs' throughput (x2) improved -- naïve tokens."
    assert rouge_tokens(text) == rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)._tokenizer.tokenize(text)


def test_survey_level_filters_short_sections():
    long_a = "graph neural networks are learning models " * 4
    md = f"# T\n## A\n{long_a}\n## B\nshort text\n"
    gen = parse_markdown(md, mode="reference")
    r = rouge_bleu_survey(GT, gen)
    assert r == rouge_bleu([long_a], ["intro " * 30])  # the GT's 'Short' section (< 100 chars) is left out
    empty = parse_markdown("# T\n## A\nshort\n", mode="reference")
    assert rouge_bleu_survey(GT, empty) == {"rouge_1": 0.0, "rouge_2": 0.0, "rouge_l": 0.0, "bleu": 0.0}
