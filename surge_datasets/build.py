"""``surge build``: run the builders and lay out each dataset as a complete Hub dataset folder.

Output (``out/``)::

    corpus/   README.md  data/train-00000-of-0000N.parquet ...  store/ (local memory-mapped index, not uploaded)
    surveys/  README.md  data/test-00000-of-00001.parquet
    queries/  README.md  data/train-*.parquet  data/test-*.parquet
    rejects/  <name>.jsonl   (only with --skip-invalid and only when something was rejected)

Everything is written into a temporary folder next to ``out`` and moved into place at the end, so an
interrupted build leaves the previous output (or nothing) — never half a dataset.
"""

from __future__ import annotations

import collections
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from datasets.exceptions import DatasetGenerationError
from huggingface_hub import DatasetCard, DatasetCardData

from .builders import BUILDERS
from .builders._config import CITATION
from .builders.queries import SPLIT_SEED
from .cards import template_path
from .corpus import _commit_dir, write_store
from .schemas import RECORD_TYPES, from_row

SHARD_BYTES = 256 * 1024 * 1024
PRETTY = {"corpus": "SurGE corpus", "surveys": "SurGE ground-truth surveys", "queries": "SurGE retrieval queries"}
SIZE = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")]


@dataclass
class BuildReport:
    out: Path
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    stats: dict[str, dict] = field(default_factory=dict)
    rejects: dict[str, int] = field(default_factory=dict)


def _size_category(n: int) -> str:
    return next((label for limit, label in SIZE if n < limit), "n>10M")


def _write_shards(table: pa.Table, folder: Path, split: str) -> list[Path]:
    n = max(1, math.ceil(table.nbytes / SHARD_BYTES))
    rows = math.ceil(table.num_rows / n) if table.num_rows else 0
    (folder / "data").mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = folder / "data" / f"{split}-{i:05d}-of-{n:05d}.parquet"
        part = table.slice(i * rows, rows) if rows else table
        pq.write_table(part, path, compression="zstd", row_group_size=50_000, use_content_defined_chunking=True)
        paths.append(path)
    return paths


def corpus_stats(table: pa.Table) -> dict:
    years, title_words, abstract_words = [], 0, 0
    cats: collections.Counter = collections.Counter()
    sources: collections.Counter = collections.Counter()
    with_arxiv = with_doi = 0
    for batch in table.to_batches(max_chunksize=50_000):
        cols = batch.to_pydict()
        years.extend(y for y in cols["year"] if y is not None)
        title_words += sum(len((t or "").split()) for t in cols["title"])
        abstract_words += sum(len((a or "").split()) for a in cols["abstract"])
        cats.update(c for c in cols["primary_category"] if c)
        sources.update(cols["source"])
        with_arxiv += sum(1 for a in cols["arxiv_id"] if a)
        with_doi += sum(1 for d in cols["doi"] if d)
    n = max(table.num_rows, 1)
    return {
        "num_docs": table.num_rows, "with_arxiv_id": with_arxiv, "with_doi": with_doi,
        "year_min": min(years) if years else None, "year_max": max(years) if years else None,
        "mean_abstract_words": abstract_words / n, "mean_title_words": title_words / n,
        "top_categories": cats.most_common(10), "sources": dict(sources),
    }


def survey_stats(table: pa.Table) -> dict:
    surveys = [from_row(RECORD_TYPES["surveys"], r) for r in table.to_pylist()]
    depths = [max((s.level for s in sv.structure), default=0) for sv in surveys]
    nodes = [len(sv.structure) for sv in surveys]
    cites = [len(sv.all_cites) for sv in surveys]
    years = [sv.year for sv in surveys if sv.year]
    n = max(len(surveys), 1)
    return {
        "num_surveys": len(surveys), "mean_depth": sum(depths) / n, "max_depth": max(depths, default=0),
        "mean_nodes": sum(nodes) / n, "max_nodes": max(nodes, default=0), "mean_citations": sum(cites) / n,
        "year_min": min(years, default=None), "year_max": max(years, default=None),
    }


def query_stats(tables: dict[str, pa.Table]) -> dict:
    rows = [r for t in tables.values() for r in t.select(["cites", "cite_extract_rate", "survey_id"]).to_pylist()]
    n = max(len(rows), 1)
    rates = [r["cite_extract_rate"] for r in rows if r["cite_extract_rate"] is not None]
    return {
        "splits": {k: t.num_rows for k, t in tables.items()}, "split_seed": SPLIT_SEED,
        "mean_cites": sum(len(r["cites"]) for r in rows) / n,
        "mean_extract_rate": sum(rates) / max(len(rates), 1),
        "linked_to_survey": sum(1 for r in rows if r["survey_id"] is not None),
    }


