"""NLI stage: pairs of all surveys de-duplicated, length-sorted and batched together (our runner) vs an
unbatched per-survey loop (the paper's code: per survey, one CrossEncoder.predict call per level, every
pair as it comes), with the same model.

Ours runs twice: in float32 (the paper's scores exactly) and with --nli-dtype auto (bf16 autocast
on a CPU with native bf16 or a GPU, float32 elsewhere); the figures include how often the two runs
reach the same label decision.

Two baselines: the paper's loop as its pinned sentence-transformers 2.x ran it (batches of 32 in input
order, no length sorting: emulated by one predict call per batch) and the same loop with today's
CrossEncoder.predict, which sorts each call's pairs by length.

The pairs are built like the real ones from the AutoSurvey outputs in reference mode: every
reference becomes a "paper" (its title, and as a stand-in abstract - the corpus abstracts are not
here - the first N words of the survey text, N drawn uniformly from 50..260 words, mean ~155 like the
corpus's 156.57); document, section and sentence hypotheses use the paper's templates. The model
is a randomly initialised cross-encoder built on the spot (speed does not depend on the weights):
'deberta-xsmall' (default; the paper's DeBERTa-v3 architecture at the xsmall size), 'minilm' (BERT
MiniLM-L6 shape) or 'tiny'.

    python benchmarks/bench_nli.py --surveys 1                # DeBERTa-v3 shape
    python benchmarks/bench_nli.py --surveys 2 --size minilm
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
    """A randomly initialised 3-label cross-encoder of the given shape, saved like a real checkpoint.

    deberta-xsmall: the architecture of the paper's model (DeBERTa-v3: disentangled relative-position
    attention, which runs eagerly - transformers has no SDPA kernel for it) at the xsmall size (12
    layers, 384 hidden); minilm: BERT MiniLM-L6 (6 layers, 384 hidden, SDPA attention); tiny: 2 layers, 64 hidden.
    """
    import torch
    from transformers import BertConfig, BertForSequenceClassification, DebertaV2Config, DebertaV2ForSequenceClassification

    from surge_datasets.models.testing import build_tiny_tokenizer

    tok = build_tiny_tokenizer(max_length=512)
    labels = dict(num_labels=3, id2label={0: "contradiction", 1: "entailment", 2: "neutral"},
                  label2id={"contradiction": 0, "entailment": 1, "neutral": 2})
    torch.manual_seed(0)
    if size == "deberta-xsmall":
        cfg = DebertaV2Config(vocab_size=len(tok), hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                              intermediate_size=1536, relative_attention=True, position_buckets=256,
                              norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
                              max_relative_positions=-1, position_biased_input=False, type_vocab_size=0,
                              max_position_embeddings=512, layer_norm_eps=1e-7, **labels)
        model = DebertaV2ForSequenceClassification(cfg)
    else:
        dims = {"tiny": (2, 64, 2, 128), "minilm": (6, 384, 12, 1536)}[size]
        cfg = BertConfig(vocab_size=len(tok), num_hidden_layers=dims[0], hidden_size=dims[1], num_attention_heads=dims[2],
                         intermediate_size=dims[3], max_position_embeddings=512, **labels)
        model = BertForSequenceClassification(cfg)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def survey_pairs(path: Path) -> dict[str, list[tuple[str, str]]]:
    import random

    g = read_generated(path, mode="reference")
    words = " ".join(g.section_texts()).split()
    rng = random.Random(int(g.survey_id))
    papers = {}
    for n, r in g.references.items():
        k, start = rng.randint(50, 260), rng.randrange(max(1, len(words) - 300))
        papers[n] = (r.title or "", " ".join(words[start:start + k]))
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
    ap.add_argument("--size", choices=["deberta-xsmall", "minilm", "tiny"], default="deberta-xsmall")
    ap.add_argument("--paper-batch-size", type=int, default=32, help="the paper loop's batch size (sentence-transformers' default)")
    ap.add_argument("--batch-size", type=int, default=None, help="ours (default: the device's default)")
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
    bs = args.paper_batch_size
    t = time.perf_counter()
    for s in per_survey:  # the paper's loop, batches in input order (sentence-transformers 2.x)
        for level in ("document", "section", "sentence"):
            for i in range(0, len(s[level]), bs):
                ce.predict(s[level][i:i + bs], batch_size=bs, show_progress_bar=False)
    paper_loop_s = time.perf_counter() - t
    t = time.perf_counter()
    for s in per_survey:  # the same loop with today's predict (sorted within each call)
        for level in ("document", "section", "sentence"):
            if s[level]:
                ce.predict(s[level], batch_size=bs, show_progress_bar=False)
    loop_s = time.perf_counter() - t

    all_pairs = [p for s in per_survey for v in s.values() for p in v]
    figures = {"model": args.size, "surveys": len(ids), "pairs": n_pairs, "distinct_pairs": len(set(all_pairs)),
               "paper_loop_s": round(paper_loop_s, 2), "paper_loop_pairs_per_s": round(n_pairs / paper_loop_s, 1),
               "sorted_loop_s": round(loop_s, 2), "sorted_loop_pairs_per_s": round(n_pairs / loop_s, 1)}
    probs = {}
    for dtype in ("float32", "auto"):
        nli = load_nli(folder, device=args.device, batch_size=args.batch_size, show_progress=False, dtype=dtype)
        t = time.perf_counter()
        probs[dtype] = score_pairs(nli, all_pairs, progress=False)
        ours_s = time.perf_counter() - t
        key = "ours_float32" if dtype == "float32" else f"ours_auto_{nli.dtype}"
        figures.update({"device": nli.device, "ours_batch_size": nli.batch_size, f"{key}_s": round(ours_s, 2), f"{key}_pairs_per_s": round(n_pairs / ours_s, 1),
                        f"{key}_speedup_vs_paper_loop": round(paper_loop_s / ours_s, 2),
                        f"{key}_speedup_vs_sorted_loop": round(loop_s / ours_s, 2)})
    a, b = probs["float32"], probs["auto"]
    figures["auto_vs_float32_max_abs_prob_diff"] = float(abs(a - b).max())
    figures["auto_vs_float32_argmax_agreement"] = round(float((a.argmax(1) == b.argmax(1)).mean()), 5)
    ref_a = [ca.citation_score(*p, mode="reference") for p in a]
    ref_b = [ca.citation_score(*p, mode="reference") for p in b]
    figures["auto_vs_float32_reference_score_agreement"] = round(sum(x == y for x, y in zip(ref_a, ref_b)) / len(ref_a), 5)
    print(json.dumps(figures, indent=2))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
