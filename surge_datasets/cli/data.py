"""Data commands: demo, build, export, publish."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from ..schemas import RecordError


def register(group: click.Group) -> None:
    for cmd in (demo, build_cmd, export_cmd, publish_cmd, lookup_cmd):
        group.add_command(cmd)


def _print_counts(report) -> None:
    rows = [(name, split, n) for name, splits in report.counts.items() for split, n in splits.items()]
    click.echo(f"{'dataset':<10} {'split':<6} {'rows':>10}")
    for name, split, n in rows:
        click.echo(f"{name:<10} {split:<6} {n:>10,}")
    for name, n in report.rejects.items():
        click.echo(f"rejected {n:,} {name} records -> {report.out / 'rejects' / (name + '.jsonl')}")


@click.command("build")
@click.option("--official", "official", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder with the paper's release files: corpus.json, surveys.json, queries.json.")
@click.option("--harvest", "harvest", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder made by `surge harvest` instead of the release.")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output build folder.")
@click.option("--only", default="corpus,surveys,queries", show_default=True, help="Which datasets to build (comma-separated).")
@click.option("--skip-invalid", is_flag=True, help="Skip bad records; write them to OUT/rejects/<name>.jsonl.")
@click.option("--org", default="surge", show_default=True, help="Hub namespace named in the cards.")
def build_cmd(official, harvest, out, only, skip_invalid, org):
    """Build the Hub datasets (Parquet + card) from the release or a harvest folder.

    Each of OUT/corpus, OUT/surveys, OUT/queries is a complete Hub dataset repo; OUT/corpus/store is
    the local memory-mapped index that `Corpus.open` uses (not uploaded). An interrupted build leaves
    the previous output untouched.

    \b
    Example:
      surge build --official data/ --out build/
      surge build --harvest harvest/ --out build/ --skip-invalid
      python -c 'import datasets; print(datasets.load_dataset("build/corpus", split="train"))'
    """
    from ..build import build

    if bool(official) == bool(harvest):
        raise click.UsageError("give exactly one of --official DIR or --harvest DIR")
    names = tuple(n.strip() for n in only.split(",") if n.strip())
    bad = set(names) - {"corpus", "surveys", "queries"}
    if bad:
        raise click.UsageError(f"--only: unknown dataset(s) {sorted(bad)}")
    t0 = time.perf_counter()
    try:
        report = build(official or harvest, out, source="official" if official else "harvest",
                       skip_invalid=skip_invalid, names=names, org=org)
    except RecordError as exc:
        raise click.ClickException(f"{exc} (use --skip-invalid to set such records aside)") from None
    _print_counts(report)
    click.echo(f"built {', '.join(names)} in {time.perf_counter() - t0:.1f}s -> {out}")


@click.command("export")
@click.option("--official", "official_format", is_flag=True, required=True, help="Write the release's JSON format.")
@click.option("--data", "data", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Build folder (from `surge build`).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder for the JSON files.")
def export_cmd(official_format, data, out):
    """Write a build back in the paper's release format (corpus.json, surveys.json, queries.json).

    Records come out equal to the release's, so tools written for the paper's files keep working.

    \b
    Example:
      surge export --official --data build/ --out data-roundtrip/
    """
    from tqdm import tqdm

    from ..corpus import Corpus
    from ..data import load_queries, load_surveys
    from ..official import export_record, write_json_array

    corpus = Corpus.open(data / "corpus")
    n = write_json_array((export_record(d) for d in tqdm(corpus, total=len(corpus), desc="corpus", unit="doc")), out / "corpus.json")
    surveys = load_surveys(data / "surveys")
    m = write_json_array((export_record(s) for s in surveys.values()), out / "surveys.json")
    queries = load_queries(data / "queries")
    k = write_json_array((export_record(q) for q in queries), out / "queries.json")
    click.echo(f"wrote {n:,} docs, {m:,} surveys, {k:,} queries -> {out}")


@click.command("publish")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--repo-id", required=True, help="Hub dataset repo, e.g. surge/corpus.")
@click.option("--revision", default=None, help="Branch to push to (created if missing).")
@click.option("--private", is_flag=True, help="Create the repo private.")
@click.option("--create-pr", is_flag=True, help="Open a pull request instead of committing to the branch.")
@click.option("--dry-run", is_flag=True, help="Print the plan (files, sizes, card metadata) and change nothing.")
@click.option("--endpoint", default=None, envvar="HF_ENDPOINT", help="Hub endpoint (default: HF_ENDPOINT or huggingface.co).")
def publish_cmd(folder, repo_id, revision, private, create_pr, dry_run, endpoint):
    """Upload a built dataset folder to the Hugging Face Hub.

    The token comes from `hf auth login` or HF_TOKEN; it is never printed. The local store/ and
    rejects are not uploaded.

    \b
    Example:
      surge publish build/corpus --repo-id surge/corpus --dry-run
      surge publish build/corpus --repo-id surge/corpus --revision v1 --create-pr
    """
    from ..publish import plan, publish

    try:
        p = plan(folder, repo_id, revision=revision, private=private, create_pr=create_pr)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(p.render())
    if dry_run:
        click.echo("dry run: nothing was uploaded")
        return
    info = publish(p, endpoint=endpoint)
    click.echo(f"uploaded: {getattr(info, 'pr_url', None) or getattr(info, 'commit_url', info)}")


@click.command("lookup")
@click.argument("corpus_source")
@click.option("--title", "titles", multiple=True, help="Title to resolve by the paper's rule (repeatable).")
@click.option("--arxiv", "arxiv_ids", multiple=True, help="arXiv id in any form (repeatable).")
@click.option("--doc-id", "doc_ids", type=int, multiple=True, help="doc_id (repeatable).")
def lookup_cmd(corpus_source, titles, arxiv_ids, doc_ids):
    """Look documents up in a corpus (build folder, corpus.json or Hub repo id); prints JSON lines.

    \b
    Example:
      surge lookup build/corpus --title "Attention is all you need" --arxiv 1706.03762v7 --doc-id 42
    """
    from ..corpus import Corpus

    corpus = Corpus.open(corpus_source)
    queries = [("title", t, corpus.by_title) for t in titles] + [("arxiv", a, corpus.by_arxiv_id) for a in arxiv_ids]
    queries += [("doc_id", d, corpus.by_doc_id) for d in doc_ids]
    for kind, q, fn in queries:
        doc = fn(q)
        click.echo(json.dumps({"query": {kind: q}, "doc": doc.model_dump() if doc else None}, ensure_ascii=False))


@click.command("demo")
@click.option("--out", default="surge-demo", show_default=True, type=click.Path(file_okay=False, path_type=Path),
              help="Where the demo writes its build and results.")
@click.option("--no-eval", is_flag=True, help="Only build and load the sample; skip the metrics.")
@click.option("--judge", type=click.Choice(["none", "structure", "all"]), default="structure", show_default=True,
              help="LLM-judge metrics with the bundled SmolLM2: structure quality only (1 call per survey), "
                   "all (adds content quality: ~3 more minutes on 2 cores), or none.")
def demo(out, no_eval, judge):
    """Offline tour on the embedded SAMPLE: build its Hub datasets, load them back, look papers up, evaluate.

    Needs no network. The sample is tiny and partly synthetic: its numbers mean nothing for the benchmark.

    \b
    Example:
      surge demo
      surge demo --out /tmp/demo --judge all
      surge demo --out /tmp/demo --no-eval
    """
    import datasets

    from ..build import build
    from ..corpus import Corpus
    from ..sample import generated_path, sample_path

    t0 = time.perf_counter()
    click.secho("1. building the sample's Hub datasets (Parquet + cards)", bold=True)
    report = build(sample_path(), out / "build", source="official", is_sample=True)
    _print_counts(report)
    click.secho("\n2. loading them back with datasets.load_dataset (offline)", bold=True)
    for name in ("corpus", "surveys", "queries"):
        dsd = datasets.load_dataset(str(out / "build" / name))
        click.echo(f"{name:<8} " + ", ".join(f"{s}: {len(d):,} rows" for s, d in dsd.items()))
    click.secho("\n3. Corpus lookups (memory-mapped store)", bold=True)
    t = time.perf_counter()
    corpus = Corpus.open(out / "build" / "corpus")
    click.echo(f"opened {corpus} in {1000 * (time.perf_counter() - t):.1f} ms")
    some = next(d for d in corpus if d.arxiv_id is None and d.abstract and not d.abstract.startswith("[Synthetic"))
    messy = "  " + some.title.upper().replace(" ", "   ") + " !"
    hit = corpus.by_title(messy)
    click.echo(f"by_title({messy[:50]!r}...) -> doc_id {hit.doc_id if hit else None}: {hit.title if hit else ''}")
    docs = corpus.doc_ids_by_titles([d.title for d in corpus.get_many([0, 1, 2])] + ["A title that is not there"])
    click.echo(f"doc_ids_by_titles(4 titles) -> {docs}")
    click.echo(f"get({some.doc_id}).primary_category -> {corpus.get(some.doc_id).primary_category}")
    if not no_eval:
        click.secho("\n4. evaluating the sample's generated surveys (AutoSurvey baseline) offline", bold=True)
        try:
            from ..evaluation.demo import evaluate_demo
        except ImportError:
            click.echo("the evaluation package is not available in this install; skipped")
        else:
            from ..data import SurgeData

            results = evaluate_demo(SurgeData.open(out / "build"), generated_path("Autosurvey"), out / "results", judge=judge)
            click.echo((out / "results" / "results.md").read_text(encoding="utf-8").split("\n", 2)[2].strip())
            for what, note in (results.get("config", {}).get("models", {}).get("notes") or {}).items():
                click.echo(f"note ({what}): {note}")
            click.echo(f"results: {out / 'results' / 'results.json'} (JSON), results.md (table)")
    click.echo(f"\ndemo finished in {time.perf_counter() - t0:.1f}s; outputs in {out}/")
