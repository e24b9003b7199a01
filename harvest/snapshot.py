"""Bulk import of the arXiv metadata snapshot (Kaggle ``arxiv-metadata-oai-snapshot.json``, JSON lines).

Each line is one paper: ``id``, ``authors``, ``authors_parsed`` ([keyname, forenames, suffix] per author),
``title``, ``abstract``, ``categories`` (space separated, primary first), ``doi``, ``journal-ref``,
``license``, ``versions`` ([{"version": "v1", "created": "Mon, 2 Apr 2007 19:18:42 GMT"}, ...]),
``update_date``. The file is read in blocks of whole lines (``block_bytes``, default 8 MiB); each block
is parsed by Arrow's JSON reader and normalised with Arrow compute kernels -- the same rules as
:func:`surge_datasets.harvest.normalize.corpus_row`, which handles, one record at a time, the rows the
kernels leave to it (text-mode LaTeX, category aliases, unusual ids or author lists) and whole blocks
Arrow cannot read (a malformed line: reported with its line number). Each block becomes one row group
of the current shard; a shard holds ``blocks_per_shard`` blocks (default 16, ~128 MiB of input) and
its commit records the byte offset after its last block, so memory stays bounded (small blocks also
keep the working set small, which matters on machines where fresh memory is slow to fault in) and a
killed import resumes after the last committed shard and writes exactly the shards an uninterrupted
import writes.
"""

from __future__ import annotations

import gzip
import io
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

try:
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover - stdlib fallback, slower
    import json

    _loads = json.loads

from .doc_ids import DocIdMap
from .normalize import corpus_row, display_abstract, display_title, in_archive, normalize_categories, split_id
from .store import CORPUS_DIR, CORPUS_SCHEMA, ShardStore, rows_to_table


class SnapshotError(ValueError):
    pass


def _open(path: Path) -> io.BufferedReader:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _authors(rec: dict) -> list[str]:
    parsed = rec.get("authors_parsed")
    if parsed:
        out = []
        for a in parsed:
            key = (a[0] if a else "") or ""
            fore = (a[1] if len(a) > 1 else "") or ""
            suffix = (a[2] if len(a) > 2 else "") or ""
            name = f"{fore} {key}" if fore else key
            out.append(f"{name} {suffix}".strip() if suffix else name.strip())
        return out
    raw = rec.get("authors") or ""
    return [a.strip() for a in raw.replace(" and ", ", ").split(",") if a.strip()]


def _version(v: dict) -> Optional[int]:
    tag = v.get("version") or ""
    return int(tag[1:]) if tag[:1] == "v" and tag[1:].isdigit() else None


def record_to_row(rec: dict) -> Optional[dict]:
    """One snapshot record to a corpus row (doc_id unset); None when it has no usable arXiv id."""
    arxiv_id, version = split_id(str(rec.get("id") or ""))
    if not arxiv_id:
        return None
    versions = rec.get("versions") or []
    if versions:
        version = _version(versions[-1]) or version
        published, updated = versions[0].get("created"), versions[-1].get("created")
    else:
        published = updated = rec.get("update_date")
    return corpus_row(
        arxiv_id=arxiv_id, version=version, title=rec.get("title") or "", authors=_authors(rec),
        abstract=rec.get("abstract") or "", categories=rec.get("categories") or "",
        published=published, updated=updated, doi=rec.get("doi"), journal_ref=rec.get("journal-ref"),
        license=rec.get("license"), source="snapshot",
    )


@dataclass
class SnapshotResult:
    rows: int
    skipped: int
    bad_lines: int
    shards: int
    resumed_from: int


# ------------------------------------------------------------------------------------ block reading

