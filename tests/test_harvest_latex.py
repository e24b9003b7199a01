"""E-print sources: hostile tarballs refused; LaTeX fixtures cover every construct the parser handles."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from surge_datasets.harvest.latex_source import (BibEntry, CorpusLookup, SourceError, UnsafeArchiveError,
                                                 extract_source, find_citations, parse_latex_tree, parse_source,
                                                 strip_comments)
from surge_datasets.harvest.surveys import build_queries, build_survey
from surge_datasets.schemas import CorpusDoc

FIX = Path(__file__).parent / "fixtures" / "harvest"


def tar_bytes(members: list[tuple[tarfile.TarInfo, bytes | None]], gz: bool = True) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def file_member(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def link_member(name: str, target: str, kind=tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


TEX = b"\\documentclass{article}\\begin{document}\\section{A}x\\end{document}"


@pytest.mark.parametrize("members, message", [
    ([file_member("main.tex", TEX), file_member("../evil.tex", b"x")], "leaves the archive"),
    ([file_member("main.tex", TEX), file_member("a/../../evil.tex", b"x")], "leaves the archive"),
    ([file_member("/tmp/evil.tex", b"x")], "absolute path"),
    ([file_member("main.tex", TEX), link_member("passwd", "/etc/passwd")], "link member"),
    ([file_member("main.tex", TEX), link_member("sub/up", "../../..")], "link member"),
    ([file_member("main.tex", TEX), link_member("hard", "main.tex", tarfile.LNKTYPE)], "link member"),
])
def test_hostile_tarballs_are_refused_before_writing(tmp_path, members, message):
    dest = tmp_path / "x" / "dest"
    with pytest.raises(UnsafeArchiveError, match=message):
        extract_source(tar_bytes(members), dest)
    assert not (tmp_path / "x" / "evil.tex").exists() and not (tmp_path / "evil.tex").exists()
    assert not dest.exists() or not any(dest.iterdir())


def test_special_files_and_caps(tmp_path):
    dev = tarfile.TarInfo("dev")
    dev.type = tarfile.CHRTYPE
    with pytest.raises(UnsafeArchiveError, match="special member"):
        extract_source(tar_bytes([file_member("main.tex", TEX), (dev, None)]), tmp_path / "d1")
    with pytest.raises(UnsafeArchiveError, match="over the 1000 cap"):
        extract_source(tar_bytes([file_member("big.tex", b"x" * 2000)]), tmp_path / "d2", max_member_bytes=1000)
    many = [file_member(f"f{i}.tex", b"x") for i in range(6)]
    with pytest.raises(UnsafeArchiveError, match="members, over the 5 cap"):
        extract_source(tar_bytes(many), tmp_path / "d3", max_files=5)
    total = [file_member(f"f{i}.tex", b"x" * 600) for i in range(3)]
    with pytest.raises(UnsafeArchiveError, match="add up"):
        extract_source(tar_bytes(total, gz=False), tmp_path / "d4", max_total_bytes=1500, max_member_bytes=1000)
    bomb = gzip.compress(b"\0" * 5_000_000)
    with pytest.raises(UnsafeArchiveError, match="decompressed"):
        extract_source(bomb, tmp_path / "d5", max_total_bytes=1_000_000)


def test_gzipped_single_tex_and_pdf(tmp_path):
    folder = extract_source(gzip.compress(TEX), tmp_path / "one")
    assert (folder / "main.tex").read_bytes() == TEX
    parsed = parse_latex_tree(folder)
    assert [s.title for s in parsed.sections] == ["root", "A"]
    with pytest.raises(SourceError, match="PDF"):
        extract_source(b"%PDF-1.5 ...", tmp_path / "pdf")


def test_tarball_of_fixture_parses_like_the_folder(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for p in sorted((FIX / "latex_survey").rglob("*")):
            if p.is_file():
                tf.add(p, arcname=str(p.relative_to(FIX / "latex_survey")))
    src = tmp_path / "2101.99999.tar.gz"
    src.write_bytes(buf.getvalue())
    a = parse_source(src, tmp_path / "work")
    b = parse_latex_tree(FIX / "latex_survey")
    assert [(s.title, s.cite_keys) for s in a.sections] == [(s.title, s.cite_keys) for s in b.sections]


def test_comments_and_cite_variants():
    assert strip_comments("a % c\nb \\% d %e\nf \\\\% g\nh") == "a b \\% d f \\\\h\n"
    text = (r"\cite{a} \citep[see][p.~3]{b, c} \citet*{d} \parencite{e} \textcite[p.~2]{f} \autocite{g} "
            r"\footcite{h} \cites[x]{i}[y]{j} \Citep{k} \citeauthor{l} \citeyearpar{m} \citealp{n} \nocite{o} "
            r"\citestyle{plain} \bibliographystyle{x} \supercite{p} \smartcite{q} \parencites(pre)(post){r}{s}")
    calls = find_citations(text)
    keys = [k for c in calls for k in c.keys]
    assert keys == list("abcdefghijklmnopqrs")
    assert [c.command for c in calls][:3] == ["cite", "citep", "citet*"]


def test_multi_file_survey_fixture():
    p = parse_latex_tree(FIX / "latex_survey")
    assert p.main_file == "main.tex" and p.title == "A Survey of Software Testing" and p.authors == ["Ann One", "Bob Two"]
    assert p.abstract == "We review testing of deep models, 90% of them in Erdős style."
    got = [(s.id, s.parent_id, s.level, s.title, s.cite_keys) for s in p.sections]
    assert got == [
        ("0", None, 0, "root", ["a"]),
        ("1", "0", 1, "Introduction", ["a", "b", "c", "d", "figonly"]),
        ("2", "0", 1, "Motivation", ["e"]),                                # starred
        ("3", "0", 1, "Methods for Testing Learned Systems", ["f", "g"]),  # \section[short]{long}: the long title
        ("4", "3", 2, "Unit Tests", ["h", "i", "j", "a"]),
        ("5", "4", 3, "Mocks", ["a", "missingkey", "b"]),
        ("6", "5", 4, "Details", ["c", "d"]),                              # \nocite is no in-text citation
        ("7", "0", 1, "Conclusion", ["a", "b"]),
    ]
    assert "commented" not in p.cited_keys and "never" not in p.cited_keys
    assert p.bibliography_source == "bib" and len(p.bibliography) == 12  # two .bib files
    assert p.missing_keys == ["figonly", "missingkey"] and p.uncited_entries == ["never"]
    bib = p.bibliography
    assert (bib["a"].arxiv_id, bib["c"].arxiv_id, bib["e"].arxiv_id, bib["f"].arxiv_id) == (
        "1706.03762", "2101.00003", "2101.00005", "2101.00006")
    assert bib["b"].doi == "10.18653/v1/n19-1423" and bib["d"].arxiv_id is None
    assert p.sections[1].content == "Testing matters. See also and."
    assert "Not text" not in p.sections[1].content  # figures dropped from the text


def test_bbl_only_and_chapters():
    p = parse_latex_tree(FIX / "latex_bbl_only")
    assert p.bibliography_source == "bbl"
    assert [(s.level, s.title, s.parent_id) for s in p.sections] == [
        (0, "root", None), (1, "Background", "0"), (2, "Convolutions", "1"), (2, "Attention", "1")]
    assert p.bibliography["kipf2017"].arxiv_id == "1609.02907"
    assert p.bibliography["velickovic"].title == "Graph attention networks"
    assert p.missing_keys == ["missing"] and p.uncited_entries == ["unused"]


def test_biblatex_bbl():
    p = parse_latex_tree(FIX / "latex_biblatex")
    assert p.bibliography["x"].arxiv_id == "2005.11401" and p.bibliography["x"].title == "Retrieval Augmented Generation"
    assert p.bibliography["y"].doi == "10.18653/v1/2020.emnlp-main.550"
    assert p.sections[1].cite_keys == ["x", "y"]


def _corpus():
    docs = [
        CorpusDoc(doc_id=10, arxiv_id="1706.03762", title="Attention is all you need"),
        CorpusDoc(doc_id=11, title="BERT: Pre-training of Deep Bidirectional Transformers", doi="10.18653/v1/n19-1423"),
        CorpusDoc(doc_id=12, arxiv_id="2101.00003", title="Some paper"),
        CorpusDoc(doc_id=13, title="Deep Learning for Software Testing: a study"),   # title key only
        CorpusDoc(doc_id=14, arxiv_id="2101.00005", title="Fuzzing"),
        CorpusDoc(doc_id=15, title="Coverage criteria!"),
    ]
    return CorpusLookup(docs)


def test_mapping_to_corpus_and_queries():
    p = parse_latex_tree(FIX / "latex_survey")
    lookup = _corpus()
    assert lookup.resolve(BibEntry("x", title="Unknown", arxiv_id="1706.03762")) == (10, "arxiv")
    survey, key_doc, report = build_survey(p, survey_id=3, title="A Survey of Software Testing", lookup=lookup,
                                           category="cs.SE", year=2021)
    assert key_doc["a"] == 10 and key_doc["b"] == 11 and key_doc["c"] == 12 and key_doc["d"] == 13 and key_doc["h"] == 15
    assert report["resolved_by"] == {"arxiv": 3, "doi": 1, "title": 2, "unresolved": 6}
    intro = survey.structure[1]
    assert intro.cites == [10, 11, 12, 13]
    assert survey.all_cites == [10, 11, 12, 13, 14, 15]
    assert survey.root().title == "root"
    queries = build_queries(survey, p, key_doc, min_rate=0.5)
    by_section = {q.original_id: q for q in queries}
    q = by_section["3:1"]
    assert q.cites == [10, 11, 12, 13] and q.origin_cites_number == 5 and q.cite_extract_rate == 0.8
    assert [(t.level, t.title) for t in q.prefix_titles] == [("title", "A Survey of Software Testing"), ("section", "Introduction")]
    assert "3:3" not in by_section  # f, g unresolved: rate 0
    mocks = [q for q in queries if q.original_id == "3:5"][0]
    assert [t.level for t in mocks.prefix_titles] == ["title", "section", "subsection", "subsubsection"]


def test_cli_parse_source(tmp_path):
    from surge_datasets.cli import main

    out = tmp_path / "survey.json"
    res = CliRunner().invoke(main, ["harvest", "parse-source", str(FIX / "latex_survey"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["title"] == "A Survey of Software Testing" and len(data["structure"]) == 8
    report = json.loads((tmp_path / "survey.json.report.json").read_text())
    assert report["missing_keys"] == 2 and report["uncited_entries"] == 1
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(tar_bytes([file_member("../evil.tex", b"x")]))
    res = CliRunner().invoke(main, ["harvest", "parse-source", str(bad), "--out", str(tmp_path / "b.json")])
    assert res.exit_code != 0 and "leaves the archive" in res.output
