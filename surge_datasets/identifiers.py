"""Keys that link records together: normalised titles, arXiv ids and DOIs.

``title_key`` is exactly the paper's rule (keep ASCII letters, lower-case them): two titles match
when their keys are equal. It must stay byte-for-byte the same, since published numbers depend on it.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

_NOT_LETTER = re.compile(r"[^a-zA-Z]+")


def title_key(title: str) -> str:
    """The paper's normalised title: ASCII letters only, lower-cased ('A  B-c' -> 'abc')."""
    return _NOT_LETTER.sub("", title).lower()


class ArxivId(NamedTuple):
    id: str  # unversioned, e.g. "2106.12135", "hep-th/9901001"
    version: Optional[int]

    def __str__(self) -> str:
        return self.id if self.version is None else f"{self.id}v{self.version}"


# new style: YYMM.NNNN or YYMM.NNNNN (since 2015), optional version
_NEW = re.compile(r"(?P<id>\d{4}\.\d{4,5})(?:v(?P<v>\d+))?")
# old style: archive(.SUBJ)?/YYMMNNN, e.g. hep-th/9901001, math.GT/0309136
_OLD = re.compile(r"(?P<id>[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?/\d{7})(?:v(?P<v>\d+))?")
_PREFIX = re.compile(r"^(?:https?://(?:www\.|export\.)?arxiv\.org/(?:abs|pdf|e-print)/|arxiv:)", re.I)


def parse_arxiv_id(text: str) -> Optional[ArxivId]:
    """Parse any arXiv id form ('2106.12135v2', 'arXiv:2106.12135', abs/pdf URLs, 'hep-th/9901001v1').

    Returns None when the text is not an arXiv id. The version is split by regex, never by
    ``split('v')`` (old-style ids such as 'solv-int/9901001' contain a 'v').
    """
    if not text:
        return None
    s = _PREFIX.sub("", text.strip())
    if s.endswith(".pdf"):
        s = s[:-4]
    for rx in (_NEW, _OLD):
        m = rx.fullmatch(s)
        if m:
            ident = m.group("id")
            if rx is _OLD:
                archive, num = ident.split("/")
                # the subject class of old ids (math.GT) is not part of the identifier
                ident = f"{archive.split('.')[0]}/{num}"
            v = m.group("v")
            return ArxivId(ident, int(v) if v else None)
    return None


def find_arxiv_ids(text: str) -> list[ArxivId]:
    """All arXiv ids mentioned in free text (e.g. a reference line)."""
    out = []
    for m in re.finditer(r"(?:arxiv[:\s]*|arxiv\.org/(?:abs|pdf)/)?(\d{4}\.\d{4,5}(?:v\d+)?|[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?/\d{7}(?:v\d+)?)", text, re.I):
        parsed = parse_arxiv_id(m.group(1))
        if parsed:
            out.append(parsed)
    return out


_DOI = re.compile(r"10\.\d{4,9}/\S+", re.I)


def normalize_doi(text: str) -> Optional[str]:
    """'https://doi.org/10.1145/ABC.' -> '10.1145/abc' (lower case, resolver and trailing punctuation dropped)."""
    if not text:
        return None
    m = _DOI.search(text.strip())
    if not m:
        return None
    return m.group(0).rstrip(".,;)]}").lower()
