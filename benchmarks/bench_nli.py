"""NLI stage: pairs of all surveys de-duplicated, length-sorted and batched together (our runner) vs an
unbatched per-survey loop (the paper's code: per survey, one CrossEncoder.predict call per level, every
pair as it comes), with the same model.

The pairs are built like the real ones from the AutoSurvey outputs in reference mode: every
reference becomes a "paper" (its title, and the first 600 characters of the survey text as a stand-in
abstract, since the corpus abstracts are not here); document, section and sentence hypotheses use the
paper's templates. The model is a randomly initialised cross-encoder built on the spot: 'tiny' (2
layers, 64 hidden) or 'minilm' (MiniLM-L6 shape: 6 layers, 384 hidden); speed does not depend on the
weights.

    python benchmarks/bench_nli.py --surveys 4 --size minilm
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from surge_datasets.evaluation import citation_accuracy as ca
from surge_datasets.evaluation.runner import score_pairs
from surge_datasets.generated import read_generated

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "official_baseline_outputs"


def build_model(folder: Path, size: str) -> str:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from surge_datasets.models.testing import build_tiny_tokenizer

    tok = build_tiny_tokenizer(max_length=512)
    dims = {"tiny": (2, 64, 2, 128), "minilm": (6, 384, 12, 1536)}[size]
    cfg = BertConfig(vocab_size=len(tok), num_hidden_layers=dims[0], hidden_size=dims[1], num_attention_heads=dims[2],
                     intermediate_size=dims[3], max_position_embeddings=512, num_labels=3,
                     id2label={0: "contradiction", 1: "entailment", 2: "neutral"},
                     label2id={"contradiction": 0, "entailment": 1, "neutral": 2})
    torch.manual_seed(0)
    BertForSequenceClassification(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def survey_pairs(path: Path) -> dict[str, list[tuple[str, str]]]:
    g = read_generated(path, mode="reference")
    abstract = " ".join(g.section_texts()[0].split())[:600] if g.section_texts() else ""
    papers = {n: (r.title or "", abstract) for n, r in g.references.items()}
    out = {"document": [], "section": [], "sentence": []}
    for n, (t, a) in papers.items():
        out["document"].append((ca.DOC_PREMISE.format(title=t, abstract=a), ca.DOC_HYPOTHESIS.format(title=t, survey_title=g.title)))
    for c in g.citations():
        if c.number not in papers:
            continue
        t, a = papers[c.number]
        premise = ca.PREMISE.format(title=t, abstract=a)
        out["section"].append((ca.SECTION_HYPOTHESIS.format(title=t, heading=c.heading), premise))
        out["sentence"].append((ca.SENTENCE_HYPOTHESIS.format(title=t, sentence=c.sentence), premise))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA if DEFAULT_DATA.exists() else Path("/work/shared/data/official_baseline_outputs"))
    ap.add_argument("--surveys", type=int, default=4)
    ap.add_argument("--size", choices=["tiny", "minilm"], default="minilm")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from sentence_transformers import CrossEncoder

    from surge_datasets.models.nli import load_nli

    folder = build_model(Path(tempfile.mkdtemp()) / "nli", args.size)
    ids = sorted((p.name for p in (args.data / "Autosurvey" / "output").iterdir() if p.is_dir()), key=int)[: args.surveys]
    per_survey = [survey_pairs(args.data / "Autosurvey" / "output" / sid) for sid in ids]
    n_pairs = sum(len(v) for s in per_survey for v in s.values())

    ce = CrossEncoder(folder, device=args.device)
    t = time.perf_counter()
    for s in per_survey:  # the paper's loop
        for level in ("document", "section", "sentence"):
            if s[level]:
                ce.predict(s[level], batch_size=args.batch_size, show_progress_bar=False)
    loop_s = time.perf_counter() - t

    nli = load_nli(folder, device=args.device, batch_size=args.batch_size, show_progress=False)
    all_pairs = [p for s in per_survey for v in s.values() for p in v]
    t = time.perf_counter()
    score_pairs(nli, all_pairs, progress=False)
    ours_s = time.perf_counter() - t
    figures = {"model": args.size, "device": nli.device, "surveys": len(ids), "pairs": n_pairs,
               "distinct_pairs": len(set(all_pairs)), "per_survey_loop_s": round(loop_s, 2), "ours_s": round(ours_s, 2),
               "per_survey_loop_pairs_per_s": round(n_pairs / loop_s, 1), "ours_pairs_per_s": round(n_pairs / ours_s, 1),
               "speedup": round(loop_s / ours_s, 2)}
    print(json.dumps(figures, indent=2))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
