"""``surge index bm25|dense``, ``surge train-retriever``, ``surge retrieve``, ``surge eval-retrieval``."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import click

from ..retrieval import PAPER_MODEL
from ..retrieval.recall import PAPER_KS


def _clear_errors(fn):
    """Turn the library's input errors into one-line click errors (file, line or record named by them)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except click.ClickException:
            raise
        except (FileNotFoundError, ValueError, KeyError) as exc:
            raise click.ClickException(str(exc).strip("'\"")) from exc

    return wrapper


def _emit(result: dict, table: str, as_json: bool) -> None:
    click.echo(json.dumps(result, indent=2, ensure_ascii=False) if as_json else table)


def _kv_table(rows: dict) -> str:
    width = max(len(k) for k in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows.items())


json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON instead of a table.")


# ------------------------------------------------------------------------------------------ index

@click.group("index")
def index_group() -> None:
    """Build a retrieval index over the corpus (BM25 or dense).

    \b
    Example:
      surge index bm25 --corpus build/corpus --out idx/bm25
      surge index dense --model models/pr --corpus build/corpus --out idx/pr
    """


@index_group.command("bm25")
@click.option("--corpus", required=True, help="Corpus build folder, official corpus.json or Hub repo id.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Index folder to write (replaced atomically).")
@click.option("--k1", default=1.5, show_default=True, type=float)
@click.option("--b", default=0.75, show_default=True, type=float)
@click.option("--method", default="lucene", show_default=True, type=click.Choice(["lucene", "robertson", "atire"]),
              help="bm25s scoring variant.")
@click.option("--batch-size", default=50_000, show_default=True, help="Documents tokenised per batch.")
@json_option
@_clear_errors
def index_bm25(corpus, out, k1, b, method, batch_size, as_json):
    """BM25 over title + abstract (bm25s, English stopwords, Snowball stemming), searched memory-mapped.

    \b
    Example:
      surge index bm25 --corpus build/corpus --out idx/bm25
    """
    from ..retrieval.bm25 import build_bm25

    manifest = build_bm25(corpus, out, k1=k1, b=b, method=method, batch_size=batch_size)
    _emit({"out": out, **manifest}, _kv_table({
        "index": out, "documents": f"{manifest['corpus']['n_docs']:,}", "terms": f"{manifest['n_terms']:,}",
        "postings": f"{manifest['nnz']:,}", "params": f"k1={k1} b={b} {method}", "seconds": manifest["build_seconds"],
    }), as_json)


@index_group.command("dense")
@click.option("--model", required=True, help="Retriever folder (from train-retriever) or Hub model id.")
@click.option("--corpus", required=True, help="Corpus build folder, official corpus.json or Hub repo id.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Index folder (resumed if it exists).")
@click.option("--shard-size", default=50_000, show_default=True, help="Documents per embedding shard (the unit of resumption).")
@click.option("--batch-size", default=128, show_default=True, help="Documents per forward pass.")
@click.option("--dtype", default="float16", show_default=True, type=click.Choice(["float16", "float32"]), help="Shard storage type.")
@click.option("--index", "index_type", default="flat", show_default=True, type=click.Choice(["flat", "ivf", "hnsw"]),
              help="flat = exact inner product; ivf/hnsw are approximate (recall vs exact is measured).")
@click.option("--nlist", default=None, type=int, help="IVF lists (default 4*sqrt(N)).")
@click.option("--nprobe", default=32, show_default=True, help="IVF lists searched per query.")
@click.option("--hnsw-m", default=32, show_default=True, help="HNSW links per node.")
@click.option("--ef-search", default=128, show_default=True, help="HNSW search breadth.")
@click.option("--device", default=None, help="cpu, cuda, cuda:1 ... (default: GPU when there is one).")
@click.option("--overwrite", is_flag=True, help="Discard shards made with another model, corpus or shard size.")
@json_option
@_clear_errors
def index_dense(model, corpus, out, shard_size, batch_size, dtype, index_type, nlist, nprobe, hnsw_m, ef_search, device,
                overwrite, as_json):
    """Encode the corpus with a dual encoder (resumable shards) and build a faiss index.

    On several GPUs, run it under `accelerate launch`; the shards are divided between the processes.

    \b
    Example:
      surge index dense --model models/pr --corpus build/corpus --out idx/pr
      accelerate launch --num_processes 4 -m surge_datasets.retrieval.encode --model models/pr --corpus build/corpus --out idx/pr
      surge index dense --model models/pr --corpus build/corpus --out idx/pr --index hnsw   # reuses the shards
    """
    from ..retrieval.encode import encode_corpus

    manifest = encode_corpus(model, corpus, out, shard_size=shard_size, batch_size=batch_size, dtype=dtype, index=index_type,
                             ivf_nlist=nlist, ivf_nprobe=nprobe, hnsw_m=hnsw_m, hnsw_ef_search=ef_search, device=device,
                             overwrite=overwrite)
    info = manifest["index"]
    rows = {"index": out, "documents": f"{manifest['corpus']['n_docs']:,}", "dim": manifest["dim"],
            "shards": manifest["n_shards"], "type": info["type"],
            "encoded now": f"{manifest['last_run']['encoded_docs']:,} docs ({manifest['last_run']['docs_per_second'] or '-'} docs/s)"}
    rows.update({k: v for k, v in info.items() if k.startswith("recall_vs_exact")})
    _emit({"out": out, **manifest}, _kv_table(rows), as_json)


