"""Reading generated surveys: the paper's parser (reference mode), robust parsing (paper mode), every layout."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from surge_datasets.generated import (
    GeneratedReadError, expand_citation_marker, iter_generated_dir, list_generated_dir, parse_markdown,
    read_generated, title_from_entry,
)

BASELINES = Path(__file__).resolve().parents[2] / "shared" / "data" / "official_baseline_outputs"
if not BASELINES.exists():
    BASELINES = Path("/work/shared/data/official_baseline_outputs")
needs_baselines = pytest.mark.skipif(not BASELINES.exists(), reason="official baseline outputs not available")


def test_tree_follows_the_paper_parser():
    md = "intro line\n# T\n## A\ntext a\n#### deep\n### C\nc\n## B\nb\n#NoSpace\n"
    g = parse_markdown(md, mode="reference")
    assert g.root.content == "intro line"
    (t,) = g.root.children
    assert [c.title for c in t.children] == ["A", "B"]
    a = t.children[0]
    # '###' after '####' pops back to A: C is a sibling of 'deep'
    assert [c.title for c in a.children] == ["deep", "C"]
    assert a.content == "text a"
    # '#NoSpace' is no heading (the pattern needs white space), so it is content of B
    assert t.children[1].content == "b\n#NoSpace"
    assert g.title == "T"


def test_headings_reference_vs_paper():
    md = "# Survey\n### Abstract: blah\n## Grassroots Methods\n## " + "x" * 600 + "\n## References\n[1] A\n"
    ref = parse_markdown(md, mode="reference")
    # the paper tests substrings: 'root' in 'Grassroots' drops that heading too
    assert ref.headings() == ["Survey", "x" * 512, "References"]
    pap = parse_markdown(md, mode="paper")
    assert pap.headings() == ["Survey", "Grassroots Methods", "x" * 512]


def test_reference_regex_behaviour():
    md = "\n".join([
        "[1] Attention Is All You Need",
        "[2] A. Author, B. Author. (n.d.). *What BERT is not: Lessons from a new suite*",
        "[7] A. Author, B. Author. (n.d.). *What BERT is not: Lessons from a new suite*",
        "[3] X. (n.d.). *The Role of (Large) Models  from Data*",
        "[02] Replaced Title",
        "  [5] Leading spaces are stripped",
        "[Note: not a reference]",
        "[6] Title with ? mark",
    ])
    g = parse_markdown(md, mode="reference")
    assert list(g.references) == ["1", "2", "7", "3", "5", "6"]
    assert g.references["1"].title == "Attention Is All You Need"
    assert g.references["7"].title == "What BERT is not: Lessons from a new suite"
    # '[02]' is number 2: the later entry replaces the earlier one
    assert g.references["2"].title == "Replaced Title"
    # parentheses are outside the paper's character class: only the tail after ')' is kept
    assert g.references["3"].title == "Models  from Data"
    assert g.references["7"].arxiv_id is None  # reference mode keeps the title only
    # '[6] Title with ? mark': the longest matching tail is ' mark'
    assert g.references["6"].title == "mark"


def test_reference_mode_later_entry_wins_but_keeps_position():
    g = parse_markdown("[1] First\n[2] Second\n[1] Again\n", mode="reference")
    assert list(g.references) == ["1", "2"]
    assert g.references["1"].title == "Again"


def test_citations_reference_mode():
    md = "Before heading [7].\n# S\n## Intro\nAlpha is good [1]. Beta [2] and [3, 4] e.g. [5]\n### Abstract: x [6]\n"
    g = parse_markdown(md, mode="reference")
    cits = [(c.number, c.heading, c.sentence) for c in g.citations()]
    assert cits == [
        ("1", "Intro", "Alpha is good [1]"),
        ("2", "Intro", "Beta [2] and [3, 4] e"),
        ("5", "Intro", "[5]"),  # the '.' of 'e.g.' ends the previous sentence
    ]


def test_citations_paper_mode():
    md = ("Before heading [7].\n# S\n## Intro\nAlpha is good [1]. Beta [2] and [3, 4; 6-8] e.g. here [5]. Next [9].\n"
          "## References\n[1] Alpha\n")
    g = parse_markdown(md, mode="paper")
    cits = [(c.number, c.heading, c.sentence) for c in g.citations()]
    assert cits[0] == ("7", "S", "Before heading.")
    assert ("1", "Intro", "Alpha is good.") in cits
    numbers = [c[0] for c in cits]
    assert numbers == ["7", "1", "2", "3", "4", "6", "7", "8", "5", "9"]
    sentence = dict((c[0], c[2]) for c in cits[2:9])
    assert sentence["5"] == "Beta and e.g. here."
    assert cits[-1] == ("9", "Intro", "Next.")
    assert list(g.references) == ["1"]


def test_expand_citation_marker():
    assert expand_citation_marker("1, 3-5; 7") == ["1", "3", "4", "5", "7"]
    assert expand_citation_marker("2\u20134") == ["2", "3", "4"]
    assert expand_citation_marker("1-500") == ["1", "500"]


@pytest.mark.parametrize("entry,title", [
    ("Richard Brath, Daniel Keim. (n.d.). *The Role of Interactive Visualization*", "The Role of Interactive Visualization"),
    ("Fanzhen Liu, Shan Xue. (n.d.). Deep Learning for Community Detection  Progress.", "Deep Learning for Community Detection  Progress"),
    ('Smith. "Quoted Title Here". In Proc.', "Quoted Title Here"),
    ("[Bracketed Title](https://arxiv.org/abs/2101.00001)", "Bracketed Title"),
    ("Plain Title Only", "Plain Title Only"),
    ("Some Title. arXiv:2101.00001", "Some Title"),
])
def test_title_from_entry(entry, title):
    assert title_from_entry(entry) == title


def test_paper_mode_reference_block_with_ids():
    md = ("# S\n## A\nText [1] and [2].\nReferences:\n[1] A. B. (2020). *Alpha Networks*. arXiv:2101.00001v2\n"
          "[2] C. D. (n.d.). Beta Learning. doi:10.1000/BETA\n")
    g = parse_markdown(md, mode="paper")
    assert g.references["1"].arxiv_id == "2101.00001" and g.references["1"].title == "Alpha Networks"
    assert g.references["2"].doi == "10.1000/beta" and g.references["2"].title == "Beta Learning"
    # the reference block is neither content nor citations
    assert "Alpha Networks" not in g.root.children[0].children[0].content
    assert [c.number for c in g.citations()] == ["1", "2"]


def test_no_heading_file():
    g = parse_markdown("Just text [1].\n\n[1] Alpha Networks\n", mode="reference")
    assert list(g.iter_sections()) == []
    assert g.citations() == []  # the paper reads no citations outside headings
    assert "no Markdown heading" in g.warnings[0]
    p = parse_markdown("Just text [1].\n\nReferences\n[1] Alpha Networks\n", mode="paper", title="T")
    assert [(c.number, c.heading) for c in p.citations()] == [("1", "T")]


def test_line_endings_and_bom(tmp_path):
    d = tmp_path / "3"
    d.mkdir()
    (d / "s.md").write_bytes(b"\xef\xbb\xbf# T\r\n## A\r\ntext [1]\r\n\r\n[1] Alpha\r\n")
    ref = read_generated(d)
    # reference mode keeps the BOM as the paper's open(encoding='utf-8') does: '# T' is no heading
    assert ref.root.children[0].title == "A"
    assert ref.root.children[0].content == "text [1]\n\n[1] Alpha"
    pap = read_generated(d, mode="paper")
    assert pap.root.children[0].title == "T"
    assert ref.survey_id == "3"


def test_json_layout(tmp_path):
    d = tmp_path / "5"
    d.mkdir()
    data = {
        "title": "My Survey",
        "sections": [
            {"title": "Intro", "content": "Alpha [1] beta [2].", "children": [{"title": "Sub", "content": "x [3]"}]},
            {"title": "Flat", "level": 1, "content": "y"},
            {"title": "Flat child", "level": 2, "content": "z [1]"},
        ],
        "references": {"1": {"title": "Alpha Networks", "arxiv_id": "arXiv:2101.00001v1"},
                       "2": "10.1000/beta", "3": "2101.00003"},
    }
    (d / "survey.json").write_text(json.dumps(data))
    g = read_generated(d)
    assert g.layout == "json" and g.title == "My Survey"
    assert g.headings() == ["Intro", "Sub", "Flat", "Flat child"]
    assert g.references["1"].arxiv_id == "2101.00001"
    assert g.references["2"].doi == "10.1000/beta"
    assert g.references["3"].arxiv_id == "2101.00003"
    assert [c.number for c in g.citations()] == ["1", "2", "3", "1"]


def test_json_markdown_body_and_list_references(tmp_path):
    f = tmp_path / "7.json"
    f.write_text(json.dumps({"markdown": "# T\n## A\nx [1]\n", "references": [{"number": 1, "title": "Alpha Networks"}]}))
    g = read_generated(f, survey_id="7")
    assert g.references["1"].title == "Alpha Networks"
    assert list_generated_dir(tmp_path) == [("7", f)]


def test_latex_layout(tmp_path):
    d = tmp_path / "9"
    d.mkdir()
    (d / "main.tex").write_text(r"""\documentclass{article}
