"""Test session set-up: every cache goes to a temporary folder and the Hub is offline.

A test that really talks to a Hub runs only when HF_ENDPOINT and HF_TOKEN are both set (marker
``network``); then the Hub is not forced offline.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

_CACHE = Path(tempfile.mkdtemp(prefix="surge-tests-"))
HUB_CONFIGURED = bool(os.environ.get("HF_ENDPOINT") and os.environ.get("HF_TOKEN"))
os.environ.update({
    "HF_HOME": str(_CACHE / "hf"),
    "HF_DATASETS_CACHE": str(_CACHE / "hf" / "datasets"),
    "HF_EVALUATE_CACHE": str(_CACHE / "hf" / "evaluate"),
    "HF_MODULES_CACHE": str(_CACHE / "hf" / "modules"),
    "SURGE_CACHE": str(_CACHE / "surge"),
    "HF_DATASETS_OFFLINE": "1",
    "HF_EVALUATE_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "TQDM_DISABLE": "1",
})
if not HUB_CONFIGURED:
    os.environ["HF_HUB_OFFLINE"] = "1"

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("SURGE_SHARED_DATA", REPO.parent / "shared" / "data"))


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared real data folder is missing: {SHARED_DATA} (set SURGE_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def sample_build(tmp_path_factory) -> Path:
    """The embedded sample built once per session (read-only for tests: copy it before changing it)."""
    from surge_datasets.build import build
    from surge_datasets.sample import sample_path

    out = tmp_path_factory.mktemp("sample-build")
    build(sample_path(), out, source="official", is_sample=True)
    return out


@pytest.fixture
def tiny_release(tmp_path) -> Path:
    """A hand-made release folder in the paper's format (3 docs, 1 survey, 5 queries)."""
    folder = tmp_path / "release"
    folder.mkdir()
    corpus = [
        {"Title": "Attention Is  All You Need", "Authors": ["Ashish Vaswani", "Noam Shazeer"], "Year": "2017",
         "Date": "2017-06-12T17:57:34Z", "Abstract": "The dominant sequence transduction models ...", "Category": "cs.CL", "doc_id": 10},
        {"Title": "BERT: Pre-training of Deep Bidirectional Transformers", "Authors": ["Jacob Devlin"], "Year": "2018",
         "Date": "2018-10-11T00:50:01Z", "Abstract": "We introduce a new language representation model ...", "Category": "cs.CL", "doc_id": 11},
        {"Title": "attention is all you need", "Authors": [], "Year": "2019",
         "Date": "2019-01-01T00:00:00Z", "Abstract": "A later paper with the same normalised title.", "Category": "cs.LG", "doc_id": 12},
    ]
    surveys = [{
        "survey_id": 7, "survey_title": "A Survey of Transformers", "authors": ["Tianyang Lin"], "year": "2021",
        "date": "2021-06-08T17:43:08Z", "category": "cs.LG", "abstract": "Transformers ...",
        "structure": [
            {"id": "a", "parent_id": None, "title": "root", "content": "", "cites": []},
            {"id": "b", "parent_id": "a", "title": "Introduction", "content": "x" * 150, "cites": [10]},
            {"id": "c", "parent_id": "b", "title": "Background", "content": "short", "cites": [10, 11]},
            {"id": "d", "parent_id": "a", "title": "Conclusion", "content": "y" * 120, "cites": []},
        ],
        "all_cites": [10, 11], "Bertopic_CD": 0.4123,
    }]
    queries = [{
        "original_id": f"uuid-{i}", "query_id": 100 + i, "date": "2021-06-08T17:43:08Z", "year": "2021", "category": "cs.LG",
        "content": "}\n{\nSection text ...", "prefix_titles": [["title", "A Survey of Transformers"], ["section", "Introduction"]],
        "prefix_titles_query": "What is the background of transformers?", "cites": [10, 11][: 1 + i % 2],
        "cite_extract_rate": 0.8333333333333334, "origin_cites_number": 6,
    } for i in range(5)]
    for name, data in (("corpus", corpus), ("surveys", surveys), ("queries", queries)):
        (folder / f"{name}.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    return folder