DEFAULT_BLOCK_BYTES = 8 * 2**20
DEFAULT_BLOCKS_PER_SHARD = 16
_PREFETCH = 1  # blocks queued beyond the busy workers
_JSON_SCHEMA = pa.schema([
    ("id", pa.string()), ("title", pa.string()), ("abstract", pa.string()), ("categories", pa.string()),
    ("doi", pa.string()), ("journal-ref", pa.string()), ("license", pa.string()),
    ("versions", pa.list_(pa.struct([("version", pa.string()), ("created", pa.string())]))),
    ("update_date", pa.string()), ("authors_parsed", pa.list_(pa.list_(pa.string()))), ("authors", pa.string()),
])
_FAST_ID = r"^(\d{4}\.\d{4,5}|[a-z]+(-[a-z]+)*/\d{7})$"
# the whitespace str.split() splits on, for RE2
_WS_CLASS = r"[\s\x{0B}\x{1C}-\x{1F}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]"
_ODD_WS = r"  |[\t\r\f\x{0B}\x{1C}-\x{1F}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]"
# a LaTeX hint outside $..$ math: what stays after removing the \$[^$]*\$ pairs left to right holds one
# (pairs are consecutive $ signs from the first; an unpaired last $ leaves the text after it outside)
_HINT_OUTSIDE_MATH = r"^(?:[^$\\{}~]|\$[^$]*\$)*(?:[\\{}~]|\$[^$]*[\\{}~][^$]*$)"
_ABSTRACT_FLAG = r"  |[\t\r\f\x0b\x1c-\x1f\\{}~]|[^\x00-\x7f]"


def iter_blocks(path: Path, offset: int, block_bytes: int) -> Iterator[tuple[int, bytes]]:
    """(end offset, bytes) of consecutive blocks of whole lines from ``offset``.

    A block is the ``block_bytes`` starting at its start offset, cut after the last newline (a longer
    line is read to its end), so the blocks depend on nothing but the start: a resumed import cuts
    exactly where an uninterrupted one does.
    """
    with _open(path) as fh:
        if offset:
            fh.seek(offset)
        pos = offset
        carry = b""
        while True:
            need = block_bytes - len(carry)
            chunk = fh.read(need)
            data = carry + chunk
            if not data:
                return
            if len(chunk) < need:  # end of file: the rest is the last block
                yield pos + len(data), data
                return
            cut = data.rfind(b"\n")
            if cut < 0:
                data += fh.readline()
                block, carry = data, b""
            else:
                block, carry = data[:cut + 1], data[cut + 1:]
            pos += len(block)
            yield pos, block


def _newlines_to_spaces(arr: pa.Array) -> pa.Array:
    return pc.utf8_trim_whitespace(pc.replace_substring(arr, pattern="\n", replacement=" "))


def _collapse(arr: pa.Array, candidates: Optional[np.ndarray] = None, prepared: bool = False) -> pa.Array:
    """" ".join(s.split()) for every string: literal kernels first, the regex only where still needed.

    ``candidates`` (optional) marks the rows that may hold odd whitespace once newlines are spaces and
    the ends trimmed (``prepared``: ``arr`` already is so); the others are not scanned.
    """
    if not prepared:
        arr = _newlines_to_spaces(arr)
    rows = _matching_rows(arr, _ODD_WS, candidates)
    if not len(rows):
        return arr
    mask = np.zeros(len(arr), dtype=bool)
    mask[rows] = True
    fixed = pc.replace_substring_regex(arr.filter(pa.array(mask)), pattern=f"{_WS_CLASS}+", replacement=" ")
    return pc.replace_with_mask(arr, pa.array(mask), pc.utf8_trim_whitespace(fixed))


def _matching_rows(arr: pa.Array, pattern: str, candidates: Optional[np.ndarray] = None) -> np.ndarray:
    """Indices of the rows of ``arr`` (only ``candidates``, when given) that match ``pattern`` (RE2)."""
    idx = np.flatnonzero(candidates) if candidates is not None else np.arange(len(arr))
    if not len(idx):
        return idx
    sub = arr.take(pa.array(idx)) if candidates is not None else arr
    hit = pc.fill_null(pc.match_substring_regex(sub, pattern=pattern), False).to_numpy(zero_copy_only=False)
    return idx[hit]


