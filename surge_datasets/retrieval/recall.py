"""Recall@k of a run, per topic and averaged over topics (paper Table 3).

``R@k(t) = |top-k(t) ∩ relevant(t)| / |relevant(t)|`` with relevant(t) the GT survey's ``all_cites`` (or a
query's ``cites``), duplicates removed; the figure reported is the mean over topics. Topics with no
relevant document are left out (and counted); a judged topic missing from the run scores 0 at every k.
Qrels come from GT surveys or queries (any source :func:`~surge_datasets.retrieval.topics.load_topics`
reads), from a TREC qrels file (``topic_id 0 doc_id relevance``, relevance > 0 counts) or from a JSON
object ``{topic_id: [doc_id, ...]}``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

PAPER_KS = (20, 30, 100, 200, 500, 1000)

Qrels = dict[str, frozenset[int]]


def recall_at_k(ranked: Sequence[int], relevant: Iterable[int], k: int) -> float:
    """Share of the relevant documents found in the first k of ``ranked``."""
    relevant = set(relevant)
    if not relevant:
        raise ValueError("recall is undefined for a topic with no relevant document")
    top = set(list(ranked)[:k])
    return len(top & relevant) / len(relevant)


@dataclass
class RecallReport:
    ks: tuple[int, ...]
    mean: dict[str, float]
    per_topic: dict[str, dict[str, float]]
    topics: int
    skipped_no_qrels: list[str] = field(default_factory=list)
    missing_from_run: list[str] = field(default_factory=list)
    unjudged_in_run: int = 0

    def to_dict(self) -> dict:
        return {
            "ks": list(self.ks),
            "mean": self.mean,
            "topics": self.topics,
            "skipped_no_qrels": self.skipped_no_qrels,
            "missing_from_run": self.missing_from_run,
            "unjudged_in_run": self.unjudged_in_run,
            "per_topic": self.per_topic,
        }


def evaluate_run(run: dict[str, list], qrels: Qrels, ks: Sequence[int] = PAPER_KS) -> RecallReport:
    """Recall@k for every judged topic of ``qrels``; ``run`` maps topic ids to ranked doc_ids or (doc_id, score)."""
    ks = tuple(int(k) for k in ks)
    per_topic: dict[str, dict[str, float]] = {}
    skipped, missing = [], []
    for topic, relevant in qrels.items():
        if not relevant:
            skipped.append(topic)
            continue
        hits = run.get(topic)
        if hits is None:
            missing.append(topic)
            hits = []
        ranked = [h[0] if isinstance(h, (tuple, list)) else h for h in hits]
        per_topic[topic] = {f"R@{k}": recall_at_k(ranked, relevant, k) for k in ks}
    n = len(per_topic)
    mean = {f"R@{k}": (sum(t[f"R@{k}"] for t in per_topic.values()) / n if n else 0.0) for k in ks}
    unjudged = sum(1 for t in run if t not in qrels)
    return RecallReport(ks, mean, per_topic, n, skipped, missing, unjudged)


def load_qrels(source: str | os.PathLike, kind: Optional[str] = None, *, split: Optional[str] = None) -> Qrels:
    """Relevant doc_ids per topic id from surveys/queries, a TREC qrels file or a JSON mapping."""
    path = Path(source)
    if path.is_file():
        if kind == "trec" or path.suffix.lower() not in (".json", ".jsonl"):
            return _read_trec_qrels(path)
        if kind is None and _first_char(path) == "{":
            data = json.loads(path.read_text(encoding="utf-8"))
            return {str(t): frozenset(int(d) for d in docs) for t, docs in data.items()}
    from .topics import load_topics

    return {t.topic_id: frozenset(t.relevant) for t in load_topics(source, kind, split=split)}


def _first_char(path: Path) -> str:
    with open(path, encoding="utf-8") as fh:
        while True:
            c = fh.read(1)
            if not c or not c.isspace():
                return c


def _read_trec_qrels(path: Path) -> Qrels:
    out: dict[str, set[int]] = {}
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise ValueError(f"{path}: line {i}: expected 'topic_id 0 doc_id relevance'")
            try:
                rel = float(parts[3])
                doc = int(parts[2])
            except ValueError as exc:
                raise ValueError(f"{path}: line {i}: {exc}") from None
            bucket = out.setdefault(parts[0], set())
            if rel > 0:
                bucket.add(doc)
    return {t: frozenset(d) for t, d in out.items()}


def format_table(report: RecallReport, title: str = "") -> str:
    """The mean recalls as a small text table (one row, one column per k)."""
    head = [f"R@{k}" for k in report.ks]
    widths = [max(len(h), 6) for h in head]
    lines = []
    if title:
        lines.append(title)
    lines.append("topics  " + "  ".join(h.rjust(w) for h, w in zip(head, widths)))
    lines.append(f"{report.topics:>6}  " + "  ".join(f"{report.mean[h]:.4f}".rjust(w) for h, w in zip(head, widths)))
    return "\n".join(lines)
