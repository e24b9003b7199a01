"""The SurGE data model: one pydantic class per record type.

Every other representation derives from these classes:

* :func:`arrow_schema` gives the ``pyarrow`` schema used for Parquet shards and the Arrow store,
* :func:`features` gives the ``datasets.Features`` declared in the builders and the dataset cards,
* ``Model.model_validate`` is the validation used by every importer.

Field names are ours (snake_case); :mod:`surge_datasets.official` maps them to and from the names
of the paper's release files (``Title``, ``doc_id``, ``survey_title`` ...).
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, Optional, Union

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

CORPUS_LICENSE = "cc0-1.0"
BENCHMARK_LICENSE = "mit"
ARXIV_NONEXCLUSIVE_LICENSE = "http://arxiv.org/licenses/nonexclusive-distrib/1.0/"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class CorpusDoc(_Record):
    """One paper of the retrieval corpus (arXiv metadata only)."""

    doc_id: int = Field(description="Stable integer id; equals the official release's doc_id where imported.")
    arxiv_id: Optional[str] = Field(None, description="Unversioned arXiv id, e.g. '2106.12135' or 'hep-th/9901001'.")
    arxiv_version: Optional[int] = Field(None, description="Version number of the metadata (v2 -> 2).")
    title: str = Field(description="Title for display (LaTeX turned into Unicode, whitespace kept as arXiv has it).")
    authors: list[str] = Field(default_factory=list, description="Author names in order.")
    abstract: str = Field("", description="Abstract for display.")
    categories: list[str] = Field(default_factory=list, description="All arXiv categories, primary first.")
    primary_category: Optional[str] = Field(None, description="Primary arXiv category, e.g. cs.LG.")
    published: Optional[str] = Field(None, description="ISO 8601 timestamp of the first version (the release's Date).")
    updated: Optional[str] = Field(None, description="ISO 8601 timestamp of the newest version seen.")
    year: Optional[int] = Field(None, description="Publication year.")
    doi: Optional[str] = Field(None, description="DOI, lower-cased, without resolver prefix.")
    journal_ref: Optional[str] = Field(None, description="Journal reference as given by arXiv.")
    license: Optional[str] = Field(None, description="License URL of the paper as given by arXiv.")
    title_raw: Optional[str] = Field(None, description="Title as harvested (LaTeX kept), when it differs.")
    abstract_raw: Optional[str] = Field(None, description="Abstract as harvested (LaTeX kept), when it differs.")
    source: str = Field("official", description="Where the record came from: official, oai, api, snapshot, sample.")


class Section(_Record):
    """One node of a survey's section tree (the tree's root has title 'root')."""

    id: str = Field(description="Section id, unique within the survey.")
    parent_id: Optional[str] = Field(None, description="Id of the parent section; None for the root.")
    level: int = Field(0, description="Depth in the tree: 0 root, 1 section, 2 subsection, ...")
    title: str = Field(description="Heading text.")
    content: str = Field("", description="Text of the section (without its subsections).")
    cites: list[int] = Field(default_factory=list, description="Corpus doc_ids cited in this section.")
    extra: Optional[str] = Field(None, description="JSON of release fields not modelled here, kept for a lossless export.")


class Survey(_Record):
    """One ground-truth survey with its section tree."""

    survey_id: int
    title: str
    authors: list[str] = Field(default_factory=list)
    year: Optional[int] = None
    date: Optional[str] = None
    category: Optional[str] = None
    abstract: str = ""
    arxiv_id: Optional[str] = None
    structure: list[Section] = Field(default_factory=list)
    all_cites: list[int] = Field(default_factory=list)
    bertopic_cd: Optional[float] = None
    source: str = "official"
    extra: Optional[str] = Field(None, description="JSON of release fields not modelled here, kept for a lossless export.")

    def root(self) -> Section | None:
        for s in self.structure:
            if s.title == "root" and not s.parent_id:
                return s
        return None

    def children(self, section_id: str | None) -> list[Section]:
        return [s for s in self.structure if s.parent_id == section_id]


class PrefixTitle(_Record):
    level: str = Field(description="'title', 'section', 'subsection', 'subsubsection', 'paragraph' ...")
    title: str


class Query(_Record):
    """One retrieval query: a GT survey section, its heading path and the doc_ids it cites."""

    query_id: int
    original_id: str = Field(description="Id of the survey section the query comes from.")
    survey_id: Optional[int] = Field(None, description="GT survey the section belongs to, when known.")
    date: Optional[str] = None
    year: Optional[int] = None
    category: Optional[str] = None
    content: str = ""
    prefix_titles: list[PrefixTitle] = Field(default_factory=list)
    prefix_titles_query: str = ""
    cites: list[int] = Field(default_factory=list)
    cite_extract_rate: Optional[float] = None
    origin_cites_number: Optional[int] = None
    split: Literal["train", "test"] = "train"
    extra: Optional[str] = None


RECORD_TYPES: dict[str, type[_Record]] = {"corpus": CorpusDoc, "surveys": Survey, "queries": Query}


# --------------------------------------------------------------------------------------- derivations

def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def _arrow_type(tp: Any) -> pa.DataType:
    tp, _ = _unwrap_optional(tp)
    origin = typing.get_origin(tp)
    if tp is int:
        return pa.int64()
    if tp is float:
        return pa.float64()
    if tp is str or origin is Literal:
        return pa.string()
    if tp is bool:
        return pa.bool_()
    if origin is list:
        (item,) = typing.get_args(tp)
        return pa.list_(_arrow_type(item))
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return pa.struct([_arrow_field(name, f) for name, f in tp.model_fields.items()])
    raise TypeError(f"no Arrow type for {tp!r}")


def _arrow_field(name: str, field: Any) -> pa.Field:
    _, optional = _unwrap_optional(field.annotation)
    meta = {"description": field.description} if field.description else None
    return pa.field(name, _arrow_type(field.annotation), nullable=True, metadata=meta)


def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """Arrow schema of a record type, field order as declared."""
    return pa.schema([_arrow_field(name, f) for name, f in model.model_fields.items()])


def features(model: type[BaseModel]):
    """``datasets.Features`` of a record type (derived from :func:`arrow_schema`)."""
    import datasets

    return datasets.Features.from_arrow_schema(arrow_schema(model))


class RecordError(ValueError):
    """A record failed validation. Names the source, record index and field."""

    def __init__(self, source: str, index: int, field: str, message: str):
        self.source, self.index, self.field = source, index, field
        super().__init__(f"{source}: record {index}: field {field!r}: {message}")


def validate(model: type[_Record], data: dict, *, source: str = "<input>", index: int = 0):
    """Validate one record, raising :class:`RecordError` naming record index and field."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "<record>"
        raise RecordError(source, index, loc, err["msg"]) from None


def to_row(record: BaseModel) -> dict:
    """A record as a plain dict that matches :func:`arrow_schema`."""
    return record.model_dump(mode="python")


def from_row(model: type[_Record], row: dict):
    """Inverse of :func:`to_row` (rows read back from Arrow/Parquet)."""
    return model.model_construct(**_construct_nested(model, row))


def _construct_nested(model: type[BaseModel], row: dict) -> dict:
    out = {}
    for name, field in model.model_fields.items():
        value = row.get(name)
        tp, _ = _unwrap_optional(field.annotation)
        if typing.get_origin(tp) is list and value is not None:
            (item,) = typing.get_args(tp)
            if isinstance(item, type) and issubclass(item, BaseModel):
                value = [item.model_construct(**_construct_nested(item, v)) for v in value]
        out[name] = value
    return out
