import datasets
import pyarrow as pa
import pytest

from surge_datasets.schemas import CorpusDoc, Query, RecordError, Survey, arrow_schema, features, from_row, to_row, validate


def test_arrow_schema_and_features_derive_from_the_models():
    schema = arrow_schema(Survey)
    assert schema.field("structure").type == pa.list_(pa.struct([
        pa.field("id", pa.string()), pa.field("parent_id", pa.string()), pa.field("level", pa.int64()),
        pa.field("title", pa.string()), pa.field("content", pa.string()), pa.field("cites", pa.list_(pa.int64())),
        pa.field("extra", pa.string()),
    ]))
    assert list(schema.names) == list(Survey.model_fields)
    feats = features(CorpusDoc)
    assert isinstance(feats, datasets.Features)
    assert feats["doc_id"] == datasets.Value("int64")
    assert feats["authors"] == datasets.List(datasets.Value("string"))
    assert features(Query)["prefix_titles"] == datasets.List({"level": datasets.Value("string"), "title": datasets.Value("string")})


def test_validate_names_record_and_field():
    with pytest.raises(RecordError) as err:
        validate(CorpusDoc, {"doc_id": "not-a-number", "title": "x"}, source="corpus.json", index=41)
    assert err.value.index == 41 and err.value.field == "doc_id"
    assert "corpus.json: record 41: field 'doc_id'" in str(err.value)
    with pytest.raises(RecordError) as err:
        validate(Survey, {"survey_id": 1, "title": "t", "structure": [{"id": "a", "title": 3}]}, index=2)
    assert err.value.field == "structure.0.title"


def test_row_round_trip_through_arrow():
    s = Survey(survey_id=3, title="T", structure=[{"id": "r", "title": "root"}, {"id": "a", "parent_id": "r", "level": 1, "title": "A", "cites": [1, 2]}])
    table = pa.Table.from_pylist([to_row(s)], schema=arrow_schema(Survey))
    back = from_row(Survey, table.to_pylist()[0])
    assert back == s
    assert back.children("r")[0].cites == [1, 2] and back.root().id == "r"
