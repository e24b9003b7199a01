import re

from click.testing import CliRunner

from surge_datasets.cli import main


def test_every_command_has_help_with_an_example():
    runner = CliRunner()
    top = runner.invoke(main, ["--help"])
    assert top.exit_code == 0
    names = list(main.commands)
    assert {"demo", "build", "export", "publish", "lookup"} <= set(names)
    for name in names:
        cmd = main.commands[name]
        subcommands = list(getattr(cmd, "commands", {}) or [])
        for args in [[name]] + [[name, s] for s in subcommands]:
            result = runner.invoke(main, args + ["--help"])
            assert result.exit_code == 0, (args, result.output)
            assert "Example" in result.output, f"`surge {' '.join(args)} --help` has no example"


def test_demo_builds_loads_and_looks_up(tmp_path):
    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path), "--no-eval"])
    assert result.exit_code == 0, result.output
    assert re.search(r"corpus\s+train\s+526", result.output)
    assert "surveys  test: 3 rows" in result.output
    assert "doc_ids_by_titles(4 titles) -> [0, 1, 2, None]" in result.output
    assert (tmp_path / "build" / "corpus" / "README.md").read_text().count("SAMPLE") >= 1


def test_lookup_command(sample_build):
    result = CliRunner().invoke(main, ["lookup", str(sample_build / "corpus"), "--doc-id", "0", "--doc-id", "100000"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert '"doc_id": 0' in lines[0] and lines[1].endswith('"doc": null}')


def test_demo_evaluates_the_sample_offline(tmp_path):
    import json

    result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path), "--judge", "none"])
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert sorted(results["surveys"]) == ["0", "1", "2"]
    agg = results["aggregate"]
    for key in ("recall", "citation_accuracy_document", "citation_accuracy_section", "citation_accuracy_sentence",
                "soft_heading_recall", "rouge_1", "rouge_2", "rouge_l", "bleu"):
        assert isinstance(agg[key], float), key
    assert 0 < agg["recall"] < 1 and 0 < agg["soft_heading_recall"] <= 1
    assert set(results["skipped"]) == {"structure_quality", "content_quality"}  # reported skipped, never 0
    assert "structure_quality" not in agg or agg["structure_quality"] is None
    assert "| **mean** |" in result.output and "tiny RANDOM NLI model" in result.output
