"""OAI-PMH ``ListRecords`` harvesting of arXiv metadata (``metadataPrefix=arXiv``), resumable.

Both services work: the one arXiv runs since February 2025 (``https://oaipmh.arxiv.org/oai``, sets such
as ``cs:cs:AI`` next to the old ``cs``; resumption tokens without cursor/size that expire daily) and the
old one (``https://export.arxiv.org/oai2``). The XML is parsed here with ElementTree, keeping the author
order (keyname/forenames/suffix per author).

Fault handling:

* every page is committed (its rows and the resumption token) before the next request, so a killed
  harvest resumes at the next page,
* 503 + Retry-After (seconds or HTTP date), 429, resets and truncated XML: retried by the session,
* ``badResumptionToken`` (an expired token): the list restarts with ``from`` = the last datestamp
  seen; records seen twice are de-duplicated by the store,
* ``noRecordsMatch``: an empty result, not an error; other OAI error codes raise :class:`OAIError`,
* deleted records (``<header status="deleted">``) are committed as deletions.
"""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

import requests

from .http import HarvestSession
from .normalize import corpus_row, split_id

log = logging.getLogger(__name__)

OAI_ENDPOINT = "https://oaipmh.arxiv.org/oai"
OLD_OAI_ENDPOINT = "https://export.arxiv.org/oai2"
_OAI = "{http://www.openarchives.org/OAI/2.0/}"
_AX = "{http://arxiv.org/OAI/arXiv/}"


class OAIError(RuntimeError):
    def __init__(self, code: str, message: str):
        self.code = code
        super().__init__(f"OAI-PMH error {code}: {message}")


@dataclass
class OAIPage:
    rows: list[dict]
    deleted: list[str]
    token: Optional[str]
    max_datestamp: Optional[str]
    error: Optional[tuple[str, str]] = None
    complete_list_size: Optional[int] = None
    cursor: Optional[int] = None


def _t(el: Optional[ET.Element], path: str) -> Optional[str]:
    if el is None:
        return None
    found = el.find(path)
    return found.text if found is not None and found.text is not None else None


def parse_author(author: ET.Element) -> str:
    parts = [_t(author, f"{_AX}forenames"), _t(author, f"{_AX}keyname"), _t(author, f"{_AX}suffix")]
    return " ".join(" ".join(p.split()) for p in parts if p and p.strip())


def parse_metadata(meta: ET.Element, datestamp: Optional[str]) -> Optional[dict]:
    """An ``<arXiv>`` metadata element to a corpus row (doc_id unset)."""
    arxiv_id, version = split_id(_t(meta, f"{_AX}id") or "")
    if not arxiv_id:
        return None
    created = _t(meta, f"{_AX}created")
    updated = _t(meta, f"{_AX}updated") or created
    authors_el = meta.find(f"{_AX}authors")
    authors = [parse_author(a) for a in authors_el.findall(f"{_AX}author")] if authors_el is not None else []
    return corpus_row(
        arxiv_id=arxiv_id, version=version,
        title=_t(meta, f"{_AX}title") or "", authors=authors,
        abstract=_t(meta, f"{_AX}abstract") or "",
        categories=_t(meta, f"{_AX}categories") or "",
        published=created, updated=updated,
        doi=(_t(meta, f"{_AX}doi") or "").split()[0] if (_t(meta, f"{_AX}doi") or "").split() else None,
        journal_ref=_t(meta, f"{_AX}journal-ref"),
        license=(_t(meta, f"{_AX}license") or "").strip() or None,
        source="oai",
    )