# ------------------------------------------------------------------------------------------ training

@click.command("train-retriever")
@click.option("--queries", required=True, help="Queries folder, build folder or queries.json (the 'train' split is used).")
@click.option("--corpus", required=True, help="Corpus build folder, official corpus.json or Hub repo id.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Model folder (checkpoints inside; reruns resume).")
@click.option("--model", default=PAPER_MODEL, show_default=True, help="Starting checkpoint (Hub id or folder).")
@click.option("--surveys", default=None, help="GT surveys for topic -> citation pairs (default: next to the queries).")
@click.option("--with-topics/--without-topics", default=True, show_default=True,
              help="Also train on survey title -> GT citations, as the paper does.")
@click.option("--epochs", default=10, show_default=True)
@click.option("--lr", default=5e-6, show_default=True, type=float)
@click.option("--batch-size", default=16, show_default=True, help="Queries per step and device.")
@click.option("--negatives", default=7, show_default=True, help="Random negatives per positive.")
@click.option("--in-batch-negatives", is_flag=True, help="Also score every other document of the batch.")
@click.option("--query-max-length", default=64, show_default=True)
@click.option("--doc-max-length", default=256, show_default=True)
@click.option("--mixed-precision", default="auto", show_default=True, type=click.Choice(["auto", "no", "fp16", "bf16"]),
              help="auto = fp16 on GPU, none on CPU.")
@click.option("--gradient-accumulation-steps", default=1, show_default=True)
@click.option("--seed", default=42, show_default=True)
@click.option("--checkpoint-every", default=0, show_default=True, help="Optimizer steps between checkpoints (0: each epoch).")
@click.option("--max-steps", default=None, type=int, help="Stop after this many steps (a rerun with more resumes).")
@json_option
@_clear_errors
def train_retriever(queries, corpus, out, model, surveys, with_topics, epochs, lr, batch_size, negatives, in_batch_negatives,
                    query_max_length, doc_max_length, mixed_precision, gradient_accumulation_steps, seed, checkpoint_every,
                    max_steps, as_json):
    """Train the paper's dual encoder (shared encoder, [CLS], dot product, random negatives, AdamW 5e-6).

    Several GPUs or nodes: the same options under `accelerate launch -m surge_datasets.retrieval.train`.

    \b
    Example:
      surge train-retriever --queries build/queries --corpus build/corpus --out models/pr
      accelerate launch --multi_gpu -m surge_datasets.retrieval.train --queries build/queries --corpus build/corpus --out models/pr
    """
    from ..retrieval.train import TrainConfig, train

    config = TrainConfig(queries=queries, corpus=corpus, out=out, model=model, surveys=surveys, with_topics=with_topics,
                         epochs=epochs, lr=lr, batch_size=batch_size, negatives=negatives, in_batch_negatives=in_batch_negatives,
                         query_max_length=query_max_length, doc_max_length=doc_max_length, mixed_precision=mixed_precision,
                         gradient_accumulation_steps=gradient_accumulation_steps, seed=seed, checkpoint_every=checkpoint_every,
                         max_steps=max_steps)
    result = train(config)
    losses = result.losses
    summary = {"out": result.out, "steps": result.steps, "epochs": result.epochs_done, "pairs": result.pairs,
               "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
               "resumed_from": result.resumed_from, "seconds": result.seconds}
    _emit(summary, _kv_table({k: v for k, v in summary.items() if v is not None}), as_json)


# ------------------------------------------------------------------------------------------ search & eval

