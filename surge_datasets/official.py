"""The paper's release files (``corpus.json``, ``surveys.json``, ``queries.json``): streaming import and exact export.

Field names on the release side are the published ones (``Title``, ``doc_id``, ``survey_title`` ...).
Import never holds a whole file in memory (``ijson``). Fields the release has and our schema does
not model are kept in the record's ``extra`` JSON, together with the original key order and value
types, so that :func:`export_record` gives back a record equal to the input.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import ijson

from .schemas import CorpusDoc, Query, RecordError, Survey, validate

CORPUS_FILE, SURVEYS_FILE, QUERIES_FILE = "corpus.json", "surveys.json", "queries.json"


def _int_or_none(value: Any) -> Optional[int]:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError("expected an integer, got a boolean")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise ValueError(f"expected an integer, got {value!r}")


def _type_tag(value: Any) -> str:
    return {bool: "bool", int: "int", float: "float", str: "str", type(None): "null"}.get(type(value), "other")


def _restore(value: Any, tag: str) -> Any:
    """Give a converted value back its release type (e.g. Year '2024' was stored as 2024)."""
    if tag == "str" and value is not None and not isinstance(value, str):
        return str(value)
    if tag == "int" and isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    if tag == "float" and isinstance(value, int):
        return float(value)
    if tag == "null":
        return None
    return value


@dataclass(frozen=True)
class _Field:
    official: str
    ours: str
    convert: Callable[[Any], Any] = lambda v: v


def _split_record(obj: dict, fields: list[_Field], *, source: str, index: int) -> tuple[dict, dict]:
    if not isinstance(obj, dict):
        raise RecordError(source, index, "<record>", f"expected a JSON object, got {type(obj).__name__}")
    ours: dict = {}
    known = {f.official: f for f in fields}
    types = {}
    for key, value in obj.items():
        f = known.get(key)
        if f is None:
            continue
        types[key] = _type_tag(value)
        try:
            ours[f.ours] = f.convert(value)
        except (TypeError, ValueError) as exc:
            raise RecordError(source, index, key, str(exc)) from None
    extra = {
        "order": list(obj.keys()),
        "types": types,
        "fields": {k: v for k, v in obj.items() if k not in known},
    }
    return ours, extra


def _join_record(ours: dict, extra_json: Optional[str], fields: list[_Field], default_types: dict[str, str]) -> dict:
    extra = json.loads(extra_json) if extra_json else {}
    types = {**default_types, **extra.get("types", {})}
    values = {f.official: _restore(ours.get(f.ours), types.get(f.official, "")) for f in fields}
    values.update(extra.get("fields", {}))
    order = extra.get("order") or [f.official for f in fields]
    return {k: values[k] for k in order if k in values}


# ------------------------------------------------------------------------------------------- corpus

_CORPUS_FIELDS = [
    _Field("Title", "title"),
    _Field("Authors", "authors"),
    _Field("Year", "year", _int_or_none),
    _Field("Date", "published"),
    _Field("Abstract", "abstract"),
    _Field("Category", "primary_category"),
    _Field("doc_id", "doc_id", _int_or_none),
]
_CORPUS_TYPES = {"Year": "str", "doc_id": "int"}


def corpus_doc_from_official(obj: dict, *, source: str = CORPUS_FILE, index: int = 0) -> CorpusDoc:
    ours, _extra = _split_record(obj, _CORPUS_FIELDS, source=source, index=index)
    for required in ("doc_id", "title"):
        if ours.get(required) is None:
            raise RecordError(source, index, "doc_id" if required == "doc_id" else "Title", "missing")
    if ours.get("primary_category"):
        ours["categories"] = [ours["primary_category"]]
    ours["source"] = "official"
    return validate(CorpusDoc, ours, source=source, index=index)


def corpus_doc_to_official(doc: CorpusDoc) -> dict:
    return _join_record(doc.model_dump(), None, _CORPUS_FIELDS, _CORPUS_TYPES)


# ------------------------------------------------------------------------------------------ surveys

_SURVEY_FIELDS = [
    _Field("survey_id", "survey_id", _int_or_none),
    _Field("survey_title", "title"),
    _Field("authors", "authors"),
    _Field("year", "year", _int_or_none),
    _Field("date", "date"),
    _Field("category", "category"),
    _Field("abstract", "abstract"),
    _Field("all_cites", "all_cites", lambda v: [_int_or_none(x) for x in v]),
    _Field("Bertopic_CD", "bertopic_cd", lambda v: None if v is None else float(v)),
]
_SURVEY_TYPES = {"survey_id": "int", "year": "str"}
_SECTION_CITE_KEYS = ("cites", "cite_ids", "citations", "cite")
_SECTION_FIELDS = [
    _Field("id", "id", lambda v: None if v is None else str(v)),
    _Field("parent_id", "parent_id", lambda v: None if v is None else str(v)),
    _Field("title", "title"),
    _Field("content", "content", lambda v: v or ""),
    _Field("level", "level", _int_or_none),
]


def _section_from_official(obj: dict, *, source: str, index: int, position: int) -> dict:
    fields = list(_SECTION_FIELDS)
    cite_key = next((k for k in _SECTION_CITE_KEYS if k in obj), None)
    if cite_key:
        fields.append(_Field(cite_key, "cites", lambda v: [_int_or_none(x) for x in (v or [])]))
    try:
        ours, extra = _split_record(obj, fields, source=source, index=index)
    except RecordError as exc:
        raise RecordError(source, index, f"structure.{position}.{exc.field}", str(exc).split(": ", 3)[-1]) from None
    if "id" not in ours or ours["id"] is None:
        raise RecordError(source, index, f"structure.{position}.id", "missing")
    extra["cites_key"] = cite_key
    extra["level_given"] = "level" in obj
    ours["extra"] = json.dumps(extra, ensure_ascii=False)
    return ours


def _depths(sections: list[dict]) -> dict[str, int]:
    parent = {s["id"]: s.get("parent_id") for s in sections}
    depth: dict[str, int] = {}
    for sid in parent:
        chain, cur = [], sid
        while cur is not None and cur not in depth and cur in parent and len(chain) <= len(parent):
            chain.append(cur)
            cur = parent[cur]
        base = depth.get(cur, -1) if cur is not None else -1
        for node in reversed(chain):
            base += 1
            depth[node] = base
    return depth


def survey_from_official(obj: dict, *, source: str = SURVEYS_FILE, index: int = 0) -> Survey:
    ours, extra = _split_record(obj, _SURVEY_FIELDS, source=source, index=index)
    structure = extra["fields"].pop("structure", None)
    extra["structure_present"] = structure is not None
    sections = [
        _section_from_official(s, source=source, index=index, position=i) for i, s in enumerate(structure or [])
    ]
    depth = _depths(sections)
    for s in sections:
        if s.get("level") is None:
            s["level"] = depth.get(s["id"], 0)
    ours["structure"] = sections
    ours["source"] = "official"
    ours["extra"] = json.dumps(extra, ensure_ascii=False)
    return validate(Survey, ours, source=source, index=index)


def survey_to_official(survey: Survey) -> dict:
    extra = json.loads(survey.extra) if survey.extra else {}
    out = _join_record(survey.model_dump(exclude={"structure"}), survey.extra, _SURVEY_FIELDS, _SURVEY_TYPES)
    if extra.get("structure_present", True):
        sections = []
        for s in survey.structure:
            sx = json.loads(s.extra) if s.extra else {}
            fields = list(_SECTION_FIELDS)
            if not sx.get("level_given", True):
                fields = [f for f in fields if f.official != "level"]
            cite_key = sx.get("cites_key", "cites") if s.extra else "cites"
            if cite_key:
                fields.append(_Field(cite_key, "cites"))
            sections.append(_join_record(s.model_dump(), s.extra, fields, {"id": "str", "parent_id": "str"}))
        order = extra.get("order") or list(out) + ["structure"]
        out["structure"] = sections
        out = {k: out[k] for k in order if k in out}
    return out


# ------------------------------------------------------------------------------------------ queries

_QUERY_FIELDS = [
    _Field("original_id", "original_id", lambda v: str(v)),
    _Field("query_id", "query_id", _int_or_none),
    _Field("date", "date"),
    _Field("year", "year", _int_or_none),
    _Field("category", "category"),
    _Field("content", "content", lambda v: v or ""),
    _Field("prefix_titles", "prefix_titles", lambda v: [{"level": str(p[0]), "title": str(p[1])} for p in v]),
    _Field("prefix_titles_query", "prefix_titles_query", lambda v: v or ""),
    _Field("cites", "cites", lambda v: [_int_or_none(x) for x in v]),
    _Field("cite_extract_rate", "cite_extract_rate", lambda v: None if v is None else float(v)),
    _Field("origin_cites_number", "origin_cites_number", _int_or_none),
]
_QUERY_TYPES = {"query_id": "int", "year": "str", "original_id": "str"}


def query_from_official(obj: dict, *, source: str = QUERIES_FILE, index: int = 0) -> Query:
    ours, extra = _split_record(obj, _QUERY_FIELDS, source=source, index=index)
    if ours.get("query_id") is None:
        raise RecordError(source, index, "query_id", "missing")
    ours["extra"] = json.dumps(extra, ensure_ascii=False)
    return validate(Query, ours, source=source, index=index)


def query_to_official(query: Query) -> dict:
    row = query.model_dump()
    row["prefix_titles"] = [[p["level"], p["title"]] for p in row["prefix_titles"]]
    return _join_record(row, query.extra, _QUERY_FIELDS, _QUERY_TYPES)


# ------------------------------------------------------------------------------------------ streams

def iter_json_array(path: Path) -> Iterator[tuple[int, Any]]:
    """(index, object) for each element of a top-level JSON array, streamed."""
    path = Path(path)
    last = -1
    with open(path, "rb") as fh:
        try:
            for last, obj in enumerate(ijson.items(fh, "item", use_float=True)):
                yield last, obj
        except ijson.JSONError as exc:
            raise ValueError(f"{path}: invalid JSON after record {last}: {exc}") from None


_IMPORTERS = {
    "corpus": corpus_doc_from_official,
    "surveys": survey_from_official,
    "queries": query_from_official,
}
_EXPORTERS = {CorpusDoc: corpus_doc_to_official, Survey: survey_to_official, Query: query_to_official}


def iter_official(kind: str, path: Path, *, skip_invalid: bool = False, rejects: Optional[list] = None) -> Iterator:
    """Records of one release file. Bad records raise :class:`RecordError`, or with ``skip_invalid``
    are appended to ``rejects`` as ``{"index", "field", "error", "record"}`` and skipped."""
    convert = _IMPORTERS[kind]
    source = str(path)
    for i, obj in iter_json_array(Path(path)):
        try:
            yield convert(obj, source=source, index=i)
        except RecordError as exc:
            if not skip_invalid:
                raise
            if rejects is not None:
                rejects.append({"index": i, "field": exc.field, "error": str(exc), "record": obj})


def iter_official_corpus(path: Path, **kw) -> Iterator[CorpusDoc]:
    return iter_official("corpus", path, **kw)


def export_record(record) -> dict:
    return _EXPORTERS[type(record)](record)


def write_json_array(records, path: Path) -> int:
    """Write records (already official dicts) as a JSON array, atomically. Returns the count."""
    import os

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("[")
        for rec in records:
            fh.write(",\n" if n else "\n")
            fh.write(json.dumps(rec, ensure_ascii=False))
            n += 1
        fh.write("\n]\n" if n else "]\n")
    os.replace(tmp, path)
    return n
