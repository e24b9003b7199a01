"""Rate-limited session and arXiv API client against a real local server replaying recorded responses."""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "harvest"))
import replay_server  # noqa: E402

from surge_datasets.harvest.arxiv_api import ArxivAPI, keyword_query, parse_feed, title_query  # noqa: E402
from surge_datasets.harvest.http import (HarvestHTTPError, HarvestSession, RateLimiter,  # noqa: E402
                                         parse_retry_after)

pytestmark = pytest.mark.skipif(not replay_server.RECORDED_API.exists(), reason="recorded arXiv responses not available")


@pytest.fixture
def server():
    srv = replay_server.start_server()
    yield srv
    srv.shutdown()
    srv.server_close()


def session(interval=0.01, **kw):
    kw.setdefault("backoff", 0.01)
    return HarvestSession(limiter=RateLimiter(interval), **kw)


def test_retry_after_forms():
    assert parse_retry_after("7") == 7.0
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now=now) == 30.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now=now) == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_rate_limit_is_enforced(server):
    s = session(interval=0.2)
    for _ in range(4):
        s.fetch(server.api, {"search_query": "", "id_list": "1605.08386", "start": 0, "max_results": 100})
    times = [t for route, _, t in server.state.log]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert len(gaps) == 3 and min(gaps) >= 0.18


def test_retry_after_503_then_429_then_reset_then_truncated(server):
    f = server.state.faults["api"]
    f.extend([("status", 503, {"Retry-After": "1"}), ("status", 429, {}), ("reset",), ("truncate",)])
    s = session()
    api = ArxivAPI(s, server.api)
    t0 = time.monotonic()
    res = api.fetch_ids(["1605.08386"])
    elapsed = time.monotonic() - t0
    assert [r["arxiv_id"] for r in res.rows] == ["1605.08386"]
    assert elapsed >= 0.95  # Retry-After: 1 honoured
    assert s.stats.retries == 4 and s.stats.waited_retry_after == 1.0
    assert len(server.state.log) == 5


def test_retries_are_bounded(server):
    server.state.faults["api"].extend([("status", 503, {})] * 10)
    s = session(max_retries=2)
    with pytest.raises(HarvestHTTPError) as err:
        s.fetch(server.api, {"search_query": "x", "start": 0, "max_results": 1})
    assert err.value.status == 503 and err.value.attempts == 3
    assert len(server.state.log) == 3


def test_recorded_entry_fields():
    body = (replay_server.RECORDED_API / "id_astro-ph_0601001_s0_m100_3150dca9dc76.json").read_text()
    import json

    feed = parse_feed(json.loads(body)["body"])
    (row,) = feed.rows
    assert row["arxiv_id"] == "astro-ph/0601001" and row["arxiv_version"] == 1
    assert row["authors"] == ["Andrew Gould", "Susan Dorsher", "B. Scott Gaudi", "Andrzej Udalski"]
    assert row["primary_category"] == "astro-ph" and row["journal_ref"] == "ActaAstron.56:1-50,2006"
    assert row["published"] == "2006-01-02T14:57:58Z" and row["year"] == 2006
    assert "V_max<17.5" in row["abstract"] and row["source"] == "api"


def test_unknown_ids_reported_missing_and_malformed_invalid(server):
    api = ArxivAPI(session(), server.api)
    res = api.fetch_ids(["0808.05394", "1707.08567", "abc", "0000.0000"])
    assert [r["arxiv_id"] for r in res.rows] == ["1707.08567"]
    assert sorted(res.missing) == ["0000.0000", "0808.05394"]
    assert res.invalid == ["abc"]  # refused before any request


def test_http_400_error_entry_drops_bad_id_and_refetches_rest(server):
    api = ArxivAPI(session(), server.api)
    res = type("R", (), {})()
    from surge_datasets.harvest.arxiv_api import IdFetchResult

    res = IdFetchResult()
    api._fetch_batch(["abc", "1605.08386"], res)  # bypass local validation: the server answers 400
    assert res.invalid == ["abc"] and [r["arxiv_id"] for r in res.rows] == ["1605.08386"]
    assert server.state.log[0][1]["id_list"] == "abc,1605.08386"


def test_uri_too_long_splits_batch(server):
    server.state.max_url = 110
    ids = ["1605.08386", "1707.08567", "astro-ph/0601001", "2104.12255", "quant-ph/0201082", "2202.12139"]
    api = ArxivAPI(session(), server.api, max_url_length=10_000)  # only the server knows the limit
    res = api.fetch_ids(ids)
    got = [r["arxiv_id"] for r in res.rows]
    assert sorted(got) == sorted(ids) and len(got) == len(set(got))
    statuses = server.state.log
    assert len(statuses) > 1
    # and the client-side limit splits before sending
    server.state.log.clear()
    server.state.max_url = 100_000
    api2 = ArxivAPI(session(), server.api, max_url_length=120)
    res2 = api2.fetch_ids(ids)
    assert sorted(r["arxiv_id"] for r in res2.rows) == sorted(ids)
    assert all(len(q["id_list"].split(",")) < len(ids) for _, q, _ in server.state.log)


def test_batches_of_at_most_100(server):
    ids = [f"2101.{i:05d}" for i in range(250)]
    api = ArxivAPI(session(), server.api)
    res = api.fetch_ids(ids)
    sizes = [len(q["id_list"].split(",")) for _, q, _ in server.state.log]
    assert sizes == [100, 100, 50] and len(res.missing) == 250


def test_search_paging_recorded_pages_with_faults(server):
    server.state.faults["api"].extend([("status", 429, {}), ("empty",), ("truncate",)])
    api = ArxivAPI(session(), server.api)
    rows = list(api.search("testing", max_results=60, page_size=10))
    ids = [r["arxiv_id"] for r in rows]
    assert len(ids) == 60
    starts = sorted({q["start"] for _, q, _ in server.state.log})
    assert starts == ["0", "10", "20", "30", "40", "50"]


def test_empty_page_mid_search_is_retried_not_taken_as_end(server):
    api = ArxivAPI(session(), server.api)
    first = list(api.search("testing", max_results=20, page_size=10))
    server.state.log.clear()
    # page 2 comes back empty twice although totalResults says 214881
    gen = api.search("testing", max_results=20, page_size=10)
    got = [next(gen) for _ in range(10)]
    server.state.faults["api"].extend([("empty",), ("empty",)])
    got += list(gen)
    assert [r["arxiv_id"] for r in got] == [r["arxiv_id"] for r in first]


def test_truly_empty_search_is_confirmed_then_empty(server):
    api = ArxivAPI(session(), server.api, confirm_empty=1)
    assert list(api.search('ti:"nothing here"', max_results=10)) == []
    assert len(server.state.log) == 2


def test_query_builders():
    assert title_query("A Survey on Edge-Computing: Systems & Tools") == 'ti:"A Survey on Edge Computing Systems Tools"'
    assert keyword_query(["graph", "neural networks"]) == 'all:graph AND all:"neural networks"'
