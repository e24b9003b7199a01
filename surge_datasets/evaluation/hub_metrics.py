"""What the ``evaluate`` modules in ``metrics/<name>/`` call: one function per metric over lists.

``compute(name, predictions, references, ...)`` takes generated surveys (Markdown text, our JSON
text, or a path to a file/folder) and their GT survey ids, opens the benchmark data and the models
(once per process, then reused), and returns the mean of each result key plus the per-survey values.
The metric implementations are the library's (:mod:`.recall`, :mod:`.citation_accuracy`,
:mod:`.structure`, :mod:`.content`, :mod:`.rouge_bleu`); nothing is computed here.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Optional, Sequence

__all__ = ["METRIC_NAMES", "RESULT_KEYS", "DESCRIPTIONS", "features", "metric_info", "read_prediction", "compute"]

METRIC_NAMES = ("citation_recall", "citation_accuracy", "soft_heading_recall", "structure_quality",
                "content_quality", "rouge_bleu")
RESULT_KEYS: dict[str, tuple[str, ...]] = {
    "citation_recall": ("recall",),
    "citation_accuracy": ("citation_accuracy_document", "citation_accuracy_section", "citation_accuracy_sentence"),
    "soft_heading_recall": ("soft_heading_recall",),
    "structure_quality": ("structure_quality",),
    "content_quality": ("content_quality",),
    "rouge_bleu": ("rouge_1", "rouge_2", "rouge_l", "bleu"),
}
DESCRIPTIONS = {
    "citation_recall": "SurGE comprehensiveness: share of the ground-truth survey's cited papers that the generated "
                       "survey cites (references resolved to corpus papers by arXiv id, DOI, then normalised title).",
    "citation_accuracy": "SurGE citation accuracy at document, section and sentence level, judged by an NLI "
                         "cross-encoder (default cross-encoder/nli-deberta-v3-base).",
    "soft_heading_recall": "SurGE Soft Heading Recall: soft-cardinality overlap of generated and ground-truth "
                           "headings, with embedding cosine similarity (paper: BAAI/bge-large-en-v1.5).",
    "structure_quality": "SurGE Structure Quality Score: an LLM judge compares the generated outline with the "
                         "ground-truth outline, 0-5.",
    "content_quality": "SurGE Content Quality Score: an LLM judge rates up to 20 sampled passages for fluency, "
                       "logic, redundancy, clarity and errors, 0-5 (mean).",
    "rouge_bleu": "ROUGE-1/2/L F (stemmed) and sentence BLEU of each generated section against the ground-truth "
                  "sections, averaged (reported by SurGE for reference only).",
}
CITATION = """@inproceedings{surge2026,
  title     = {SurGE: A Benchmark and Evaluation Framework for Scientific Survey Generation},
  booktitle = {Proceedings of SIGIR 2026},
  year      = {2026},
  eprint    = {2508.15658},
  archivePrefix = {arXiv}
}"""
KWARGS_DESCRIPTION = """
Args:
    predictions: list of generated surveys - Markdown text, our JSON format as text, or the path of a
        file or of a survey folder (any layout `surge evaluate` reads).
    references: list of ground-truth survey ids (int), one per prediction.
    data: benchmark data - a build folder, a Hub namespace such as "surge", or a folder with the official
        corpus.json + surveys.json. Or give `corpus` and `surveys` separately:
    corpus: a Corpus, a corpus folder / Hub repo id / official corpus.json (metrics that resolve citations).
    surveys: dict {survey_id: Survey}, a surveys folder / Hub repo id, or the official surveys.json.
    mode: "reference" (default; the paper's code exactly) or "paper" (the formulas as written, robust parsing).
    Model options (only for the metrics that need them):
    nli_model, embed_model ("minilm" = the offline bundled MiniLM), judge_base_url, judge_model,
    judge_local ("smollm2" = the offline bundled SmolLM2), judge_cache, device, batch_size (NLI; default 8 on CPU, 64 on CUDA),
    nli_dtype ("auto" - bf16 on GPUs and on CPUs with native bf16 - or "float32" for the paper's
    full-precision scores exactly).
Returns:
    the mean of each result key over the predictions where it is defined, and "per_survey": one dict per
    prediction.
"""

_LOCK = threading.Lock()
_DATA_CACHE: dict[tuple, Any] = {}
_MODEL_CACHE: dict[tuple, Any] = {}


def features():
    import datasets

    return datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("int64")})


def metric_info(name: str, evaluate_module):
    """``evaluate.MetricInfo`` for one of :data:`METRIC_NAMES`."""
    return evaluate_module.MetricInfo(
        description=DESCRIPTIONS[name], citation=CITATION, inputs_description=KWARGS_DESCRIPTION,
        features=features(), homepage="https://huggingface.co/surge",
        reference_urls=["https://arxiv.org/abs/2508.15658"])


# ----------------------------------------------------------------------------------------- inputs

def _looks_like_path(value: str) -> bool:
    return "\n" not in value and len(value) < 4096 and os.path.exists(value)


def read_prediction(prediction: str, survey_id: int | str, mode: str = "reference"):
    """A :class:`~surge_datasets.generated.GeneratedSurvey` from text or a path."""
    from ..generated import parse_json_survey, parse_markdown, read_generated

    sid = str(survey_id)
    if isinstance(prediction, os.PathLike) or (isinstance(prediction, str) and _looks_like_path(prediction)):
        return read_generated(prediction, mode=mode, survey_id=sid)
    text = str(prediction)
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            return parse_json_survey(data, survey_id=sid, path=f"<prediction {sid}>", mode=mode)
    return parse_markdown(text, survey_id=sid, path=f"<prediction {sid}>", mode=mode)


def _cached(cache: dict, key: tuple, make):
    with _LOCK:
        if key not in cache:
            cache[key] = make()
        return cache[key]


def _open_corpus(corpus):
    from ..corpus import Corpus

    if corpus is None or isinstance(corpus, Corpus):
        return corpus
    return _cached(_DATA_CACHE, ("corpus", str(corpus)), lambda: Corpus.open(corpus))


def _open_surveys(surveys) -> Optional[dict]:
    from ..schemas import Survey

    if surveys is None:
        return None
    if isinstance(surveys, dict):
        return {int(k): v for k, v in surveys.items()}
    if isinstance(surveys, (list, tuple)):
        return {s.survey_id: s for s in surveys if isinstance(s, Survey)}

    def load():
        path = Path(surveys)
        if path.is_file() and path.suffix == ".json":
            from ..official import iter_official

            return {s.survey_id: s for s in iter_official("surveys", path)}
        from ..data import load_surveys

        return load_surveys(surveys)

    return _cached(_DATA_CACHE, ("surveys", str(surveys)), load)


def _open_data(data):
    from ..data import SurgeData

    if isinstance(data, SurgeData):
        return data.corpus, data.surveys
    from ..cli.evaluate import open_benchmark_data

    corpus, surveys, _ = _cached(_DATA_CACHE, ("data", str(data)), lambda: open_benchmark_data(str(data)))
    return corpus, surveys


# ----------------------------------------------------------------------------------------- models

def _nli(name: Optional[str], device: Optional[str], batch_size: Optional[int], dtype: str = "auto"):
    from ..models.nli import PAPER_NLI_MODEL, load_nli

    name = name or PAPER_NLI_MODEL
    return _cached(_MODEL_CACHE, ("nli", name, device, batch_size, dtype),
                   lambda: load_nli(name, device=device, batch_size=batch_size, show_progress=False, dtype=dtype))


def _embedder(name: Optional[str], device: Optional[str]):
    from ..models.embeddings import load_embedder_with_fallback

    return _cached(_MODEL_CACHE, ("embedder", name, device), lambda: load_embedder_with_fallback(name, device=device))


def _judge(base_url, model, local, cache, device):
    from ..models.judge import load_judge

    extra = {"device": device} if local and device else {}
    return _cached(_MODEL_CACHE, ("judge", base_url, model, local, str(cache)),
                   lambda: load_judge(base_url=base_url, model=model, local=local, cache=cache, **extra))


# ----------------------------------------------------------------------------------------- compute

def _mean(values: list) -> Optional[float]:
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None


def compute(name: str, predictions: Sequence[str], references: Sequence[int], *, data=None, corpus=None,
            surveys=None, mode: str = "reference", nli_model: Optional[str] = None, embed_model: Optional[str] = None,
            judge_base_url: Optional[str] = None, judge_model: Optional[str] = None, judge_local: Optional[str] = None,
            judge_cache=None, device: Optional[str] = None, batch_size: Optional[int] = None, nli_dtype: str = "auto",
            fuzzy_threshold: float = 0.9, nli=None, embedder=None, judge=None) -> dict:
    """Score ``predictions`` against GT surveys ``references`` with metric ``name`` (see module doc).

    Already loaded models can be passed as ``nli=``, ``embedder=``, ``judge=``.
    """
    if name not in METRIC_NAMES:
        raise ValueError(f"unknown metric {name!r}; one of {METRIC_NAMES}")
    if mode not in ("reference", "paper"):
        raise ValueError(f"mode must be 'reference' or 'paper', not {mode!r}")
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    if data is not None:
        corpus_obj, survey_map = _open_data(data)
        corpus_obj = _open_corpus(corpus) if corpus is not None else corpus_obj
        survey_map = _open_surveys(surveys) if surveys is not None else survey_map
    else:
        corpus_obj, survey_map = _open_corpus(corpus), _open_surveys(surveys)
    needs_gt = name != "content_quality"
    needs_corpus = name in ("citation_recall", "citation_accuracy")
    if needs_gt and survey_map is None:
        raise ValueError(f"{name} needs the GT surveys: pass data=... or surveys=...")
    if needs_corpus and corpus_obj is None:
        raise ValueError(f"{name} needs the corpus: pass data=... or corpus=...")

    gens, gts = [], []
    for pred, sid in zip(predictions, references):
        gens.append(read_prediction(pred, sid, mode))
        if needs_gt:
            try:
                gts.append(survey_map[int(sid)])
            except KeyError:
                raise ValueError(f"no GT survey with id {sid} in the data") from None
        else:
            gts.append(None)

    extra: dict[str, Any] = {}
    if name == "citation_recall":
        from ..citations import resolve_references
        from .recall import recall_from_resolutions

        rows = [{"recall": recall_from_resolutions(gt.all_cites, resolve_references(gen, corpus_obj, mode, fuzzy_threshold), mode)}
                for gen, gt in zip(gens, gts)]
    elif name == "citation_accuracy":
        import numpy as np

        from ..citations import resolve_references
        from . import citation_accuracy as ca

        nli = nli or _nli(nli_model, device, batch_size, nli_dtype)
        plans = [ca.plan_citation_accuracy(gen, gt, corpus_obj, resolve_references(gen, corpus_obj, mode, fuzzy_threshold), mode)
                 for gen, gt in zip(gens, gts)]
        pairs = [pair for plan in plans for pair in plan.pairs]
        probs = nli.predict(pairs) if pairs else np.zeros((0, 3), dtype=np.float32)   # one pass for all surveys
        rows, start = [], 0
        for plan in plans:
            rows.append(ca.score_plan(plan, probs[start:start + len(plan.pairs)]))
            start += len(plan.pairs)
        extra["nli_model"] = getattr(nli, "name", None)
        extra["nli_dtype"] = getattr(nli, "dtype", None)
    elif name == "soft_heading_recall":
        from .structure import soft_heading_recall

        embedder = embedder or _embedder(embed_model, device)
        rows = [{"soft_heading_recall": soft_heading_recall(gt, gen, embedder, mode)} for gen, gt in zip(gens, gts)]
        extra["embed_model"] = getattr(embedder, "name", None)
    elif name == "structure_quality":
        from .structure import structure_quality_many

        judge = judge or _judge(judge_base_url, judge_model, judge_local, judge_cache, device)
        rows = [{"structure_quality": v} for v in structure_quality_many(list(zip(gts, gens)), judge, mode)]
        extra["judge"] = judge.name
    elif name == "content_quality":
        from .content import content_quality

        judge = judge or _judge(judge_base_url, judge_model, judge_local, judge_cache, device)
        rows = [{"content_quality": content_quality(gen, judge, mode)} for gen in gens]
        extra["judge"] = judge.name
    else:
        from .rouge_bleu import rouge_bleu_survey

        rows = [rouge_bleu_survey(gt, gen) for gen, gt in zip(gens, gts)]

    keys = RESULT_KEYS[name]
    out: dict[str, Any] = {k: _mean([r.get(k) for r in rows]) for k in keys}
    out["per_survey"] = [{"survey_id": int(sid), **{k: r.get(k) for k in keys}} for sid, r in zip(references, rows)]
    out["mode"] = mode
    out.update(extra)
    return out