\title{A Survey of \emph{Things}}
\begin{document}
\maketitle
\section{Introduction}
Alpha works \cite{alpha}. % a comment [99]
Both \citep[see][p.~3]{alpha, beta} matter.
\subsection{Details}
Gamma \cite{gamma} and a missing key \cite{nokey}.
\bibliography{refs}
\end{document}
""")
    (d / "refs.bib").write_text(r"""@article{alpha, title={{Alpha} Networks}, eprint={2101.00001}, archivePrefix={arXiv}}
@inproceedings{beta, title={Beta Learning}, doi={10.1000/BETA}}
@misc{gamma, title={Gamma Graphs}, journal={arXiv preprint arXiv:2101.00003}}
""")
    g = read_generated(d)
    assert g.layout == "latex" and g.title == "A Survey of Things"
    assert g.headings() == ["Introduction", "Details"]
    assert [c.number for c in g.citations()] == ["1", "1", "2", "3", "4"]
    assert g.references["1"].title == "Alpha Networks" and g.references["1"].arxiv_id == "2101.00001"
    assert g.references["2"].doi == "10.1000/beta"
    assert g.references["3"].arxiv_id == "2101.00003"
    assert g.references["4"].title is None and "nokey" in g.warnings[0]
    assert "99" not in g.root.children[0].content


def test_clear_errors(tmp_path):
    bad = tmp_path / "1"
    bad.mkdir()
    (bad / "s.md").write_bytes(b"# ok\nline two\n\xff\xfe broken\n")
    with pytest.raises(GeneratedReadError, match=r"s\.md, line 3: not UTF-8"):
        read_generated(bad)
    j = tmp_path / "2"
    j.mkdir()
    (j / "s.json").write_text('{"sections": [\n  {"title": "a",}\n]}')
    with pytest.raises(GeneratedReadError, match=r"s\.json, line 2: invalid JSON"):
        read_generated(j)
    e = tmp_path / "3"
    e.mkdir()
    with pytest.raises(GeneratedReadError, match="holds no file"):
        read_generated(e)
    m = tmp_path / "4"
    m.mkdir()
    (m / "a.txt").write_text("x")
    (m / "b.txt").write_text("y")
    with pytest.raises(GeneratedReadError, match="none is .md"):
        read_generated(m)
    with pytest.raises(ValueError, match="mode"):
        read_generated(m, mode="fancy")


# ------------------------------------------------------------------- the real baseline outputs

def _count_reference_lines(path: Path) -> set[int]:
    """An independent count of the reference numbers the paper's reader sees."""
    rx = re.compile(r"^\[(\d+)\]\s*(?:.*?\*?([\w\s:,.-]+)\*?$|([\w\s:,.-]+)$)")
    nums = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        m = rx.match(line)
        if m:
            nums.add(int(m.group(1)))
    return nums


