"""Searching an index for topics, and the run files that hold the results.

A *run* maps each topic id to its ranked ``(doc_id, score)`` list. Two file formats:

* JSONL (default): one line per topic,
  ``{"topic_id": "7", "query": "...", "tag": "bm25", "hits": [{"doc_id": 12, "rank": 1, "score": 8.1}, ...]}``
  -- the generation baselines read their top-100 papers from it;
* TREC: one line per hit, ``topic_id Q0 doc_id rank score tag`` (trec_eval, ranx, ir_measures).

:func:`read_run` reads either (told apart by the first character) and names file and line on bad input.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Optional, Union

from .storage import read_manifest
from .topics import Topic

Run = dict[str, list[tuple[int, float]]]


def open_index(folder: str | os.PathLike, *, model: Optional[str] = None, device: Optional[str] = None):
    """The BM25 or dense index saved in ``folder`` (told apart by its manifest)."""
    kind = read_manifest(folder).get("kind")
    if kind == "bm25":
        from .bm25 import BM25Index

        return BM25Index.open(folder)
    if kind == "dense":
        from .encode import DenseIndex

        return DenseIndex.open(folder, model=model, device=device)
    raise ValueError(f"{folder}: unknown index kind {kind!r}")


def retrieve(index, topics: Iterable[Topic], k: int = 100, *, progress: bool = False) -> Run:
    """Top-k ``(doc_id, score)`` per topic, best first."""
    topics = list(topics)
    results = index.search([t.text for t in topics], k, progress=progress)
    return {t.topic_id: hits for t, hits in zip(topics, results)}


def _tmp(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_run(path: Union[str, os.PathLike], run: Run, *, tag: str = "surge", trec: bool = False,
              queries: Optional[dict[str, str]] = None) -> Path:
    """Write a run (JSONL, or TREC with ``trec=True``) atomically."""
    path = Path(path)
    tmp = _tmp(path)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for topic_id, hits in run.items():
                if trec:
                    for rank, (doc_id, score) in enumerate(hits, 1):
                        fh.write(f"{topic_id} Q0 {doc_id} {rank} {score:.6f} {tag}\n")
                else:
                    line = {"topic_id": topic_id}
                    if queries and topic_id in queries:
                        line["query"] = queries[topic_id]
                    line["tag"] = tag
                    line["hits"] = [{"doc_id": d, "rank": r, "score": round(float(s), 6)} for r, (d, s) in enumerate(hits, 1)]
                    fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


class RunFormatError(ValueError):
    def __init__(self, path, line_no: int, message: str):
        super().__init__(f"{path}: line {line_no}: {message}")


def read_run(path: Union[str, os.PathLike]) -> Run:
    """A run file in JSONL or TREC format; hits come back ordered by rank."""
    path = Path(path)
    with open(path, encoding="utf-8") as fh:
        lines = [(i, line.strip()) for i, line in enumerate(fh, 1)]
    lines = [(i, line) for i, line in lines if line]
    if not lines:
        return {}
    if lines[0][1].startswith("{"):
        return _read_jsonl(path, lines)
    return _read_trec(path, lines)


def _read_jsonl(path: Path, lines) -> Run:
    run: Run = {}
    for i, line in lines:
        try:
            obj = json.loads(line)
            topic = str(obj["topic_id"])
            hits = obj["hits"]
            ranked = sorted(hits, key=lambda h: h.get("rank", 0)) if all("rank" in h for h in hits) else hits
            run.setdefault(topic, []).extend((int(h["doc_id"]), float(h.get("score", 0.0))) for h in ranked)
        except (ValueError, KeyError, TypeError) as exc:
            raise RunFormatError(path, i, f"not a run line ({type(exc).__name__}: {exc})") from None
    return run


def _read_trec(path: Path, lines) -> Run:
    rows: dict[str, list[tuple[int, int, float]]] = {}
    for i, line in lines:
        parts = line.split()
        if len(parts) != 6:
            raise RunFormatError(path, i, f"expected 'topic_id Q0 doc_id rank score tag', got {len(parts)} fields")
        try:
            rows.setdefault(parts[0], []).append((int(parts[3]), int(parts[2]), float(parts[4])))
        except ValueError as exc:
            raise RunFormatError(path, i, str(exc)) from None
    # order by rank, then by score (trec_eval ranks by score; ranks agree in files we write)
    return {t: [(d, s) for _, d, s in sorted(hits, key=lambda h: (h[0], -h[2]))] for t, hits in rows.items()}
