"""Reading generated surveys: the section tree, the reference list and the in-text citations.

A generated survey is one folder per survey id. Layouts understood:

* ``markdown`` - one Markdown file (any name, with or without ``.md``); references are lines
  ``[n] Title`` or ``[n] Authors. (year). *Title*``, in-text citations are ``[n]``.
* ``autosurvey`` - a ``.md`` file plus a ``.json`` file ``{"survey": <markdown>, "reference": {n: arXiv id}}``.
* ``json`` - our own format (see :func:`parse_json_survey`): sections (nested or flat with levels) or a
  Markdown body, and references with title / arXiv id / DOI.
* ``latex`` - a ``.tex`` file and its ``.bib`` file(s) (or a ``thebibliography`` environment).

Two reading modes:

``reference`` (default) reproduces the paper's evaluation code exactly: every line matching
``^(#+)\\s+(.*)`` is a heading (a heading pops the stack back to the last heading of a lower level), every
other line, blank ones included, is content of the current node; the reference list is every line
starting with ``[`` that matches the paper's reference regex, anywhere in the file, a later entry
with the same number replacing an earlier one; references are resolved by title only; in-text
citations are single-number ``[n]`` markers, read in the content of every node whose heading contains
neither ``root`` nor ``Abstract:`` (so text before the first heading is not read), and the sentence of a
citation is the text between the previous and the next ``.`` around the marker. For a folder with
several files the first ``.md`` file (in name order) is read.

``paper`` reads robustly: headings ``#``..``######`` outside code fences, a BOM is dropped, the
reference list is the block after a ``References``/``Bibliography`` heading or line (never counted as
content or as citations), titles are taken from italics, quotes, ``Authors. (year). Title`` or the
whole entry, arXiv ids and DOIs in an entry are kept, the AutoSurvey JSON map supplies arXiv ids,
multi-citations ``[1, 2]``, ``[1; 2]`` and ranges ``[3-5]`` are expanded, sentences are split at
sentence ends (not at ``e.g.`` or decimals) and text before the first heading counts under the
survey title.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Union

from .identifiers import find_arxiv_ids, normalize_doi, parse_arxiv_id

PathLike = Union[str, os.PathLike]
MODES = ("reference", "paper")

# --- the paper's own patterns (reference mode) -------------------------------------------------
REF_HEADING = re.compile(r"^(#+)\s+(.*)")
REF_ENTRY = re.compile(r"^\[(\d+)\]\s*(?:.*?\*?([\w\s:,.-]+)\*?$|([\w\s:,.-]+)$)")
REF_CITATION = re.compile(r"\[(\d+)\]")

# --- robust patterns (paper mode) ---------------------------------------------------------------
PAPER_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
BIB_HEADER = re.compile(
    r"^\s*(?:#{1,6}\s*)?[*_]{0,2}\s*(?:\d+(?:\.\d+)*\.?\s+)?(?:references?|bibliography|works cited|reference list)\s*:?\s*[*_]{0,2}\s*:?\s*$",
    re.I,
)
PAPER_ENTRY = re.compile(r"^\s*(?:[-*]\s+)?\[(\d+)\][.:]?\s*(.*\S)\s*$")
PAPER_CITATION = re.compile(r"\[(\s*\d+(?:\s*(?:[,;]|[-\u2013\u2014]|,\s*and)\s*\d+)*\s*)\]")
_MAX_RANGE = 100

_ITALIC = re.compile(r"(?<![*\w])\*{1,2}([^*]{3,}?)\*{1,2}(?![*\w])|(?<![_\w])_([^_]{3,}?)_(?![_\w])")
_QUOTED = re.compile(r"[\"\u201c]([^\"\u201d]{3,})[\"\u201d]")
_AUTHOR_YEAR = re.compile(r"\((?:n\.\s?d\.|\d{4}[a-z]?|in press|forthcoming)\)\s*[.,:]?\s*(.+)$", re.I)
_BRACKET_TITLE = re.compile(r"^\[([^\]]{3,})\](?:\([^)]*\))?")
_URL = re.compile(r"(?:https?://|www\.)\S+", re.I)
_ABBREV = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|etc|vs|cf|Fig|Figs|Eq|Eqs|Sec|Ref|Refs|No|Vol|pp|approx|resp|Dr|Mr|Ms|Prof|St)\.|\b[A-Z]\.|\d\.\d)$"
)


class GeneratedReadError(ValueError):
    """A generated survey that cannot be read; the message names the file and, when known, the line."""

    def __init__(self, path: PathLike, message: str, line: Optional[int] = None):
        self.path = Path(path)
        self.line = line
        where = f"{self.path}" + (f", line {line}" if line else "")
        super().__init__(f"{where}: {message}")


@dataclass
class GenSection:
    """One node of a generated survey's heading tree (the synthetic root has title 'root', level 0)."""

    title: str
    level: int
    content: str = ""
    children: list["GenSection"] = field(default_factory=list)
    line: int = 0  # 1-based line of the heading in its file (0 for the root or non-Markdown input)

    def iter(self) -> Iterator["GenSection"]:
        """This node and all below it, pre-order."""
        yield self
        for child in self.children:
            yield from child.iter()

    def to_dict(self) -> dict:
        return {"title": self.title, "level": self.level, "content": self.content, "children": [c.to_dict() for c in self.children]}


