"""Ground-truth surveys from their titles: resolve to arXiv, fetch the e-print, parse, build records.

Steps, each checkpointed in ``<out>/state.json`` so that a rerun continues where it stopped:

1. resolve every title to an arXiv id: a ``ti:`` search, candidates scored by title similarity (the
   paper's title key equal scores 1.0, else difflib's ratio on normalised titles), confirmed when the
   score reaches ``min_score`` and the year is within ``year_slack`` of the listed year; several
   confirmed ids make the title *ambiguous* -- reported, not guessed -- unless exactly one matches the
   title key;
2. fetch the e-print source (``<eprint endpoint>/<id>``) into ``<out>/sources/``;
3. parse it (:mod:`.latex_source`), map bibliography entries to corpus doc_ids, and write
   ``surveys.jsonl`` (Survey), ``queries.jsonl`` (Query), ``references.jsonl`` (one line per
   bibliography entry, used by the corpus recipe) and ``report.json``.

Step 3 always runs over every fetched source, so rerunning after the corpus grew re-resolves citations.
"""

from __future__ import annotations

import csv
import difflib
import json
import logging
import os
import random
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from surge_datasets.identifiers import title_key
from surge_datasets.schemas import PrefixTitle, Query, Section, Survey

from .arxiv_api import ArxivAPI
from .http import HarvestSession
from .latex_source import (CorpusLookup, ParsedSource, SourceError, UnsafeArchiveError, parse_source,
                           section_level_name)
from .store import QUERIES_FILE, STATE_FILE, SURVEYS_FILE, atomic_write_bytes, atomic_write_json, atomic_write_jsonl

log = logging.getLogger(__name__)

EPRINT_ENDPOINT = "https://arxiv.org/e-print"
REFERENCES_FILE = "references.jsonl"
REPORT_FILE = "report.json"


@dataclass(frozen=True)
class GTTitle:
    survey_id: int
    title: str
    year: Optional[int]
    category: Optional[str]
    citation_count: Optional[int] = None


def read_titles(path: os.PathLike | str) -> list[GTTitle]:
    """The ground-truth titles TSV (title, year, category[, citation count]); survey_id = row order."""
    out = []
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        if not reader.fieldnames or "title" not in reader.fieldnames:
            raise ValueError(f"{path}: expected a header with a 'title' column, got {reader.fieldnames}")
        for i, row in enumerate(reader):
            title = (row.get("title") or "").strip()
            if not title:
                raise ValueError(f"{path}: line {i + 2}: empty title")
            year = (row.get("year") or "").strip()
            count = next((row[k] for k in row if k and k.startswith("citation")), None)
            out.append(GTTitle(i, title, int(year) if year.isdigit() else None, (row.get("category") or "").strip() or None,
                               int(count) if count and str(count).strip().isdigit() else None))
    return out


