"""OAI-PMH harvesting: recorded record shape, multi-page lists with faults, kill -9 and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "harvest"))
import replay_server  # noqa: E402
from replay_server import OAIRecord  # noqa: E402

from surge_datasets.harvest.http import HarvestSession, RateLimiter  # noqa: E402
from surge_datasets.harvest.oai import HarvestCursor, OAIError, OAIHarvester, parse_page  # noqa: E402
from surge_datasets.harvest.store import iter_harvested_corpus  # noqa: E402

CLI = [sys.executable, "-c", "from surge_datasets.cli import main; main()"]


def make_records(n: int = 57) -> list[OAIRecord]:
    """n records over 12 days; a few are updated later (second record, newer datestamp) or deleted."""
    recs = []
    for i in range(n):
        day = 1 + i // 5
        recs.append(OAIRecord(f"1901.{i:05d}", f"2019-01-{day:02d}", title=f"Paper {i} on Poincar\\'e maps",
                              authors=(("Zeta", f"A{i}."), ("Alpha", "B.")), categories="cs.LG stat.ML" if i % 2 else "cs.IT math.IT",
                              created=f"2018-12-{1 + i % 28:02d}"))
    # updates: ids 3 and 7 re-appear later with a new title
    recs.append(OAIRecord("1901.00003", "2019-01-20", title="Paper 3 revised", updated="2019-01-20", created="2018-12-04"))
    recs.append(OAIRecord("1901.00007", "2019-01-21", title="Paper 7 revised", updated="2019-01-21", created="2018-12-08"))
    # deletions: 10 and 11 deleted after they were listed
    recs.append(OAIRecord("1901.00010", "2019-01-22", deleted=True))
    recs.append(OAIRecord("1901.00011", "2019-01-22", deleted=True))
    # another set, never asked for
    recs.append(OAIRecord("1901.99999", "2019-01-05", sets=("math",), categories="math.AG"))
    return recs


EXPECTED = {f"1901.{i:05d}" for i in range(57)} - {"1901.00010", "1901.00011"}


@pytest.fixture
def server():
    srv = replay_server.start_server(oai_records=make_records(), oai_page_size=10)
    yield srv
    srv.shutdown()
    srv.server_close()


def run_cli(args, **kw):
    env = dict(os.environ, SURGE_HARVEST_MIN_INTERVAL="0.01")
    return subprocess.run(CLI + args, env=env, capture_output=True, text=True, **kw)


def harvest(server, out, *extra):
    return run_cli(["harvest", "corpus", "--source", "oai", "--endpoint", server.oai, "--set", "cs",
                    "--from", "2019-01-01", "--out", str(out), *extra], timeout=120)


def test_recorded_record_shape():
    page = parse_page(replay_server.RECORDED_OAI.read_bytes())
    (row,) = page.rows
    assert row["arxiv_id"] == "0801.3931" and row["authors"] == ["T. Manos", "E. Athanassoula"]
    assert row["title"] == "Dynamical study of 2D and 3D barred galaxy models"
    assert row["doi"] == "10.1007/978-3-540-75826-6_11"
    assert row["journal_ref"] == "Chaos in Astronomy Astrophysics and Space Science Proceedings 2009, pp 115-122"
    assert row["published"] == "2008-01-25T00:00:00Z" and row["year"] == 2008
    assert "Poincaré $(y,p_y)$ surface" in row["abstract"] and "\n" not in row["abstract"]
    assert row["abstract_raw"].startswith("We study") and "Poincar\\'{e}" in row["abstract_raw"]
    assert page.token is None and page.max_datestamp == "2013-03-26"


def _collect(server, cursor=None):
    s = HarvestSession(limiter=RateLimiter(0.01), backoff=0.01)
    h = OAIHarvester(s, server.oai)
    cursor = cursor or HarvestCursor(h.start_params("cs", "2019-01-01", None))
    rows, deleted = {}, set()
    for page, nxt in h.pages(cursor):
        for r in page.rows:
            rows[r["arxiv_id"]] = r
            deleted.discard(r["arxiv_id"])
        for d in page.deleted:
            rows.pop(d, None)
            deleted.add(d)
    return rows, deleted, h, s


def test_multi_page_with_faults(server):
    f = server.state.faults["oai"]
    f.extend([("status", 503, {"Retry-After": "1"}), ("reset",), ("truncate",), ("empty",), ("status", 429, {})])
    rows, deleted, h, s = _collect(server)
    assert set(rows) == EXPECTED and deleted == {"1901.00010", "1901.00011"}
    assert rows["1901.00003"]["title"] == "Paper 3 revised"
    assert rows["1901.00000"]["categories"] == ["cs.IT"]  # math.IT folded into its canonical name
    assert s.stats.waited_retry_after == 1.0 and s.stats.retries == 4


def test_expired_token_restarts_from_last_datestamp(server):
    server.state.oai_new_style = True
    # the third request carries a token: refuse it
    server.state.faults["oai"].extend([None, None, ("expire",)])
    rows, deleted, h, s = _collect(server)
    assert set(rows) == EXPECTED
    assert h.stats["restarts"] == 1
    restart = [q for route, q, _ in server.state.log if route == "oai" and "from" in q and q["from"] != "2019-01-01"]
    assert restart and restart[0]["from"] == "2019-01-04"


def test_no_records_match_is_empty_and_other_errors_raise(server):
    s = HarvestSession(limiter=RateLimiter(0.01), backoff=0.01)
    h = OAIHarvester(s, server.oai)
    pages = list(h.pages(HarvestCursor(h.start_params("cs", "2030-01-01", None))))
    assert len(pages) == 1 and pages[0][0].rows == [] and pages[0][0].error[0] == "noRecordsMatch"
    bad = HarvestCursor({"verb": "ListRecords", "metadataPrefix": "oai_dc"})
    with pytest.raises(OAIError) as err:
        list(h.pages(bad))
    assert err.value.code == "cannotDisseminateFormat"


def _output(out):
    docs = sorted(iter_harvested_corpus(out), key=lambda d: d.arxiv_id)
    return [d.model_dump() for d in docs]


@pytest.mark.slow
def test_cli_kill_and_resume_equals_uninterrupted(server, tmp_path):
    ref = harvest(server, tmp_path / "ref")
    assert ref.returncode == 0, ref.stderr
    reference = _output(tmp_path / "ref")
    assert {d["arxiv_id"] for d in reference} == EXPECTED and len(reference) == len(EXPECTED)
    assert len({d["doc_id"] for d in reference}) == len(reference)

    server.state.delay = 0.15
    out = tmp_path / "killed"
    env = dict(os.environ, SURGE_HARVEST_MIN_INTERVAL="0.01")
    proc = subprocess.Popen(CLI + ["harvest", "corpus", "--source", "oai", "--endpoint", server.oai, "--set", "cs",
                                   "--from", "2019-01-01", "--out", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = out / "corpus" / "oai-cs-2019-01-01-now" / "state.json"
    deadline = time.time() + 60
    while time.time() < deadline:
        if state.exists() and len(json.loads(state.read_text())["shards"]) >= 2:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    st = json.loads(state.read_text())
    assert not st["done"] and 2 <= len(st["shards"]) < 7
    server.state.delay = 0
    again = harvest(server, out)
    assert again.returncode == 0, again.stderr
    assert _output(out) == reference
    # the shards themselves are the same files an uninterrupted run writes
    ref_shards = sorted((tmp_path / "ref" / "corpus" / "oai-cs-2019-01-01-now").glob("shard-*.parquet"))
    new_shards = sorted((out / "corpus" / "oai-cs-2019-01-01-now").glob("shard-*.parquet"))
    assert [p.name for p in ref_shards] == [p.name for p in new_shards]
    for a, b in zip(ref_shards, new_shards):
        assert pq.read_table(a).equals(pq.read_table(b))
    # a finished job reruns as a no-op
    third = harvest(server, out)
    assert third.returncode == 0 and _output(out) == reference


def test_cli_params_mismatch_is_a_clear_error(server, tmp_path):
    assert harvest(server, tmp_path / "h").returncode == 0
    res = run_cli(["harvest", "corpus", "--source", "oai", "--endpoint", server.oai, "--set", "cs", "--from", "2019-01-01",
                   "--until", "2019-01-05", "--job", "oai-cs-2019-01-01-now", "--out", str(tmp_path / "h")], timeout=60)
    assert res.returncode != 0 and "started with" in res.stderr
