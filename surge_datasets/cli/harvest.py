"""``surge harvest``: rebuild the corpus and the ground-truth surveys from arXiv (resumable)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import click
from tqdm.auto import tqdm

ENV_INTERVAL = "SURGE_HARVEST_MIN_INTERVAL"


def register(group: click.Group) -> None:
    group.add_command(harvest_group)


@click.group("harvest")
def harvest_group() -> None:
    """Harvest arXiv: corpus (OAI-PMH, API, snapshot, the paper's recipe), GT surveys, e-print sources.

    \b
    Example:
      surge harvest corpus --source oai --set cs --from 2019-01-01 --out harvest/
      surge harvest surveys --titles gt_survey_titles.tsv --corpus harvest/ --out harvest/surveys/
      surge harvest corpus --recipe surge --surveys harvest/surveys/ --out harvest/
      surge build --harvest harvest/ --out build/
    """


def _session(min_interval: Optional[float], retries: int):
    from surge_datasets.harvest.http import build_session

    return build_session(min_interval, max_retries=retries)


def _interval_option(f):
    f = click.option("--retries", default=5, show_default=True, type=click.IntRange(0, 50),
                     help="Extra attempts per request after 429/5xx/resets/truncated bodies.")(f)
    return click.option("--min-interval", type=float, default=None, envvar=ENV_INTERVAL,
                        help="Seconds between requests, process-wide (arXiv asks for 3; default 3).")(f)


def _echo_json(obj) -> None:
    click.echo(json.dumps(obj, indent=1, ensure_ascii=False, default=str))


def _table(rows: list[tuple[str, object]]) -> None:
    width = max((len(k) for k, _ in rows), default=0)
    for k, v in rows:
        click.echo(f"{k:<{width}}  {v}")


def _eta_bar(total: Optional[int], unit: str, desc: str, interval: float, requests: Optional[int] = None):
    """A tqdm bar whose ETA follows the measured pace (the rate limit sets it); with a known number of
    requests still to make, the least time the rate limit allows is shown from the start."""
    postfix = {"interval": f"{interval:g}s"}
    if requests:
        postfix["rate-limit floor"] = tqdm.format_interval(requests * interval)
    return tqdm(total=total, unit=unit, desc=desc, dynamic_ncols=True, smoothing=0.05, postfix=postfix)


@harvest_group.command("corpus")
@click.argument("snapshot_file", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--source", type=click.Choice(["oai", "api", "snapshot"]), help="Where to harvest from.")
@click.option("--recipe", type=click.Choice(["surge"]), help="Run the paper's corpus recipe instead (needs --surveys).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Harvest folder.")
@click.option("--job", help="Job name under OUT/corpus/ (default: derived from the source and its options).")
@click.option("--endpoint", help="Base URL of the arXiv API (api, recipe) or OAI-PMH service (oai); a mirror or test server.")
@click.option("--set", "set_spec", help="OAI set, e.g. cs (old and new service) or cs:cs:AI (2025 service).")
@click.option("--from", "from_date", help="OAI from date (YYYY-MM-DD).")
@click.option("--until", help="OAI until date (YYYY-MM-DD).")
@click.option("--ids", "ids_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="api: file of arXiv ids, one a line.")
@click.option("--query", "queries", multiple=True, help="api: search query (arXiv syntax), repeatable.")
@click.option("--max-results", default=100, show_default=True, help="api/recipe: results per search.")
@click.option("--category", help="snapshot: keep only this archive or category (e.g. cs).")
@click.option("--block-mb", default=8, show_default=True, type=click.IntRange(min=1), help="snapshot: MiB of input per block (one Parquet row group each).")
@click.option("--shard-blocks", default=16, show_default=True, type=click.IntRange(min=1),
              help="snapshot: blocks per shard (a shard is the unit an interrupted import resumes after).")
@click.option("--surveys", "surveys_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="recipe: folder written by `surge harvest surveys`.")
@click.option("--sample-from", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="recipe: a harvest folder (e.g. a cs snapshot import) to draw the random cs sample from.")
@click.option("--sample-size", default=0, show_default=True, help="recipe: papers in the random cs sample.")
@click.option("--seed", default=0, show_default=True, help="recipe: seed of the random sample.")
@click.option("--official", help="An official release (build folder, Hub repo or corpus.json) whose doc_ids are kept.")
@click.option("--restart", is_flag=True, help="Discard this job's committed shards and start over.")
@_interval_option
def corpus_cmd(snapshot_file, source, recipe, out, job, endpoint, set_spec, from_date, until, ids_file, queries,
               max_results, category, block_mb, shard_blocks, surveys_dir, sample_from, sample_size, seed, official, restart,
               min_interval, retries):
    """Harvest corpus metadata into OUT/corpus/<job>/ (Parquet shards, resumable: rerun to continue).

    \b
    Example:
      surge harvest corpus --source oai --set cs --from 2019-01-01 --out harvest/
      surge harvest corpus --source oai --set cs:cs:AI --endpoint https://export.arxiv.org/oai2 --out harvest/
      surge harvest corpus --source api --ids cited_ids.txt --out harvest/
      surge harvest corpus --source snapshot arxiv-metadata-oai-snapshot.json --category cs --out harvest/
      surge harvest corpus --recipe surge --surveys harvest/surveys/ --out harvest/
    """
    if bool(source) == bool(recipe):
        raise click.UsageError("give exactly one of --source or --recipe")
    if official:
        _import_official(official, out)
    t0 = time.time()
    try:
        if recipe:
            result = _run_recipe(out, surveys_dir, endpoint, sample_from, sample_size, seed, max_results, restart,
                                 min_interval, retries)
        elif source == "oai":
            result = _run_oai(out, job, endpoint, set_spec, from_date, until, restart, min_interval, retries)
        elif source == "api":
            result = _run_api(out, job, endpoint, ids_file, queries, max_results, restart, min_interval, retries)
        else:
            if snapshot_file is None:
                raise click.UsageError("--source snapshot needs the snapshot file as argument")
            result = _run_snapshot(out, job, snapshot_file, category, block_mb, shard_blocks, restart)
    except click.ClickException:
        raise
    except Exception as exc:  # store/params mismatches, OAI errors, HTTP failures after retries
        from surge_datasets.harvest.arxiv_api import ArxivAPIError
        from surge_datasets.harvest.http import HarvestHTTPError
        from surge_datasets.harvest.oai import OAIError
        from surge_datasets.harvest.store import StoreError

        if isinstance(exc, (HarvestHTTPError, OAIError, StoreError, ArxivAPIError, ValueError, FileNotFoundError)):
            raise click.ClickException(f"{exc} -- committed work is kept; rerun the same command to resume") from exc
        raise
    result["seconds"] = round(time.time() - t0, 1)
    _table([(k, v) for k, v in result.items() if not isinstance(v, (list, dict))])
    _echo_json(result)


def _import_official(official: str, out: Path) -> None:
    from surge_datasets.corpus import Corpus
    from surge_datasets.harvest.doc_ids import write_base_map

    try:
        corpus = Corpus.open(official)
        n = write_base_map(out, iter(corpus), source=str(official))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"official ids: {n:,} docs from {official}", err=True)


def _run_oai(out, job, endpoint, set_spec, from_date, until, restart, min_interval, retries) -> dict:
    from surge_datasets.harvest.doc_ids import DocIdMap
    from surge_datasets.harvest.oai import OAI_ENDPOINT, HarvestCursor, OAIHarvester
    from surge_datasets.harvest.store import CORPUS_DIR, ShardStore

    endpoint = endpoint or OAI_ENDPOINT
    job = job or "oai-" + "-".join(p.replace(":", "_") for p in (set_spec or "all", from_date or "start", until or "now"))
    session = _session(min_interval, retries)
    harvester = OAIHarvester(session, endpoint)
    params = {"source": "oai", "endpoint": endpoint, "set": set_spec, "from": from_date, "until": until}
    store = ShardStore.open(out / CORPUS_DIR / job, params, restart=restart)
    if not store.done:
        ids = DocIdMap.load(out)
        cursor = (HarvestCursor.from_json(store.cursor) if store.cursor
                  else HarvestCursor(harvester.start_params(set_spec, from_date, until)))
        bar = _eta_bar(None, "rec", f"oai {set_spec or 'all'}", session.min_interval)
        bar.update(store.n_rows)
        for page, nxt in harvester.pages(cursor):
            rows = [ids.assign_row(r) for r in page.rows]
            stats = {"pages": nxt.pages, "restarts": nxt.restarts,
                     "deleted": store.stats.get("deleted", 0) + len(page.deleted),
                     "records": store.stats.get("records", 0) + len(rows)}
            store.commit(rows, nxt.to_json(), deleted=page.deleted, stats=stats)
            if page.complete_list_size and bar.total is None:
                bar.total = page.complete_list_size
            bar.update(len(rows))
        bar.close()
        store.finish()
    return {"job": job, "rows": store.n_rows, "shards": len(store.shard_paths()), **store.stats,
            "requests": session.stats.requests, "retries": session.stats.retries}


def _run_api(out, job, endpoint, ids_file, queries, max_results, restart, min_interval, retries) -> dict:
    from surge_datasets.harvest.arxiv_api import API_ENDPOINT, MAX_BATCH, ArxivAPI
    from surge_datasets.harvest.doc_ids import DocIdMap
    from surge_datasets.harvest.store import CORPUS_DIR, ShardStore

    if not ids_file and not queries:
        raise click.UsageError("--source api needs --ids FILE and/or --query")
    endpoint = endpoint or API_ENDPOINT
    ids_list = []
    if ids_file:
        ids_list = [line.strip() for line in ids_file.read_text("utf-8").splitlines() if line.strip() and not line.startswith("#")]
    job = job or "api-" + (ids_file.stem if ids_file else "search")
    session = _session(min_interval, retries)
    api = ArxivAPI(session, endpoint)
    params = {"source": "api", "endpoint": endpoint, "ids": len(ids_list), "queries": list(queries), "max_results": max_results}
    store = ShardStore.open(out / CORPUS_DIR / job, params, restart=restart)
    if not store.done:
        ids = DocIdMap.load(out)
        cur = store.cursor or {"ids": 0, "query": 0}
        stats = dict(store.stats) or {"missing": [], "invalid": []}
        remaining = -(-(len(ids_list) - cur["ids"]) // MAX_BATCH) + (len(queries) - cur["query"]) * max(1, max_results // 100)
        bar = _eta_bar(len(ids_list) + len(queries), "item", "api", session.min_interval, remaining)
        bar.update(cur["ids"] + cur["query"])
        pos = cur["ids"]
        while pos < len(ids_list):
            batch = ids_list[pos:pos + MAX_BATCH]
            res = api.fetch_ids(batch)
            stats["missing"] = stats.get("missing", []) + res.missing
            stats["invalid"] = stats.get("invalid", []) + res.invalid
            pos += len(batch)
            store.commit([ids.assign_row(r) for r in res.rows], {"ids": pos, "query": 0}, stats=stats)
            bar.update(len(batch))
        qpos = cur["query"]
        while qpos < len(queries):
            rows = list(api.search(queries[qpos], max_results=max_results, page_size=min(100, max_results)))
            qpos += 1
            store.commit([ids.assign_row(r) for r in rows], {"ids": pos, "query": qpos}, stats=stats)
            bar.update(1)
        bar.close()
        store.finish()
    st = store.stats
    return {"job": job, "rows": store.n_rows, "shards": len(store.shard_paths()),
            "missing": len(st.get("missing", [])), "invalid": len(st.get("invalid", [])),
            "missing_ids": st.get("missing", [])[:50], "invalid_ids": st.get("invalid", [])[:50],
            "requests": session.stats.requests, "retries": session.stats.retries}


def _run_snapshot(out, job, snapshot_file, category, block_mb, shard_blocks, restart) -> dict:
    from surge_datasets.harvest.snapshot import import_snapshot

    job = job or "snapshot" + (f"-{category}" if category else "")
    bar = tqdm(total=snapshot_file.stat().st_size, unit="B", unit_scale=True, desc="snapshot", dynamic_ncols=True)
    res = import_snapshot(snapshot_file, out, job=job, category=category, block_bytes=block_mb * 2**20,
                          blocks_per_shard=shard_blocks, restart=restart, progress=bar.update)
    bar.close()
    return {"job": job, "rows": res.rows, "shards": res.shards, "skipped": res.skipped,
            "bad_lines": res.bad_lines, "resumed_from_byte": res.resumed_from}


def _run_recipe(out, surveys_dir, endpoint, sample_from, sample_size, seed, max_results, restart, min_interval, retries) -> dict:
    from surge_datasets.harvest.arxiv_api import API_ENDPOINT, ArxivAPI
    from surge_datasets.harvest.recipe import plan, run_recipe

    if surveys_dir is None:
        raise click.UsageError("--recipe surge needs --surveys DIR (from `surge harvest surveys`)")
    work = plan(surveys_dir, sample_from=sample_from, sample_size=sample_size, seed=seed)
    session = _session(min_interval, retries)
    api = ArxivAPI(session, endpoint or API_ENDPOINT)
    total = sum(len(v) for v in work.values())
    floor = (-(-len(work["cited-ids"]) // 100) + len(work["cited-titles"])
             + len(work["gt-searches"]) * max(1, -(-max_results // 100)))
    bar = _eta_bar(total, "item", "recipe", session.min_interval, floor)
    stats = run_recipe(out, work, api, sample_from=sample_from, search_results=max_results, restart=restart,
                       progress=lambda phase, n: (bar.set_description(f"recipe {phase}"), bar.update(n)))
    bar.close()
    return {"job": "recipe", **{f"work_{k}": len(v) for k, v in work.items()},
            **{k: v for k, v in stats.items() if k != "missing_ids"}, "requests": session.stats.requests}


@harvest_group.command("surveys")
@click.option("--titles", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="TSV with title, year, category (gt_survey_titles.tsv).")
@click.option("--corpus", "corpus_dir", type=click.Path(exists=True, path_type=Path),
              help="Harvest folder or built corpus to map citations to doc_ids.")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output folder (harvest/surveys/).")
@click.option("--endpoint", help="Base URL of the arXiv API (title searches).")
@click.option("--eprint-endpoint", help="Base URL of e-print sources (default https://arxiv.org/e-print).")
@click.option("--min-score", default=0.9, show_default=True, help="Title similarity needed to accept a search hit.")
@click.option("--year-slack", default=1, show_default=True, help="Allowed difference to the listed year.")
@click.option("--min-rate", default=0.5, show_default=True, help="Queries: least share of a section's citations resolved.")
@click.option("--seed", default=42, show_default=True, help="Seed of the 4:1 train/test split of queries.")
@click.option("--limit", type=int, help="Only the first N titles.")
@click.option("--restart", is_flag=True, help="Forget earlier resolutions (fetched sources are kept).")
@_interval_option
def surveys_cmd(titles, corpus_dir, out, endpoint, eprint_endpoint, min_score, year_slack, min_rate, seed, limit,
                restart, min_interval, retries):
    """Resolve GT survey titles on arXiv, fetch and parse their sources, write Survey and Query records.

    Writes OUT/surveys.jsonl, OUT/queries.jsonl, OUT/references.jsonl and OUT/report.json (ambiguous and
    unresolved titles, missing citation keys, uncited bibliography entries). Rerun to resume.

    \b
    Example:
      surge harvest surveys --titles gt_survey_titles.tsv --corpus harvest/ --out harvest/surveys/
    """
    from surge_datasets.harvest.arxiv_api import API_ENDPOINT, ArxivAPI
    from surge_datasets.harvest.surveys import EPRINT_ENDPOINT, harvest_surveys, read_titles

    try:
        gts = read_titles(titles)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if limit:
        gts = gts[:limit]
    lookup = _lookup(corpus_dir) if corpus_dir else None
    session = _session(min_interval, retries)
    api = ArxivAPI(session, endpoint or API_ENDPOINT)
    bar = _eta_bar(len(gts), "survey", "surveys", session.min_interval, 2 * len(gts))
    try:
        summary = harvest_surveys(gts, out, api=api, session=session, eprint_endpoint=eprint_endpoint or EPRINT_ENDPOINT,
                                  lookup=lookup, min_score=min_score, year_slack=year_slack, min_rate=min_rate, seed=seed,
                                  restart=restart, progress=lambda t: bar.update(1))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    bar.close()
    _table([("titles", summary["titles"]), ("surveys", summary["surveys"]), ("queries", summary["queries"]),
            ("references", summary["references"]), ("missing keys", summary["missing_keys"]),
            ("uncited entries", summary["uncited_entries"])] + [(f"status {k}", v) for k, v in summary["status"].items()])
    _echo_json({k: v for k, v in summary.items() if k != "per_survey"})


def _lookup(corpus_dir: Path):
    from surge_datasets.harvest.latex_source import CorpusLookup
    from surge_datasets.harvest.store import iter_harvested_batches, job_folders

    if job_folders(corpus_dir):
        return CorpusLookup.from_batches(iter_harvested_batches(corpus_dir))
    from surge_datasets.corpus import Corpus

    return CorpusLookup(iter(Corpus.open(corpus_dir)))


@harvest_group.command("parse-source")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Survey JSON to write.")
@click.option("--corpus", "corpus_dir", type=click.Path(exists=True, path_type=Path),
              help="Harvest folder or built corpus to map citations to doc_ids.")
@click.option("--survey-id", default=0, show_default=True)
@click.option("--title", help="Survey title (default: the LaTeX \\title).")
def parse_source_cmd(source, out, corpus_dir, survey_id, title):
    """Parse one e-print source (tarball, gzip'd .tex or folder) into a Survey record.

    The report (sections, bibliography source, cited keys missing from the bibliography, entries never
    cited) is printed and written next to OUT as <OUT>.report.json.

    \b
    Example:
      surge harvest parse-source 2106.12135.tar.gz --out survey.json
      surge harvest parse-source src/ --corpus harvest/ --out survey.json
    """
    import tempfile

    from surge_datasets.harvest.latex_source import SourceError, UnsafeArchiveError, parse_source
    from surge_datasets.harvest.store import atomic_write_bytes, atomic_write_json
    from surge_datasets.harvest.surveys import build_survey

    lookup = _lookup(corpus_dir) if corpus_dir else None
    with tempfile.TemporaryDirectory(prefix="eprint-") as tmp:
        try:
            parsed = parse_source(source, tmp)
        except (UnsafeArchiveError, SourceError) as exc:
            raise click.ClickException(f"{source}: {exc}") from exc
    survey, _, report = build_survey(parsed, survey_id=survey_id, title=title, lookup=lookup)
    atomic_write_bytes(out, survey.model_dump_json(indent=1).encode("utf-8"))
    atomic_write_json(Path(str(out) + ".report.json"), report)
    _table([(k, v) for k, v in report.items() if not isinstance(v, (list, dict))])
    _echo_json({"out": str(out), **report})
