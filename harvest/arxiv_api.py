"""The arXiv query API (Atom): id batches, title and keyword searches, paging.

Requests go through :class:`~.http.HarvestSession` (rate limit, Retry-After, bounded retries). The Atom
XML is read with ElementTree so that the text stays exactly as served (feedparser strips and
sanitises). Known traps of the API, handled here:

* an empty page although ``totalResults`` says more follow (the query is retried, then reported,
  instead of ending the search silently); an empty *first* page is confirmed once more before it is
  taken as "no results",
* HTTP 429 below the documented rate (the session waits and retries),
* HTTP 400 with an Atom error entry for a malformed id (``incorrect id format for abc``): the id is
  reported as invalid and the rest of its batch fetched again,
* unknown ids are silently left out of a result: they are reported as missing,
* URI too long (HTTP 414, or a URL over ``max_url_length``): the id batch is split in two.
"""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

import requests

from surge_datasets.identifiers import parse_arxiv_id

from .http import HarvestSession
from .normalize import corpus_row, split_id

log = logging.getLogger(__name__)

API_ENDPOINT = "https://export.arxiv.org/api/query"
MAX_BATCH = 100
_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"
_OS = "{http://a9.com/-/spec/opensearch/1.1/}"
_BAD_ID = re.compile(r"incorrect id format for (.+)$")


class ArxivAPIError(RuntimeError):
    """The API refused a search (HTTP 400 with an error entry)."""


@dataclass
class Feed:
    total: int
    start: int
    rows: list[dict]
    errors: list[str]  # summaries of Atom error entries


def _text(el: Optional[ET.Element]) -> Optional[str]:
    return el.text if el is not None and el.text is not None else None


def parse_entry(entry: ET.Element) -> Optional[dict]:
    """One Atom entry to a corpus row (doc_id unset); None for an entry without an arXiv id."""
    arxiv_id, version = split_id(_text(entry.find(f"{_ATOM}id")) or "")
    if not arxiv_id:
        return None
    prim = entry.find(f"{_ARXIV}primary_category")
    return corpus_row(
        arxiv_id=arxiv_id,
        version=version,
        title=_text(entry.find(f"{_ATOM}title")) or "",
        authors=[" ".join((_text(a.find(f"{_ATOM}name")) or "").split()) for a in entry.findall(f"{_ATOM}author")],
        abstract=_text(entry.find(f"{_ATOM}summary")) or "",
        categories=[c.get("term") for c in entry.findall(f"{_ATOM}category") if c.get("term")],
        primary=prim.get("term") if prim is not None else None,
        published=_text(entry.find(f"{_ATOM}published")),
        updated=_text(entry.find(f"{_ATOM}updated")),
        doi=(_text(entry.find(f"{_ARXIV}doi")) or "").strip() or None,
        journal_ref=_text(entry.find(f"{_ARXIV}journal_ref")),
        source="api",
    )


def parse_feed(body: bytes | str) -> Feed:
    """Parse an API response; raises ``ET.ParseError`` on a truncated or broken body."""
    root = ET.fromstring(body)
    if root.tag != f"{_ATOM}feed":
        raise ET.ParseError(f"not an Atom feed: <{root.tag}>")
    total = int(_text(root.find(f"{_OS}totalResults")) or 0)
    start = int(_text(root.find(f"{_OS}startIndex")) or 0)
    rows, errors = [], []
    for entry in root.findall(f"{_ATOM}entry"):
        entry_id = _text(entry.find(f"{_ATOM}id")) or ""
        if "/api/errors" in entry_id:
            errors.append((_text(entry.find(f"{_ATOM}summary")) or "").strip())
            continue
        row = parse_entry(entry)
        if row is not None:
            rows.append(row)
    return Feed(total, start, rows, errors)


def title_query(title: str) -> str:
    """``ti:"..."`` phrase query for a title (punctuation the API's parser trips on is dropped)."""
    words = re.sub(r"[^0-9A-Za-z]+", " ", title).split()
    return f'ti:"{" ".join(words)}"'


def keyword_query(keywords: Iterable[str], field: str = "all", op: str = "AND") -> str:
    """``all:"k1" AND all:"k2"`` (phrases kept together)."""
    parts = []
    for k in keywords:
        words = re.sub(r"[^0-9A-Za-z]+", " ", k).split()
        if words:
            parts.append(f'{field}:"{" ".join(words)}"' if len(words) > 1 else f"{field}:{words[0]}")
    return f" {op} ".join(parts)


@dataclass
class IdFetchResult:
    rows: list[dict] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)   # well-formed ids the API did not return
    invalid: list[str] = field(default_factory=list)   # malformed ids (refused locally or by the API)
    requests: int = 0


@dataclass
class SearchStats:
    pages: int = 0
    total: int = 0
    empty_page_retries: int = 0
    short_pages: list[int] = field(default_factory=list)  # start offsets that stayed empty