@needs_baselines
@pytest.mark.parametrize("mode", ["reference", "paper"])
def test_every_autosurvey_output_parses(mode):
    surveys = list(iter_generated_dir(BASELINES / "Autosurvey" / "output", mode=mode))
    assert len(surveys) == 41
    for g in surveys:
        assert g.layout == "autosurvey"
        folder = BASELINES / "Autosurvey" / "output" / g.survey_id
        ref_map = json.loads(next(folder.glob("*.json")).read_text(encoding="utf-8"))["reference"]
        if mode == "reference":
            # the paper's regex drops entries whose title ends outside its character class, e.g. '... (and when we can't)'
            assert {int(n) for n in g.references} == _count_reference_lines(g.path)
            assert set(g.references) <= set(ref_map)
        else:
            # one reference per entry of the JSON map
            assert sorted(g.references, key=int) == sorted(ref_map, key=int), g.survey_id
            assert all(g.references[n].arxiv_id == ref_map[n].split("v")[0] for n in ref_map)
            assert all(g.references[n].title for n in ref_map)
        assert len(g.headings()) > 10 and g.citations()


@needs_baselines
@pytest.mark.parametrize("mode", ["reference", "paper"])
def test_every_id_output_parses(mode):
    surveys = list(iter_generated_dir(BASELINES / "ID" / "output", mode=mode))
    assert len(surveys) == 41
    for g in surveys:
        assert g.layout == "markdown"
        if mode == "reference":
            assert {int(n) for n in g.references} == _count_reference_lines(g.path)
        else:
            text = g.path.read_text(encoding="utf-8").split("\n")
            start = max(i for i, l in enumerate(text) if l.strip() == "References:")
            block = {int(m.group(1)) for l in text[start:] if (m := re.match(r"^\[(\d+)\]", l.strip()))}
            assert set(map(int, g.references)) == block
            assert all(r.title for r in g.references.values())
        assert g.citations()