@dataclass
class Reference:
    """One entry of a generated survey's reference list."""

    number: str
    title: Optional[str] = None
    arxiv_id: Optional[str] = None
    doi: Optional[str] = None
    raw: str = ""
    line: Optional[int] = None


@dataclass
class Citation:
    """One in-text citation instance: the reference number, the heading it sits under and its sentence."""

    number: str
    heading: str
    sentence: str


@dataclass
class GeneratedSurvey:
    """A generated survey as read in one mode (``reference`` or ``paper``)."""

    survey_id: str
    path: Path
    title: Optional[str]
    root: GenSection
    references: dict[str, Reference]
    layout: str
    mode: str = "reference"
    warnings: list[str] = field(default_factory=list)
    # paper mode: the heading nodes whose content is the reference list (left out of headings())
    _bib_nodes: set = field(default_factory=set, repr=False)

    # -- the tree ---------------------------------------------------------------------------
    def iter_sections(self) -> Iterator[GenSection]:
        """Every heading node, pre-order, without the root."""
        it = self.root.iter()
        next(it)
        yield from it

    def _is_scored_heading(self, node: GenSection) -> bool:
        if self.mode == "reference":  # the paper's test: substring checks on the title
            return "root" not in node.title and "Abstract:" not in node.title
        return node is not self.root and "Abstract:" not in node.title and id(node) not in self._bib_nodes

    def headings(self) -> list[str]:
        """Headings scored by the structure metrics (the paper's ``get_title_list``): every node except
        the root and headings containing 'Abstract:', each cut to 512 characters, pre-order.

        Reference mode skips any heading whose text contains 'root' (the paper tests a substring);
        paper mode skips only the synthetic root and the reference-list heading.
        """
        return [n.title[:512] for n in self.root.iter() if self._is_scored_heading(n)]

    def outline_markdown(self) -> str:
        """The heading tree rendered as Markdown headings, one per line (depth in the tree = number of '#')."""
        out: list[str] = []

        def walk(node: GenSection, depth: int) -> None:
            if self._is_scored_heading(node):
                out.append("#" * depth + " " + node.title + "\n")
            for child in node.children:
                walk(child, depth + 1)

        walk(self.root, 0)
        return "".join(out)

    def section_texts(self, min_chars: int = 100) -> list[str]:
        """Content of every node (root included), pre-order, kept when at least ``min_chars`` long
        (the paper's ``get_content_list``, used by ROUGE/BLEU and content quality)."""
        return [n.content for n in self.root.iter() if len(n.content) >= min_chars]

    # -- citations --------------------------------------------------------------------------
    def citations(self) -> list[Citation]:
        """Every in-text citation instance in reading order (see the module doc for each mode's rules)."""
        if self.mode == "reference":
            return _reference_citations(self.root)
        out: list[Citation] = []
        for node in self.root.iter():
            if node is self.root:
                heading = self.title or ""
            elif "Abstract:" in node.title or id(node) in self._bib_nodes:
                continue
            else:
                heading = node.title
            for number, sentence in _paper_citations(node.content):
                out.append(Citation(number, heading, sentence))
        return out

    def cited_numbers(self) -> list[str]:
        """Distinct reference numbers cited in the text, in order of first citation."""
        return list(dict.fromkeys(c.number for c in self.citations()))


# ---------------------------------------------------------------------------------------------------
# citation extraction