class ArxivAPI:
    """Client for ``/api/query`` over a :class:`HarvestSession`."""

    def __init__(self, session: HarvestSession, endpoint: str = API_ENDPOINT, *, batch_size: int = MAX_BATCH,
                 max_url_length: int = 2000, empty_page_retries: int = 3, confirm_empty: int = 1):
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be 1..{MAX_BATCH}")
        self.session, self.endpoint = session, endpoint
        self.batch_size, self.max_url_length = batch_size, max_url_length
        self.empty_page_retries, self.confirm_empty = empty_page_retries, confirm_empty

    # ------------------------------------------------------------------------------------------ pages
    def _get(self, params: dict) -> tuple[int, Feed]:
        def parse(resp: requests.Response) -> tuple[int, Feed]:
            if resp.status_code == 414:
                return 414, Feed(0, 0, [], [])
            try:
                return resp.status_code, parse_feed(resp.content)
            except ET.ParseError:
                if resp.status_code == 400:
                    return 400, Feed(0, 0, [], [f"HTTP 400: {resp.text[:200]}"])
                raise  # a truncated 200: the session fetches it again

        return self.session.fetch(self.endpoint, params, parse=parse, accept={200, 400, 414})

    def _url_length(self, params: dict) -> int:
        return len(requests.Request("GET", self.endpoint, params=params).prepare().url)

    # ---------------------------------------------------------------------------------------- id list
    def fetch_ids(self, ids: Iterable[str]) -> IdFetchResult:
        """Metadata of arXiv ids (any form; versioned ids fetch that version), batched <= 100 per request."""
        result = IdFetchResult()
        wanted: list[str] = []
        seen: set[str] = set()
        for raw in ids:
            parsed = parse_arxiv_id(raw)
            if parsed is None:
                result.invalid.append(raw)
                continue
            key = str(parsed)
            if key not in seen:
                seen.add(key)
                wanted.append(key)
        for i in range(0, len(wanted), self.batch_size):
            self._fetch_batch(wanted[i:i + self.batch_size], result)
        return result

    def _fetch_batch(self, batch: list[str], result: IdFetchResult) -> None:
        if not batch:
            return
        params = {"search_query": "", "id_list": ",".join(batch), "start": 0, "max_results": len(batch)}
        if len(batch) > 1 and self._url_length(params) > self.max_url_length:
            half = len(batch) // 2
            self._fetch_batch(batch[:half], result)
            self._fetch_batch(batch[half:], result)
            return
        status, feed = self._get(params)
        result.requests += 1
        if status == 414:
            if len(batch) == 1:
                result.invalid.append(batch[0])
                return
            half = len(batch) // 2
            self._fetch_batch(batch[:half], result)
            self._fetch_batch(batch[half:], result)
            return
        bad = [m.group(1).strip() for e in feed.errors if (m := _BAD_ID.search(e))]
        if bad or (status == 400):
            bad_set = {b for b in bad if b in batch}
            if not bad_set:  # a 400 we cannot attribute: try the ids one by one
                if len(batch) == 1:
                    result.invalid.append(batch[0])
                    return
                for one in batch:
                    self._fetch_batch([one], result)
                return
            result.invalid.extend(b for b in batch if b in bad_set)
            self._fetch_batch([b for b in batch if b not in bad_set], result)
            return
        # entries may lag behind totalResults (the empty-page trap): ask again
        tries = 0
        while len(feed.rows) < min(feed.total, len(batch)) and tries < self.empty_page_retries:
            tries += 1
            log.warning("id batch returned %d of %d entries; asking again", len(feed.rows), feed.total)
            _, feed = self._get(params)
            result.requests += 1
        got = set()
        for row in feed.rows:
            got.add(row["arxiv_id"])
            got.add(f"{row['arxiv_id']}v{row['arxiv_version']}")
            result.rows.append(row)
        result.missing.extend(b for b in batch if b not in got)

    # ---------------------------------------------------------------------------------------- search
    def search(self, query: str, *, max_results: int = 100, page_size: int = 100, sort_by: str = "relevance",
               sort_order: str = "descending", stats: Optional[SearchStats] = None) -> Iterator[dict]:
        """Rows of a search, page by page (``start`` += page size) up to ``max_results``."""
        stats = stats if stats is not None else SearchStats()
        start, total = 0, None
        while total is None or start < min(total, max_results):
            size = min(page_size, max_results - start)
            params = {"search_query": query, "id_list": "", "sortBy": sort_by, "sortOrder": sort_order,
                      "start": start, "max_results": size}
            status, feed = self._get(params)
            if status != 200:
                raise ArxivAPIError(f"{self.endpoint}: search {query!r} refused: {feed.errors}")
            stats.pages += 1
            tries = 0
            while not feed.rows and tries < self.empty_page_retries and (
                    (total is None and tries < self.confirm_empty) or start < max(feed.total, total or 0)):
                tries += 1
                stats.empty_page_retries += 1
                log.warning("empty page at start=%d of %r (total %s); asking again", start, query, feed.total)
                _, feed = self._get(params)
                stats.pages += 1
            if total is None:
                total = feed.total
                stats.total = total
            if not feed.rows:
                if start < total:
                    stats.short_pages.append(start)
                break
            yield from feed.rows[: max_results - start]
            start += len(feed.rows) if len(feed.rows) < size else size

    def search_title(self, title: str, max_results: int = 10) -> list[dict]:
        return list(self.search(title_query(title), max_results=max_results, page_size=max_results))

    def search_keywords(self, keywords: Iterable[str], max_results: int = 100) -> list[dict]:
        return list(self.search(keyword_query(keywords), max_results=max_results, page_size=min(100, max_results)))