def _needs_latex(arr: pa.Array, candidates: Optional[np.ndarray] = None) -> np.ndarray:
    """Rows with LaTeX outside $..$ math (the only rows whose display text differs)."""
    out = np.zeros(len(arr), dtype=bool)
    out[_matching_rows(arr, _HINT_OUTSIDE_MATH, candidates)] = True
    return out


def _no_nulls(arr: pa.Array, value: str = "") -> pa.Array:
    return pc.fill_null(arr, value) if arr.null_count else arr


def _per_row_any(flags: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    cs = np.concatenate([[0], np.cumsum(flags, dtype=np.int64)])
    return (cs[offsets[1:]] - cs[offsets[:-1]]) > 0


def _iso_seconds(ts: pa.Array) -> pa.Array:
    """timestamp[s] to "YYYY-MM-DDTHH:MM:SSZ" (a cast, ~5x faster than pc.strftime)."""
    text = pc.replace_substring(ts.cast(pa.string()), pattern=" ", replacement="T", max_replacements=1)
    return pc.binary_join_element_wise(text, "Z", "")


def _vector_rows(t: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """Normalised rows for the records the kernels can do, and the mask of those left to Python."""
    ids = t.column("id").combine_chunks()
    versions = t.column("versions").combine_chunks()
    ap = t.column("authors_parsed").combine_chunks()
    cats = t.column("categories").combine_chunks()
    slow = ~pc.fill_null(pc.match_substring_regex(ids, pattern=_FAST_ID), False).to_numpy(zero_copy_only=False)
    slow |= pc.fill_null(pc.list_value_length(versions), 0).to_numpy(zero_copy_only=False) == 0
    slow |= pc.is_null(ap).to_numpy(zero_copy_only=False)
    slow |= pc.is_null(cats).to_numpy(zero_copy_only=False)
    # author lists: exactly [keyname, forenames, suffix], no nulls, no LaTeX
    ap_off = np.asarray(ap.offsets)
    inner = ap.flatten()
    in_off = np.asarray(inner.offsets)
    slow |= _per_row_any((np.diff(in_off) != 3), ap_off - ap_off[0])
    names = inner.flatten()
    bad_name = pc.is_null(names).to_numpy(zero_copy_only=False)
    name_owner = np.repeat(np.arange(len(inner)), np.diff(in_off))
    bad_inner = np.zeros(len(inner), dtype=bool)
    if bad_name.any():
        bad_inner[name_owner[bad_name]] = True
    slow |= _per_row_any(bad_inner, ap_off - ap_off[0])
    # versions: only the first (published) and the last (version, updated) are used, as in record_to_row
    flat_v = versions.flatten()
    v_off = np.asarray(versions.offsets) - np.asarray(versions.offsets)[0]
    if len(flat_v):
        top = len(flat_v) - 1
        first_i = np.minimum(v_off[:-1], top)      # rows without versions are slow already
        last_i = np.minimum(np.maximum(v_off[1:] - 1, 0), top)
        vlast_all = flat_v.field("version").take(pa.array(last_i))
        slow |= ~pc.fill_null(pc.match_substring_regex(vlast_all, pattern=r"^v\d+$"), False).to_numpy(zero_copy_only=False)
        need = np.unique(np.concatenate([first_i, last_i]))   # each date string parsed once
        created = pc.strptime(flat_v.field("created").take(pa.array(need)), format="%a, %d %b %Y %H:%M:%S GMT",
                              unit="s", error_is_null=True)
        published_all = created.take(pa.array(np.searchsorted(need, first_i)))
        updated_all = created.take(pa.array(np.searchsorted(need, last_i)))
        slow |= pc.is_null(published_all).to_numpy(zero_copy_only=False)
        slow |= pc.is_null(updated_all).to_numpy(zero_copy_only=False)

    good = pa.array(~slow)
    g = t.filter(good)
    if g.num_rows == 0:
        return pa.table({f.name: pa.array([], f.type) for f in CORPUS_SCHEMA}), slow
    published_ts, updated_ts = published_all.filter(good), updated_all.filter(good)
    version = pc.cast(pc.utf8_slice_codeunits(vlast_all.filter(good), start=1), pa.int64())
    # authors: "forenames keyname suffix"
    ap = g.column("authors_parsed").combine_chunks()
    outer = np.asarray(ap.offsets) - np.asarray(ap.offsets)[0]
    vals = ap.flatten().flatten()
    key, fore, suffix = vals[0::3], vals[1::3], vals[2::3]
    name = pc.if_else(pc.not_equal(fore, ""), pc.binary_join_element_wise(fore, key, " "), key)
    name = pc.utf8_trim_whitespace(pc.if_else(pc.not_equal(suffix, ""), pc.binary_join_element_wise(name, suffix, " "), name))
    authors = pa.ListArray.from_arrays(pa.array(outer, pa.int32()), name)
    # categories: few distinct strings per block; canonical names, de-duplicated, primary first (Python, per distinct)
    enc = pc.dictionary_encode(g.column("categories").combine_chunks())
    norm = [normalize_categories(c) for c in enc.dictionary.to_pylist()]
    categories = pa.array([c for c, _ in norm], pa.list_(pa.string())).take(enc.indices)
    primary = pa.array([p for _, p in norm], pa.string()).take(enc.indices)
    # titles: as harvested unless text-mode LaTeX (then Python, raw kept)
    title = _no_nulls(g.column("title").combine_chunks())
    title_raw = pa.nulls(g.num_rows, pa.string())
    hint = _needs_latex(title)
    if hint.any():
        raw = title.filter(pa.array(hint)).to_pylist()
        shown = [display_title(x) for x in raw]
        title = pc.replace_with_mask(title, pa.array(hint), pa.array([a for a, _ in shown], pa.string()))
        title_raw = pc.replace_with_mask(title_raw, pa.array(hint), pa.array([b for _, b in shown], pa.string()))
    abstract_in = _no_nulls(g.column("abstract").combine_chunks())
    # one scan flags the abstracts that may need whitespace or LaTeX work; only those are looked at again
    pre = _newlines_to_spaces(abstract_in)
    flagged = pc.fill_null(pc.match_substring_regex(pre, pattern=_ABSTRACT_FLAG), False).to_numpy(zero_copy_only=False)
    abstract = _collapse(pre, flagged, prepared=True)
    abstract_raw = pa.nulls(g.num_rows, pa.string())
    hint = _needs_latex(abstract, flagged)
    if hint.any():
        mask = pa.array(hint)
        raws = abstract_in.filter(mask).to_pylist()
        shown = [display_abstract(x) for x in raws]
        abstract = pc.replace_with_mask(abstract, mask, pa.array([a for a, _ in shown], pa.string()))
        abstract_raw = pc.replace_with_mask(abstract_raw, mask, pa.array([b for _, b in shown], pa.string()))
    doi = pc.struct_field(pc.extract_regex(g.column("doi").combine_chunks(), pattern=r"(?P<d>10\.\d{4,9}/\S+)"), [0])
    doi = pc.utf8_lower(pc.utf8_rtrim(doi, characters=".,;)]}"))
    jr = _collapse(g.column("journal-ref").combine_chunks())
    jr = pc.if_else(pc.equal(jr, ""), pa.nulls(len(jr), pa.string()), jr)
    lic = g.column("license").combine_chunks()
    lic = pc.if_else(pc.equal(lic, ""), pa.nulls(len(lic), pa.string()), lic)
    cols = {
        "doc_id": pa.array(np.full(g.num_rows, -1, dtype=np.int64)),
        "arxiv_id": g.column("id").combine_chunks(),
        "arxiv_version": version,
        "title": title,
        "authors": authors,
        "abstract": abstract,
        "categories": categories,
        "primary_category": primary,
        "published": _iso_seconds(published_ts),
        "updated": _iso_seconds(updated_ts),
        "year": pc.cast(pc.year(published_ts), pa.int64()),
        "doi": doi,
        "journal_ref": jr,
        "license": lic,
        "title_raw": title_raw,
        "abstract_raw": abstract_raw,
        "source": pa.array(["snapshot"] * g.num_rows, pa.string()),
    }
    return pa.table({f.name: cols[f.name].cast(f.type) for f in CORPUS_SCHEMA}, schema=CORPUS_SCHEMA), slow


def _python_rows(lines: list[bytes], line_base: int, label: str, errors: list[str]) -> tuple[list[dict], int]:
    rows, bad = [], 0
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = _loads(line)
        except ValueError as exc:
            _bad(errors, label, line_base + i + 1, f"{type(exc).__name__}: {exc}")
            bad += 1
            continue
        row = _checked_row(rec, label, line_base + i + 1, errors)
        if row is None:
            bad += 1
            continue
        rows.append(row)
    return rows, bad


def _bad(errors: list, label: str, line_no: int, message: str) -> None:
    """Record a bad line (the first 100 of a job are kept, with file and line number)."""
    if len(errors) < 100:
        errors.append(f"{label}:{line_no}: {message}")
    return None


def _checked_row(rec: dict, label: str, line_no: int, errors: list) -> Optional[dict]:
    """record_to_row, with a bad record noted in ``errors`` instead of raised."""
    try:
        row = record_to_row(rec)
    except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
        return _bad(errors, label, line_no, f"{type(exc).__name__}: {exc}")
    if row is None:
        return _bad(errors, label, line_no, f"no arXiv id in {str(rec.get('id'))[:40]!r}")
    return row


def block_to_table(block: bytes, line_base: int = 0, label: str = "<snapshot>", errors: Optional[list] = None
                   ) -> tuple[pa.Table, int]:
    """Normalised CorpusDoc rows (doc_id -1) of a block of JSON lines, in line order, and the bad-line count."""
    errors = errors if errors is not None else []
    try:
        t = pj.read_json(io.BytesIO(block), read_options=pj.ReadOptions(block_size=8 * 2**20),
                         parse_options=pj.ParseOptions(explicit_schema=_JSON_SCHEMA, unexpected_field_behavior="ignore"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        t = None
    expected = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
    if t is not None and t.num_rows != expected:
        expected = sum(1 for ln in block.split(b"\n") if ln.strip())  # blank lines: Arrow skips them
    if t is None or t.num_rows != expected:
        rows, bad = [], 0
        for no, ln in enumerate(block.split(b"\n"), line_base + 1):
            if ln.strip():
                r, b = _python_rows([ln], no - 1, label, errors)
                rows.extend(r)
                bad += b
        return rows_to_table(rows), bad
    fast, slow = _vector_rows(t)
    if not slow.any():
        return fast, 0
    slow_idx = np.flatnonzero(slow)
    py_rows, py_idx, bad = [], [], 0
    for i, rec in zip(slow_idx, t.take(pa.array(slow_idx)).to_pylist()):
        row = _checked_row(rec, label, line_base + i + 1, errors)
        if row is None:
            bad += 1
            continue
        py_rows.append(row)
        py_idx.append(i)
    order = np.concatenate([np.flatnonzero(~slow), np.asarray(py_idx, dtype=np.int64)])
    both = pa.concat_tables([fast, rows_to_table(py_rows)])
    return both.take(pa.array(np.argsort(order, kind="stable"))), bad


def _archive_mask(categories: pa.Array, category: str) -> pa.Array:
    joined = pc.binary_join(categories, " ")
    enc = pc.dictionary_encode(joined).combine_chunks() if isinstance(joined, pa.ChunkedArray) else pc.dictionary_encode(joined)
    keep = pa.array([in_archive((d or "").split(), category) for d in enc.dictionary.to_pylist()])
    return pc.fill_null(keep.take(enc.indices), False)


def _process_block(block: bytes, line_base: int, label: str, category: Optional[str]) -> tuple[pa.Table, int, int, list]:
    errors: list[str] = []
    table, bad = block_to_table(block, line_base, label, errors)
    skipped = 0
    if category and table.num_rows:
        mask = _archive_mask(table.column("categories"), category)
        before = table.num_rows
        table = table.filter(mask)
        skipped = before - table.num_rows
    return table, bad, skipped, errors


def import_snapshot(path: os.PathLike | str, out: os.PathLike | str, *, job: str = "snapshot",
                    category: Optional[str] = None, block_bytes: int = DEFAULT_BLOCK_BYTES,
                    blocks_per_shard: int = DEFAULT_BLOCKS_PER_SHARD, workers: int = 2,
                    restart: bool = False, progress: Optional[Callable[[int], None]] = None) -> SnapshotResult:
    """Import a snapshot file into ``out/corpus/<job>/``; rerunning resumes after the last committed shard.

    ``category`` keeps only papers of that archive or category (e.g. ``cs``), aliases included;
    ``progress`` is called with the bytes consumed. ``workers`` blocks are normalised at once (Arrow
    kernels run outside the GIL); ids are assigned and blocks written strictly in file order, so the
    output does not depend on ``workers``. Memory: about ``(workers + 1) * 10 * block_bytes``.
    """
    if block_bytes < 1 or blocks_per_shard < 1:
        raise ValueError("block_bytes and blocks_per_shard must be positive")
    path = Path(path)
    if not path.exists():
        raise SnapshotError(f"{path}: no such file")
    params = {"source": "snapshot", "file": path.name, "size": path.stat().st_size, "category": category,
              "block_bytes": block_bytes, "blocks_per_shard": blocks_per_shard}
    store = ShardStore.open(Path(out) / CORPUS_DIR / job, params, restart=restart)
    cursor = store.cursor or {"offset": 0, "line": 0}
    resumed_from = cursor["offset"]
    if store.done:
        return SnapshotResult(store.n_rows, store.stats.get("skipped", 0), store.stats.get("bad_lines", 0),
                              len(store.shard_paths()), resumed_from)
    ids = DocIdMap.load(out)
    stats = {"skipped": store.stats.get("skipped", 0), "bad_lines": store.stats.get("bad_lines", 0),
             "errors": list(store.stats.get("errors", []))}

    def numbered_blocks() -> Iterator[tuple[int, bytes, int, int]]:
        line_no = cursor["line"]
        for end, block in iter_blocks(path, cursor["offset"], block_bytes):
            after = line_no + block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
            yield end, block, line_no, after
            line_no = after

    blocks = numbered_blocks()
    pending: deque = deque()
    shard, in_shard = None, 0
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:

        def submit_next() -> None:
            nxt = next(blocks, None)
            if nxt is not None:
                end, block, base, after = nxt
                pending.append((end, after, len(block), pool.submit(_process_block, block, base, path.name, category)))

        for _ in range(max(1, workers) + _PREFETCH):
            submit_next()
        try:
            while pending:
                end, after, size, future = pending.popleft()
                table, bad, skipped, errors = future.result()
                submit_next()
                stats["bad_lines"] += bad
                stats["skipped"] += skipped
                stats["errors"] = (stats["errors"] + errors)[:100]
                if table.num_rows:
                    titles = (pc.coalesce(table.column("title_raw"), table.column("title")).to_pylist()
                              if ids.needs_titles else None)
                    assigned = ids.assign_many(table.column("arxiv_id").to_pylist(), titles)
                    table = table.set_column(0, CORPUS_SCHEMA.field("doc_id"), pa.array(assigned, pa.int64()))
                shard = shard or store.shard_writer()
                shard.write(table)
                in_shard += 1
                if in_shard == blocks_per_shard or not pending:
                    store.commit(shard, {"offset": end, "line": after}, stats=dict(stats))
                    shard, in_shard = None, 0
                if progress:
                    progress(size)
        finally:
            if shard is not None:  # an error or an interrupt: the uncommitted blocks are redone on resume
                shard.discard()
    store.finish(stats=dict(stats))
    return SnapshotResult(store.n_rows, stats["skipped"], stats["bad_lines"], len(store.shard_paths()), resumed_from)
