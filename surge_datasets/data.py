"""Opening the benchmark's three datasets together: corpus, GT surveys and queries.

A *source* is either a build folder made by ``surge build`` (holding ``corpus/``, ``surveys/``,
``queries/``, each a Hub dataset folder of Parquet + card) or a Hub namespace such as ``surge``
(repos ``surge/corpus``, ``surge/surveys``, ``surge/queries``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import pyarrow.parquet as pq

from .corpus import Corpus
from .schemas import Query, Survey, from_row

DATASET_NAMES = ("corpus", "surveys", "queries")
PathLike = Union[str, os.PathLike]


def _rows_from_folder(folder: Path, split: Optional[str] = None) -> list[dict]:
    pattern = f"data/{split}-*.parquet" if split else "data/*.parquet"
    files = sorted(folder.glob(pattern))
    if not files:
        raise FileNotFoundError(f"{folder}: no Parquet shards ({pattern})")
    rows: list[dict] = []
    for f in files:
        rows.extend(pq.read_table(f).to_pylist())
    return rows


def _rows_from_hub(repo_id: str, revision: Optional[str], split: Optional[str]) -> list[dict]:
    import datasets

    loaded = datasets.load_dataset(repo_id, revision=revision)
    splits = [split] if split else list(loaded)
    return [row for s in splits for row in loaded[s]]


def _rows(source: PathLike, name: str, revision: Optional[str] = None, split: Optional[str] = None) -> list[dict]:
    path = Path(source)
    if (path / "data").is_dir():
        return _rows_from_folder(path, split)
    if (path / name / "data").is_dir():
        return _rows_from_folder(path / name, split)
    if path.exists():
        raise FileNotFoundError(f"{path}: not a {name} dataset folder (expected {name}/data/*.parquet)")
    repo = str(source) if "/" in str(source) else f"{source}/{name}"
    return _rows_from_hub(repo, revision, split)


def load_surveys(source: PathLike, *, revision: Optional[str] = None) -> dict[int, Survey]:
    """GT surveys by survey_id, from a surveys folder, a build folder or a Hub repo/namespace."""
    surveys = (from_row(Survey, r) for r in _rows(source, "surveys", revision))
    return {s.survey_id: s for s in sorted(surveys, key=lambda s: s.survey_id)}


def load_queries(source: PathLike, *, revision: Optional[str] = None, split: Optional[str] = None) -> list[Query]:
    """Queries (both splits unless ``split`` is 'train' or 'test'), ordered by query_id."""
    queries = [from_row(Query, r) for r in _rows(source, "queries", revision, split)]
    return sorted(queries, key=lambda q: q.query_id)


@dataclass
class SurgeData:
    """Corpus, GT surveys and queries of one benchmark source."""

    source: str
    corpus: Corpus
    surveys: dict[int, Survey]
    queries: list[Query] = field(default_factory=list)
    revision: Optional[str] = None

    @classmethod
    def open(cls, source: PathLike, *, revision: Optional[str] = None, with_queries: bool = True) -> "SurgeData":
        path = Path(source)
        if path.exists():
            if not (path / "corpus").is_dir():
                raise FileNotFoundError(f"{path}: not a build folder (expected corpus/, surveys/, queries/ made by `surge build`)")
            corpus = Corpus.open(path / "corpus")
        else:
            corpus = Corpus.open(f"{source}/corpus", revision=revision)
        queries = load_queries(source, revision=revision) if with_queries else []
        return cls(str(source), corpus, load_surveys(source, revision=revision), queries, revision)
