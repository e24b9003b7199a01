"""Benchmark: the paper's corpus handling vs ours, on a synthetic official-format corpus.json of 1,086,992 docs.

    python benchmarks/bench_corpus.py --workdir /tmp/surge-bench [--docs 1086992] [--queries 10000]

(a) the paper's approach: json.load of the whole file + dict from normalised title to doc_id, then resolve titles;
(b) ours: `surge build` once (time, peak RSS), then Corpus.open + doc_ids_by_titles for the same titles.
Each step runs in its own process so that its peak RSS is its own. Prints JSON and a table.
Targets: (b) open+resolve >= 20x faster than (a) and <= 1/4 of (a)'s peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

def _vocab(rng: random.Random, n: int = 50_000) -> list[str]:
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    weights = [12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4, 2.0, 2.0, 1.9, 1.5, 1.0, 0.8, 0.2, 0.2, 0.2, 0.1, 0.1]
    return ["".join(rng.choices(letters, weights, k=rng.randint(2, 11))) for _ in range(n)]


def generate(path: Path, n_docs: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    vocab = _vocab(rng)
    zipf = [1.0 / (i + 1) for i in range(len(vocab))]
    cum, total = [], 0.0
    for z in zipf:
        total += z
        cum.append(total)
    cats = ["cs.LG", "cs.CL", "cs.CV", "cs.AI", "cs.CR", "cs.DC", "stat.ML", "cs.IR", "cs.NE", "cs.SE"]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("[\n")
        for i in range(n_docs):
            words = rng.choices(vocab, cum_weights=cum, k=rng.randint(6, 14))
            # arXiv-like whitespace: double spaces and a hard line break in some titles
            title = " ".join(w.capitalize() for w in words)
            if i % 7 == 0:
                title = title.replace(" ", "  ", 1)
            if i % 11 == 0:
                title = title.replace(" ", "\n  ", 1)
            abstract = " ".join(rng.choices(vocab, cum_weights=cum, k=max(20, int(rng.gauss(157, 40)))))
            year = rng.randint(2000, 2024)
            rec = {"Title": title, "Authors": [f"{rng.choice(vocab).capitalize()} {rng.choice(vocab).capitalize()}" for _ in range(rng.randint(1, 6))],
                   "Year": str(year), "Date": f"{year}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T12:00:00Z",
                   "Abstract": abstract, "Category": rng.choice(cats), "doc_id": i}
            fh.write(("" if i == 0 else ",\n") + json.dumps(rec))
        fh.write("\n]\n")
    os.replace(tmp, path)


def _titles(path: Path, n: int, n_docs: int, seed: int = 1) -> list[str]:
    """n titles to resolve: 90% present (re-cased, whitespace changed), 10% absent."""
    import ijson

    rng = random.Random(seed)
    titles = []
    with open(path, "rb") as fh:
        for i, t in enumerate(ijson.items(fh, "item.Title")):
            if rng.random() < 1.2 * n / n_docs:
                titles.append(t.upper().replace(" ", "   "))
            if len(titles) >= int(n * 0.9):
                break
    titles += [f"no such paper number {i}" for i in range(n - len(titles))]
    rng.shuffle(titles)
    return titles


CHILD_PAPER = r"""
import json, re, resource, sys, time
def normalize_string(s):
    return ''.join(re.findall(r'[a-zA-Z]', s)).lower()
titles = json.load(open(sys.argv[2]))
t = time.perf_counter()
corpus = json.load(open(sys.argv[1], encoding='utf-8'))
title2docid = {normalize_string(c['Title']): int(c['doc_id']) for c in corpus}
t_load = time.perf_counter() - t
hits = [title2docid.get(normalize_string(x)) for x in titles]
total = time.perf_counter() - t
print(json.dumps({"load_s": t_load, "total_s": total, "hits": sum(h is not None for h in hits),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

CHILD_OURS = r"""
import json, resource, sys, time
titles = json.load(open(sys.argv[2]))
t = time.perf_counter()
from surge_datasets import Corpus
t_import = time.perf_counter() - t
t = time.perf_counter()
c = Corpus.open(sys.argv[1])
t_open = time.perf_counter() - t
hits = c.doc_ids_by_titles(titles)
total = time.perf_counter() - t
print(json.dumps({"import_s": t_import, "open_s": t_open, "total_s": total, "hits": sum(h is not None for h in hits),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

CHILD_BUILD = r"""
import json, resource, sys, time
from surge_datasets.build import build
t = time.perf_counter()
build(sys.argv[1], sys.argv[2], names=("corpus",))
print(json.dumps({"build_s": time.perf_counter() - t, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/surge-bench"))
    ap.add_argument("--docs", type=int, default=1_086_992)
    ap.add_argument("--queries", type=int, default=10_000)
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    release = args.workdir / f"release-{args.docs}"
    release.mkdir(exist_ok=True)
    corpus_json = release / "corpus.json"
    if not corpus_json.exists():
        t = time.perf_counter()
        generate(corpus_json, args.docs)
        print(f"generated {corpus_json} ({corpus_json.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    titles_path = args.workdir / f"titles-{args.docs}-{args.queries}.json"
    if not titles_path.exists():
        titles_path.write_text(json.dumps(_titles(corpus_json, args.queries, args.docs)))
    build_dir = args.workdir / f"build-{args.docs}"
    res = {"docs": args.docs, "queries": args.queries, "corpus_json_gb": corpus_json.stat().st_size / 1e9}
    res["paper"] = _child(CHILD_PAPER, str(corpus_json), str(titles_path))
    res["build"] = _child(CHILD_BUILD, str(release), str(build_dir))
    res["ours"] = _child(CHILD_OURS, str(build_dir / "corpus"), str(titles_path))
    res["speedup"] = res["paper"]["total_s"] / res["ours"]["total_s"]
    res["memory_ratio"] = res["ours"]["peak_rss_mb"] / res["paper"]["peak_rss_mb"]
    assert res["paper"]["hits"] == res["ours"]["hits"], "both approaches must resolve the same titles"
    print(json.dumps(res, indent=2))
    p, o, b = res["paper"], res["ours"], res["build"]
    print("\n| step | time | peak RSS |\n|---|---|---|")
    print(f"| (a) paper: json.load + title dict + resolve {args.queries:,} | {p['total_s']:.1f} s | {p['peak_rss_mb']:,.0f} MB |")
    print(f"| surge build (once) | {b['build_s']:.1f} s | {b['peak_rss_mb']:,.0f} MB |")
    print(f"| (b) ours: Corpus.open + resolve {args.queries:,} | {o['total_s']:.3f} s (open {o['open_s'] * 1000:.1f} ms) | {o['peak_rss_mb']:,.0f} MB |")
    print(f"\nspeed-up {res['speedup']:.0f}x (target >= 20x); memory {res['memory_ratio']:.3f} of (a) (target <= 0.25); "
          f"resolved {o['hits']:,} of {args.queries:,} in both")


if __name__ == "__main__":
    main()
