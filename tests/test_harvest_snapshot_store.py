"""Snapshot import (streaming, resumable), the shard store (dedup, orphans, params) and stable doc_ids."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from surge_datasets.harvest.doc_ids import DocIdMap, write_base_map
from surge_datasets.harvest.normalize import corpus_row, match_title_key
from surge_datasets.harvest.snapshot import import_snapshot, iter_blocks, record_to_row
from surge_datasets.harvest.store import (ShardStore, StoreError, iter_harvested_batches, iter_harvested_corpus,
                                          job_folders)
from surge_datasets.identifiers import title_key
from surge_datasets.schemas import CorpusDoc

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
from bench_snapshot import synthetic_record, write_synthetic  # noqa: E402

KAGGLE = {
    "id": "0704.0001", "submitter": "Pavel Nadolsky",
    "authors": "C. Bal\\'azs, E. L. Berger, P. M. Nadolsky, C.-P. Yuan",
    "title": "Calculation of prompt diphoton production cross sections at Tevatron and\n  LHC energies",
    "comments": "37 pages, 15 figures", "journal-ref": "Phys.Rev.D76:013009,2007", "doi": "10.1103/PhysRevD.76.013009",
    "report-no": "ANL-HEP-PR-07-12", "categories": "hep-ph",
    "license": None,
    "abstract": "  A fully differential calculation in perturbative quantum chromodynamics is\npresented for the production of massive photon pairs at hadron colliders.\n",
    "versions": [{"version": "v1", "created": "Mon, 2 Apr 2007 19:18:42 GMT"},
                 {"version": "v2", "created": "Tue, 24 Jul 2007 20:10:27 GMT"}],
    "update_date": "2008-11-13",
    "authors_parsed": [["Balázs", "C.", ""], ["Berger", "E. L.", ""], ["Nadolsky", "P. M.", ""], ["Yuan", "C. -P.", ""]],
}


def test_kaggle_record_fields():
    row = record_to_row(KAGGLE)
    assert row["arxiv_id"] == "0704.0001" and row["arxiv_version"] == 2
    assert row["authors"] == ["C. Balázs", "E. L. Berger", "P. M. Nadolsky", "C. -P. Yuan"]
    assert row["published"] == "2007-04-02T19:18:42Z" and row["updated"] == "2007-07-24T20:10:27Z" and row["year"] == 2007
    assert row["title"] == KAGGLE["title"] and row["title_raw"] is None  # the release keeps arXiv's whitespace
    assert row["abstract"].startswith("A fully differential") and "\n" not in row["abstract"]
    assert row["doi"] == "10.1103/physrevd.76.013009" and row["primary_category"] == "hep-ph"
    old = record_to_row(dict(KAGGLE, id="solv-int/9901001", categories="solv-int nlin.SI"))
    assert old["arxiv_id"] == "solv-int/9901001" and old["categories"] == ["nlin.SI"]


def test_latex_title_keeps_release_key():
    row = corpus_row(arxiv_id="2101.00001", version=1, title="On Erd\\H{o}s--R\\'enyi graphs in $G(n,p)$",
                     authors=[], abstract="", categories="cs.DM", published="2021-01-01", updated=None, source="api")
    assert row["title"] == "On Erdős--Rényi graphs in $G(n,p)$"
    assert match_title_key(row) == title_key("On Erd\\H{o}s--R\\'enyi graphs in $G(n,p)$")


def write_lines(path: Path, records: list, bad_at=()) -> None:
    with open(path, "w") as fh:
        for i, r in enumerate(records):
            fh.write("{not json\n" if i in bad_at else json.dumps(r) + "\n")


def test_import_counts_filter_and_bad_lines(tmp_path):
    import random

    rng = random.Random(1)
    recs = [synthetic_record(i, rng) for i in range(1000)]
    src = tmp_path / "snap.json"
    write_lines(src, recs, bad_at={5, 500})
    res = import_snapshot(src, tmp_path / "h", block_bytes=200_000, blocks_per_shard=2)
    n_blocks = sum(1 for _ in iter_blocks(src, 0, 200_000))
    assert n_blocks >= 4 and res.rows == 998 and res.bad_lines == 2 and res.shards == -(-n_blocks // 2)
    shard = pq.ParquetFile(tmp_path / "h" / "corpus" / "snapshot" / "shard-000000.parquet")
    assert shard.metadata.num_row_groups == 2                      # one row group per block
    st = json.loads((tmp_path / "h" / "corpus" / "snapshot" / "state.json").read_text())
    assert st["stats"]["errors"][0].startswith("snap.json:6: ")
    docs = list(iter_harvested_corpus(tmp_path / "h"))
    unique_ids = {json.loads(json.dumps(r))["id"] for i, r in enumerate(recs) if i not in (5, 500)}
    assert len(docs) == len({r for r in unique_ids})  # synthetic ids repeat: newest version kept once
    assert len({d.doc_id for d in docs}) == len(docs)
    cs = import_snapshot(src, tmp_path / "h", job="snapshot-cs", category="cs", block_bytes=200_000)
    assert 0 < cs.rows < 998 and cs.skipped + cs.rows == 998


@pytest.mark.slow
def test_snapshot_kill_and_resume(tmp_path):
    src = tmp_path / "snap.json"
    write_synthetic(src, 12000, seed=3)
    ref = import_snapshot(src, tmp_path / "ref", block_bytes=500_000, blocks_per_shard=2)
    code = ("import sys; from surge_datasets.harvest.snapshot import import_snapshot; "
            f"import_snapshot({str(src)!r}, {str(tmp_path / 'killed')!r}, block_bytes=500_000, blocks_per_shard=2)")
    proc = subprocess.Popen([sys.executable, "-c", code])
    state = tmp_path / "killed" / "corpus" / "snapshot" / "state.json"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if len(json.loads(state.read_text())["shards"]) >= 3:
                break
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not json.loads(state.read_text())["done"]
    res = import_snapshot(src, tmp_path / "killed", block_bytes=500_000, blocks_per_shard=2)
    assert res.resumed_from > 0 and res.rows == ref.rows == 12000
    a = sorted((tmp_path / "ref" / "corpus" / "snapshot").glob("shard-*.parquet"))
    b = sorted((tmp_path / "killed" / "corpus" / "snapshot").glob("shard-*.parquet"))
    assert [p.name for p in a] == [p.name for p in b]
    assert all(pq.read_table(x).equals(pq.read_table(y)) for x, y in zip(a, b))


def row(aid, version, updated, title="T", doc_id=-1):
    r = corpus_row(arxiv_id=aid, version=version, title=title, authors=[], abstract="", categories="cs.LG",
                   published="2020-01-01", updated=updated, source="oai")
    r["doc_id"] = doc_id
    return r


def test_store_dedup_deletions_orphans_and_params(tmp_path):
    job = tmp_path / "h" / "corpus" / "a"
    st = ShardStore.open(job, {"p": 1})
    st.commit([row("2001.00001", 1, "2020-01-01", "old", 0), row("2001.00002", 1, "2020-01-01", "x", 1)], {"n": 1})
    st.commit([row("2001.00001", 2, "2020-02-01", "new", 0)], {"n": 2}, deleted=["2001.00002"])
    st.commit([row("2001.00003", None, "2020-03-01", "c", 2)], {"n": 3})
    job2 = tmp_path / "h" / "corpus" / "b"
    st2 = ShardStore.open(job2, {"p": 2})
    st2.commit([row("2001.00001", 1, "2020-05-01", "stale version", 0), row("2001.00003", None, "2020-04-01", "c later", 2)], {"n": 1})
    docs = {d.arxiv_id: d.title for d in iter_harvested_corpus(tmp_path / "h")}
    assert docs == {"2001.00001": "new", "2001.00003": "c later"}
    assert [p.name for p in job_folders(tmp_path / "h")] == ["a", "b"]
    # an orphan shard (a commit cut short before its state write) is removed on reopen
    (job / "shard-000003.parquet").write_bytes(b"partial")
    (job / ".shard-000004.parquet.x.tmp").write_bytes(b"partial")
    st = ShardStore.open(job, {"p": 1})
    assert sorted(p.name for p in job.iterdir()) == ["shard-000000.parquet", "shard-000001.parquet",
                                                     "shard-000002.parquet", "state.json"]
    assert st.cursor == {"n": 3}
    with pytest.raises(StoreError, match="started with"):
        ShardStore.open(job, {"p": 99})
    assert sum(b.num_rows for b in iter_harvested_batches(tmp_path / "h")) == 2


def test_doc_ids_stable_official_kept_never_reused(tmp_path):
    out = tmp_path / "h"
    official = [CorpusDoc(doc_id=5, title="Attention Is All You Need"), CorpusDoc(doc_id=9, title="BERT"),
                CorpusDoc(doc_id=7, title="attention is all you need!")]  # duplicate key: last wins (7)
    assert write_base_map(out, official, source="release-1") == 3
    ids = DocIdMap.load(out)
    assert ids.assign("1706.03762", "Attention is all you need") == 7
    assert ids.assign("9999.00001", "Attention is all you need") == 10  # a release id goes to one paper only
    assert ids.assign("1810.04805", "BERT") == 9
    assert ids.assign("2001.00001", "New") == 11
    assert ids.assign("1706.03762", "whatever") == 7
    st = ShardStore.open(out / "corpus" / "j", {})
    st.commit([row("1706.03762", 1, "x", doc_id=7), row("2001.00001", 1, "x", doc_id=11)], {"n": 1})
    again = DocIdMap.load(out)
    assert again.assign("2001.00001") == 11 and again.assign("2001.00002") == 12
    with pytest.raises(ValueError, match="already assigned"):
        write_base_map(out, official, source="release-2")


def test_block_kernels_equal_per_record_rules():
    """The Arrow block path gives exactly the rows corpus_row gives record by record, edge cases included."""
    import random

    from surge_datasets.harvest.snapshot import block_to_table

    rng = random.Random(0)
    recs = [synthetic_record(i, rng) for i in range(400)]
    k = dict(KAGGLE, abstract="  A\u00a0b\n c \n\n  d\te\u2003f ", doi="10.1103/PhysRevD.76.013009.",
             **{"journal-ref": "  Phys.Rev.D76:013009,2007 "}, license="")
    k["authors_parsed"] = KAGGLE["authors_parsed"] + [["Solo", "", ""], ["Yuan", "", "Jr"]]
    recs += [k, dict(k, id="math.GT/0309136"), dict(k, versions=[]), dict(k, categories="cs.IT math.IT"),
             dict(k, categories=""), dict(k, authors_parsed=[["Erd\\H{o}s", "P.", ""]]), dict(k, title=r"Na\"ive $\alpha$"),
             dict(k, doi=None, **{"journal-ref": None}), dict(k, license=None), dict(k, authors_parsed=[["Only"]]),
             dict(k, versions=[{"version": "v1", "created": "not a date"}]), dict(k, abstract="x\n\ny \nz\n w"),
             dict(k, abstract="caf\u00e9 \u2003 ok"), dict(k, abstract="math $\\alpha$ only")]
    block = ("\n".join(json.dumps(r) for r in recs) + "\n").encode()
    table, bad = block_to_table(block)
    assert bad == 0
    assert table.to_pylist() == [record_to_row(r) for r in recs]
    broken = block.replace(b'"id": "0704.0001"', b'"id": 0704.0001', 1)  # a line Arrow cannot read
    errors = []
    table, bad = block_to_table(broken, 0, "x.json", errors)
    assert bad == 1 and table.num_rows == len(recs) - 1 and errors[0].startswith(f"x.json:{401}:")
