"""``surge evaluate`` and ``surge compare``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import click

from ..models.nli import DTYPES as NLI_DTYPES


def register(group: click.Group) -> None:
    group.add_command(evaluate_cmd)
    group.add_command(compare_cmd)


def open_benchmark_data(source: str, revision: Optional[str] = None):
    """(corpus, surveys, revision) from a build folder, a Hub org/prefix (e.g. 'surge') or a folder of the
    official JSON files (corpus.json + surveys.json, like the embedded sample)."""
    from ..corpus import Corpus
    from ..data import SurgeData

    path = Path(source)
    if path.is_dir() and (path / "surveys.json").exists() and (path / "corpus.json").exists():
        from ..official import iter_official

        corpus = Corpus.open(path / "corpus.json")
        surveys = {s.survey_id: s for s in iter_official("surveys", path / "surveys.json")}
        return corpus, surveys, None
    data = SurgeData.open(source, revision=revision, with_queries=False)
    return data.corpus, data.surveys, data.revision


@click.command("evaluate")
@click.argument("generated_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--data", "data_source", required=True,
              help="Benchmark data: a build folder (corpus/, surveys/), a Hub org such as 'surge', or a folder "
                   "with the official corpus.json and surveys.json.")
@click.option("--revision", default=None, help="Hub revision of the data (with a Hub id).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Results folder (results.json, results.jsonl, results.md); a re-run resumes. Default: results/<folder name>.")
@click.option("--metrics", default="all", show_default=True,
              help="Comma-separated: recall, citation_accuracy, soft_heading_recall, structure_quality, content_quality, rouge_bleu.")
@click.option("--mode", type=click.Choice(["reference", "paper"]), default="reference", show_default=True,
              help="reference: the paper's code exactly (comparable with published numbers); paper: the formulas as written, robust parsing.")
@click.option("--nli-model", default="cross-encoder/nli-deberta-v3-base", show_default=True, help="NLI cross-encoder (Hub id or folder).")
@click.option("--embed-model", default="BAAI/bge-large-en-v1.5", show_default=True,
              help="Heading embedder (Hub id, folder, or 'minilm' for the bundled offline MiniLM).")
@click.option("--judge-base-url", default=None, envvar="SURGE_JUDGE_BASE_URL",
              help="OpenAI-compatible server for the LLM judge (key from SURGE_JUDGE_API_KEY or OPENAI_API_KEY).")
@click.option("--judge-model", default=None, envvar="SURGE_JUDGE_MODEL", help="Model name served there (default: asked from /models).")
@click.option("--judge-local", default=None, help="Local judge instead: 'smollm2' (bundled, offline) or a model folder / .gguf file.")
@click.option("--judge-cache", default=None, type=click.Path(dir_okay=False), help="sqlite file caching judge answers.")
@click.option("--device", default=None, help="torch device for the models (default: cuda when available).")
@click.option("--batch-size", default=None, type=click.IntRange(min=1), help="NLI batch size (default: 8 on CPU, 64 on CUDA).")
@click.option("--nli-dtype", type=click.Choice(list(NLI_DTYPES)), default="auto", show_default=True,
              help="NLI precision. auto: bf16 on GPUs and on CPUs with native bf16, float32 elsewhere; "
                   "float32: the paper's full-precision scores exactly.")
@click.option("--fuzzy-threshold", default=0.9, show_default=True, help="paper mode: title similarity needed for a fuzzy match.")
@click.option("--limit", default=None, type=int, help="Evaluate only the first N surveys.")
@click.option("--json", "as_json", is_flag=True, help="Print the results JSON instead of the table.")
def evaluate_cmd(generated_dir: Path, data_source: str, revision, out_dir, metrics, mode, nli_model, embed_model,
                 judge_base_url, judge_model, judge_local, judge_cache, device, batch_size, nli_dtype, fuzzy_threshold, limit, as_json) -> None:
    """Evaluate generated surveys (one sub-folder per GT survey_id) with the SurGE metrics.

    Writes results.json ({"aggregate", "surveys", "config"}), results.jsonl (one line per survey as
    it finishes; a re-run skips finished work) and results.md. Metrics whose model is not available
    are reported as skipped, never as 0.

    \b
    Example:
      surge evaluate my_outputs/ --data build/ --out results/my-system
      surge evaluate my_outputs/ --data surge --metrics recall,citation_accuracy --mode paper
      surge evaluate my_outputs/ --data build/ --out r/ --embed-model minilm \\
          --judge-base-url http://127.0.0.1:8000/v1 --judge-model qwen2.5-14b
    """
    from ..evaluation.runner import EvalConfig, evaluate_dir, results_table
    from ..generated import GeneratedReadError

    try:
        config = EvalConfig(metrics=metrics, mode=mode, nli_model=nli_model, embed_model=embed_model,
                            judge_base_url=judge_base_url, judge_model=judge_model, judge_local=judge_local,
                            judge_cache=judge_cache, device=device, nli_batch_size=batch_size, nli_dtype=nli_dtype,
                            fuzzy_threshold=fuzzy_threshold, limit=limit)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--metrics/--mode") from exc
    out_dir = out_dir or Path("results") / generated_dir.resolve().name
    try:
        corpus, surveys, data_revision = open_benchmark_data(data_source, revision)
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise click.ClickException(f"--data {data_source}: {exc}") from exc
    try:
        results = evaluate_dir(generated_dir, surveys, corpus, out_dir, config,
                               data_source=data_source, data_revision=data_revision or revision)
    except (GeneratedReadError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(results, indent=2, ensure_ascii=False))
        return
    click.echo(results_table(results))
    for metric, why in results["skipped"].items():
        click.echo(f"skipped {metric}: {why}", err=True)
    for sid, msgs in results["errors"].items():
        for m in msgs:
            click.echo(f"error in survey {sid}: {m}", err=True)
    click.echo(f"results: {out_dir / 'results.json'} ({len(results['surveys'])} surveys, mode {mode})")


@click.command("compare")
@click.argument("result_dirs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("comparison"), show_default=True,
              help="Folder for comparison.json, comparison.md and comparison.png.")
@click.option("--name", "names", multiple=True, help="Display name per result folder (repeat, in order).")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison JSON instead of the table.")
def compare_cmd(result_dirs, out_dir: Path, names, as_json: bool) -> None:
    """Compare result folders of `surge evaluate`: a table and a bar chart per metric (PNG).

    \b
    Example:
      surge compare results/autosurvey results/id --out cmp/
      surge compare results/a results/b --name AutoSurvey --name ID --out cmp/
    """
    from ..evaluation.compare import comparison_markdown, write_comparison

    try:
        cmp = write_comparison(result_dirs, out_dir, list(names) or None)
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(cmp, indent=2, ensure_ascii=False))
        return
    click.echo(comparison_markdown(cmp))
    click.echo(f"chart: {out_dir / 'comparison.png'}")
