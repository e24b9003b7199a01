"""Stable ``doc_id`` assignment for a harvest folder.

* An official release, when given, keeps its ids: a harvested paper takes the release's doc_id of the
  same arXiv id, else of the same title key (the release's rule; on duplicate keys the last doc in
  release order wins). A release id is handed to one arXiv id only.
* Every other paper gets a new id above every id ever seen (release or harvest); ids are never reused.
* The map is persisted: the release part in ``corpus/doc_ids.base.parquet``, the rest in the committed
  shards themselves (each row carries its arxiv_id and doc_id), so it survives ``kill -9`` exactly as
  the shards do and a resumed run hands out the same ids as an uninterrupted one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from surge_datasets.identifiers import parse_arxiv_id, title_key
from surge_datasets.schemas import CorpusDoc

from .normalize import match_title_key
from .store import _committed, atomic_write_json, atomic_write_table, corpus_root

BASE_FILE = "doc_ids.base.parquet"
BASE_META = "doc_ids.base.json"


def write_base_map(folder: os.PathLike | str, docs: Iterable[CorpusDoc], *, source: str) -> int:
    """Record an official release's ids (arxiv_id, title_key, doc_id) in a harvest folder; returns the count.

    Refuses to replace a base map from another source once shards were committed (ids would move).
    """
    root = corpus_root(folder)
    if root.name != "corpus" and not (Path(folder) / "corpus").exists():
        root = Path(folder) / "corpus"
    meta_path = root / BASE_META
    if meta_path.exists():
        meta = json.loads(meta_path.read_text("utf-8"))
        if meta.get("source") == source:
            return int(meta.get("count", 0))
        shards, _ = _committed(folder)
        if shards:
            raise ValueError(f"{root}: doc ids were already assigned against {meta.get('source')!r}; "
                             f"cannot switch to {source!r} (use a new --out folder)")
    arxiv_ids, keys, ids = [], [], []
    for doc in docs:
        parsed = parse_arxiv_id(doc.arxiv_id) if doc.arxiv_id else None
        arxiv_ids.append(parsed.id if parsed else None)
        keys.append(match_title_key(doc) or None)
        ids.append(int(doc.doc_id))
    table = pa.table({"arxiv_id": pa.array(arxiv_ids, pa.string()), "title_key": pa.array(keys, pa.string()),
                      "doc_id": pa.array(ids, pa.int64())})
    atomic_write_table(root / BASE_FILE, table)
    atomic_write_json(meta_path, {"source": source, "count": len(ids)})
    return len(ids)


class DocIdMap:
    """arxiv_id -> doc_id for one harvest folder (release ids first, then harvested, then new)."""

    def __init__(self) -> None:
        self.by_arxiv: dict[str, int] = {}
        self.base_by_arxiv: dict[str, int] = {}
        self.base_by_title: dict[str, int] = {}
        self.claimed: set[int] = set()
        self.next_id = 0

    @classmethod
    def load(cls, folder: os.PathLike | str) -> "DocIdMap":
        m = cls()
        root = corpus_root(folder)
        base = root / BASE_FILE
        top = -1
        if base.exists():
            t = pq.read_table(base)
            for aid, key, d in zip(t.column("arxiv_id").to_pylist(), t.column("title_key").to_pylist(),
                                   t.column("doc_id").to_pylist()):
                if aid:
                    m.base_by_arxiv[aid] = d
                if key:
                    m.base_by_title[key] = d  # last in release order wins
                top = max(top, d)
        shards, _ = _committed(folder)
        for shard in shards:
            t = pq.read_table(shard.path, columns=["arxiv_id", "doc_id"])
            for aid, d in zip(t.column("arxiv_id").to_pylist(), t.column("doc_id").to_pylist()):
                if aid is not None:
                    m.by_arxiv.setdefault(aid, d)
                m.claimed.add(d)
                top = max(top, d)
        m.next_id = top + 1
        return m

    def lookup(self, arxiv_id: Optional[str]) -> Optional[int]:
        return self.by_arxiv.get(arxiv_id) if arxiv_id else None

    def assign(self, arxiv_id: Optional[str], raw_title: str = "") -> int:
        """The doc_id of a harvested paper (stable: the same arxiv_id always gets the same id)."""
        if arxiv_id and arxiv_id in self.by_arxiv:
            return self.by_arxiv[arxiv_id]
        doc_id = None
        if arxiv_id and arxiv_id in self.base_by_arxiv and self.base_by_arxiv[arxiv_id] not in self.claimed:
            doc_id = self.base_by_arxiv[arxiv_id]
        if doc_id is None and self.base_by_title:
            candidate = self.base_by_title.get(title_key(raw_title))
            if candidate is not None and candidate not in self.claimed:
                doc_id = candidate
        if doc_id is None:
            doc_id = self.next_id
            self.next_id += 1
        self.claimed.add(doc_id)
        if arxiv_id:
            self.by_arxiv[arxiv_id] = doc_id
        return doc_id

    def assign_many(self, arxiv_ids: list[Optional[str]], raw_titles: Optional[list[str]] = None) -> list[int]:
        """:meth:`assign` for a batch (titles are only needed when a release's ids are in the map)."""
        if self.base_by_arxiv or self.base_by_title:
            titles = raw_titles if raw_titles is not None else [""] * len(arxiv_ids)
            return [self.assign(a, t or "") for a, t in zip(arxiv_ids, titles)]
        out, by, nxt = [], self.by_arxiv, self.next_id
        for a in arxiv_ids:
            d = by.get(a) if a else None
            if d is None:
                d, nxt = nxt, nxt + 1
                if a:
                    by[a] = d
            out.append(d)
        self.next_id = nxt
        return out

    @property
    def needs_titles(self) -> bool:
        return bool(self.base_by_title)

    def assign_row(self, row: dict) -> dict:
        row["doc_id"] = self.assign(row.get("arxiv_id"), row.get("title_raw") or row.get("title") or "")
        return row