def _reference_citations(root: GenSection) -> list[Citation]:
    out: list[Citation] = []
    for node in root.iter():
        if "root" in node.title or "Abstract:" in node.title:
            continue
        text = node.content
        for m in REF_CITATION.finditer(text):
            start = m.start()
            s0 = text.rfind(".", 0, start) + 1
            s1 = text.find(".", start)
            if s1 == -1:
                s1 = len(text)
            out.append(Citation(str(int(m.group(1))), node.title, text[s0:s1].strip()))
    return out


def expand_citation_marker(inner: str) -> list[str]:
    """'1, 3-5; 7' -> ['1', '3', '4', '5', '7'] (ranges longer than 100 are kept as their two ends)."""
    nums: list[str] = []
    for part in re.split(r"\s*(?:[,;]|,\s*and)\s*", inner.strip()):
        rng = re.fullmatch(r"(\d+)\s*[-\u2013\u2014]\s*(\d+)", part)
        if rng:
            a, b = int(rng.group(1)), int(rng.group(2))
            if a <= b and b - a <= _MAX_RANGE:
                nums.extend(str(i) for i in range(a, b + 1))
            else:
                nums.extend([str(a), str(b)])
        elif part.isdigit():
            nums.append(str(int(part)))
    return nums


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans of a text: ends at '.', '!' or '?' followed by white space (not after e.g., et al.,
    initials or inside decimals), and at blank lines."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in re.finditer(r"[.!?](?=[\"')\]]*\s)|\n\s*\n", text):
        end = m.end()
        if m.group(0).startswith((".", "!", "?")) and _ABBREV.search(text[max(start, end - 12):end]):
            continue
        spans.append((start, end))
        start = end
    spans.append((start, len(text)))
    return spans


def _paper_citations(text: str) -> list[tuple[str, str]]:
    markers = list(PAPER_CITATION.finditer(text))
    if not markers:
        return []
    spans = _sentence_spans(text)
    out = []
    si = 0
    for m in markers:
        while si < len(spans) - 1 and spans[si][1] <= m.start():
            si += 1
        a, b = spans[si]
        sentence = " ".join(PAPER_CITATION.sub("", text[a:b]).split())
        sentence = re.sub(r"\s+([.,;:!?])", r"\1", sentence)
        for number in expand_citation_marker(m.group(1)):
            out.append((number, sentence))
    return out


# ---------------------------------------------------------------------------------------------------
# Markdown


def _split_lines(text: str) -> list[str]:
    """Lines as Python's text-mode ``readlines()`` gives them, without line ends (universal newlines,
    never splitting at other Unicode separators as ``str.splitlines`` would)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise GeneratedReadError(path, f"cannot read the file ({exc.strerror or exc})") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise GeneratedReadError(path, f"not UTF-8 text (byte {exc.start}: {exc.reason})", line) from exc


def _reference_tree(lines: list[str]) -> GenSection:
    root = GenSection("root", 0)
    contents: dict[int, list[str]] = {id(root): []}
    stack = [root]
    current = root
    for i, raw in enumerate(lines, 1):
        line = raw.rstrip()
        m = REF_HEADING.match(line)
        if m:
            node = GenSection(m.group(2), len(m.group(1)), line=i)
            while stack and stack[-1].level >= node.level:
                stack.pop()
            stack[-1].children.append(node)
            stack.append(node)
            contents[id(node)] = []
            current = node
        else:
            contents[id(current)].append(line)
    for node in root.iter():
        node.content = "\n".join(contents[id(node)])
    return root


def _reference_refs(lines: list[str]) -> dict[str, Reference]:
    refs: dict[int, Reference] = {}
    for i, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line.startswith("["):
            continue
        m = REF_ENTRY.match(line)
        if m:
            title = m.group(2) if m.group(2) else m.group(3)
            n = int(m.group(1))
            refs[n] = Reference(str(n), title.strip(), raw=line, line=i)
    return {str(k): v for k, v in refs.items()}


def title_from_entry(text: str) -> Optional[str]:
    """The title in a free-form reference entry (the text after ``[n]``), or None."""
    body = text.strip()
    m = _BRACKET_TITLE.match(body)
    if m and not re.fullmatch(r"\d+", m.group(1)):
        return m.group(1).strip()
    m = _ITALIC.search(body)
    if m:
        return (m.group(1) or m.group(2)).strip().rstrip(".,")
    m = _QUOTED.search(body)
    if m:
        return m.group(1).strip().rstrip(".,")
    m = _AUTHOR_YEAR.search(body)
    if m:
        rest = m.group(1)
        rest = re.split(r"\.\s+(?=[A-Z(]|In\b|arXiv|https?:)", rest, maxsplit=1)[0]
        return _clean_title(rest)
    return _clean_title(body)


def _clean_title(s: str) -> Optional[str]:
    s = _URL.sub("", s)
    s = re.sub(r"\b(?:arXiv|abs)\s*[:/]?\s*\d{4}\.\d{4,5}(?:v\d+)?", "", s, flags=re.I)
    s = re.sub(r"\bdoi\s*:?\s*10\.\d{4,9}/\S+", "", s, flags=re.I)
    s = s.strip().strip("*_").strip().rstrip(".,;:").strip()
    return s or None


def _paper_reference(number: str, body: str, raw: str, line: int) -> Reference:
    arxiv = find_arxiv_ids(body)
    return Reference(
        number=number,
        title=title_from_entry(body),
        arxiv_id=arxiv[0].id if arxiv else None,
        doi=normalize_doi(body),
        raw=raw,
        line=line,
    )


def _paper_tree(lines: list[str], bib_nodes: set) -> tuple[GenSection, dict[str, Reference]]:
    if lines and lines[0].startswith("\ufeff"):
        lines = [lines[0][1:]] + lines[1:]
    root = GenSection("root", 0)
    contents: dict[int, list[str]] = {id(root): []}
    stack = [root]
    current = root
    in_fence = False
    in_bib = False
    refs: dict[str, Reference] = {}
    for i, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else PAPER_HEADING.match(line)
        if m and m.group(2).strip():
            title = m.group(2).strip()
            node = GenSection(title, len(m.group(1)), line=i)
            while stack and stack[-1].level >= node.level:
                stack.pop()
            stack[-1].children.append(node)
            stack.append(node)
            contents[id(node)] = []
            current = node
            in_bib = bool(BIB_HEADER.match(title))
            if in_bib:
                bib_nodes.add(id(node))
            continue
        if not in_fence and BIB_HEADER.match(line):
            in_bib = True
            continue
        if in_bib:
            e = PAPER_ENTRY.match(line)
            if e:
                number = str(int(e.group(1)))
                refs[number] = _paper_reference(number, e.group(2), line.strip(), i)
                continue
            if not line.strip():
                continue
            # a continuation line of the previous entry, or the end of the block
            if refs and not REF_HEADING.match(line) and not line.lstrip().startswith("["):
                last = refs[next(reversed(refs))]
                if last.line is not None and i - last.line <= 2:
                    merged = last.raw + " " + line.strip()
                    body = PAPER_ENTRY.match(merged)
                    refs[last.number] = _paper_reference(last.number, body.group(2), merged, last.line)
                    continue
            in_bib = False
        contents[id(current)].append(line)
    for node in root.iter():
        node.content = "\n".join(contents[id(node)]).strip("\n")
    if not refs:  # no reference block: fall back to entry-looking lines anywhere, as the paper does
        for i, raw in enumerate(lines, 1):
            e = PAPER_ENTRY.match(raw)
            if e and not PAPER_CITATION.search(e.group(2)) and _looks_like_entry(e.group(2)):
                refs[str(int(e.group(1)))] = _paper_reference(str(int(e.group(1))), e.group(2), raw.strip(), i)
    return root, refs


def _looks_like_entry(body: str) -> bool:
    """A line '[n] ...' that reads like a bibliography entry rather than a sentence starting with a citation."""
    if _ITALIC.search(body) or _AUTHOR_YEAR.search(body) or find_arxiv_ids(body) or normalize_doi(body):
        return True
    words = body.split()
    return 0 < len(words) <= 30 and not re.match(r"^(?:is|are|was|were|has|have|and|also|further|shows?|proposed?|suggests?|introduced?|demonstrated?|found)\b", body, re.I)


def _title_guess(root: GenSection, path: Path) -> Optional[str]:
    for node in root.children:
        if node.level == 1 and "Abstract:" not in node.title:
            return node.title.strip()
    name = path.stem if path.suffix.lower() in (".md", ".markdown", ".json", ".tex", ".txt") else path.name
    name = name.strip().rstrip("_").strip()
    return name.replace("_ ", ": ").replace("_", " ") or None


def parse_markdown(
    text: str,
    *,
    survey_id: str = "",
    path: PathLike = "<text>",
    mode: str = "reference",
    layout: str = "markdown",
    title: Optional[str] = None,
) -> GeneratedSurvey:
    """A generated survey from Markdown text (see the module doc for how each mode reads it)."""
    _check_mode(mode)
    p = Path(path)
    lines = _split_lines(text)
    if mode == "reference":
        root = _reference_tree(lines)
        refs = _reference_refs(lines)
        bib: set = set()
    else:
        bib = set()
        root, refs = _paper_tree(lines, bib)
    gen = GeneratedSurvey(survey_id, p, title or _title_guess(root, p), root, refs, layout, mode=mode, _bib_nodes=bib)
    if not any(True for _ in gen.iter_sections()):
        gen.warnings.append("no Markdown heading: the whole text is the root's content")
    return gen


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")


# ---------------------------------------------------------------------------------------------------
# JSON (AutoSurvey's and our own)


def _load_json(path: Path) -> object:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise GeneratedReadError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from exc


def _apply_reference_map(gen: GeneratedSurvey, ref_map: object, path: Path) -> None:
    """Merge an AutoSurvey-style map n -> arXiv id (or n -> {title, arxiv_id, doi}) into the references."""
    for number, value in _iter_reference_items(ref_map, path):
        ref = gen.references.get(number)
        if ref is None:
            ref = gen.references[number] = Reference(number, raw=json.dumps(value, ensure_ascii=False))
        _fill_reference(ref, value)


def _iter_reference_items(ref_map: object, path: Path) -> Iterator[tuple[str, object]]:
    if isinstance(ref_map, dict):
        for k, v in ref_map.items():
            yield _ref_number(k, path), v
    elif isinstance(ref_map, list):
        for i, v in enumerate(ref_map, 1):
            n = v.get("number", v.get("id", i)) if isinstance(v, dict) else i
            yield _ref_number(n, path), v
    elif ref_map is not None:
        raise GeneratedReadError(path, "'reference(s)' must be an object (number -> entry) or a list")


def _ref_number(value: object, path: Path) -> str:
    s = str(value).strip().strip("[]")
    if not s.isdigit():
        raise GeneratedReadError(path, f"reference number {value!r} is not a number")
    return str(int(s))


def _fill_reference(ref: Reference, value: object) -> None:
    if isinstance(value, str):
        a = parse_arxiv_id(value)
        if a:
            ref.arxiv_id = a.id
        elif normalize_doi(value):
            ref.doi = normalize_doi(value)
        elif not ref.title:
            ref.title = value.strip() or None
        return
    if isinstance(value, dict):
        lower = {str(k).lower(): v for k, v in value.items()}
        title = lower.get("title")
        if title and not ref.title:
            ref.title = str(title).strip()
        for key in ("arxiv_id", "arxiv", "eprint", "arxivid", "url"):
            if lower.get(key):
                a = parse_arxiv_id(str(lower[key])) or next(iter(find_arxiv_ids(str(lower[key]))), None)
                if a:
                    ref.arxiv_id = a.id
                    break
        if lower.get("doi"):
            ref.doi = normalize_doi(str(lower["doi"]))


def parse_json_survey(data: object, *, survey_id: str = "", path: PathLike = "<json>", mode: str = "reference") -> GeneratedSurvey:
    """A generated survey from our JSON format, or AutoSurvey's.

    Our format::

        {"title": "...",
         "sections": [{"title": "...", "level": 1, "content": "... [1] ...", "children": [...]}, ...],
         "references": {"1": {"title": "...", "arxiv_id": "2106.12135", "doi": "10.1/x"}, ...}}

    ``sections`` may be nested (``children``) or flat (each with ``level``); instead of ``sections`` a
    Markdown body may be given as ``markdown`` (or ``survey``, AutoSurvey's key). ``references``
    (or ``reference``) is an object number -> entry or a list of entries with ``number``; an entry is
    an object with any of ``title``/``arxiv_id``/``doi``, or a string (an arXiv id, a DOI or a title).
    """
    _check_mode(mode)
    p = Path(path)
    if not isinstance(data, dict):
        raise GeneratedReadError(p, "a generated survey in JSON must be an object")
    ref_map = data.get("references", data.get("reference"))
    body = data.get("markdown", data.get("survey"))
    if isinstance(body, str):
        layout = "autosurvey" if "survey" in data and "reference" in data else "json"
        gen = parse_markdown(body, survey_id=survey_id, path=p, mode=mode, layout=layout, title=data.get("title"))
        if mode == "paper" or layout == "json":
            _apply_reference_map(gen, ref_map, p)
        return gen
    sections = data.get("sections")
    if not isinstance(sections, list):
        raise GeneratedReadError(p, "expected 'sections' (a list) or 'markdown' (a string)")
    root = GenSection("root", 0, content=str(data.get("preamble", "") or ""))
    stack = [root]

    def add(node_data: object, parent: Optional[GenSection], where: str) -> None:
        if not isinstance(node_data, dict) or "title" not in node_data:
            raise GeneratedReadError(p, f"{where}: a section must be an object with a 'title'")
        level = node_data.get("level")
        if parent is None:
            level = int(level) if level is not None else 1
            while stack and stack[-1].level >= level:
                stack.pop()
            parent_node = stack[-1]
        else:
            parent_node = parent
            level = parent.level + 1 if level is None else int(level)
        node = GenSection(str(node_data["title"]), level, str(node_data.get("content", "") or ""))
        parent_node.children.append(node)
        if parent is None:
            stack.append(node)
        for j, child in enumerate(node_data.get("children") or []):
            add(child, node, f"{where}.children[{j}]")

    for i, s in enumerate(sections):
        add(s, None, f"sections[{i}]")
    gen = GeneratedSurvey(survey_id, p, data.get("title") or _title_guess(root, p), root, {}, "json", mode=mode)
    _apply_reference_map(gen, ref_map, p)
    return gen


# ---------------------------------------------------------------------------------------------------
# LaTeX + BibTeX

_SECTIONING = {"part": 0, "chapter": 0, "section": 1, "subsection": 2, "subsubsection": 3, "paragraph": 4}
_SECTION_CMD = re.compile(r"\\(part|chapter|section|subsection|subsubsection|paragraph)\*?\s*(?:\[[^\]]*\])?\s*\{")
_CITE_CMD = re.compile(r"\\(?:[a-zA-Z]*cite[a-zA-Z]*)\*?\s*(?:\[[^\]]*\]\s*){0,2}\{([^}]*)\}")
_BIBITEM = re.compile(r"\\bibitem\s*(?:\[[^\]]*\])?\s*\{([^}]*)\}")


def _braced(text: str, open_pos: int) -> tuple[str, int]:
    """Content of the brace group opening at text[open_pos] == '{', and the index after it."""
    depth = 0
    for j in range(open_pos, len(text)):
        c = text[j]
        if c == "\\":
            continue
        if c == "{" and (j == 0 or text[j - 1] != "\\"):
            depth += 1
        elif c == "}" and text[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[open_pos + 1 : j], j + 1
    return text[open_pos + 1 :], len(text)


def _latex_to_text(s: str) -> str:
    from pylatexenc.latex2text import LatexNodes2Text

    try:
        return LatexNodes2Text(math_mode="verbatim", strict_latex_spaces=True).latex_to_text(s)
    except Exception:  # pylatexenc is lenient; keep the raw text if it still gives up
        return s


def _strip_comments(tex: str) -> str:
    return re.sub(r"(?<!\\)%.*", "", tex)


def _bib_references(bib_texts: list[tuple[Path, str]]) -> dict[str, dict]:
    import bibtexparser

    entries: dict[str, dict] = {}
    for path, text in bib_texts:
        try:
            library = bibtexparser.parse_string(text)
        except Exception as exc:  # pragma: no cover - bibtexparser 2 rarely raises
            raise GeneratedReadError(path, f"cannot parse BibTeX: {exc}") from exc
        for entry in library.entries:
            fields = {f.key.lower(): str(f.value) for f in entry.fields}
            entries[entry.key] = fields
    return entries


def _bib_fields_to_reference(number: str, key: str, fields: Optional[dict]) -> Reference:
    ref = Reference(number, raw=key)
    if not fields:
        return ref
    title = fields.get("title")
    if title:
        ref.title = " ".join(_latex_to_text(title.replace("{", "").replace("}", "")).split()) or None
    candidates = [fields.get("eprint", "")] if fields.get("archiveprefix", "arxiv").lower() == "arxiv" else []
    candidates += [fields.get(k, "") for k in ("arxiv", "arxivid", "url", "journal", "note", "howpublished")]
    for c in candidates:
        if not c:
            continue
        a = parse_arxiv_id(c.strip()) or next(iter(find_arxiv_ids(c)), None)
        if a:
            ref.arxiv_id = a.id
            break
    if fields.get("doi"):
        ref.doi = normalize_doi(fields["doi"])
    return ref


def parse_latex(tex: str, bib_texts: list[tuple[Path, str]], *, survey_id: str = "", path: PathLike = "<tex>", mode: str = "reference") -> GeneratedSurvey:
    """A generated survey from LaTeX: sectioning commands build the tree, ``\\cite{a,b}`` becomes
    ``[1][2]`` (numbers in order of first citation, so both modes read every citation), references come
    from the BibTeX entries (or a ``thebibliography`` environment)."""
    _check_mode(mode)
    p = Path(path)
    tex = _strip_comments(tex)
    title = None
    m = re.search(r"\\title\s*(?:\[[^\]]*\])?\s*\{", tex)
    if m:
        title = " ".join(_latex_to_text(_braced(tex, m.end() - 1)[0]).split()) or None
    body = tex
    b = re.search(r"\\begin\{document\}", tex)
    if b:
        body = tex[b.end() :]
    body = re.split(r"\\end\{document\}", body)[0]
    bibitems: dict[str, str] = {}
    tb = re.search(r"\\begin\{thebibliography\}(?:\{[^}]*\})?(.*?)\\end\{thebibliography\}", body, re.S)
    if tb:
        items = list(_BIBITEM.finditer(tb.group(1)))
        for k, it in enumerate(items):
            end = items[k + 1].start() if k + 1 < len(items) else len(tb.group(1))
            bibitems[it.group(1).strip()] = " ".join(_latex_to_text(tb.group(1)[it.end() : end]).split())
        body = body[: tb.start()] + body[tb.end() :]
    body = re.sub(r"\\(?:bibliography|bibliographystyle|maketitle|tableofcontents)\s*(?:\{[^}]*\})?", "", body)

    numbers: dict[str, str] = {}

    def cite(mm: re.Match) -> str:
        marks = []
        for key in (k.strip() for k in mm.group(1).split(",")):
            if key:
                numbers.setdefault(key, str(len(numbers) + 1))
                marks.append(f"[{numbers[key]}]")
        return "".join(marks)

    body = _CITE_CMD.sub(cite, body)
    has_chapter = bool(re.search(r"\\chapter\*?\s*(?:\[[^\]]*\])?\s*\{", body))
    root = GenSection("root", 0)
    stack = [root]
    pieces: list[tuple[GenSection, str]] = []
    pos = 0
    current = root
    for sm in _SECTION_CMD.finditer(body):
        if sm.start() < pos:
            continue
        pieces.append((current, body[pos : sm.start()]))
        heading, pos = _braced(body, sm.end() - 1)
        level = _SECTIONING[sm.group(1)] + (1 if has_chapter and sm.group(1) != "chapter" else 0)
        level = max(level, 1)
        node = GenSection(" ".join(_latex_to_text(heading).split()), level, line=body.count("\n", 0, sm.start()) + 1)
        while stack and stack[-1].level >= level:
            stack.pop()
        stack[-1].children.append(node)
        stack.append(node)
        current = node
    pieces.append((current, body[pos:]))
    texts: dict[int, list[str]] = {}
    for node, raw in pieces:
        texts.setdefault(id(node), []).append(raw)
    for node in root.iter():
        raw = "".join(texts.get(id(node), []))
        text = _latex_to_text(raw)
        node.content = re.sub(r"\n{3,}", "\n\n", text).strip()
    bib = _bib_references(bib_texts)
    refs: dict[str, Reference] = {}
    for key, number in numbers.items():
        if key in bib:
            refs[number] = _bib_fields_to_reference(number, key, bib[key])
        elif key in bibitems:
            refs[number] = _paper_reference(number, bibitems[key], bibitems[key], 0)
            refs[number].raw = f"{key}: {bibitems[key]}"
        else:
            refs[number] = Reference(number, raw=key)
    gen = GeneratedSurvey(survey_id, p, title or _title_guess(root, p), root, refs, "latex", mode=mode)
    missing = [k for k in numbers if k not in bib and k not in bibitems]
    if missing:
        gen.warnings.append(f"{len(missing)} cited keys have no bibliography entry: {', '.join(missing[:5])}")
    return gen


# ---------------------------------------------------------------------------------------------------
# files and folders


def _visible_files(folder: Path) -> list[Path]:
    return sorted((f for f in folder.iterdir() if f.is_file() and not f.name.startswith(".")), key=lambda f: f.name)


def read_generated(path_or_dir: PathLike, mode: str = "reference", survey_id: Optional[str] = None) -> GeneratedSurvey:
    """Read one generated survey from its folder (or from one file).

    A folder holding a ``.tex`` file is read as LaTeX (with every ``.bib`` beside it); a folder with a
    ``.md`` and a ``.json`` file as AutoSurvey's layout; a single file by its content (JSON object ->
    :func:`parse_json_survey`, otherwise Markdown); several files -> the first ``.md`` (the paper's rule).
    Raises :class:`GeneratedReadError` naming the file (and line) for unreadable input.
    """
    _check_mode(mode)
    path = Path(path_or_dir)
    if not path.exists():
        raise GeneratedReadError(path, "no such file or folder")
    if path.is_dir():
        sid = survey_id if survey_id is not None else path.name
        files = _visible_files(path)
        if not files:
            raise GeneratedReadError(path, "the folder holds no file")
        texs = [f for f in files if f.suffix.lower() == ".tex"]
        mds = [f for f in files if f.suffix.lower() == ".md"]
        jsons = [f for f in files if f.suffix.lower() == ".json"]
        if texs:
            return _read_latex_file(texs[0], [f for f in files if f.suffix.lower() == ".bib"], sid, mode)
        if len(files) == 1:
            return _read_file(files[0], sid, mode)
        if mds:
            gen = _read_file(mds[0], sid, mode)
            if jsons:
                _attach_autosurvey_json(gen, jsons[0], mode)
            return gen
        if len(jsons) == 1:
            return _read_file(jsons[0], sid, mode)
        raise GeneratedReadError(path, f"{len(files)} files and none is .md or .tex: cannot tell which one is the survey")
    return _read_file(path, survey_id if survey_id is not None else path.parent.name, mode)


def _read_file(path: Path, survey_id: str, mode: str) -> GeneratedSurvey:
    suffix = path.suffix.lower()
    if suffix == ".tex":
        bibs = sorted(path.parent.glob("*.bib"))
        return _read_latex_file(path, bibs, survey_id, mode)
    text = _read_text(path)
    if suffix == ".json" or (suffix not in (".md", ".markdown", ".txt") and text.lstrip().startswith("{")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if suffix == ".json":
                raise GeneratedReadError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from exc
        else:
            return parse_json_survey(data, survey_id=survey_id, path=path, mode=mode)
    return parse_markdown(text, survey_id=survey_id, path=path, mode=mode)


def _attach_autosurvey_json(gen: GeneratedSurvey, json_path: Path, mode: str) -> None:
    data = _load_json(json_path)
    if not isinstance(data, dict) or not isinstance(data.get("reference", data.get("references")), (dict, list)):
        gen.warnings.append(f"{json_path.name}: no reference map, ignored")
        return
    gen.layout = "autosurvey"
    ref_map = data.get("reference", data.get("references"))
    if mode == "paper":
        _apply_reference_map(gen, ref_map, json_path)
    else:  # the paper's code reads the Markdown only; the map is kept for information
        gen.warnings.append(f"{json_path.name}: reference map not used in reference mode")


def _read_latex_file(tex: Path, bibs: list[Path], survey_id: str, mode: str) -> GeneratedSurvey:
    return parse_latex(_read_text(tex), [(b, _read_text(b)) for b in bibs], survey_id=survey_id, path=tex, mode=mode)


def list_generated_dir(directory: PathLike) -> list[tuple[str, Path]]:
    """(survey_id, path) of every generated survey under a folder: one sub-folder per survey id (or a
    file named after the id), numeric ids in numeric order."""
    d = Path(directory)
    if not d.is_dir():
        raise GeneratedReadError(d, "not a folder of generated surveys")
    items = []
    for entry in d.iterdir():
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            items.append((entry.name, entry))
        elif entry.is_file() and entry.suffix.lower() in (".md", ".json", ".tex") and entry.stem.isdigit():
            items.append((entry.stem, entry))
    return sorted(items, key=lambda x: (0, int(x[0]), "") if x[0].isdigit() else (1, 0, x[0]))


def iter_generated_dir(directory: PathLike, mode: str = "reference") -> Iterator[GeneratedSurvey]:
    """Every generated survey under a folder (see :func:`list_generated_dir`); raises on the first unreadable one."""
    for sid, path in list_generated_dir(directory):
        yield read_generated(path, mode=mode, survey_id=sid)
