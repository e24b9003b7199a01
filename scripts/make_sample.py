"""Generate the embedded SAMPLE shipped in ``surge_datasets/sample/`` (run from the repo root).

    python scripts/make_sample.py --shared ../shared/data

What it holds, and where each part comes from (all of it is labelled as a sample):

* ``generated/Autosurvey/output/<id>/``: real generated surveys of the paper's AutoSurvey baseline (MIT,
  copied unchanged, with the license), in the official layout ``surge evaluate`` reads.
* ``corpus.json`` (official format): one doc per reference of those surveys and of the ID baseline's
  surveys for the same topics (real titles; arXiv ids from AutoSurvey's reference maps), the 205 GT
  survey titles, and real arXiv metadata from the recorded API responses. Abstracts of docs that have
  no recorded metadata are SYNTHETIC (built from the title) and say so.
* ``surveys.json``: SYNTHETIC ground truth for the sample topics: the section tree, text and citations of
  the ID baseline's output for the same topic (not the real expert survey, which is not public here).
* ``queries.json``: one query per cited section of those surveys, in the release's format.

The output is deterministic: re-running gives identical files.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
from pathlib import Path

SAMPLE_IDS = (0, 1, 2)
_HEADING = re.compile(r"^(#{1,4})\s+(.*\S)\s*$")
_REF_ID = re.compile(r"^\[(\d+)\]\s+(.*?)\.\s+\(n\.d\.\)\.\s+\*(.*)\*\s*$")
_REF_AUTO = re.compile(r"^\[(\d+)\]\s+(.*\S)\s*$")
_CITE = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
SYNTHETIC = "[Synthetic sample abstract; the real abstract is not part of the sample.] "


def key(title: str) -> str:
    return re.sub(r"[^a-zA-Z]", "", title).lower()


def read_tsv(path: Path) -> dict[str, dict]:
    with open(path, encoding="utf-8") as fh:
        return {key(r["title"]): r for r in csv.DictReader(fh, delimiter="\t")}


def parse_id_output(path: Path):
    """Sections (level, title, text) and references {n: (authors, title)} of an ID baseline file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    refs, sections, in_refs = {}, [], False
    for line in lines:
        if line.strip() == "References:":
            in_refs = True
            continue
        if in_refs:
            m = _REF_ID.match(line.strip())
            if m:
                refs[m.group(1)] = ([a.strip() for a in m.group(2).split(",") if a.strip()], m.group(3).strip())
            continue
        m = _HEADING.match(line)
        if m:
            sections.append([len(m.group(1)), m.group(2), []])
        elif sections:
            sections[-1][2].append(line)
    return [(lvl, title, "\n".join(text).strip()) for lvl, title, text in sections], refs


def parse_autosurvey(folder: Path):
    md = next(folder.glob("*.md"))
    meta = json.loads(next(folder.glob("*.json")).read_text(encoding="utf-8"))
    text = md.read_text(encoding="utf-8")
    refs = {}
    tail = text.split("## References", 1)[1] if "## References" in text else ""
    for line in tail.splitlines():
        m = _REF_AUTO.match(line.strip())
        if m:
            refs[m.group(1)] = m.group(2)
    title = _HEADING.match(text.splitlines()[0]).group(2)
    return title, refs, meta.get("reference", {})


def recorded_api_docs(folder: Path) -> list[dict]:
    import feedparser

    out, seen = [], set()
    for f in sorted(folder.glob("*.json")):
        rec = json.loads(f.read_text(encoding="utf-8"))
        if rec.get("status_code") != 200:
            continue
        for e in feedparser.parse(rec["body"]).entries:
            m = re.search(r"abs/(.+?)(v\d+)?$", e.get("id", ""))
            if not m or m.group(1) in seen or not e.get("title"):
                continue
            seen.add(m.group(1))
            out.append({
                "Title": e.title, "Authors": [a.name for a in e.get("authors", [])], "Year": e.published[:4],
                "Date": e.published, "Abstract": e.summary, "Category": e.get("arxiv_primary_category", {}).get("term", ""),
            })
    return out


