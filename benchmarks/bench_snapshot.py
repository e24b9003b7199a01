"""Benchmark: snapshot import vs a raw JSON pass over the same file.

Writes a synthetic JSON-lines file in the Kaggle ``arxiv-metadata-oai-snapshot`` schema (default
1.09M records, ~1.1 KB each, with LaTeX in a share of titles/abstracts/authors as in the real file),
then times

* a raw pass: read each line and ``orjson.loads`` it (and, for reference, stdlib ``json.loads``),
* ``surge_datasets.harvest.snapshot.import_snapshot`` into a fresh folder: Arrow's JSON reader plus
  Arrow compute kernels per 32 MiB block (2 worker threads), orjson + Python rules for the rows the
  kernels leave over, ids assigned and zstd Parquet shards written in file order,

and reports records/s, the ratios, and the import's peak memory (ru_maxrss of a child process).

    nice python benchmarks/bench_snapshot.py --records 1090000 --workdir /tmp/bench_snapshot
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

WORDS = ("model learning network graph neural data method results show propose approach task "
         "performance training deep language image retrieval survey benchmark dataset efficient robust "
         "theory algorithm optimization sparse attention transformer inference quantum field").split()
UMLAUT = '\\"o'
CATS = ["cs.LG", "cs.CL", "cs.CV", "cs.AI", "cs.IR", "stat.ML", "math.OC", "hep-th", "quant-ph",
        "cs.IT math.IT", "cs.SY eess.SY", "math.NA cs.NA", "astro-ph.GA", "cond-mat.stat-mech"]


def synthetic_record(i: int, rng: random.Random) -> dict:
    yymm = f"{7 + i % 18:02d}{1 + i % 12:02d}"
    aid = f"{yymm}.{i % 100000:05d}" if i % 50 else f"hep-th/{9901000 + i % 98999:07d}"
    title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12))).capitalize()
    if i % 9 == 0:
        title += r" with $\mathcal{O}(n \log n)$ cost"
    if i % 23 == 0:
        title += "\n  and a line break"
    abstract = "  " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(110, 170)))
    if i % 4 == 0:
        abstract += r" We obtain $x^2 + y_i \leq \epsilon$ for all $i$."
    if i % 37 == 0:
        abstract += r" Following Erd\H{o}s and R\'enyi we use \emph{random graphs}."
    abstract = abstract.replace(" results ", " results\n") + "\n"
    nver = 1 + i % 3
    authors_parsed = [["Author%d%s" % (j, UMLAUT if (i + j) % 31 == 0 else ""), "A. %s." % chr(65 + j), ""]
                      for j in range(1 + i % 6)]
    return {
        "id": aid,
        "submitter": "Someone",
        "authors": ", ".join(f"{a[1]} {a[0]}" for a in authors_parsed),
        "title": title,
        "comments": "10 pages",
        "journal-ref": None if i % 3 else "J. Synth. 1 (2020) 1-10",
        "doi": None if i % 5 else f"10.1000/synth.{i}",
        "report-no": None,
        "categories": CATS[i % len(CATS)],
        "license": None if i % 2 else "http://arxiv.org/licenses/nonexclusive-distrib/1.0/",
        "abstract": abstract,
        "versions": [{"version": f"v{v + 1}", "created": f"Mon, {1 + v} Apr 2019 19:18:42 GMT"} for v in range(nver)],
        "update_date": "2019-04-03",
        "authors_parsed": authors_parsed,
    }


def write_synthetic(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps(synthetic_record(i, rng)) + "\n")


def raw_pass(path: Path, loads) -> tuple[int, float]:
    t0 = time.perf_counter()
    n = 0
    with open(path, "rb") as fh:
        for line in fh:
            loads(line)
            n += 1
    return n, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_090_000)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bench_snapshot"))
    ap.add_argument("--keep", action="store_true", help="keep the synthetic file and output")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    src = args.workdir / "arxiv-metadata-oai-snapshot.json"
    out = args.workdir / "out"
    if args.child:  # the import alone, so that ru_maxrss is its own
        from surge_datasets.harvest.snapshot import import_snapshot

        t0 = time.perf_counter()
        res = import_snapshot(src, out, restart=True)
        dt = time.perf_counter() - t0
        print(json.dumps({"rows": res.rows, "seconds": dt,
                          "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    if not src.exists() or sum(1 for _ in open(src, "rb")) != args.records:
        t0 = time.perf_counter()
        write_synthetic(src, args.records)
        print(f"wrote {args.records} records ({src.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.0f}s", flush=True)
    import orjson

    n, t_or = raw_pass(src, orjson.loads)
    _, t_js = raw_pass(src, json.loads)
    print(f"raw orjson.loads pass: {n / t_or:,.0f} rec/s ({t_or:.1f}s)", flush=True)
    print(f"raw json.loads pass:   {n / t_js:,.0f} rec/s ({t_js:.1f}s)", flush=True)
    shutil.rmtree(out, ignore_errors=True)
    child = subprocess.run([sys.executable, __file__, "--child", "--workdir", str(args.workdir)],
                           check=True, capture_output=True, text=True)
    res = json.loads(child.stdout.strip().splitlines()[-1])
    t_imp = res["seconds"]
    print(f"import_snapshot:       {res['rows'] / t_imp:,.0f} rec/s ({t_imp:.1f}s, {res['rows']} rows)")
    print(f"slowdown vs orjson pass: {t_imp / t_or:.2f}x; vs json.loads pass: {t_imp / t_js:.2f}x")
    print(f"peak memory of the import (ru_maxrss): {res['maxrss_mb']:.0f} MB")
    print(json.dumps({"records": n, "raw_orjson_s": t_or, "raw_json_s": t_js, "import_s": t_imp,
                      "ratio_vs_orjson": t_imp / t_or, "ratio_vs_json": t_imp / t_js, "peak_mb": res["maxrss_mb"]}))
    if not args.keep:
        shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
