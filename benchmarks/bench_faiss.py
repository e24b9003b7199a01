"""Exact inner-product search (faiss IndexFlatIP) at the official corpus size with 768-d vectors.

    nice python benchmarks/bench_faiss.py [--docs 1086992] [--dim 768] [--queries 205] [--k 1000]

Random unit vectors stand in for roberta-base [CLS] embeddings (exact search cost does not depend on the
values). Reports add time, search throughput for a batch of topics (205 = the GT surveys) and one at a
time, and the peak memory of the process. float32 at this size is 3.3 GB: run it once, niced.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=1_086_992)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--queries", type=int, default=205)
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=0, help="faiss OpenMP threads (0: faiss default)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import faiss

    if args.threads:
        faiss.omp_set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    vectors = np.empty((args.docs, args.dim), dtype=np.float32)
    for start in range(0, args.docs, 100_000):
        chunk = rng.standard_normal((min(100_000, args.docs - start), args.dim), dtype=np.float32)
        chunk /= np.linalg.norm(chunk, axis=1, keepdims=True)
        vectors[start:start + len(chunk)] = chunk
    gen_s = time.perf_counter() - t

    t = time.perf_counter()
    index = faiss.IndexFlatIP(args.dim)
    index.add(vectors)
    add_s = time.perf_counter() - t
    del vectors

    queries = rng.standard_normal((args.queries, args.dim), dtype=np.float32)
    t = time.perf_counter()
    scores, rows = index.search(queries, args.k)
    batch_s = time.perf_counter() - t
    single = []
    for q in queries[:20]:
        t = time.perf_counter()
        index.search(q[None, :], args.k)
        single.append(time.perf_counter() - t)
    figures = {
        "docs": args.docs, "dim": args.dim, "k": args.k, "threads": faiss.omp_get_max_threads(),
        "index_gib": round(args.docs * args.dim * 4 / 2**30, 2),
        "generate_seconds": round(gen_s, 1), "add_seconds": round(add_s, 2),
        "batch_queries": args.queries, "batch_seconds": round(batch_s, 2),
        "batch_queries_per_second": round(args.queries / batch_s, 1),
        "single_query_ms_mean": round(1000 * float(np.mean(single)), 1),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }
    print(json.dumps(figures, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
