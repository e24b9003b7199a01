"""``Corpus``: the paper corpus as a memory-mapped Arrow store with key indexes.

A store is a folder ``store/`` inside a corpus build folder (next to the Parquet shards that the Hub
gets)::

    store/corpus.arrow        Arrow IPC file, uncompressed, rows in corpus order (memory-mapped)
    store/<key>.hash.npy      sorted uint64 hashes of a lookup key (doc_id, title, arxiv, doi)
    store/<key>.rows.npy      row of each hash, ascending within equal hashes
    store/manifest.json       row count, schema version, what the store was built from

Opening maps these files and reads nothing else, so a 1.09M-doc corpus opens in milliseconds.
Title lookups use :func:`~surge_datasets.identifiers.title_key` (the paper's rule) of ``title_raw`` when
present (harvested docs keep arXiv's LaTeX there, which is what the release's titles hold), else of
``title``; when several docs share a key the last one in corpus order wins, as with the paper's ``dict``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .identifiers import normalize_doi, parse_arxiv_id, title_key
from .schemas import CorpusDoc, arrow_schema, from_row, to_row

STORE_DIR = "store"
STORE_VERSION = 2
_KEYS = ("doc_id", "title", "arxiv", "doi")
_BATCH = 20_000

PathLike = Union[str, os.PathLike]


def _hash(keys: Sequence[Optional[str]]) -> np.ndarray:
    """64-bit hashes of string keys; None and '' hash to 0 and are never looked up."""
    out = np.zeros(len(keys), dtype=np.uint64)
    for i, k in enumerate(keys):
        if k:
            out[i] = int.from_bytes(hashlib.blake2b(k.encode("utf-8"), digest_size=8).digest(), "little")
    return out


def _arxiv_key(value: Optional[str]) -> Optional[str]:
    if not value:
        return None
    parsed = parse_arxiv_id(value)
    return parsed.id if parsed else None


def _key_arrays(batch: pa.RecordBatch) -> dict[str, np.ndarray]:
    cols = batch.to_pydict()
    return {
        "doc_id": np.asarray(cols["doc_id"], dtype=np.int64),
        "title": _hash([title_key(raw or t or "") or None for raw, t in zip(cols["title_raw"], cols["title"])]),
        "arxiv": _hash([_arxiv_key(a) for a in cols["arxiv_id"]]),
        "doi": _hash([normalize_doi(d) if d else None for d in cols["doi"]]),
    }


def _atomic_dir(target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))


def _commit_dir(tmp: Path, target: Path) -> None:
    """Replace ``target`` by ``tmp`` (rename; the old folder is removed only after the new one is in place)."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
    os.replace(tmp, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_store(batches: Iterable[pa.RecordBatch], folder: PathLike, *, built_from: str = "") -> Path:
    """Write a store from Arrow record batches (CorpusDoc schema) into ``folder/store`` atomically.

    Raises ValueError naming the row if a doc_id repeats.
    """
    folder = Path(folder)
    target = folder / STORE_DIR
    tmp = _atomic_dir(target)
    schema = arrow_schema(CorpusDoc)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in _KEYS}
    n = 0
    try:
        with pa.OSFile(str(tmp / "corpus.arrow"), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            for batch in _rebatch(batches, schema):
                writer.write_batch(batch)
                for k, arr in _key_arrays(batch).items():
                    parts[k].append(arr)
                n += batch.num_rows
        for key in _KEYS:
            values = np.concatenate(parts[key]) if parts[key] else np.zeros(0, dtype=np.int64)
            if key == "doc_id":
                order = np.argsort(values, kind="stable")
                sorted_ids = values[order]
                dup = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
                if dup.size:
                    row = int(order[dup[0] + 1])
                    raise ValueError(f"corpus row {row}: doc_id {int(sorted_ids[dup[0]])} appears more than once")
                np.save(tmp / "doc_id.hash.npy", sorted_ids)
                np.save(tmp / "doc_id.rows.npy", order.astype(np.int64))
            else:
                present = np.flatnonzero(values != 0)
                order = present[np.argsort(values[present], kind="stable")]
                np.save(tmp / f"{key}.hash.npy", values[order])
                np.save(tmp / f"{key}.rows.npy", order.astype(np.int64))
        manifest = {"version": STORE_VERSION, "num_rows": n, "built_from": built_from}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2))
        _commit_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _rebatch(batches: Iterable[pa.RecordBatch], schema: pa.Schema, rows: int = 65_536) -> Iterator[pa.RecordBatch]:
    """Regroup record batches into ~64k-row batches (few chunks make the mapped table quick to open)."""
    buf: list[pa.RecordBatch] = []
    n = 0
    for batch in batches:
        if batch.schema != schema:
            batch = pa.RecordBatch.from_pylist(batch.to_pylist(), schema=schema)
        buf.append(batch)
        n += batch.num_rows
        if n >= rows:
            yield pa.Table.from_batches(buf, schema=schema).combine_chunks().to_batches()[0]
            buf, n = [], 0
    if buf and n:
        yield pa.Table.from_batches(buf, schema=schema).combine_chunks().to_batches()[0]


