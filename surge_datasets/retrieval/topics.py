"""Retrieval topics and their relevance judgements (qrels).

Two kinds of topic, as in the paper:

* ``surveys`` -- one topic per GT survey: text = survey title, relevant = ``all_cites`` (Table 3);
* ``queries`` -- one topic per query: text = ``prefix_titles_query``, relevant = ``cites`` (optionally one
  split of the recorded 4:1 train/test split).

A source is a surveys or queries dataset folder (``build/surveys``), a build folder holding both (the
kind then says which, surveys by default), an official release file (``surveys.json``, ``queries.json``)
or a Hub repo id. Topic ids are strings: ``str(survey_id)`` or ``str(query_id)``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Optional

TopicKind = Literal["surveys", "queries"]


@dataclass(frozen=True)
class Topic:
    topic_id: str
    text: str
    relevant: tuple[int, ...] = field(default=())


def detect_kind(source: str | os.PathLike) -> TopicKind:
    """Whether a source holds GT surveys or queries (by its columns or its file name)."""
    path = Path(source)
    if path.is_file():
        name = path.name.lower()
        if "quer" in name:
            return "queries"
        if "survey" in name:
            return "surveys"
        raise ValueError(f"{path}: cannot tell surveys from queries by the file name; pass the kind")
    if path.is_dir():
        shards = sorted((path / "data").glob("*.parquet"))
        if shards:
            import pyarrow.parquet as pq

            names = set(pq.read_schema(shards[0]).names)
            if "all_cites" in names:
                return "surveys"
            if "prefix_titles_query" in names:
                return "queries"
            raise ValueError(f"{path}: neither a surveys nor a queries dataset (columns {sorted(names)})")
        if (path / "surveys").is_dir():
            return "surveys"
        if (path / "queries").is_dir():
            return "queries"
        raise FileNotFoundError(f"{path}: no surveys or queries dataset here")
    name = str(source).rstrip("/").rsplit("/", 1)[-1].lower()
    return "queries" if "quer" in name else "surveys"


def load_topics(
    source: str | os.PathLike,
    kind: Optional[TopicKind] = None,
    *,
    split: Optional[str] = None,
) -> list[Topic]:
    """Topics with their relevant doc_ids, in survey_id / query_id order."""
    kind = kind or detect_kind(source)
    path = Path(source)
    if kind == "surveys":
        if path.is_file():
            from ..official import iter_official

            surveys = sorted(iter_official("surveys", path), key=lambda s: s.survey_id)
        else:
            from ..data import load_surveys

            surveys = list(load_surveys(source).values())
        return [Topic(str(s.survey_id), s.title, tuple(dict.fromkeys(s.all_cites))) for s in surveys]
    if kind == "queries":
        if path.is_file():
            from ..official import iter_official

            queries = sorted(iter_official("queries", path), key=lambda q: q.query_id)
        else:
            from ..data import load_queries

            queries = load_queries(source)
        if split:
            queries = [q for q in queries if q.split == split]
        return [Topic(str(q.query_id), q.prefix_titles_query, tuple(dict.fromkeys(q.cites))) for q in queries]
    raise ValueError(f"unknown topic kind {kind!r}; use 'surveys' or 'queries'")
