"""The paper's corpus recipe (BRIEF §2), as one resumable job ``corpus/recipe``.

1. ``cited-ids``: every arXiv paper cited by a ground-truth survey (bibliography entries with an arXiv
   id, and the surveys themselves), fetched by id in batches of 100;
2. ``cited-titles``: cited entries without an arXiv id, looked up by a title search and kept only when
   the title key matches (the paper's rule);
3. ``gt-searches``: API searches with each ground-truth survey's title and its keywords;
4. ``sample``: a seeded random sample of cs papers from an already harvested pool (an OAI or snapshot
   job), copied in.

The work list of every phase is fixed when the job starts (sorted, de-duplicated) and its fingerprint
stored in the job's parameters; the cursor (phase, position) is committed with each unit's rows, so a
killed run resumes at the next unit. Doc ids come from :class:`~.doc_ids.DocIdMap` (release ids kept
when ``--official`` was given, new ids above every id seen).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from pathlib import Path
from typing import Callable, Optional

from surge_datasets.identifiers import title_key

from .arxiv_api import ArxivAPI, MAX_BATCH, keyword_query, title_query
from .doc_ids import DocIdMap
from .normalize import collapse_whitespace, in_archive, latex_to_unicode, match_title_key
from .store import CORPUS_DIR, ShardStore, iter_harvested_batches
from .surveys import read_references

PHASES = ("cited-ids", "cited-titles", "gt-searches", "sample")
STOPWORDS = set("a an and are as at based by for from in into of on or over the their to towards toward under "
                "using via with what where which survey review overview comprehensive systematic recent advances "
                "progress perspective perspectives challenges opportunities directions future".split())


def title_keywords(title: str, k: int = 4) -> list[str]:
    """The ``k`` most telling words of a survey title (stopwords and survey words dropped, order kept)."""
    words = [w for w in re.sub(r"[^0-9A-Za-z\- ]+", " ", title).split() if w.lower() not in STOPWORDS and len(w) > 2]
    return words[:k]


def plan(surveys_dir: os.PathLike | str, *, sample_from: Optional[os.PathLike | str] = None, sample_size: int = 0,
         seed: int = 0, category: str = "cs") -> dict:
    """The fixed work lists of the four phases."""
    refs = read_references(surveys_dir)
    from .store import iter_harvested_surveys

    surveys = list(iter_harvested_surveys(surveys_dir))
    ids = sorted({r["arxiv_id"] for r in refs if r.get("arxiv_id")} | {s.arxiv_id for s in surveys if s.arxiv_id})
    seen_keys: set[str] = set()
    titles = []
    for r in refs:
        if r.get("arxiv_id") or not r.get("title"):
            continue
        key = title_key(r["title"])
        if len(key) >= 12 and key not in seen_keys:
            seen_keys.add(key)
            titles.append(collapse_whitespace(latex_to_unicode(r["title"])))  # braces and macros out of the query
    searches = []
    for s in sorted(surveys, key=lambda s: s.survey_id):
        searches.append({"survey_id": s.survey_id, "query": title_query(s.title)})
        kw = title_keywords(s.title)
        if kw:
            searches.append({"survey_id": s.survey_id, "query": keyword_query(kw)})
    sample: list[str] = []
    if sample_from and sample_size:
        pool = []
        for batch in iter_harvested_batches(sample_from):
            for aid, cats in zip(batch.column("arxiv_id").to_pylist(), batch.column("categories").to_pylist()):
                if aid and in_archive(cats or [], category):
                    pool.append(aid)
        pool = sorted(set(pool) - set(ids))
        sample = sorted(random.Random(seed).sample(pool, min(sample_size, len(pool))))
    return {"cited-ids": ids, "cited-titles": titles, "gt-searches": searches, "sample": sample}


def _fingerprint(work: dict) -> str:
    return hashlib.sha256(json.dumps(work, sort_keys=True).encode()).hexdigest()[:16]


def run_recipe(out: os.PathLike | str, work: dict, api: ArxivAPI, *, sample_from: Optional[os.PathLike | str] = None,
               search_results: int = 100, title_results: int = 5, titles_per_commit: int = 10, restart: bool = False,
               progress: Optional[Callable[[str, int], None]] = None) -> dict:
    """Run (or resume) the recipe job; returns its counters."""
    params = {"source": "recipe", "work": _fingerprint(work), "search_results": search_results,
              "title_results": title_results, "sizes": {k: len(v) for k, v in work.items()}}
    store = ShardStore.open(Path(out) / CORPUS_DIR / "recipe", params, restart=restart)
    if store.done:
        return store.stats
    ids = DocIdMap.load(out)
    cursor = store.cursor or {"phase": PHASES[0], "pos": 0}
    stats = {k: store.stats.get(k, 0) for k in ("rows", "missing", "invalid", "title_hits", "title_misses", "searches")}
    stats["missing_ids"] = list(store.stats.get("missing_ids", []))
    phase_index = PHASES.index(cursor["phase"])

    def commit(rows: list[dict], phase: str, pos: int) -> None:
        rows = [ids.assign_row(r) for r in rows]
        stats["rows"] += len(rows)
        store.commit(rows, {"phase": phase, "pos": pos}, stats=dict(stats))

    for phase in PHASES[phase_index:]:
        items = work[phase]
        pos = cursor["pos"] if phase == cursor["phase"] else 0
        if phase == "cited-ids":
            while pos < len(items):
                batch = items[pos:pos + MAX_BATCH]
                res = api.fetch_ids(batch)
                stats["missing"] += len(res.missing)
                stats["invalid"] += len(res.invalid)
                stats["missing_ids"] = (stats["missing_ids"] + res.missing + res.invalid)[:1000]
                pos += len(batch)
                commit(res.rows, phase, pos)
                if progress:
                    progress(phase, len(batch))
        elif phase == "cited-titles":
            while pos < len(items):
                chunk = items[pos:pos + titles_per_commit]
                rows = []
                for t in chunk:
                    key = title_key(t)
                    hits = [r for r in api.search(title_query(t), max_results=title_results, page_size=title_results)
                            if match_title_key(r) == key]
                    stats["title_hits" if hits else "title_misses"] += 1
                    rows.extend(hits[:1])
                pos += len(chunk)
                commit(rows, phase, pos)
                if progress:
                    progress(phase, len(chunk))
        elif phase == "gt-searches":
            while pos < len(items):
                rows = list(api.search(items[pos]["query"], max_results=search_results, page_size=min(100, search_results)))
                stats["searches"] += 1
                pos += 1
                commit(rows, phase, pos)
                if progress:
                    progress(phase, 1)
        elif phase == "sample" and items:
            wanted = set(items)
            rows = []
            for batch in iter_harvested_batches(sample_from):
                for row in batch.to_pylist():
                    if row["arxiv_id"] in wanted:
                        row = dict(row)
                        row["doc_id"] = -1
                        rows.append(row)
            rows.sort(key=lambda r: r["arxiv_id"])
            for i in range(pos, len(rows), 10_000):
                commit(rows[i:i + 10_000], phase, i + 10_000)
            if progress:
                progress(phase, len(rows))
    store.finish(stats=dict(stats))
    return store.stats