def render_card(name: str, folder: Path, info: datasets.DatasetInfo, splits: dict[str, int], stats: dict, *,
                repo_id: str, is_sample: bool = False, split_bytes: Optional[dict[str, int]] = None) -> DatasetCard:
    split_bytes = split_bytes or {}
    split_info = datasets.SplitDict()
    for split, n in splits.items():
        split_info.add(datasets.SplitInfo(name=split, num_examples=n, num_bytes=split_bytes.get(split, 0)))
    # Sizes matter beyond display: datasets 5 keys its cache of a local folder on this YAML (not on the files),
    # so two builds with identical YAML would share a stale cache; the Parquet sizes tell builds apart.
    download_size = sum(p.stat().st_size for p in (folder / "data").glob("*.parquet"))
    yaml_info = datasets.DatasetInfo(features=info.features, splits=split_info, download_size=download_size,
                                     dataset_size=sum(split_bytes.values()) or None)._to_yaml_dict()
    total = sum(splits.values())
    card_data = DatasetCardData(
        license=info.license,
        pretty_name=PRETTY[name] + (" (sample)" if is_sample else ""),
        language=["en"],
        size_categories=[_size_category(total)],
        task_categories=["text-retrieval", "text-generation"] if name != "corpus" else ["text-retrieval"],
        tags=["scientific-surveys", "arxiv", "surge", "citation-evaluation"] + (["sample"] if is_sample else []),
        configs=[{"config_name": "default", "data_files": [{"split": s, "path": f"data/{s}-*.parquet"} for s in splits]}],
        dataset_info=yaml_info,
    )
    model = RECORD_TYPES[name]
    fields = [(k, f.description or "") for k, f in model.model_fields.items()]
    card = DatasetCard.from_template(
        card_data, template_path=str(template_path(name)), pretty_name=card_data.pretty_name, repo_id=repo_id,
        stats=stats, fields=fields, citation=CITATION, is_sample=is_sample,
    )
    tmp = folder / ".README.md.tmp"
    tmp.write_text(str(card), encoding="utf-8")
    os.replace(tmp, folder / "README.md")
    return card


def build(input_dir: os.PathLike, out: os.PathLike, *, source: str = "official", skip_invalid: bool = False,
          names: tuple[str, ...] = ("corpus", "surveys", "queries"), org: str = "surge", is_sample: bool = False,
          cache_dir: Optional[os.PathLike] = None) -> BuildReport:
    """Build the Hub dataset folders from the release (``source='official'``) or a harvest folder."""
    input_dir, out = Path(input_dir), Path(out)
    if not input_dir.is_dir():
        raise FileNotFoundError(f"{input_dir}: no such folder")
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=out))
    report = BuildReport(out)
    try:
        staged: dict[str, Path] = {}
        for name in names:
            rejects_path = work / "rejects" / f"{name}.jsonl"
            builder = BUILDERS[name](
                config_name=source, data_dir=str(input_dir.resolve()), skip_invalid=skip_invalid,
                rejects_path=str(rejects_path), cache_dir=str(cache_dir or work / "cache"),
            )
            try:
                builder.download_and_prepare(download_mode="force_redownload")
            except DatasetGenerationError as exc:  # datasets wraps our errors; give the user the real one
                cause = exc.__cause__
                while isinstance(cause, DatasetGenerationError) and cause.__cause__ is not None:
                    cause = cause.__cause__
                if isinstance(cause, Exception):
                    raise cause from None
                raise
            dsd = builder.as_dataset()
            folder = work / name
            tables = {split: dsd[split].data.table for split in dsd}
            for split, table in tables.items():
                _write_shards(table, folder, split)
            report.counts[name] = {split: t.num_rows for split, t in tables.items()}
            if name == "corpus":
                stats = corpus_stats(tables["train"])
                write_store(tables["train"].to_batches(max_chunksize=20_000), folder, built_from=str(input_dir))
            elif name == "surveys":
                stats = survey_stats(next(iter(tables.values())))
            else:
                stats = query_stats(tables)
            report.stats[name] = stats
            render_card(name, folder, builder.info, report.counts[name], stats, repo_id=f"{org}/{name}", is_sample=is_sample,
                        split_bytes={split: t.nbytes for split, t in tables.items()})
            if rejects_path.exists():
                report.rejects[name] = sum(1 for _ in open(rejects_path, encoding="utf-8"))
            del dsd, tables
            staged[name] = folder
        for name, folder in staged.items():
            _commit_dir(folder, out / name)
        if report.rejects:
            (out / "rejects").mkdir(exist_ok=True)
            for f in (work / "rejects").glob("*.jsonl"):
                os.replace(f, out / "rejects" / f.name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report
