"""Soft Heading Recall, Structure Quality and Content Quality on small hand-computed cases, both modes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from surge_datasets.evaluation import content, structure
from surge_datasets.evaluation.judge_prompts import render_prompt
from surge_datasets.generated import parse_markdown
from surge_datasets.models.judge import Judge
from surge_datasets.schemas import Section, Survey

LONG = "x" * 120  # content long enough (>= 100 chars) for a GT heading to count


class FakeEmbedder:
    """Fixed vectors per heading; counts what it is asked to encode."""

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = vectors
        self.asked: list[str] = []

    def encode(self, texts):
        self.asked.extend(texts)
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


class ScriptedJudge(Judge):
    """The real retry/parse policy around a function prompt -> answer text."""

    def __init__(self, answer, **kwargs):
        super().__init__("scripted", cache=False, backoff=0.0, **kwargs)
        self.answer = answer
        self.prompts: list[str] = []

    def _complete(self, prompt, system, attempt):
        self.prompts.append(prompt)
        return self.answer(prompt, attempt)


def gt_survey(sections: list[tuple[str, str | None, str, str]]) -> Survey:
    """sections: (id, parent_id, title, content)."""
    return Survey(survey_id=1, title="GT", structure=[Section(id=i, parent_id=p, title=t, content=c)
                                                      for i, p, t, c in sections])


# ------------------------------------------------------------------------------------------ SHR

A, B, C = [1.0, 0.0], [0.6, 0.8], [0.0, 1.0]   # cos(A,B)=0.6  cos(A,C)=0  cos(B,C)=0.8


def dup_case():
    gt = gt_survey([("r", None, "root", ""), ("1", "r", "A", LONG), ("2", "r", "B", LONG),
                    ("3", "r", "A", LONG), ("4", "r", "Short", "too short")])
    return gt, {"A": A, "B": B, "C": C}


@pytest.mark.parametrize("mode", ["reference", "paper"])
def test_shr_duplicate_headings_hand_computed(mode):
    gt, vecs = dup_case()
    gen = parse_markdown("# A\nsome text\n## C\nmore text\n", mode=mode)
    emb = FakeEmbedder(vecs)
    parts = structure.soft_heading_recall_parts(gt, gen, emb, mode)
    # P = [A, C] (orthogonal): rows 1, 1 -> S(P) = 2
    # U = {A, B, C}: rows A 1+.6+0=1.6, B .6+1+.8=2.4, C 0+.8+1=1.8
    s_p = 2.0
    s_u = 1 / 1.6 + 1 / 2.4 + 1 / 1.8
    if mode == "reference":
        # G = [A, B, A] (duplicate kept): rows A 1+.6+1=2.6 (twice), B .6+1+.6=2.2
        s_g = 2 / 2.6 + 1 / 2.2
    else:
        # G = {A, B}: rows 1.6, 1.6
        s_g = 2 / 1.6
    assert parts.s_gt == pytest.approx(s_g)
    assert parts.s_gen == pytest.approx(s_p)
    assert parts.s_union == pytest.approx(s_u)
    assert parts.shr == pytest.approx((s_g + s_p - s_u) / s_g)
    assert structure.soft_heading_recall(gt, gen, emb, mode) == pytest.approx(
        1.3291269841 if mode == "reference" else 1.3222222222)
    # each distinct heading embedded once per call
    assert sorted(set(emb.asked)) == sorted(emb.asked[-3:]) and len(emb.asked) == 2 * 3


@pytest.mark.parametrize("mode, expected", [
    # G = [X, Y], cos = -0.6. reference: rows 0.4 -> S(G) = 5, S(P) = 1, S(U) = 5 -> (5+1-5)/5
    ("reference", 0.2),
    # paper: cosine clipped at 0 -> rows 1 -> S(G) = 2, S(P) = 1, S(U) = 2 -> (2+1-2)/2
    ("paper", 0.5),
])
def test_shr_negative_cosine(mode, expected):
    gt = gt_survey([("r", None, "root", ""), ("1", "r", "X", LONG), ("2", "r", "Y", LONG)])
    gen = parse_markdown("# X\ntext\n", mode=mode)
    emb = FakeEmbedder({"X": [1.0, 0.0], "Y": [-0.6, 0.8]})
    assert structure.soft_heading_recall(gt, gen, emb, mode) == pytest.approx(expected)


def test_shr_zero_row_sum_adds_nothing():
    # cos(X, Y) = -1: each row of G sums to 0 and adds 0 (the paper's guard) -> S(G) = 0 -> SHR 0
    gt = gt_survey([("r", None, "root", ""), ("1", "r", "X", LONG), ("2", "r", "Y", LONG)])
    gen = parse_markdown("# X\ntext\n")
    emb = FakeEmbedder({"X": [1.0, 0.0], "Y": [-1.0, 0.0]})
    parts = structure.soft_heading_recall_parts(gt, gen, emb, "reference")
    assert parts.s_gt == 0.0 and parts.shr == 0.0


@pytest.mark.parametrize("mode", ["reference", "paper"])
def test_shr_empty_outline_is_zero(mode):
    gt, vecs = dup_case()
    gen = parse_markdown("No heading at all, just a paragraph of text.\n", mode=mode)
    emb = FakeEmbedder(vecs)
    assert structure.soft_heading_recall(gt, gen, emb, mode) == 0.0
    assert emb.asked == []


def test_shr_identical_outline_is_one():
    gt, vecs = dup_case()
    gen = parse_markdown("# A\nx\n# B\ny\n", mode="paper")
    assert structure.soft_heading_recall(gt, gen, FakeEmbedder(vecs), "paper") == pytest.approx(1.0)


def test_gt_headings_root_and_substring_rules():
    gt = gt_survey([("r", None, "root", LONG), ("1", "r", "Uprooting bias", LONG), ("2", "r", "Tiny", "")])
    assert structure.gt_headings(gt, "reference") == ["root", "Uprooting bias"]   # GT root counts when long
    assert structure.gt_headings(gt, "paper") == ["Uprooting bias"]
    md = "# Uprooting bias\ntext\n## Abstract: none\n"
    assert structure.generated_headings(parse_markdown(md, mode="reference"), "reference") == []
    assert structure.generated_headings(parse_markdown(md, mode="paper"), "paper") == ["Uprooting bias"]


def test_shr_cuts_generated_headings_to_512_chars():
    long_heading = "h" * 600
    gt = gt_survey([("r", None, "root", ""), ("1", "r", "h" * 512, LONG)])
    gen = parse_markdown(f"# {long_heading}\ntext\n")
    emb = FakeEmbedder({"h" * 512: [1.0, 0.0]})
    assert structure.soft_heading_recall(gt, gen, emb) == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------ SQS

def sqs_gt():
    return gt_survey([("a", None, "root", ""), ("b", "a", "Introduction", LONG), ("c", "b", "Background", "s"),
                      ("d", "a", "Conclusion", LONG)])


GEN_MD = "# Title\ntext\n## Intro\ntext\n## Abstract: foo\n### Sub\ntext\n"


def test_outlines_reference_rendering_is_the_papers():
    gt = sqs_gt()
    # a blank line after each GT subtree; generated top level at '##' (the root takes level 1)
    assert structure.gt_outline(gt, "reference") == "# Introduction\n## Background\n\n\n# Conclusion\n\n"
    gen = parse_markdown(GEN_MD, mode="reference")
    assert structure.generated_outline(gen, "reference") == "## Title\n### Intro\n#### Sub\n"


def test_outlines_paper_rendering():
    gt = sqs_gt()
    assert structure.gt_outline(gt, "paper") == "# Introduction\n## Background\n# Conclusion\n"
    gen = parse_markdown(GEN_MD, mode="paper")
    assert structure.generated_outline(gen, "paper") == "# Title\n## Intro\n### Sub\n"


def test_sqs_scores_and_prompt_content():
    judge = ScriptedJudge(lambda prompt, attempt: "4")
    gen = parse_markdown(GEN_MD)
    assert structure.structure_quality(sqs_gt(), gen, judge, "reference") == 4.0
    (prompt,) = judge.prompts
    assert "# Introduction\n## Background" in prompt and "### Intro" in prompt
    assert prompt == render_prompt("structure_quality", reference_outline=structure.gt_outline(sqs_gt()),
                                   generated_outline=structure.generated_outline(gen))


@pytest.mark.parametrize("md, mode, asked", [
    ("", "reference", False),              # no heading: outline "" -> 0 without a call
    ("# A\ntext\n", "reference", True),    # "## A\n" is 5 characters: judged
    ("# A\ntext\n", "paper", False),       # "# A\n" is 4 characters: 0
])
def test_sqs_short_outline_scores_zero(md, mode, asked):
    judge = ScriptedJudge(lambda prompt, attempt: "3")
    score = structure.structure_quality(sqs_gt(), parse_markdown(md, mode=mode), judge, mode)
    assert (len(judge.prompts) == 1) is asked
    assert score == (3.0 if asked else 0.0)


def test_sqs_modes_parse_answers_differently():
    gen = parse_markdown(GEN_MD)
    # reference: only a bare digit; "Score: 4" is retried 5 times, then the failure is recorded
    strict = ScriptedJudge(lambda prompt, attempt: "Score: 4")
    assert structure.structure_quality(sqs_gt(), gen, strict, "reference") is None
    assert len(strict.prompts) == 5 and strict.stats.failures == 1 and len(strict.failures) == 1
    lenient = ScriptedJudge(lambda prompt, attempt: "Score: 4")
    assert structure.structure_quality(sqs_gt(), parse_markdown(GEN_MD, mode="paper"), lenient, "paper") == 4.0


def test_sqs_many_keeps_order_and_zeroes():
    judge = ScriptedJudge(lambda prompt, attempt: "2")
    pairs = [(sqs_gt(), parse_markdown(GEN_MD)), (sqs_gt(), parse_markdown("")), (sqs_gt(), parse_markdown(GEN_MD))]
    assert structure.structure_quality_many(pairs, judge) == [2.0, 0.0, 2.0]


# ------------------------------------------------------------------------------------------ CQS

def test_sampling_matches_numpy_legacy_choice():
    texts = [f"passage {i}" for i in range(37)]
    np.random.seed(42)
    expected = list(np.random.choice(texts, 20, replace=False))
    assert content.sample_passages(texts) == expected
    few = texts[:7]
    np.random.seed(42)
    assert content.sample_passages(few) == list(np.random.choice(few, 7, replace=False))
    assert content.sample_passages([]) == []


@pytest.mark.parametrize("text, reference, paper", [
    ("a" * 999 + ".", "a" * 999 + ".", "a" * 999 + "."),                      # not longer than 1000: kept
    ("a" * 999 + ".b", "a" * 999 + ".", "a" * 999 + "."),                     # 1000th char is '.': kept
    ("ab. " + "c" * 1200, "ab", "ab."),                                        # cut before the last '.'
    ("c" * 1200, "c" * 999, "c" * 1000),                                       # no '.': paper code drops 1 char
])
def test_cut_passage(text, reference, paper):
    assert content.cut_passage(text, "reference") == reference
    assert content.cut_passage(text, "paper") == paper


def _sections_md(n: int) -> str:
    return "".join(f"# Section {i}\nPassage number {i:02d} " + "w" * 120 + ".\n" for i in range(n))


def _score_of(prompt: str) -> int:
    return int(re.search(r"Passage number (\d+)", prompt).group(1)) % 6


def test_cqs_reference_mean_of_sampled_passages():
    gen = parse_markdown(_sections_md(25) + "# Tiny\nshort\n")
    judge = ScriptedJudge(lambda prompt, attempt: str(_score_of(prompt)))
    texts = gen.section_texts(100)
    assert len(texts) == 25
    np.random.seed(42)
    chosen = np.random.choice(texts, 20, replace=False)
    expected = sum(int(re.search(r"Passage number (\d+)", t).group(1)) % 6 for t in chosen) / 20
    assert content.content_quality(gen, judge, "reference") == pytest.approx(expected)
    assert len(judge.prompts) == 20


def test_cqs_failure_handling_by_mode():
    md = _sections_md(3)
    # passage 01 never gets a valid answer
    answer = lambda prompt, attempt: "bad" if "number 01" in prompt else str(_score_of(prompt))  # noqa: E731
    ref = content.content_quality_result(parse_markdown(md), ScriptedJudge(answer), "reference")
    assert ref.value is None and ref.failed == 1 and len(ref.scores) == 3
    paper = content.content_quality_result(parse_markdown(md, mode="paper"), ScriptedJudge(answer), "paper")
    assert paper.value == pytest.approx((0 + 2) / 2) and paper.failed == 1


def test_cqs_no_long_passage_is_zero_without_calls():
    judge = ScriptedJudge(lambda prompt, attempt: "5")
    assert content.content_quality(parse_markdown("# A\nshort\n"), judge) == 0.0
    assert judge.prompts == []


def test_cqs_long_passage_is_cut_in_prompt():
    body = ("Sentence one is here. " * 60).strip()   # 1319 chars
    gen = parse_markdown(f"# A\n{body}\n")
    judge = ScriptedJudge(lambda prompt, attempt: "3")
    assert content.content_quality(gen, judge) == 3.0
    cut = content.cut_passage(body, "reference")
    assert len(cut) < 1000 and not cut.endswith(".") and cut in judge.prompts[0]


def test_prompt_dir_override(tmp_path):
    (tmp_path / "content_quality.md.j2").write_text("Rate: {{ text }}", encoding="utf-8")
    gen = parse_markdown("# A\n" + "z" * 150 + "\n")
    judge = ScriptedJudge(lambda prompt, attempt: "1")
    assert content.content_quality(gen, judge, prompt_dir=tmp_path) == 1.0
    assert judge.prompts == ["Rate: " + "z" * 150]
    with pytest.raises(ValueError):
        render_prompt("content_quality", tmp_path)
