"""ROUGE/BLEU stage: our implementation vs the straightforward per-pair one (the paper's approach).

We have no GT surveys here, so each AutoSurvey output is scored against the ID system's output for the
same survey id (its sections of >= 100 characters play the GT sections): real generated text on both
sides, the same sizes as a real evaluation. The per-pair baseline calls rouge_score's scorer for every
(generated, GT) pair and sacrebleu.sentence_bleu per generated section, as the paper's code does.

    python benchmarks/bench_rouge_bleu.py --baseline-surveys 2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from statistics import mean


from surge_datasets.evaluation.rouge_bleu import rouge_bleu, rouge_bleu_per_pair
from surge_datasets.generated import read_generated

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "official_baseline_outputs"




def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA if DEFAULT_DATA.exists() else Path("/work/shared/data/official_baseline_outputs"))
    ap.add_argument("--baseline-surveys", type=int, default=2, help="surveys also scored by the slow per-pair baseline")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args()
    ids = sorted((p.name for p in (args.data / "Autosurvey" / "output").iterdir() if p.is_dir()), key=int)
    cases = []
    for sid in ids:
        gen = read_generated(args.data / "Autosurvey" / "output" / sid).section_texts()
        gt = read_generated(args.data / "ID" / "output" / sid).section_texts()
        cases.append((sid, gen, gt))
    t = time.perf_counter()
    fast = {sid: rouge_bleu(gen, gt) for sid, gen, gt in cases}
    fast_all = time.perf_counter() - t
    pairs_all = sum(len(g) * len(r) for _, g, r in cases)
    sub = cases[: args.baseline_surveys]
    t = time.perf_counter()
    fast_sub = {sid: rouge_bleu(gen, gt) for sid, gen, gt in sub}
    fast_sub_s = time.perf_counter() - t
    t = time.perf_counter()
    slow_sub = {sid: rouge_bleu_per_pair(gen, gt) for sid, gen, gt in sub}
    slow_sub_s = time.perf_counter() - t
    figures = {
        "surveys": len(cases), "pairs": pairs_all, "ours_all_s": round(fast_all, 2),
        "ours_pairs_per_s": round(pairs_all / fast_all, 1),
        "compared_surveys": [sid for sid, _, _ in sub], "compared_pairs": sum(len(g) * len(r) for _, g, r in sub),
        "ours_s": round(fast_sub_s, 3), "per_pair_s": round(slow_sub_s, 2), "speedup": round(slow_sub_s / fast_sub_s, 1),
        "identical": all(fast_sub[s] == slow_sub[s] for s in slow_sub) and all(fast[s] == fast_sub[s] for s in fast_sub),
        "mean_rouge_l": mean(v["rouge_l"] for v in fast.values()), "mean_bleu": mean(v["bleu"] for v in fast.values()),
    }
    print(json.dumps(figures, indent=2))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