def parse_page(body: bytes | str) -> OAIPage:
    """One ListRecords response; raises ``ET.ParseError`` when the XML is truncated."""
    root = ET.fromstring(body)
    if root.tag != f"{_OAI}OAI-PMH":
        raise ET.ParseError(f"not an OAI-PMH response: <{root.tag}>")
    err = root.find(f"{_OAI}error")
    if err is not None:
        return OAIPage([], [], None, None, error=(err.get("code", ""), (err.text or "").strip()))
    lr = root.find(f"{_OAI}ListRecords")
    if lr is None:
        raise ET.ParseError("response has neither ListRecords nor error")
    # within a page the last mention of an id wins (a record then its deletion, or the reverse)
    latest: dict[str, tuple[str, Optional[dict]]] = {}
    max_ds: Optional[str] = None
    for rec in lr.findall(f"{_OAI}record"):
        header = rec.find(f"{_OAI}header")
        ds = _t(header, f"{_OAI}datestamp")
        if ds and (max_ds is None or ds > max_ds):
            max_ds = ds
        if header is not None and header.get("status") == "deleted":
            ident = (_t(header, f"{_OAI}identifier") or "").rsplit(":", 1)[-1]
            aid, _ = split_id(ident)
            if aid:
                latest.pop(aid, None)
                latest[aid] = ("deleted", None)
            continue
        meta = rec.find(f"{_OAI}metadata/{_AX}arXiv")
        if meta is None:
            continue
        row = parse_metadata(meta, ds)
        if row is not None:
            latest.pop(row["arxiv_id"], None)
            latest[row["arxiv_id"]] = ("record", row)
    rows = [r for kind, r in latest.values() if kind == "record"]
    deleted = [aid for aid, (kind, _) in latest.items() if kind == "deleted"]
    tok_el = lr.find(f"{_OAI}resumptionToken")
    token = (tok_el.text or "").strip() if tok_el is not None else ""
    size = tok_el.get("completeListSize") if tok_el is not None else None
    cursor = tok_el.get("cursor") if tok_el is not None else None
    return OAIPage(rows, deleted, token or None, max_ds,
                   complete_list_size=int(size) if size and size.isdigit() else None,
                   cursor=int(cursor) if cursor and cursor.isdigit() else None)


def _page_of(resp: requests.Response) -> OAIPage:
    return parse_page(resp.content)


@dataclass
class HarvestCursor:
    """Where a ListRecords harvest stands: the token to send next, or the params to (re)start with."""

    params: dict
    token: Optional[str] = None
    max_datestamp: Optional[str] = None
    restarts: int = 0
    pages: int = 0

    def to_json(self) -> dict:
        return {"params": self.params, "token": self.token, "max_datestamp": self.max_datestamp,
                "restarts": self.restarts, "pages": self.pages}

    @classmethod
    def from_json(cls, data: dict) -> "HarvestCursor":
        return cls(**data)


@dataclass
class OAIHarvester:
    session: HarvestSession
    endpoint: str = OAI_ENDPOINT
    max_restarts: int = 10
    stats: dict = field(default_factory=lambda: {"pages": 0, "records": 0, "deleted": 0, "restarts": 0})

    def start_params(self, set_spec: Optional[str], from_date: Optional[str], until: Optional[str]) -> dict:
        params = {"verb": "ListRecords", "metadataPrefix": "arXiv"}
        if set_spec:
            params["set"] = set_spec
        if from_date:
            params["from"] = from_date
        if until:
            params["until"] = until
        return params

    def pages(self, cursor: HarvestCursor, on_progress: Optional[Callable[[OAIPage], None]] = None
              ) -> Iterator[tuple[OAIPage, HarvestCursor]]:
        """Yield (page, cursor after it) until the list ends; the caller commits each before iterating on."""
        while True:
            if cursor.token:
                params = {"verb": "ListRecords", "resumptionToken": cursor.token}
            else:
                params = dict(cursor.params)
            page = self.session.fetch(self.endpoint, params, parse=_page_of)
            if page.error:
                code, message = page.error
                if code == "noRecordsMatch":
                    yield page, HarvestCursor(cursor.params, None, cursor.max_datestamp, cursor.restarts, cursor.pages + 1)
                    return
                if code == "badResumptionToken" and cursor.token:
                    if cursor.restarts >= self.max_restarts:
                        raise OAIError(code, f"{message} (gave up after {cursor.restarts} restarts)")
                    restart = dict(cursor.params)
                    if cursor.max_datestamp:
                        restart["from"] = cursor.max_datestamp[:10]
                    log.warning("resumption token refused (%s); restarting from %s", message, restart.get("from"))
                    self.stats["restarts"] += 1
                    cursor = HarvestCursor(restart, None, cursor.max_datestamp, cursor.restarts + 1, cursor.pages)
                    continue
                raise OAIError(code, message)
            self.stats["pages"] += 1
            self.stats["records"] += len(page.rows)
            self.stats["deleted"] += len(page.deleted)
            max_ds = cursor.max_datestamp
            if page.max_datestamp and (max_ds is None or page.max_datestamp > max_ds):
                max_ds = page.max_datestamp
            nxt = HarvestCursor(cursor.params, page.token, max_ds, cursor.restarts, cursor.pages + 1)
            if on_progress:
                on_progress(page)
            yield page, nxt
            if not page.token:
                return
            cursor = nxt