def docs_to_batches(docs: Iterable[CorpusDoc], batch_size: int = _BATCH) -> Iterator[pa.RecordBatch]:
    schema = arrow_schema(CorpusDoc)
    buf: list[dict] = []
    for doc in docs:
        buf.append(to_row(doc))
        if len(buf) >= batch_size:
            yield pa.RecordBatch.from_pylist(buf, schema=schema)
            buf = []
    if buf:
        yield pa.RecordBatch.from_pylist(buf, schema=schema)


def parquet_batches(files: Sequence[PathLike]) -> Iterator[pa.RecordBatch]:
    schema = arrow_schema(CorpusDoc)
    for f in files:
        pf = pq.ParquetFile(str(f))
        for batch in pf.iter_batches(batch_size=_BATCH):
            yield batch.select(schema.names).cast(schema) if batch.schema != schema else batch


def corpus_parquet_files(folder: PathLike) -> list[Path]:
    return sorted(Path(folder).glob("data/*.parquet"))


class Corpus:
    """The SurGE corpus: memory-mapped, with lookups by doc_id, arXiv id, DOI and normalised title."""

    def __init__(self, store: PathLike):
        store = Path(store)
        manifest_path = store / "manifest.json"
        if not manifest_path.exists():
            raise FileNotFoundError(f"{store}: not a corpus store (no manifest.json); build it with `surge build`")
        self.manifest = json.loads(manifest_path.read_text())
        if self.manifest.get("version") != STORE_VERSION:
            raise ValueError(f"{store}: store version {self.manifest.get('version')} is not {STORE_VERSION}; rebuild it")
        self.path = store
        self._source = pa.memory_map(str(store / "corpus.arrow"), "r")
        self.table: pa.Table = pa.ipc.open_file(self._source).read_all()
        self._keys = {
            k: (np.load(store / f"{k}.hash.npy", mmap_mode="r").view(np.ndarray),
                np.load(store / f"{k}.rows.npy", mmap_mode="r").view(np.ndarray))
            for k in _KEYS
        }
        self._title_col = self.table.column("title")
        self._title_raw_col = self.table.column("title_raw")

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, source: PathLike, *, revision: Optional[str] = None, cache_dir: Optional[PathLike] = None) -> "Corpus":
        """Open a corpus from a build folder, a store folder, the official ``corpus.json`` or a Hub repo id.

        A build folder without a store (e.g. a Hub snapshot) gets one built next to its shards on first open.
        """
        path = Path(source)
        if path.is_dir():
            if (path / "manifest.json").exists():
                return cls(path)
            if (path / STORE_DIR / "manifest.json").exists():
                return cls(path / STORE_DIR)
            files = corpus_parquet_files(path)
            if not files:
                raise FileNotFoundError(f"{path}: no corpus here (expected data/*.parquet or {STORE_DIR}/)")
            write_store(parquet_batches(files), path, built_from=str(path))
            return cls(path / STORE_DIR)
        if path.is_file():
            from .official import iter_official_corpus

            target = _cache_root(cache_dir) / "official" / _file_fingerprint(path)
            if not (target / STORE_DIR / "manifest.json").exists():
                write_store(docs_to_batches(iter_official_corpus(path)), target, built_from=str(path))
            return cls(target / STORE_DIR)
        if isinstance(source, str) and "/" in source and not source.startswith((".", "/")):
            return cls._open_hub(source, revision=revision, cache_dir=cache_dir)
        raise FileNotFoundError(f"{source}: no such corpus folder, file or Hub repo id")

    @classmethod
    def _open_hub(cls, repo_id: str, *, revision: Optional[str], cache_dir: Optional[PathLike]) -> "Corpus":
        import datasets

        ds = datasets.load_dataset(repo_id, split="train", revision=revision)
        target = _cache_root(cache_dir) / "hub" / repo_id.replace("/", "--") / ds._fingerprint
        if not (target / STORE_DIR / "manifest.json").exists():
            write_store(ds.data.table.to_batches(max_chunksize=_BATCH), target, built_from=f"hf://datasets/{repo_id}@{revision or 'main'}")
        return cls(target / STORE_DIR)

    @classmethod
    def from_docs(cls, docs: Iterable[CorpusDoc], folder: PathLike) -> "Corpus":
        """Write docs as a corpus build folder (one Parquet shard + store) and open it. Handy in tests."""
        folder = Path(folder)
        (folder / "data").mkdir(parents=True, exist_ok=True)
        docs = list(docs)
        table = pa.Table.from_batches(list(docs_to_batches(docs)), schema=arrow_schema(CorpusDoc))
        tmp = folder / "data" / ".train-00000-of-00001.parquet.tmp"
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, folder / "data" / "train-00000-of-00001.parquet")
        write_store(table.to_batches(max_chunksize=_BATCH), folder, built_from="docs")
        return cls(folder / STORE_DIR)

    # ------------------------------------------------------------------ basics
    def __len__(self) -> int:
        return self.table.num_rows

    def __iter__(self) -> Iterator[CorpusDoc]:
        for batch in self.table.to_batches(max_chunksize=_BATCH):
            for row in batch.to_pylist():
                yield from_row(CorpusDoc, row)

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, (int, np.integer)) and self._row_of_doc_id(int(doc_id)) is not None

    def __repr__(self) -> str:
        return f"Corpus({len(self):,} docs from {self.path})"

    def rows(self, rows: Sequence[int]) -> list[CorpusDoc]:
        """Docs at these row positions (zero-copy slices of the mapped table; no gather of whole columns)."""
        return [from_row(CorpusDoc, self.table.slice(int(r), 1).to_pylist()[0]) for r in rows]

    # ------------------------------------------------------------------ lookups
    def _row_of_doc_id(self, doc_id: int) -> Optional[int]:
        ids, rows = self._keys["doc_id"]
        i = int(np.searchsorted(ids, doc_id))
        if i < len(ids) and ids[i] == doc_id:
            return int(rows[i])
        return None

    def _rows_of_doc_ids(self, doc_ids: Sequence[int]) -> list[Optional[int]]:
        ids, rows = self._keys["doc_id"]
        q = np.asarray(doc_ids, dtype=np.int64)
        idx = np.searchsorted(ids, q)
        idx_c = np.minimum(idx, max(len(ids) - 1, 0))
        ok = (idx < len(ids)) & (ids[idx_c] == q) if len(ids) else np.zeros(len(q), bool)
        return [int(rows[j]) if good else None for j, good in zip(idx_c, ok)]

    def by_doc_id(self, doc_id: int) -> Optional[CorpusDoc]:
        row = self._row_of_doc_id(int(doc_id))
        return None if row is None else self.rows([row])[0]

    def get(self, doc_id: int) -> CorpusDoc:
        doc = self.by_doc_id(doc_id)
        if doc is None:
            raise KeyError(f"doc_id {doc_id} is not in the corpus")
        return doc

    def get_many(self, doc_ids: Sequence[int]) -> list[CorpusDoc]:
        """Docs for many doc_ids (KeyError naming the first missing one)."""
        rows = self._rows_of_doc_ids(doc_ids)
        for d, r in zip(doc_ids, rows):
            if r is None:
                raise KeyError(f"doc_id {d} is not in the corpus")
        return self.rows(rows)  # type: ignore[arg-type]

    def _candidates(self, key: str, hashes: np.ndarray) -> list[np.ndarray]:
        hs, rows = self._keys[key]
        lo = np.searchsorted(hs, hashes, side="left")
        hi = np.searchsorted(hs, hashes, side="right")
        return [np.asarray(rows[a:b]) if h else np.zeros(0, np.int64) for a, b, h in zip(lo, hi, hashes)]

    def _match_title(self, row: int) -> str:
        """The title a lookup matches against: as harvested (LaTeX kept, like the release) when known."""
        return self._title_raw_col[row].as_py() or self._title_col[row].as_py() or ""

    def rows_by_titles(self, titles: Sequence[str]) -> list[Optional[int]]:
        keys = [title_key(t or "") for t in titles]
        cands = self._candidates("title", _hash(keys))
        flat = np.concatenate(cands) if cands else np.zeros(0, np.int64)
        stored = {r: title_key(self._match_title(r)) for r in np.unique(flat).tolist()} if flat.size else {}
        out: list[Optional[int]] = []
        for key, rows in zip(keys, cands):
            match = [r for r in rows.tolist() if stored.get(r) == key]
            out.append(max(match) if match else None)
        return out

    def doc_ids_by_titles(self, titles: Sequence[str]) -> list[Optional[int]]:
        """doc_id of each title by the paper's rule (None when unmatched). Vectorised; use for batches."""
        rows = self.rows_by_titles(titles)
        present = [r for r in rows if r is not None]
        doc_col = self.table.column("doc_id")
        ids = {r: doc_col[r].as_py() for r in present}
        return [ids[r] if r is not None else None for r in rows]

    def by_title(self, title: str) -> Optional[CorpusDoc]:
        (row,) = self.rows_by_titles([title])
        return None if row is None else self.rows([row])[0]

    def by_titles(self, titles: Sequence[str]) -> list[Optional[CorpusDoc]]:
        rows = self.rows_by_titles(titles)
        present = [r for r in rows if r is not None]
        docs = dict(zip(present, self.rows(present)))
        return [docs[r] if r is not None else None for r in rows]

    def _by_exact_key(self, key: str, value: Optional[str], column: str, normalise) -> Optional[CorpusDoc]:
        if not value:
            return None
        (rows,) = self._candidates(key, _hash([value]))
        for doc in reversed(self.rows(rows.tolist())):
            if normalise(getattr(doc, column)) == value:
                return doc
        return None

    def by_arxiv_id(self, arxiv_id: str) -> Optional[CorpusDoc]:
        """Doc for an arXiv id in any form ('2106.12135', 'arXiv:2106.12135v3', an abs URL)."""
        return self._by_exact_key("arxiv", _arxiv_key(arxiv_id), "arxiv_id", _arxiv_key)

    def by_arxiv_ids(self, arxiv_ids: Sequence[str]) -> list[Optional[CorpusDoc]]:
        return [self.by_arxiv_id(a) for a in arxiv_ids]

    def by_doi(self, doi: str) -> Optional[CorpusDoc]:
        return self._by_exact_key("doi", normalize_doi(doi or ""), "doi", lambda d: normalize_doi(d or ""))

    def texts(self, doc_ids: Sequence[int]) -> list[str]:
        """'title abstract' of each doc (the text that retrieval indexes)."""
        return [f"{d.title} {d.abstract}".strip() for d in self.get_many(doc_ids)]


def _cache_root(cache_dir: Optional[PathLike]) -> Path:
    if cache_dir:
        return Path(cache_dir)
    base = os.environ.get("SURGE_CACHE") or os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "surge_datasets")
    return Path(base)


def _file_fingerprint(path: Path) -> str:
    st = path.stat()
    return hashlib.sha1(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
