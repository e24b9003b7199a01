import os

import pytest
from click.testing import CliRunner

from surge_datasets.build import build
from surge_datasets.cli import main
from surge_datasets.publish import plan, publish


def test_dry_run_plan_lists_files_and_card_and_changes_nothing(tiny_release, tmp_path, monkeypatch):
    build(tiny_release, tmp_path / "b")
    folder = tmp_path / "b" / "queries"
    p = plan(folder, "surge/queries")
    names = [n for n, _ in p.files]
    assert names == ["README.md", "data/test-00000-of-00001.parquet", "data/train-00000-of-00001.parquet"]
    assert p.card_metadata["license"] == "mit"
    corpus_plan = plan(tmp_path / "b" / "corpus", "surge/corpus")
    assert not any(n.startswith("store") for n, _ in corpus_plan.files)  # the local index is not uploaded

    def no_network(*a, **k):
        raise AssertionError("a dry run must not call the Hub")

    monkeypatch.setattr("huggingface_hub.HfApi.create_repo", no_network)
    monkeypatch.setattr("huggingface_hub.HfApi.upload_folder", no_network)
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token_value")
    result = CliRunner().invoke(main, ["publish", str(folder), "--repo-id", "surge/queries", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "datasets/surge/queries" in result.output and "split train: 4 rows" in result.output
    assert "dry run: nothing was uploaded" in result.output
    assert "hf_secret_token_value" not in result.output


def test_publish_calls_the_hub_api_with_the_plan(tiny_release, tmp_path, monkeypatch):
    build(tiny_release, tmp_path / "b", names=("surveys",))
    calls = {}
    monkeypatch.setattr("huggingface_hub.HfApi.create_repo", lambda self, repo_id, **kw: calls.setdefault("create", (repo_id, kw)))
    monkeypatch.setattr("huggingface_hub.HfApi.create_branch", lambda self, repo_id, **kw: calls.setdefault("branch", kw))
    monkeypatch.setattr("huggingface_hub.HfApi.upload_folder", lambda self, **kw: calls.setdefault("upload", kw))
    p = plan(tmp_path / "b" / "surveys", "me/surveys", revision="v1", private=True, create_pr=True)
    publish(p)
    assert calls["create"] == ("me/surveys", {"repo_type": "dataset", "private": True, "exist_ok": True})
    assert calls["branch"]["branch"] == "v1"
    assert calls["upload"]["create_pr"] is True and calls["upload"]["revision"] == "v1"
    assert calls["upload"]["allow_patterns"] == ["README.md", "data/test-00000-of-00001.parquet"]


def test_plan_refuses_a_folder_without_card(tmp_path):
    with pytest.raises(FileNotFoundError, match="no README.md dataset card"):
        plan(tmp_path, "x/y")


@pytest.mark.network
@pytest.mark.skipif(not (os.environ.get("HF_ENDPOINT") and os.environ.get("HF_TOKEN")),
                    reason="really pushes to a Hub: set HF_ENDPOINT and HF_TOKEN (e.g. a hub-ci endpoint) to run it")
def test_real_push(tiny_release, tmp_path):
    import uuid

    from huggingface_hub import HfApi

    build(tiny_release, tmp_path / "b", names=("surveys",))
    api = HfApi()
    repo = f"{api.whoami()['name']}/surge-test-{uuid.uuid4().hex[:8]}"
    try:
        publish(plan(tmp_path / "b" / "surveys", repo, private=True))
        files = api.list_repo_files(repo, repo_type="dataset")
        assert "data/test-00000-of-00001.parquet" in files and "README.md" in files
    finally:
        api.delete_repo(repo, repo_type="dataset", missing_ok=True)