@click.command("retrieve")
@click.option("--index", "index_dir", required=True, type=click.Path(exists=True, file_okay=False), help="Index folder (bm25 or dense).")
@click.option("--topics", required=True, help="GT surveys or queries: folder, build folder, release JSON or Hub repo.")
@click.option("--kind", type=click.Choice(["surveys", "queries"]), default=None, help="Topic kind (default: detected).")
@click.option("--split", type=click.Choice(["train", "test"]), default=None, help="Only queries of this split.")
@click.option("--k", default=100, show_default=True, help="Documents per topic.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Run file to write.")
@click.option("--trec", is_flag=True, help="TREC format (topic_id Q0 doc_id rank score tag) instead of JSONL.")
@click.option("--tag", default=None, help="Run tag (default: the index kind).")
@click.option("--model", default=None, help="Dense only: query encoder (default: the one the index was built with).")
@click.option("--device", default=None, help="Dense only: cpu, cuda ...")
@json_option
@_clear_errors
def retrieve_command(index_dir, topics, kind, split, k, out, trec, tag, model, device, as_json):
    """Retrieve the top-k corpus documents for every topic into a run file.

    Topic text is the survey title (surveys) or the prefix-titles question (queries).

    \b
    Example:
      surge retrieve --index idx/pr --topics build/surveys --k 100 --out runs/pr.jsonl
      surge retrieve --index idx/bm25 --topics build/queries --split test --k 1000 --out runs/bm25.trec --trec
    """
    import time

    from ..retrieval.search import open_index, retrieve, write_run
    from ..retrieval.topics import load_topics

    topic_list = load_topics(topics, kind, split=split)
    if not topic_list:
        raise click.ClickException(f"{topics}: no topics")
    index = open_index(index_dir, model=model, device=device)
    started = time.perf_counter()
    run = retrieve(index, topic_list, k, progress=True)
    seconds = time.perf_counter() - started
    tag = tag or index.manifest["kind"]
    write_run(out, run, tag=tag, trec=trec, queries={t.topic_id: t.text for t in topic_list})
    summary = {"out": out, "format": "trec" if trec else "jsonl", "topics": len(run), "k": k, "tag": tag,
               "ms_per_topic": round(1000 * seconds / len(run), 2)}
    _emit(summary, _kv_table(summary), as_json)


@click.command("eval-retrieval")
@click.argument("run_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--qrels", required=True, help="GT surveys (all_cites), queries (cites), a TREC qrels file or {topic: [doc_ids]} JSON.")
@click.option("--kind", type=click.Choice(["surveys", "queries", "trec"]), default=None, help="Qrels kind (default: detected).")
@click.option("--split", type=click.Choice(["train", "test"]), default=None, help="Only queries of this split.")
@click.option("--ks", default=",".join(map(str, PAPER_KS)), show_default=True, help="Cut-offs, comma-separated.")
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="Also write the JSON report (with per-topic recall) here.")
@json_option
@_clear_errors
def eval_retrieval(run_file, qrels, kind, split, ks, out, as_json):
    """Recall@k of a run (JSONL or TREC), per topic and averaged, as in the paper's Table 3.

    \b
    Example:
      surge eval-retrieval runs/pr.jsonl --qrels build/surveys
      surge eval-retrieval runs/bm25.trec --qrels build/queries --split test --ks 10,100
    """
    from ..retrieval.recall import evaluate_run, format_table, load_qrels
    from ..retrieval.search import read_run
    from ..retrieval.storage import write_json

    try:
        cutoffs = tuple(int(k) for k in ks.split(",") if k.strip())
    except ValueError:
        raise click.BadParameter(f"{ks!r} is not a comma-separated list of integers", param_hint="--ks") from None
    report = evaluate_run(read_run(run_file), load_qrels(qrels, kind, split=split), cutoffs)
    result = {"run": run_file, "qrels": qrels, **report.to_dict()}
    if out:
        write_json(out, result)
    if as_json:
        click.echo(json.dumps({k: v for k, v in result.items() if k != "per_topic"}, indent=2))
    else:
        notes = []
        if report.missing_from_run:
            notes.append(f"{len(report.missing_from_run)} judged topics missing from the run (scored 0)")
        if report.skipped_no_qrels:
            notes.append(f"{len(report.skipped_no_qrels)} topics without relevant documents left out")
        click.echo("\n".join([format_table(report, f"{Path(run_file).name} vs {qrels}"), *notes]))


def register(group: click.Group) -> None:
    group.add_command(index_group)
    group.add_command(train_retriever)
    group.add_command(retrieve_command)
    group.add_command(eval_retrieval)
