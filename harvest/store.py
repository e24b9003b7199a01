"""Resumable harvest output: atomic Parquet shards plus a JSON state file, and the readers of it.

Layout of a harvest folder (see ``harvest/README.md``)::

    <out>/corpus/<job>/shard-000000.parquet   CorpusDoc rows (arrow_schema(CorpusDoc)), one shard per commit
    <out>/corpus/<job>/state.json             committed shards, resume cursor, parameters, counts
    <out>/corpus/doc_ids.base.parquet         optional: ids of an official release (arxiv_id, title_key, doc_id)
    <out>/surveys/surveys.jsonl               Survey records (model_dump JSON lines)
    <out>/surveys/queries.jsonl               Query records

A commit writes the shard (temp file + ``os.replace``) and then the state (same way). The state is the
truth: on reopen, shard files it does not list (a commit cut short by ``kill -9``) are removed and the
job resumes from the state's cursor, so a resumed run writes exactly the shards an uninterrupted run
writes. The same paper may be present in several shards or jobs (a newer version, a re-harvest): the
readers keep one row per arXiv id -- the highest version, then the latest ``updated``, then the last
committed -- and drop ids an OAI source reported deleted after that row.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from surge_datasets.schemas import CorpusDoc, Query, Survey, arrow_schema, from_row

STATE_FILE = "state.json"
SHARD_PATTERN = "shard-{:06d}.parquet"
CORPUS_DIR, SURVEYS_DIR = "corpus", "surveys"
SURVEYS_FILE, QUERIES_FILE = "surveys.jsonl", "queries.jsonl"
CORPUS_SCHEMA = arrow_schema(CorpusDoc)
FORMAT_VERSION = 1


class StoreError(RuntimeError):
    """A harvest folder is inconsistent or was started with other parameters."""


# --------------------------------------------------------------------------------------- atomic writes

def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, json.dumps(obj, indent=1, ensure_ascii=False, sort_keys=True).encode("utf-8"))


#: corpus columns worth dictionary-encoding (few distinct values); free text is not
DICTIONARY_COLUMNS = ["categories", "primary_category", "license", "source", "year"]
#: corpus columns with min/max statistics (those a reader filters on); free text gets none
STATISTICS_COLUMNS = ["doc_id", "arxiv_id", "arxiv_version", "primary_category", "published", "updated", "year", "source"]


def _parquet_options(schema: pa.Schema, use_dictionary: bool | list[str] = True) -> dict:
    if schema.equals(CORPUS_SCHEMA):
        return {"use_dictionary": DICTIONARY_COLUMNS, "write_statistics": STATISTICS_COLUMNS}
    return {"use_dictionary": use_dictionary}


def atomic_write_table(path: Path, table: pa.Table, *, use_dictionary: bool | list[str] = True) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd", **_parquet_options(table.schema, use_dictionary))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_jsonl(path: Path, records: Iterable[Any]) -> int:
    """Write pydantic records (or dicts) as JSON lines, atomically; returns the count."""
    lines = []
    for r in records:
        obj = r.model_dump(mode="json") if hasattr(r, "model_dump") else r
        lines.append(json.dumps(obj, ensure_ascii=False))
    atomic_write_bytes(Path(path), ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
    return len(lines)


def rows_to_table(rows: Sequence[dict]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=CORPUS_SCHEMA)


# ------------------------------------------------------------------------------------------- the store

class ShardWriter:
    """A shard written piece by piece (one Parquet row group per :meth:`write`) into a temp file of the
    job folder; :meth:`ShardStore.commit` makes it a shard. Memory stays at one piece, not one shard.
    A writer never committed leaves only a ``.tmp`` file, which the next :meth:`ShardStore.open` removes."""

    def __init__(self, folder: Path, schema: pa.Schema):
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".shard.", suffix=".tmp")
        os.close(fd)
        self.path, self.schema, self.rows = Path(tmp), schema, 0
        self._writer: Optional[pq.ParquetWriter] = None

    def write(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, self.schema, compression="zstd", **_parquet_options(self.schema))
        self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> None:
        """Finish the file and flush it to disk (before it is renamed into place)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        with open(self.path, "rb+") as fh:
            os.fsync(fh.fileno())

    def discard(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self.path.unlink(missing_ok=True)


class ShardStore:
    """One harvest job's folder: committed shards, a cursor to resume from, and counters."""

    def __init__(self, folder: Path, state: dict):
        self.folder = Path(folder)
        self.state = state

    @classmethod
    def open(cls, folder: os.PathLike | str, params: dict, *, restart: bool = False) -> "ShardStore":
        """Open (or create) a job folder. Parameters must match those of an existing job unless ``restart``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        state_path = folder / STATE_FILE
        if restart:
            for p in folder.glob("shard-*.parquet"):
                p.unlink()
            state_path.unlink(missing_ok=True)
        if state_path.exists():
            state = json.loads(state_path.read_text("utf-8"))
            if state.get("params") != params:
                raise StoreError(
                    f"{folder}: this job was started with {state.get('params')}, not {params}; "
                    "use another --out/--job or --restart")
        else:
            state = {"format": FORMAT_VERSION, "params": params, "shards": [], "cursor": None, "done": False,
                     "stats": {}}
        store = cls(folder, state)
        store._remove_orphans()
        if not state_path.exists():
            atomic_write_json(state_path, state)
        return store

    def _remove_orphans(self) -> None:
        listed = {s["file"] for s in self.state["shards"] if s.get("file")}
        for p in self.folder.glob("shard-*.parquet"):
            if p.name not in listed:
                p.unlink()
        for p in self.folder.glob(".*.tmp"):
            p.unlink()

    # -- reading
    @property
    def cursor(self) -> Any:
        return self.state.get("cursor")

    @property
    def done(self) -> bool:
        return bool(self.state.get("done"))

    @property
    def stats(self) -> dict:
        return self.state.setdefault("stats", {})

    @property
    def n_rows(self) -> int:
        return sum(s.get("rows", 0) for s in self.state["shards"])

    def shard_paths(self) -> list[Path]:
        return [self.folder / s["file"] for s in self.state["shards"] if s.get("file")]

    # -- writing
    def shard_writer(self, schema: pa.Schema = CORPUS_SCHEMA) -> ShardWriter:
        """A shard to fill piece by piece and then hand to :meth:`commit`."""
        return ShardWriter(self.folder, schema)

    def commit(self, table: Optional[pa.Table | Sequence[dict] | ShardWriter], cursor: Any, *,
               deleted: Sequence[str] = (), stats: Optional[dict] = None, done: bool = False) -> None:
        """Make one unit of work durable: its rows (a table, rows, or a filled :class:`ShardWriter`),
        the cursor after it, deletions and counters."""
        entry: dict[str, Any] = {}
        index = len(self.state["shards"])
        name = SHARD_PATTERN.format(index)
        if isinstance(table, ShardWriter):
            if table.rows:
                table.close()
                os.replace(table.path, self.folder / name)
                entry = {"file": name, "rows": table.rows}
            else:
                table.discard()
        else:
            if table is not None and not isinstance(table, pa.Table):
                table = rows_to_table(table)
            if table is not None and table.num_rows:
                atomic_write_table(self.folder / name, table)
                entry = {"file": name, "rows": table.num_rows}
        if deleted:
            entry["deleted"] = sorted(set(deleted))
        if entry:
            self.state["shards"].append(entry)
        self.state["cursor"] = cursor
        if stats:
            self.stats.update(stats)
        self.state["done"] = done
        atomic_write_json(self.folder / STATE_FILE, self.state)

    def finish(self, stats: Optional[dict] = None) -> None:
        self.commit(None, self.cursor, stats=stats, done=True)


# ------------------------------------------------------------------------------------------- readers

def corpus_root(folder: os.PathLike | str) -> Path:
    """The ``corpus/`` folder of a harvest folder (or the folder itself when it is one)."""
    folder = Path(folder)
    if (folder / CORPUS_DIR).is_dir():
        return folder / CORPUS_DIR
    return folder


def job_folders(folder: os.PathLike | str) -> list[Path]:
    """Job folders (those with a state file) under a harvest folder, sorted by name; a job folder itself works too."""
    root = corpus_root(folder)
    if (root / STATE_FILE).exists():
        return [root]
    return sorted(p.parent for p in root.glob(f"*/{STATE_FILE}"))


@dataclass(frozen=True)
class _Shard:
    path: Path
    position: int  # global commit order across jobs (job name order, then shard order)


def _committed(folder: os.PathLike | str) -> tuple[list[_Shard], dict[str, int]]:
    shards: list[_Shard] = []
    deleted: dict[str, int] = {}
    position = 0
    for job in job_folders(folder):
        state = json.loads((job / STATE_FILE).read_text("utf-8"))
        for entry in state["shards"]:
            if entry.get("file"):
                shards.append(_Shard(job / entry["file"], position))
            for arxiv_id in entry.get("deleted", ()):
                deleted[arxiv_id] = position
            position += 1
    return shards, deleted


def _winners(shards: list[_Shard], deleted: dict[str, int]) -> dict[int, "set[int] | None"]:
    """For each shard position, the row indices that survive dedup (None = all rows)."""
    best: dict[str, tuple] = {}
    for shard in shards:
        t = pq.read_table(shard.path, columns=["arxiv_id", "arxiv_version", "updated", "doc_id"])
        ids = t.column("arxiv_id").to_pylist()
        versions = t.column("arxiv_version").to_pylist()
        updated = t.column("updated").to_pylist()
        doc_ids = t.column("doc_id").to_pylist()
        for row, (aid, v, u, d) in enumerate(zip(ids, versions, updated, doc_ids)):
            key = aid if aid else f"#doc{d}"
            rank = (v or 0, u or "", shard.position, row)
            old = best.get(key)
            if old is None or rank > old:
                best[key] = rank
    keep: dict[int, set[int]] = {}
    for key, (_, _, position, row) in best.items():
        if key in deleted and deleted[key] >= position:
            continue
        keep.setdefault(position, set()).add(row)
    return keep


def iter_harvested_batches(folder: os.PathLike | str) -> Iterator[pa.RecordBatch]:
    """Deduplicated corpus rows of a harvest folder as Arrow record batches (CorpusDoc schema)."""
    shards, deleted = _committed(folder)
    keep = _winners(shards, deleted)
    for shard in shards:
        rows = keep.get(shard.position)
        if not rows:
            continue
        table = pq.read_table(shard.path, schema=CORPUS_SCHEMA)
        if len(rows) != table.num_rows:
            table = table.take(pa.array(sorted(rows), type=pa.int64()))
        yield from table.to_batches()


def iter_harvested_corpus(folder: os.PathLike | str) -> Iterator[CorpusDoc]:
    """The harvested corpus, one CorpusDoc per arXiv id (newest version), in commit order."""
    for batch in iter_harvested_batches(folder):
        for row in batch.to_pylist():
            yield from_row(CorpusDoc, row)


def _surveys_file(folder: os.PathLike | str, name: str) -> Path:
    folder = Path(folder)
    for candidate in (folder / SURVEYS_DIR / name, folder / name):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"{folder}: no {SURVEYS_DIR}/{name} (run `surge harvest surveys` first)")


def _iter_jsonl(path: Path, model):
    from surge_datasets.schemas import validate

    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                yield validate(model, json.loads(line), source=f"{path}:{lineno}", index=lineno - 1)


def iter_harvested_surveys(folder: os.PathLike | str) -> Iterator[Survey]:
    """Survey records of a harvest folder (``surveys/surveys.jsonl``)."""
    return _iter_jsonl(_surveys_file(folder, SURVEYS_FILE), Survey)


def iter_harvested_queries(folder: os.PathLike | str) -> Iterator[Query]:
    """Query records of a harvest folder (``surveys/queries.jsonl``)."""
    return _iter_jsonl(_surveys_file(folder, QUERIES_FILE), Query)