def arxiv_year(arxiv_id: str) -> str:
    m = re.match(r"(\d{2})(\d{2})\.", arxiv_id)
    return f"20{m.group(1)}" if m else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=Path("../shared/data"), help="the shared real data folder")
    ap.add_argument("--out", type=Path, default=Path("surge_datasets/sample"))
    args = ap.parse_args()
    base = args.shared / "official_baseline_outputs"
    gt = read_tsv(args.shared / "gt_survey_titles.tsv")

    docs: dict[str, dict] = {}  # title key -> official corpus record

    def add_doc(title: str, authors=None, arxiv_id: str = "", category: str = "", real: dict | None = None) -> None:
        k = key(title)
        if not k or k in docs:
            return
        year = arxiv_year(arxiv_id) if arxiv_id else ""
        docs[k] = real or {
            "Title": title, "Authors": authors or [], "Year": year, "Date": f"{year}-01-01T00:00:00Z" if year else "",
            "Abstract": SYNTHETIC + f"This work is titled '{title}'.", "Category": category,
        }

    for rec in recorded_api_docs(args.shared / "arxiv_api_recorded"):
        add_doc(rec["Title"], real=rec)

    gen_out = args.out / "generated" / "Autosurvey" / "output"
    if args.out.exists():
        shutil.rmtree(args.out / "generated", ignore_errors=True)
    surveys, queries = [], []
    for sid in SAMPLE_IDS:
        auto_dir = base / "Autosurvey" / "output" / str(sid)
        title, auto_refs, auto_map = parse_autosurvey(auto_dir)
        row = gt.get(key(title), {})
        category = row.get("category", "cs.LG")
        for n, ref_title in auto_refs.items():
            add_doc(ref_title, arxiv_id=auto_map.get(n, ""), category=category)
        id_file = next((base / "ID" / "output" / str(sid)).iterdir())
        sections, id_refs = parse_id_output(id_file)
        for n, (authors, ref_title) in id_refs.items():
            add_doc(ref_title, authors=authors, category=category)
        shutil.copytree(auto_dir, gen_out / str(sid))
        surveys.append((sid, title, row, sections, id_refs))

    for row in gt.values():
        add_doc(row["title"], category=row["category"])

    ordered = sorted(docs.values(), key=lambda d: key(d["Title"]))
    for i, d in enumerate(ordered):
        d["doc_id"] = i
    doc_of = {key(d["Title"]): d["doc_id"] for d in ordered}

    qid = 0
    for sid, title, row, sections, id_refs in surveys:
        structure = [{"id": f"{sid}-0", "parent_id": None, "title": "root", "content": "", "cites": []}]
        stack: list[tuple[int, str]] = [(0, f"{sid}-0")]
        path_titles: dict[str, list] = {f"{sid}-0": [["title", title]]}
        names = {1: "section", 2: "subsection", 3: "subsubsection", 4: "paragraph"}
        all_cites: list[int] = []
        for i, (level, heading, text) in enumerate(sections, start=1):
            if "Abstract:" in heading:
                continue
            while stack[-1][0] >= level:
                stack.pop()
            sec_id, parent = f"{sid}-{i}", stack[-1][1]
            cites = []
            for group in _CITE.findall(text):
                for n in re.split(r"\s*[,;]\s*", group):
                    ref = id_refs.get(n)
                    d = doc_of.get(key(ref[1])) if ref else None
                    if d is not None and d not in cites:
                        cites.append(d)
            structure.append({"id": sec_id, "parent_id": parent, "title": heading, "content": text, "cites": cites})
            stack.append((level, sec_id))
            path_titles[sec_id] = path_titles[parent] + [[names.get(len(path_titles[parent]), "paragraph"), heading]]
            all_cites.extend(c for c in cites if c not in all_cites)
            if cites:
                queries.append({
                    "original_id": sec_id, "query_id": qid, "date": f"{row.get('year', '2020')}-01-01T00:00:00Z",
                    "year": row.get("year", ""), "category": row.get("category", ""), "content": text,
                    "prefix_titles": path_titles[sec_id],
                    "prefix_titles_query": f"What does the literature say about {heading.lower()} in the context of {title.lower()}?",
                    "cites": cites, "cite_extract_rate": 1.0, "origin_cites_number": len(cites),
                })
                qid += 1
        surveys[surveys.index((sid, title, row, sections, id_refs))] = {
            "survey_id": sid, "survey_title": title, "authors": ["(sample: synthetic ground truth)"],
            "year": row.get("year", ""), "date": f"{row.get('year', '2020')}-01-01T00:00:00Z",
            "category": row.get("category", ""),
            "abstract": "SYNTHETIC ground truth for the embedded sample: the section tree and citations of the ID "
                        "baseline's generated survey for this topic, not the real expert-written survey.",
            "structure": structure, "all_cites": all_cites, "Bertopic_CD": None,
        }

    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in (("corpus", ordered), ("surveys", surveys), ("queries", queries)):
        (args.out / f"{name}.json").write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    shutil.copy(base / "LICENSE.SurGE-MIT", args.out / "generated" / "LICENSE.SurGE-MIT")
    print(f"sample: {len(ordered)} docs, {len(surveys)} surveys, {len(queries)} queries, {len(SAMPLE_IDS)} generated surveys -> {args.out}")


if __name__ == "__main__":
    main()
