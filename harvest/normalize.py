"""Normalisation shared by every harvest source (API, OAI-PMH, snapshot).

* arXiv ids through :func:`surge_datasets.identifiers.parse_arxiv_id` (version split by regex),
* categories: arXiv's merged aliases mapped to one canonical name (``cs.NA`` -> ``math.NA`` ...),
  de-duplicated, primary first,
* dates: every source's format to ``YYYY-MM-DDTHH:MM:SSZ``,
* text: display fields get LaTeX turned into Unicode (text mode only; math is kept verbatim, as
  arXiv shows it), the harvested text is kept in ``title_raw`` / ``abstract_raw`` when it differs.
  Titles keep arXiv's whitespace (the release does); abstracts are collapsed to single spaces.
* the title-match key of a harvested doc is taken from the *raw* title, so it equals the key of the
  release's title for the same paper (see :func:`match_title_key`).

Every function here is cheap on the common path (no LaTeX): the snapshot importer calls them a
million times.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Iterable, Mapping, Optional

from surge_datasets.identifiers import normalize_doi, parse_arxiv_id, title_key
from surge_datasets.schemas import CorpusDoc

# ----------------------------------------------------------------------------------------- categories

#: arXiv's subject-class merges: alias -> canonical (arXiv lists both on a paper; we keep one).
CATEGORY_ALIASES: dict[str, str] = {
    "cs.NA": "math.NA",
    "math.IT": "cs.IT",
    "q-fin.EC": "econ.GN",
    "math.MP": "math-ph",
    "stat.TH": "math.ST",
    "cs.SY": "eess.SY",
    # archives folded into others long ago (old-style ids still carry them)
    "adap-org": "nlin.AO", "chao-dyn": "nlin.CD", "comp-gas": "nlin.CG", "patt-sol": "nlin.PS",
    "solv-int": "nlin.SI", "alg-geom": "math.AG", "dg-ga": "math.DG", "funct-an": "math.FA",
    "q-alg": "math.QA", "mtrl-th": "cond-mat.mtrl-sci", "supr-con": "cond-mat.supr-con",
    "acc-phys": "physics.acc-ph", "ao-sci": "physics.ao-ph", "atom-ph": "physics.atom-ph",
    "bayes-an": "physics.data-an", "chem-ph": "physics.chem-ph", "plasm-ph": "physics.plasm-ph",
    "cmp-lg": "cs.CL",
}


def canonical_category(cat: str) -> str:
    return CATEGORY_ALIASES.get(cat, cat)


def category_aliases(cat: str) -> set[str]:
    """Every name of the category ``cat`` (itself, its canonical name and the aliases of that)."""
    canon = canonical_category(cat)
    return {canon, cat} | {a for a, c in CATEGORY_ALIASES.items() if c == canon}


def normalize_categories(categories: Iterable[str] | str | None, primary: Optional[str] = None) -> tuple[list[str], Optional[str]]:
    """(categories, primary): canonical names, de-duplicated in order, primary first.

    Without an explicit ``primary`` the first listed category is the primary (OAI and snapshot order).
    """
    if categories is None:
        cats: list[str] = []
    elif isinstance(categories, str):
        cats = categories.split()
    else:
        cats = [c for c in categories if c]
    out: list[str] = []
    seen: set[str] = set()
    if primary:
        primary = canonical_category(primary.strip())
        out.append(primary)
        seen.add(primary)
    for c in cats:
        c = CATEGORY_ALIASES.get(c, c)
        if c not in seen:
            seen.add(c)
            out.append(c)
    return out, (out[0] if out else None)


def in_archive(categories: Iterable[str], archive: str) -> bool:
    """True when any category belongs to ``archive`` ('cs' matches cs.LG; 'cs.LG' matches exactly)."""
    for c in categories:
        for name in category_aliases(c):
            if name == archive or name.startswith(archive + "."):
                return True
    return False


# ---------------------------------------------------------------------------------------------- dates

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?(Z|[+-]\d{2}:?\d{2})?)?$")


def iso_timestamp(value: Optional[str]) -> Optional[str]:
    """'2016-05-26T17:59:46Z', '2008-01-25', 'Mon, 2 Apr 2007 19:18:42 GMT' -> 'YYYY-MM-DDTHH:MM:SSZ' (UTC)."""
    if not value:
        return None
    value = value.strip()
    m = _ISO.match(value)
    if m:
        y, mo, d, hh, mm, ss, tz = m.groups()
        if tz and tz != "Z":
            dt = datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)
            return dt.strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{y}-{mo}-{d}T{hh or '00'}:{mm or '00'}:{ss or '00'}Z"
    parts = value.replace(",", " ").split()
    # RFC 2822 as in the snapshot's versions: 'Mon, 2 Apr 2007 19:18:42 GMT'
    if len(parts) >= 5 and parts[2] in _MONTHS and parts[3].isdigit() and parts[1].isdigit():
        hms = parts[4] if parts[4].count(":") == 2 else parts[4] + ":00"
        if len(parts) == 5 or parts[5] in ("GMT", "UTC", "+0000", "Z"):
            return f"{parts[3]}-{_MONTHS[parts[2]]:02d}-{int(parts[1]):02d}T{hms.zfill(8)}Z"
    import email.utils

    try:
        dt = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def year_of(timestamp: Optional[str]) -> Optional[int]:
    return int(timestamp[:4]) if timestamp and timestamp[:4].isdigit() else None


# ----------------------------------------------------------------------------------------------- text

_WS = re.compile(r"\s+")
_LATEX_HINT = re.compile(r"[\\{}~]")
# $$..$$, $..$, \(..\), \[..\]  (kept verbatim in display text)
_MATH = re.compile(r"\$\$.+?\$\$|(?<!\\)\$.+?(?<!\\)\$|\\\(.+?\\\)|\\\[.+?\\\]", re.S)
_ACCENT = re.compile(r"\\([`'^\"~=.])\s*(?:\{\s*(\\?[A-Za-z])\s*\}|(\\[ij](?![A-Za-z])|[A-Za-z]))"
                     r"|\\([uvHckbdr])(?:\s*\{\s*(\\?[A-Za-z])\s*\}|\s+([A-Za-z]))")
_COMBINING = {"`": "\u0300", "'": "\u0301", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
              ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328",
              "b": "\u0331", "d": "\u0323", "r": "\u030a"}
_SIMPLE = {r"\&": "&", r"\%": "%", r"\_": "_", r"\#": "#", r"\$": "$", r"\ss": "ß", r"\o": "ø", r"\O": "Ø",
           r"\ae": "æ", r"\AE": "Æ", r"\oe": "œ", r"\OE": "Œ", r"\aa": "å", r"\AA": "Å", r"\l": "ł", r"\L": "Ł",
           r"\i": "ı", r"\j": "ȷ"}
_SIMPLE_RX = re.compile(r"\\(?:[&%_#$]|(?:ss|o|O|ae|AE|oe|OE|aa|AA|l|L|i|j)(?![A-Za-z]))")
_BARE_PERCENT = re.compile(r"(?<!\\)%")


def collapse_whitespace(text: str) -> str:
    return " ".join(text.split())


def _accent(m: re.Match) -> str:
    mark = m.group(1) or m.group(4)
    letter = m.group(2) or m.group(3) or m.group(5) or m.group(6)
    if letter in ("\\i", "\\j"):
        letter = letter[1]
    if letter.startswith("\\"):
        return m.group(0)
    return unicodedata.normalize("NFC", letter + _COMBINING[mark])


_CONVERTER_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _latex_converter():
    from pylatexenc.latex2text import LatexNodes2Text

    return LatexNodes2Text(math_mode="verbatim", keep_comments=False, strict_latex_spaces=False)


_FORMAT_MACRO = re.compile(r"\\(?:emph|textit|textbf|texttt|textsc|textrm|textsf|textup|textsl|textnormal|underline|mbox|"
                           r"text|mathrm|mathit|mathbf)\s*\{([^{}]*)\}")
_SPACING = re.compile(r"\\[,;:! ]|\\\\")
_OTHER_MACRO = re.compile(r"\\[A-Za-z]+\*?(?:\s*\[[^\]{}]*\])?(?:\s*\{[^{}]*\})*")
_BRACES = re.compile(r"(?<!\\)[{}]")


@lru_cache(maxsize=65536)
def _macro_to_unicode(span: str) -> str:
    """One leftover macro call (e.g. '\\url{..}', '\\LaTeX') through pylatexenc; spans repeat, so cached."""
    with _CONVERTER_LOCK:  # one converter instance, shared by the snapshot's worker threads
        return _latex_converter().latex_to_text(_BARE_PERCENT.sub(r"\\%", span)).strip()


def _text_segment_to_unicode(seg: str) -> str:
    """Text-mode LaTeX of one segment (no math in it) to Unicode; whitespace around is kept."""
    if "\\" in seg:
        seg = _ACCENT.sub(_accent, seg)
        seg = _SIMPLE_RX.sub(lambda m: _SIMPLE[m.group(0)], seg)
        for _ in range(3):  # nested formatting: \emph{\textbf{x}}
            new = _FORMAT_MACRO.sub(r"\1", seg)
            if new == seg:
                break
            seg = new
        seg = _SPACING.sub(" ", seg)
        if "\\" in seg:
            seg = _OTHER_MACRO.sub(lambda m: _macro_to_unicode(m.group(0)), seg)
    if "{" in seg or "}" in seg:
        seg = _BRACES.sub("", seg)
    if "~" in seg:
        seg = seg.replace("~", "\u00a0")
    return seg


def latex_to_unicode(text: Optional[str]) -> str:
    """Text-mode LaTeX to Unicode (accents, escapes, formatting macros); math stays as written."""
    if not text:
        return text or ""
    if not _LATEX_HINT.search(text):
        return text
    out, pos = [], 0
    for m in _MATH.finditer(text):
        out.append(_text_segment_to_unicode(text[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_text_segment_to_unicode(text[pos:]))
    return "".join(out)


def display_title(raw: Optional[str]) -> tuple[str, Optional[str]]:
    """(title, title_raw): LaTeX converted, whitespace as harvested; raw kept only when it differs."""
    raw = raw or ""
    shown = latex_to_unicode(raw)
    return shown, (raw if shown != raw else None)


def display_abstract(raw: Optional[str]) -> tuple[str, Optional[str]]:
    """(abstract, abstract_raw): LaTeX converted and whitespace collapsed; raw kept when the LaTeX changed."""
    raw = raw or ""
    collapsed = collapse_whitespace(raw)
    shown = latex_to_unicode(collapsed)
    return shown, (raw.strip() if shown != collapsed else None)


def display_name(raw: str) -> str:
    return collapse_whitespace(latex_to_unicode(raw)) if _LATEX_HINT.search(raw) else collapse_whitespace(raw)


def match_title_key(doc: CorpusDoc | Mapping[str, Any]) -> str:
    """The paper's title key of a corpus doc, from the raw title when one is kept (equals the release's key)."""
    get = doc.get if isinstance(doc, Mapping) else lambda k: getattr(doc, k)
    return title_key(get("title_raw") or get("title") or "")


# -------------------------------------------------------------------------------------------- records

def corpus_row(*, arxiv_id: str, version: Optional[int], title: str, authors: list[str], abstract: str,
               categories: Iterable[str] | str | None, primary: Optional[str] = None, published: Optional[str],
               updated: Optional[str], doi: Optional[str] = None, journal_ref: Optional[str] = None,
               license: Optional[str] = None, source: str, doc_id: int = -1) -> dict:
    """A corpus row (CorpusDoc field order) from harvested values; ``doc_id`` is set by the store."""
    cats, prim = normalize_categories(categories, primary)
    shown_title, title_raw = display_title(title)
    shown_abs, abstract_raw = display_abstract(abstract)
    pub = iso_timestamp(published)
    upd = iso_timestamp(updated) or pub
    jr = collapse_whitespace(journal_ref) if journal_ref else None
    return {
        "doc_id": doc_id,
        "arxiv_id": arxiv_id,
        "arxiv_version": version,
        "title": shown_title,
        "authors": authors,
        "abstract": shown_abs,
        "categories": cats,
        "primary_category": prim,
        "published": pub,
        "updated": upd,
        "year": year_of(pub),
        "doi": normalize_doi(doi) if doi else None,
        "journal_ref": jr or None,
        "license": license or None,
        "title_raw": title_raw,
        "abstract_raw": abstract_raw,
        "source": source,
    }


def split_id(text: str) -> tuple[Optional[str], Optional[int]]:
    """('2106.12135', 2) from '2106.12135v2' or any URL form; (None, None) when not an arXiv id."""
    parsed = parse_arxiv_id(text)
    return (parsed.id, parsed.version) if parsed else (None, None)


def newer(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when record ``a`` should replace ``b`` (same arXiv id): higher version, then later update."""
    return ((a.get("arxiv_version") or 0), a.get("updated") or "") > ((b.get("arxiv_version") or 0), b.get("updated") or "")