def _norm(title: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", title.lower()).split())


def title_score(a: str, b: str) -> float:
    if title_key(a) and title_key(a) == title_key(b):
        return 1.0
    return difflib.SequenceMatcher(None, _norm(a), _norm(b)).ratio()


def resolve_title(api: ArxivAPI, gt: GTTitle, *, min_score: float = 0.9, year_slack: int = 1,
                  max_results: int = 10) -> dict:
    """Resolution record: status resolved | ambiguous | year-mismatch | not-found, with scored candidates."""
    rows = api.search_title(gt.title, max_results=max_results)
    cands = []
    for r in rows:
        score = title_score(gt.title, r.get("title_raw") or r["title"])
        year_ok = gt.year is None or r.get("year") is None or abs(r["year"] - gt.year) <= year_slack
        cands.append({"arxiv_id": r["arxiv_id"], "title": r["title"], "year": r.get("year"),
                      "score": round(score, 4), "year_ok": year_ok, "row": r})
    cands.sort(key=lambda c: -c["score"])
    confirmed = [c for c in cands if c["score"] >= min_score and c["year_ok"]]
    ids = list(dict.fromkeys(c["arxiv_id"] for c in confirmed))
    status, chosen = "not-found", None
    if len(ids) == 1:
        status, chosen = "resolved", confirmed[0]
    elif len(ids) > 1:
        exact = [c for c in confirmed if c["score"] == 1.0]
        if len({c["arxiv_id"] for c in exact}) == 1:
            status, chosen = "resolved", exact[0]
        else:
            status = "ambiguous"
    elif any(c["score"] >= min_score for c in cands):
        status = "year-mismatch"
    return {"survey_id": gt.survey_id, "title": gt.title, "status": status,
            "arxiv_id": chosen["arxiv_id"] if chosen else None,
            "meta": chosen["row"] if chosen else None,
            "candidates": [{k: v for k, v in c.items() if k != "row"} for c in cands[:5]]}


def _source_path(out: Path, arxiv_id: str) -> Path:
    return out / "sources" / (arxiv_id.replace("/", "_") + ".eprint")


def fetch_eprint(session: HarvestSession, endpoint: str, arxiv_id: str, dest: Path) -> Path:
    resp = session.fetch(f"{endpoint.rstrip('/')}/{arxiv_id}")
    atomic_write_bytes(dest, resp.content)
    return dest


# ------------------------------------------------------------------------------------------ records

def build_survey(parsed: ParsedSource, *, survey_id: int, title: Optional[str] = None, meta: Optional[dict] = None,
                 category: Optional[str] = None, year: Optional[int] = None,
                 lookup: Optional[CorpusLookup] = None) -> tuple[Survey, dict[str, Optional[int]], dict]:
    """A Survey record from a parsed source; returns (survey, bib key -> doc_id, report)."""
    meta = meta or {}
    key_doc: dict[str, Optional[int]] = {}
    how_counts: dict[str, int] = {}
    for key, entry in parsed.bibliography.items():
        doc, how = lookup.resolve(entry) if lookup else (None, None)
        key_doc[key] = doc
        how_counts[how or "unresolved"] = how_counts.get(how or "unresolved", 0) + 1
    sections, all_cites = [], []
    for s in parsed.sections:
        cites = []
        for k in s.cite_keys:
            d = key_doc.get(k)
            if d is not None and d not in cites:
                cites.append(d)
        for d in cites:
            if d not in all_cites:
                all_cites.append(d)
        sections.append(Section(id=s.id, parent_id=s.parent_id, level=s.level, title=s.title, content=s.content, cites=cites))
    published = meta.get("published")
    survey = Survey(
        survey_id=survey_id,
        title=title or meta.get("title") or parsed.title,
        authors=meta.get("authors") or parsed.authors,
        year=year if year is not None else meta.get("year"),
        date=published,
        category=category or meta.get("primary_category"),
        abstract=meta.get("abstract") or parsed.abstract,
        arxiv_id=meta.get("arxiv_id"),
        structure=sections,
        all_cites=all_cites,
        source="harvest",
    )
    report = dict(parsed.report(), resolved_by=how_counts, all_cites=len(all_cites))
    return survey, key_doc, report


def _question(path_titles: list[str]) -> str:
    if len(path_titles) == 1:
        return f"Which papers should a survey on {path_titles[0]} cite?"
    return f"Which papers on {path_titles[-1]} should be cited in the part of a survey on {path_titles[0]} about {' / '.join(path_titles[1:])}?"


def build_queries(survey: Survey, parsed: ParsedSource, key_doc: dict[str, Optional[int]], *,
                  min_rate: float = 0.5, first_query_id: int = 0) -> list[Query]:
    """One Query per section whose citations resolve at ``min_rate`` or better (BRIEF: high extraction rate)."""
    by_id = {s.id: s for s in survey.structure}
    queries = []
    for ps, sec in zip(parsed.sections, survey.structure):
        if sec.parent_id is None or not ps.cite_keys:
            continue
        origin = len(ps.cite_keys)
        rate = len(sec.cites) / origin
        if not sec.cites or rate < min_rate:
            continue
        path, cur = [], sec
        while cur is not None and cur.parent_id is not None:
            path.append(cur)
            cur = by_id.get(cur.parent_id)
        path.reverse()
        prefix = [PrefixTitle(level="title", title=survey.title)] + [
            PrefixTitle(level=section_level_name(p.level), title=p.title) for p in path]
        queries.append(Query(
            query_id=first_query_id + len(queries), original_id=f"{survey.survey_id}:{sec.id}", survey_id=survey.survey_id,
            date=survey.date, year=survey.year, category=survey.category, content=sec.content, prefix_titles=prefix,
            prefix_titles_query=_question([p.title for p in prefix]), cites=list(sec.cites),
            cite_extract_rate=round(rate, 6), origin_cites_number=origin))
    return queries


def assign_splits(queries: list[Query], *, seed: int = 42, test_fraction: float = 0.2) -> None:
    """Seeded random 4:1 train/test split (the paper's retriever split)."""
    order = list(range(len(queries)))
    random.Random(seed).shuffle(order)
    n_test = round(len(queries) * test_fraction)
    test = set(order[:n_test])
    for i, q in enumerate(queries):
        q.split = "test" if i in test else "train"


# -------------------------------------------------------------------------------------------- pipeline

def _load_state(out: Path, params: dict) -> dict:
    path = out / STATE_FILE
    if path.exists():
        state = json.loads(path.read_text("utf-8"))
        if state.get("params") != params:
            raise ValueError(f"{out}: started with {state.get('params')}, not {params}; use another --out or --restart")
        return state
    return {"params": params, "titles": {}}


def harvest_surveys(titles: list[GTTitle], out: os.PathLike | str, *, api: Optional[ArxivAPI], session: Optional[HarvestSession],
                    eprint_endpoint: str = EPRINT_ENDPOINT, lookup: Optional[CorpusLookup] = None,
                    min_score: float = 0.9, year_slack: int = 1, min_rate: float = 0.5, seed: int = 42,
                    restart: bool = False, progress: Optional[Callable[[str], None]] = None) -> dict:
    """Run the three steps for every title; returns the summary written to ``report.json``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if restart and (out / STATE_FILE).exists():
        (out / STATE_FILE).unlink()
    params = {"titles": [t.title for t in titles], "min_score": min_score, "year_slack": year_slack}
    state = _load_state(out, params)
    for gt in titles:
        entry = state["titles"].get(str(gt.survey_id))
        if entry is None:
            if api is None:
                raise ValueError("no arXiv client given and a title is not resolved yet")
            entry = resolve_title(api, gt, min_score=min_score, year_slack=year_slack)
            entry["fetched"] = False
            state["titles"][str(gt.survey_id)] = entry
            atomic_write_json(out / STATE_FILE, state)
        if entry["status"] == "resolved" and not entry.get("fetched"):
            dest = _source_path(out, entry["arxiv_id"])
            try:
                fetch_eprint(session, eprint_endpoint, entry["arxiv_id"], dest)
                entry["fetched"] = True
            except Exception as exc:  # reported, retried on the next run
                entry["fetch_error"] = str(exc)
            atomic_write_json(out / STATE_FILE, state)
        if progress:
            progress(gt.title)
    return build_outputs(titles, out, state, lookup=lookup, min_rate=min_rate, seed=seed)


def build_outputs(titles: list[GTTitle], out: Path, state: dict, *, lookup: Optional[CorpusLookup],
                  min_rate: float = 0.5, seed: int = 42) -> dict:
    surveys: list[Survey] = []
    queries: list[Query] = []
    references: list[dict] = []
    per_survey: list[dict] = []
    for gt in titles:
        entry = state["titles"].get(str(gt.survey_id), {})
        item = {"survey_id": gt.survey_id, "title": gt.title, "status": entry.get("status", "pending"),
                "arxiv_id": entry.get("arxiv_id")}
        if entry.get("status") != "resolved":
            item["candidates"] = entry.get("candidates", [])
        if entry.get("fetched"):
            with tempfile.TemporaryDirectory(prefix="eprint-") as tmp:
                try:
                    parsed = parse_source(_source_path(out, entry["arxiv_id"]), tmp)
                except (UnsafeArchiveError, SourceError, OSError) as exc:
                    item["status"] = "unparsable"
                    item["error"] = str(exc)
                    per_survey.append(item)
                    continue
            survey, key_doc, report = build_survey(parsed, survey_id=gt.survey_id, title=gt.title, meta=entry.get("meta"),
                                                   category=gt.category, year=gt.year, lookup=lookup)
            surveys.append(survey)
            queries.extend(build_queries(survey, parsed, key_doc, min_rate=min_rate, first_query_id=len(queries)))
            for key, e in parsed.bibliography.items():
                references.append({"survey_id": gt.survey_id, "key": key, "title": e.title, "arxiv_id": e.arxiv_id,
                                   "doi": e.doi, "doc_id": key_doc.get(key), "cited": key in set(parsed.cited_keys)})
            item.update(report)
        elif entry.get("fetch_error"):
            item["error"] = entry["fetch_error"]
        per_survey.append(item)
    assign_splits(queries, seed=seed)
    atomic_write_jsonl(out / SURVEYS_FILE, surveys)
    atomic_write_jsonl(out / QUERIES_FILE, queries)
    atomic_write_jsonl(out / REFERENCES_FILE, references)
    counts: dict[str, int] = {}
    for item in per_survey:
        counts[item["status"]] = counts.get(item["status"], 0) + 1
    summary = {"titles": len(titles), "status": counts, "surveys": len(surveys), "queries": len(queries),
               "references": len(references),
               "missing_keys": sum(i.get("missing_keys", 0) for i in per_survey),
               "uncited_entries": sum(i.get("uncited_entries", 0) for i in per_survey),
               "ambiguous": [i for i in per_survey if i["status"] == "ambiguous"],
               "unresolved": [i for i in per_survey if i["status"] in ("not-found", "year-mismatch")],
               "per_survey": per_survey}
    atomic_write_json(out / REPORT_FILE, summary)
    return summary


def read_references(folder: os.PathLike | str) -> list[dict]:
    path = Path(folder) / REFERENCES_FILE
    if not path.exists() and (Path(folder) / "surveys" / REFERENCES_FILE).exists():
        path = Path(folder) / "surveys" / REFERENCES_FILE
    if not path.exists():
        raise FileNotFoundError(f"{folder}: no {REFERENCES_FILE} (run `surge harvest surveys` first)")
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
