"""arXiv e-print sources: safe extraction and LaTeX parsing into a section tree with citations.

Extraction treats every archive as hostile: members with absolute paths or ``..``, symbolic and hard
links, devices and FIFOs, members over ``max_member_bytes``, archives over ``max_total_bytes`` (after
decompression) or ``max_files`` members are refused (:class:`UnsafeArchiveError`) before anything is
written. A gzip'd single ``.tex`` (arXiv's form for one-file submissions) and plain tarballs work too.

Parsing (:func:`parse_latex_tree`):

* main file: the ``.tex`` with ``\\documentclass`` and ``\\begin{document}`` (ties: ``main``/``ms``
  names, then the most ``\\input``s, then size); ``\\input``/``\\include``/``\\subfile`` expanded
  recursively inside the source folder, comments dropped,
* section tree: ``\\part`` .. ``\\subparagraph``, starred or not, ``\\section[short]{long}`` (the long
  title is kept), levels renumbered from the topmost one used; text of each section up to the next
  heading, turned into plain text,
* citations per section: the whole natbib/biblatex ``\\cite`` family (``\\citep*``, ``\\citet``,
  ``\\parencite``, ``\\textcite``, ``\\autocite``, ``\\footcite``, ``\\cites``, ...), optional
  arguments, several keys per command,
* bibliography: ``.bib`` files named by ``\\bibliography``/``\\addbibresource`` (else every ``.bib``),
  parsed with bibtexparser; else the ``.bbl`` (bibtex ``\\bibitem`` or biblatex ``\\entry`` form), else
  a ``thebibliography`` environment in the text,
* entries map to corpus docs by arXiv id (eprint, arXivId, URL, DOI 10.48550/arXiv.*, notes), then
  DOI, then title key; cited keys missing from the bibliography and entries never cited are counted.
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import re
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Optional

from surge_datasets.identifiers import find_arxiv_ids, normalize_doi, parse_arxiv_id, title_key

from .normalize import collapse_whitespace, latex_to_unicode

log = logging.getLogger(__name__)

MAX_TOTAL_BYTES = 200 * 2**20
MAX_MEMBER_BYTES = 50 * 2**20
MAX_FILES = 2000


class UnsafeArchiveError(ValueError):
    """The archive tries to write outside its folder, holds links or special files, or is too big."""


class SourceError(ValueError):
    """The source holds no usable LaTeX."""


# ------------------------------------------------------------------------------------------ extraction

def _read_capped(stream: io.BufferedIOBase, cap: int, what: str) -> bytes:
    data = stream.read(cap + 1)
    if len(data) > cap:
        raise UnsafeArchiveError(f"{what}: more than {cap} bytes once decompressed")
    return data


def _check_member_name(name: str) -> PurePosixPath:
    if not name or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        raise UnsafeArchiveError(f"absolute path in archive: {name!r}")
    path = PurePosixPath(name.replace("\\", "/"))
    if any(part == ".." for part in path.parts):
        raise UnsafeArchiveError(f"path leaves the archive folder: {name!r}")
    return path


def extract_source(source: os.PathLike | str | bytes, dest: os.PathLike | str, *,
                   max_total_bytes: int = MAX_TOTAL_BYTES, max_member_bytes: int = MAX_MEMBER_BYTES,
                   max_files: int = MAX_FILES) -> Path:
    """Extract an e-print (tar, tar.gz, gzip'd single file, or a lone .tex) into ``dest``; returns ``dest``.

    All checks run on the whole member list before a single byte is written.
    """
    dest = Path(dest)
    if isinstance(source, (bytes, bytearray)):
        raw, label = bytes(source), "<bytes>"
    else:
        p = Path(source)
        if p.stat().st_size > max_total_bytes:
            raise UnsafeArchiveError(f"{p}: {p.stat().st_size} bytes, over the {max_total_bytes} cap")
        raw, label = p.read_bytes(), str(p)
    data = raw
    if raw[:2] == b"\x1f\x8b":
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
            data = _read_capped(gz, max_total_bytes, label)
    is_tar = False
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
            tf.getmembers()
            is_tar = True
    except tarfile.TarError:
        is_tar = False
    dest.mkdir(parents=True, exist_ok=True)
    if not is_tar:
        if data[:5] == b"%PDF-":
            raise SourceError(f"{label}: the e-print is a PDF, no LaTeX source")
        if len(data) > max_member_bytes:
            raise UnsafeArchiveError(f"{label}: single file of {len(data)} bytes, over the {max_member_bytes} cap")
        (dest / "main.tex").write_bytes(data)
        return dest
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
        members = tf.getmembers()
        if len(members) > max_files:
            raise UnsafeArchiveError(f"{label}: {len(members)} members, over the {max_files} cap")
        total = 0
        for m in members:
            _check_member_name(m.name)
            if m.issym() or m.islnk():
                raise UnsafeArchiveError(f"{label}: link member {m.name!r} -> {m.linkname!r} refused")
            if not (m.isfile() or m.isdir()):
                raise UnsafeArchiveError(f"{label}: special member {m.name!r} refused")
            if m.size > max_member_bytes:
                raise UnsafeArchiveError(f"{label}: member {m.name!r} has {m.size} bytes, over the {max_member_bytes} cap")
            total += m.size
            if total > max_total_bytes:
                raise UnsafeArchiveError(f"{label}: members add up to over {max_total_bytes} bytes")
        root = dest.resolve()
        for m in members:
            target = (dest / _check_member_name(m.name)).resolve()
            if root != target and root not in target.parents:
                raise UnsafeArchiveError(f"{label}: member {m.name!r} resolves outside {dest}")
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            fh = tf.extractfile(m)
            if fh is None:
                continue
            with open(target, "wb") as out:
                out.write(_read_capped(fh, max_member_bytes, m.name))
            os.chmod(target, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    return dest


# ------------------------------------------------------------------------------------- reading files

def _read_text(path: Path) -> str:
    data = path.read_bytes()
    for enc in ("utf-8", "latin-1"):
        try:
            return data.decode(enc)
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", "replace")


def strip_comments(text: str) -> str:
    """Drop ``%`` comments (not ``\\%``) with the line end, as TeX does; comment environments too."""
    text = re.sub(r"\\begin\{comment\}.*?\\end\{comment\}", "", text, flags=re.S)
    out = []
    for line in text.split("\n"):
        m = re.search(r"(?<!\\)(?:\\\\)*%", line)
        if m:
            # keep an even run of backslashes before the % (\\% is a line break then a comment)
            cut = m.end() - 1
            out.append(line[:cut])
            out.append("")  # the comment eats the newline
        else:
            out.append(line + "\n")
    return "".join(out)


def _tex_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p.suffix.lower() in (".tex", ".ltx"))


def find_main_file(root: Path) -> Path:
    """The main ``.tex`` file of a source folder."""
    files = _tex_files(root)
    if not files:
        raise SourceError(f"{root}: no .tex file")
    candidates = []
    for p in files:
        text = strip_comments(_read_text(p))
        if re.search(r"\\documentclass", text) and re.search(r"\\begin\s*\{document\}", text):
            inputs = len(re.findall(r"\\(?:input|include|subfile)\b", text))
            preferred = p.stem.lower() in ("main", "ms", "paper", "survey", "article")
            candidates.append((preferred, inputs, p.stat().st_size, -len(p.parts), p))
    if candidates:
        return max(candidates, key=lambda c: c[:4])[-1]
    if len(files) == 1:
        return files[0]
    return max(files, key=lambda p: p.stat().st_size)


_INPUT = re.compile(r"\\(input|include|subfile|import|subimport)\s*(?:\{([^}]*)\}\s*)?\{([^}]+)\}|\\input\s+([^\s{}\\]+)")


def expand_inputs(path: Path, root: Path, *, depth: int = 0, seen: Optional[set[Path]] = None) -> str:
    """The text of ``path`` with ``\\input``/``\\include``/``\\subfile``/``\\import`` expanded (comments dropped)."""
    seen = seen if seen is not None else set()
    root_r = root.resolve()
    path_r = path.resolve()
    if depth > 20 or path_r in seen:
        return ""
    seen.add(path_r)
    text = strip_comments(_read_text(path))

    def repl(m: re.Match) -> str:
        name = (m.group(3) or m.group(4) or "").strip()
        folder = (m.group(2) or "").strip()
        if not name:
            return ""
        rel = PurePosixPath(folder) / name if folder else PurePosixPath(name)
        try:
            _check_member_name(str(rel))
        except UnsafeArchiveError:
            log.warning("%s: \\input of %s outside the source refused", path, rel)
            return ""
        for base in (path.parent, root):
            for cand in (base / rel, base / f"{rel}.tex"):
                c = cand.resolve()
                if c.is_file() and (c == root_r or root_r in c.parents):
                    body = expand_inputs(c, root, depth=depth + 1, seen=seen)
                    if m.group(1) == "subfile":
                        inner = re.search(r"\\begin\s*\{document\}(.*?)\\end\s*\{document\}", body, re.S)
                        body = inner.group(1) if inner else body
                    return "\n" + body + "\n"
        log.info("%s: input %s not found", path, rel)
        return ""

    return _INPUT.sub(repl, text)


# -------------------------------------------------------------------------------------------- citations

_CITE_CMD = re.compile(r"\\([A-Za-z]*[cC]ite[a-zA-Z]*)\b(\*?)")
_NOT_CITES = {"citestyle", "citeindexfalse", "citeindextrue", "citeindextype", "citename", "citation",
              "bibliographystyle", "citeauthorstyle"}


def _balanced(text: str, i: int, open_c: str, close_c: str) -> tuple[str, int]:
    """Content of the group starting at ``text[i] == open_c`` and the index after it."""
    depth, j = 0, i
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return text[i + 1:j], j + 1
        j += 1
    return text[i + 1:], len(text)


@dataclass
class CiteCall:
    command: str
    keys: list[str]
    start: int
    end: int


def find_citations(text: str) -> list[CiteCall]:
    """Every \\cite-family call with its keys (multi-cite commands like \\cites{a}{b} included)."""
    calls = []
    for m in _CITE_CMD.finditer(text):
        name = m.group(1)
        if name in _NOT_CITES or name.startswith("bibliography"):
            continue
        multi = name.endswith("cites") or name.endswith("Cites")
        j, keys = m.end(), []
        while True:
            k = j
            while k < len(text) and text[k] in " \t\n":
                k += 1
            if k >= len(text):
                break
            c = text[k]
            if c == "[":
                _, j = _balanced(text, k, "[", "]")
                continue
            if c == "(" and multi:
                _, j = _balanced(text, k, "(", ")")
                continue
            if c == "{":
                group, j = _balanced(text, k, "{", "}")
                keys.extend(x.strip() for x in group.split(",") if x.strip())
                if multi:
                    continue
            break
        if keys:
            calls.append(CiteCall(name + m.group(2), keys, m.start(), j))
    return calls


# --------------------------------------------------------------------------------------------- sections

LEVELS = {"part": -1, "chapter": 0, "section": 1, "subsection": 2, "subsubsection": 3, "paragraph": 4, "subparagraph": 5}
LEVEL_NAMES = ["section", "subsection", "subsubsection", "paragraph", "subparagraph", "subparagraph", "subparagraph"]
_HEADING = re.compile(r"\\(part|chapter|section|subsection|subsubsection|paragraph|subparagraph)\s*(\*?)\s*")


@dataclass
class Heading:
    command: str
    starred: bool
    title: str          # the long title, as LaTeX
    short: Optional[str]
    start: int
    end: int


def find_headings(text: str) -> list[Heading]:
    out = []
    for m in _HEADING.finditer(text):
        j, short = m.end(), None
        if j < len(text) and text[j] == "[":
            short, j = _balanced(text, j, "[", "]")
            while j < len(text) and text[j] in " \t\n":
                j += 1
        if j >= len(text) or text[j] != "{":
            continue  # e.g. \section used in a macro definition
        title, j = _balanced(text, j, "{", "}")
        out.append(Heading(m.group(1), bool(m.group(2)), title, short, m.start(), j))
    return out


@dataclass
class ParsedSection:
    id: str
    parent_id: Optional[str]
    level: int
    title: str
    content: str
    cite_keys: list[str]


@dataclass
class BibEntry:
    key: str
    title: Optional[str] = None
    arxiv_id: Optional[str] = None
    doi: Optional[str] = None
    year: Optional[str] = None
    raw: str = ""


@dataclass
class ParsedSource:
    title: str
    abstract: str
    authors: list[str]
    sections: list[ParsedSection]
    bibliography: dict[str, BibEntry]
    bibliography_source: Optional[str]
    main_file: str
    cited_keys: list[str] = field(default_factory=list)
    missing_keys: list[str] = field(default_factory=list)   # cited, not in the bibliography
    uncited_entries: list[str] = field(default_factory=list)  # in the bibliography, never cited

    def report(self) -> dict:
        return {"main_file": self.main_file, "sections": len(self.sections) - 1, "bibliography": len(self.bibliography),
                "bibliography_source": self.bibliography_source, "cited_keys": len(self.cited_keys),
                "missing_keys": len(self.missing_keys), "uncited_entries": len(self.uncited_entries),
                "missing_key_list": self.missing_keys[:50], "uncited_entry_list": self.uncited_entries[:50]}


_DROP_ENVS = ("figure", "figure*", "table", "table*", "thebibliography", "tikzpicture", "algorithm", "algorithm*",
              "lstlisting", "verbatim")
_LABEL_LIKE = re.compile(r"\\(?:label|ref|eqref|autoref|cref|Cref|pageref|vspace|hspace|footnotemark|url)\*?\s*\{[^{}]*\}")


def latex_to_plain(text: str) -> str:
    """Section body to plain text: floats and labels dropped, citations removed, LaTeX to Unicode."""
    for env in _DROP_ENVS:
        e = re.escape(env)
        text = re.sub(rf"\\begin\{{{e}\}}.*?\\end\{{{e}\}}", " ", text, flags=re.S)
    calls = find_citations(text)
    for c in reversed(calls):
        text = text[:c.start] + text[c.end:]
    text = _LABEL_LIKE.sub("", text)
    text = re.sub(r"\\(?:begin|end)\s*\{[^{}]*\}", " ", text)
    text = re.sub(r"\\(?:item)\b", " ", text)
    text = re.sub(r"\\(?:footnote|textsuperscript)\s*\{", "(", text)
    return collapse_whitespace(latex_to_unicode(text)).replace(" .", ".").replace(" ,", ",")


def _document_body(text: str) -> str:
    m = re.search(r"\\begin\s*\{document\}(.*?)(?:\\end\s*\{document\}|$)", text, re.S)
    return m.group(1) if m else text


def _command_arg(text: str, name: str) -> Optional[str]:
    m = re.search(rf"\\{name}\s*(?:\[[^\]]*\])?\s*\{{", text)
    if not m:
        return None
    group, _ = _balanced(text, m.end() - 1, "{", "}")
    return group


def parse_sections(body: str, title: str) -> list[ParsedSection]:
    """Root section ("root") plus one section per heading, with plain-text content and cite keys."""
    headings = find_headings(body)
    levels_used = sorted({LEVELS[h.command] for h in headings if h.command != "part"})
    offset = levels_used[0] - 1 if levels_used else 0
    preamble_end = headings[0].start if headings else len(body)
    abstract = re.search(r"\\begin\{abstract\}.*?\\end\{abstract\}", body[:preamble_end], re.S)
    front = body[:preamble_end]
    if abstract:
        front = front.replace(abstract.group(0), " ")
    front = re.sub(r"\\maketitle|\\tableofcontents", " ", front)
    root_keys = list(dict.fromkeys(k for c in find_citations(front) if not c.command.startswith("nocite") for k in c.keys))
    root = ParsedSection("0", None, 0, "root", latex_to_plain(front), root_keys)
    sections = [root]
    stack: list[ParsedSection] = [root]
    for i, h in enumerate(headings):
        if h.command == "part":
            continue
        end = headings[i + 1].start if i + 1 < len(headings) else len(body)
        raw = body[h.end:end]
        raw = re.split(r"\\(?:bibliography|printbibliography|begin\{thebibliography\})", raw)[0]
        level = max(1, LEVELS[h.command] - offset)
        while stack and stack[-1].level >= level:
            stack.pop()
        parent = stack[-1] if stack else root
        keys: list[str] = []
        for c in find_citations(raw):
            if c.command.startswith("nocite"):  # no in-text citation
                continue
            for k in c.keys:
                if k not in keys:
                    keys.append(k)
        sec = ParsedSection(str(len(sections)), parent.id, level, collapse_whitespace(latex_to_unicode(h.title)),
                            latex_to_plain(raw), keys)
        sections.append(sec)
        stack.append(sec)
    return sections


# ----------------------------------------------------------------------------------------- bibliography

def _entry_ids(fields: dict[str, str]) -> tuple[Optional[str], Optional[str]]:
    arxiv = None
    prefix = (fields.get("archiveprefix") or fields.get("eprinttype") or "").lower()
    for name in ("eprint", "arxivid", "arxiv"):
        value = fields.get(name)
        if value and (prefix in ("", "arxiv") or name != "eprint"):
            parsed = parse_arxiv_id(value.strip()) or next(iter(find_arxiv_ids(value)), None)
            if parsed:
                arxiv = parsed.id
                break
    doi = normalize_doi(fields.get("doi") or "") or None
    if arxiv is None:
        for name in ("url", "doi", "journal", "note", "howpublished", "booktitle", "volume"):
            value = fields.get(name) or ""
            m = re.search(r"10\.48550/arxiv\.(\d{4}\.\d{4,5})", value, re.I)
            found = [parse_arxiv_id(m.group(1))] if m else [a for a in find_arxiv_ids(value)
                                                             if "arxiv" in value.lower() or name == "url"]
            if found and found[0]:
                arxiv = found[0].id
                break
    if doi and doi.startswith("10.48550/arxiv."):
        arxiv = arxiv or (parse_arxiv_id(doi.split("arxiv.", 1)[1]) or (None,))[0]
    if doi is None:
        doi = normalize_doi(fields.get("url") or "") if "doi.org" in (fields.get("url") or "") else None
    return arxiv, doi


def _clean_title(title: Optional[str]) -> Optional[str]:
    if not title:
        return None
    return collapse_whitespace(latex_to_unicode(title)) or None


def parse_bib(text: str) -> dict[str, BibEntry]:
    """Entries of a .bib file (bibtexparser 2.x; string macros and duplicates tolerated)."""
    import bibtexparser

    lib = bibtexparser.parse_string(text)
    out: dict[str, BibEntry] = {}
    for e in lib.entries:
        fields = {k.lower(): (v.value if isinstance(v.value, str) else str(v.value)) for k, v in e.fields_dict.items()}
        arxiv, doi = _entry_ids(fields)
        raw_title = fields.get("title")
        out.setdefault(e.key, BibEntry(e.key, raw_title, arxiv, doi, fields.get("year"), e.raw or ""))
    return out


_BIBITEM = re.compile(r"\\bibitem\s*(?:\[((?:[^\[\]]|\[[^\]]*\])*)\])?\s*\{([^}]+)\}")


def parse_bibitems(text: str) -> dict[str, BibEntry]:
    """``\\bibitem`` entries (a bibtex .bbl or a thebibliography environment)."""
    out: dict[str, BibEntry] = {}
    items = list(_BIBITEM.finditer(text))
    for i, m in enumerate(items):
        key = m.group(2).strip()
        end = items[i + 1].start() if i + 1 < len(items) else len(text)
        body = text[m.end():end]
        body = re.split(r"\\end\{thebibliography\}", body)[0]
        blocks = [b.strip() for b in re.split(r"\\newblock", body)]
        title = None
        if len(blocks) > 1:
            title = blocks[1]
        else:  # no \newblock: a quoted title, else the text after the first period
            q = re.search(r"``(.+?)''|\"(.+?)\"", body, re.S)
            title = (q.group(1) or q.group(2)) if q else None
        if title:
            title = re.sub(r"\\(?:em|it|bf)\b", "", title).strip().rstrip(".,")
        ids = find_arxiv_ids(body)
        m_doi = re.search(r"10\.48550/arxiv\.(\d{4}\.\d{4,5})", body, re.I)
        arxiv = parse_arxiv_id(m_doi.group(1)).id if m_doi else (ids[0].id if ids else None)
        doi = normalize_doi(re.sub(r"\\(?:url|doi|href)\s*\{", " ", body)) if re.search(r"10\.\d{4,9}/", body) else None
        out.setdefault(key, BibEntry(key, title, arxiv, doi, None, body.strip()))
    return out


def parse_biblatex_bbl(text: str) -> dict[str, BibEntry]:
    """Entries of a biblatex ``.bbl`` (``\\entry{key}{type}{}`` ... ``\\endentry``)."""
    out: dict[str, BibEntry] = {}
    for m in re.finditer(r"\\entry\{([^}]+)\}\{[^}]*\}\{[^}]*\}(.*?)\\endentry", text, re.S):
        key, body = m.group(1).strip(), m.group(2)
        fields: dict[str, str] = {}
        for f in re.finditer(r"\\field\{([^}]+)\}\{", body):
            value, _ = _balanced(body, f.end() - 1, "{", "}")
            fields[f.group(1).lower()] = value
        for v in re.finditer(r"\\verb\{([^}]+)\}\s*\\verb\s?(.*?)\s*\\endverb", body, re.S):
            fields[v.group(1).lower()] = v.group(2).strip()
        arxiv, doi = _entry_ids(fields)
        out.setdefault(key, BibEntry(key, fields.get("title"), arxiv, doi, fields.get("year"), body.strip()))
    return out


def load_bibliography(root: Path, text: str, main: Path) -> tuple[dict[str, BibEntry], Optional[str]]:
    """The bibliography of a source folder and where it came from ('bib', 'bbl', 'thebibliography')."""
    names: list[str] = []
    for m in re.finditer(r"\\(?:bibliography|addbibresource|addglobalbib)\s*(?:\[[^\]]*\])?\s*\{([^}]+)\}", text):
        names.extend(n.strip() for n in m.group(1).split(",") if n.strip())
    root_r = root.resolve()
    bibs: list[Path] = []
    for n in names:
        try:
            _check_member_name(n)
        except UnsafeArchiveError:
            continue
        for cand in (main.parent / n, main.parent / f"{n}.bib", root / n, root / f"{n}.bib"):
            if cand.is_file() and root_r in cand.resolve().parents and cand not in bibs:
                bibs.append(cand)
                break
    if not bibs:
        bibs = sorted(p for p in root.rglob("*.bib") if p.is_file() and not p.is_symlink())
    entries: dict[str, BibEntry] = {}
    for b in bibs:
        try:
            for k, v in parse_bib(_read_text(b)).items():
                entries.setdefault(k, v)
        except Exception as exc:  # bibtexparser is tolerant; a broken file should not sink the survey
            log.warning("%s: unreadable .bib (%s)", b, exc)
    if entries:
        return entries, "bib"
    bbls = sorted(p for p in root.rglob("*.bbl") if p.is_file() and not p.is_symlink())
    bbls.sort(key=lambda p: (p.stem != main.stem, str(p)))
    for bbl in bbls:
        t = _read_text(bbl)
        entries = parse_biblatex_bbl(t) if "\\entry{" in t else parse_bibitems(t)
        if entries:
            return entries, "bbl"
    m = re.search(r"\\begin\{thebibliography\}.*?\\end\{thebibliography\}", text, re.S)
    if m:
        return parse_bibitems(m.group(0)), "thebibliography"
    return {}, None


# -------------------------------------------------------------------------------------------- top level

def parse_latex_tree(root: os.PathLike | str) -> ParsedSource:
    """Parse an extracted source folder into sections, per-section cite keys and the bibliography."""
    root = Path(root)
    main = find_main_file(root)
    text = expand_inputs(main, root)
    body = _document_body(text)
    title_raw = _command_arg(text, "title") or ""
    title = collapse_whitespace(latex_to_unicode(re.sub(r"\\\\|\\thanks\s*\{[^{}]*\}", " ", title_raw)))
    authors_raw = _command_arg(text, "author") or ""
    authors = [collapse_whitespace(latex_to_unicode(re.sub(r"\\thanks\s*\{[^{}]*\}|\\(?:inst|IEEEauthorrefmark)\s*\{[^{}]*\}", "", a)))
               for a in re.split(r"\\and\b|\\AND\b|,", authors_raw) if a.strip()]
    authors = [a for a in authors if a and len(a) < 80]
    am = re.search(r"\\begin\{abstract\}(.*?)\\end\{abstract\}", body, re.S)
    abstract = latex_to_plain(am.group(1)) if am else ""
    sections = parse_sections(body, title)
    bib, bib_source = load_bibliography(root, text, main)
    cited: list[str] = []
    for c in find_citations(body):
        for k in c.keys:
            if k != "*" and k not in cited:
                cited.append(k)
    missing = [k for k in cited if k not in bib]
    uncited = [k for k in bib if k not in set(cited)]
    return ParsedSource(title, abstract, authors, sections, bib, bib_source, str(main.relative_to(root)),
                        cited, missing, uncited)


def parse_source(source: os.PathLike | str | bytes, workdir: os.PathLike | str, **limits: int) -> ParsedSource:
    """Extract (tarball, gzip'd .tex, bytes) into ``workdir`` and parse; a folder is parsed in place."""
    if not isinstance(source, (bytes, bytearray)) and Path(source).is_dir():
        return parse_latex_tree(source)
    folder = extract_source(source, workdir, **limits)
    return parse_latex_tree(folder)


# ---------------------------------------------------------------------------------- mapping to the corpus

class CorpusLookup:
    """arXiv id / DOI / title key -> doc_id over any iterable of CorpusDoc (harvest folder or built corpus)."""

    def __init__(self, docs: Iterable = ()) -> None:
        from .normalize import match_title_key

        self.by_arxiv: dict[str, int] = {}
        self.by_doi: dict[str, int] = {}
        self.by_title: dict[str, int] = {}
        for d in docs:
            self.add(d.doc_id, d.arxiv_id, d.doi, match_title_key(d))

    def add(self, doc_id: int, arxiv_id: Optional[str], doi: Optional[str], key: Optional[str]) -> None:
        if arxiv_id:
            self.by_arxiv[arxiv_id] = doc_id
        if doi:
            self.by_doi[doi] = doc_id
        if key:
            self.by_title[key] = doc_id  # the last doc in corpus order wins, as in the paper

    @classmethod
    def from_batches(cls, batches: Iterable) -> "CorpusLookup":
        """Built from Arrow record batches in CorpusDoc schema (fast path for a large harvest folder)."""
        lookup = cls()
        for b in batches:
            cols = [b.column(n).to_pylist() for n in ("doc_id", "arxiv_id", "doi", "title_raw", "title")]
            for doc_id, aid, doi, raw, title in zip(*cols):
                lookup.add(doc_id, aid, doi, title_key(raw or title or ""))
        return lookup

    def resolve(self, entry: BibEntry) -> tuple[Optional[int], Optional[str]]:
        """(doc_id, how) for a bibliography entry: 'arxiv', 'doi', 'title', or (None, None)."""
        if entry.arxiv_id and entry.arxiv_id in self.by_arxiv:
            return self.by_arxiv[entry.arxiv_id], "arxiv"
        if entry.doi and entry.doi in self.by_doi:
            return self.by_doi[entry.doi], "doi"
        if entry.title:
            key = title_key(entry.title)
            if key and key in self.by_title:
                return self.by_title[key], "title"
        return None, None


def section_level_name(level: int) -> str:
    return LEVEL_NAMES[max(0, level - 1)] if level > 0 else "title"


def resolve_entries(parsed: ParsedSource, resolve: Optional[Callable[[BibEntry], tuple[Optional[int], Optional[str]]]]
                    ) -> dict[str, Optional[int]]:
    """Bibliography key -> doc_id (None where the corpus lacks the paper)."""
    if resolve is None:
        return {k: None for k in parsed.bibliography}
    return {k: resolve(e)[0] for k, e in parsed.bibliography.items()}
