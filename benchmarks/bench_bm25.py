"""BM25 at the official corpus size on this machine: index build time, peak memory, top-1000 latency.

    python benchmarks/bench_bm25.py --work /tmp/surge-bench-retrieval [--docs 1086992] [--queries 100]

Targets (issue): build under 3 minutes on 2 cores, top-1000 under 50 ms per query. The corpus is synthetic
(see synthetic_corpus.py); build and search run in child processes so their peak RSS is measured alone.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _child(code: str) -> tuple[dict, float]:
    """Run code in a fresh interpreter; its last stdout line is JSON. Returns it and the child's peak RSS (GiB)."""
    code += "import resource\nprint(json.dumps({'peak_kib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=HERE.parent)
    if proc.returncode:
        raise SystemExit(proc.stderr)
    lines = proc.stdout.strip().splitlines()
    return json.loads(lines[-2]), json.loads(lines[-1])["peak_kib"] / 1024 / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/surge-bench-retrieval")
    ap.add_argument("--docs", type=int, default=1_086_992)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--out", default=None, help="Write the figures as JSON here too.")
    args = ap.parse_args()
    work = Path(args.work)
    corpus_dir = work / f"corpus-{args.docs}"
    index_dir = work / f"bm25-{args.docs}"

    t = time.perf_counter()
    sys.path.insert(0, str(HERE))
    from synthetic_corpus import synthetic_corpus

    synthetic_corpus(corpus_dir, args.docs)
    corpus_seconds = time.perf_counter() - t

    build, build_peak = _child(
        "import json, time\n"
        "from surge_datasets.retrieval.bm25 import build_bm25\n"
        "t = time.perf_counter()\n"
        f"m = build_bm25({str(corpus_dir)!r}, {str(index_dir)!r}, progress=False)\n"
        "print(json.dumps({'seconds': time.perf_counter() - t, 'terms': m['n_terms'], 'nnz': m['nnz'], 'avg_doc_len': m['avg_doc_len']}))\n"
    )
    search, search_peak = _child(
        "import json, sys, time\n"
        "import numpy as np\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "from synthetic_corpus import synthetic_titles\n"
        "from surge_datasets.retrieval.bm25 import BM25Index\n"
        "t = time.perf_counter()\n"
        f"idx = BM25Index.open({str(index_dir)!r})\n"
        "open_s = time.perf_counter() - t\n"
        f"qs = synthetic_titles({args.queries} + 5)\n"
        f"for q in qs[:5]: idx.search_one(q, {args.k})\n"
        "times = []\n"
        "for q in qs[5:]:\n"
        "    t = time.perf_counter(); hits = idx.search_one(q, " + str(args.k) + "); times.append(time.perf_counter() - t)\n"
        "ms = np.array(times) * 1000\n"
        "print(json.dumps({'open_seconds': open_s, 'mean_ms': ms.mean(), 'p50_ms': float(np.percentile(ms, 50)), 'p95_ms': float(np.percentile(ms, 95)), 'max_ms': ms.max()}))\n"
    )
    index_bytes = sum(f.stat().st_size for f in index_dir.iterdir())
    figures = {
        "docs": args.docs, "corpus_generation_seconds": round(corpus_seconds, 1),
        "build_seconds": round(build["seconds"], 1), "build_peak_rss_gib": round(build_peak, 2),
        "terms": build["terms"], "postings": build["nnz"], "avg_doc_len_terms": round(build["avg_doc_len"], 1),
        "index_size_gib": round(index_bytes / 2**30, 2),
        "open_seconds": round(search["open_seconds"], 2), "search_peak_rss_gib": round(search_peak, 2),
        f"top{args.k}_ms_mean": round(search["mean_ms"], 1), f"top{args.k}_ms_p50": round(search["p50_ms"], 1),
        f"top{args.k}_ms_p95": round(search["p95_ms"], 1), "queries": args.queries,
    }
    print(json.dumps(figures, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
