"""Evaluating a folder of generated surveys with every SurGE metric, resumably.

Output folder:

* ``results.jsonl`` - one line per survey as it finishes (a later line for the same survey updates
  the earlier one); a re-run skips the metrics a survey already has.
* ``results.json`` - ``{"aggregate": {key: mean}, "surveys": {id: {key: value}}, "config": {...},
  "counts": ..., "skipped": {metric: reason}, "errors": {id: [message]}}``.
* ``results.md`` - the same as a Markdown table.
* ``nli_cache.jsonl`` - NLI probabilities of the pairs already scored (a crash in the NLI stage loses
  at most one chunk).

Aggregates are means over the surveys where a figure is defined (``counts`` gives how many). A metric
whose model cannot be loaded is reported under ``skipped`` with the reason, never as 0.

The NLI stage collects the pairs of all pending surveys, scores each distinct pair once (sorted by
length, in chunks) and only then finishes the surveys one by one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np
from tqdm.auto import tqdm

from .. import __version__
from ..citations import Resolution, resolution_summary, resolve_references
from ..generated import GeneratedReadError, GeneratedSurvey, list_generated_dir, read_generated
from . import citation_accuracy as ca
from .recall import recall_from_resolutions
from .rouge_bleu import KEYS as ROUGE_KEYS
from .rouge_bleu import rouge_bleu_survey

log = logging.getLogger(__name__)

METRICS = ("recall", "citation_accuracy", "soft_heading_recall", "structure_quality", "content_quality", "rouge_bleu")
METRIC_KEYS: dict[str, tuple[str, ...]] = {
    "recall": ("recall",),
    "citation_accuracy": ca.KEYS,
    "soft_heading_recall": ("soft_heading_recall",),
    "structure_quality": ("structure_quality",),
    "content_quality": ("content_quality",),
    "rouge_bleu": ROUGE_KEYS,
}
RESULT_KEYS = (
    "recall", "citation_accuracy_document", "citation_accuracy_section", "citation_accuracy_sentence",
    "soft_heading_recall", "structure_quality", "content_quality", "rouge_1", "rouge_2", "rouge_l", "bleu",
)
DEFAULT_NLI_MODEL = "cross-encoder/nli-deberta-v3-base"
DEFAULT_EMBED_MODEL = "BAAI/bge-large-en-v1.5"
NLI_CHUNK = 2048


def parse_metrics(spec: Optional[str | Sequence[str]]) -> tuple[str, ...]:
    """'recall,citation_accuracy' -> ('recall', 'citation_accuracy'); None/'all' -> every metric."""
    if spec is None:
        return METRICS
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if not items or items == ["all"]:
        return METRICS
    aliases = {"citation_recall": "recall", "shr": "soft_heading_recall", "sqs": "structure_quality",
               "cqs": "content_quality", "rouge": "rouge_bleu", "bleu": "rouge_bleu"}
    out = []
    for it in items:
        it = aliases.get(it, it)
        if it not in METRICS:
            raise ValueError(f"unknown metric {it!r}; choose from {', '.join(METRICS)}")
        if it not in out:
            out.append(it)
    return tuple(out)


@dataclass
class EvalConfig:
    """What to run and with which models."""

    metrics: tuple[str, ...] = METRICS
    mode: str = "reference"
    nli_model: str = DEFAULT_NLI_MODEL
    embed_model: str = DEFAULT_EMBED_MODEL
    judge_base_url: Optional[str] = None
    judge_model: Optional[str] = None
    judge_local: Optional[str] = None
    judge_cache: Optional[str] = None
    device: Optional[str] = None
    nli_batch_size: Optional[int] = None  # None: the device's default (8 on CPU, 64 on CUDA)
    nli_dtype: str = "auto"
    fuzzy_threshold: float = 0.9
    limit: Optional[int] = None

    def __post_init__(self) -> None:
        self.metrics = parse_metrics(self.metrics)
        if self.mode not in ("reference", "paper"):
            raise ValueError(f"mode must be 'reference' or 'paper', not {self.mode!r}")
        from ..models.nli import check_dtype

        check_dtype(self.nli_dtype, "nli_dtype")


@dataclass
class Models:
    """Loaded models (None: not needed, or unavailable - see ``skipped``)."""

    nli: Any = None
    embedder: Any = None
    judge: Any = None
    skipped: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict:
        out: dict[str, Any] = {}
        if self.nli is not None:
            out["nli"] = {"name": getattr(self.nli, "name", repr(self.nli)), "revision": getattr(self.nli, "revision", None),
                          "dtype": getattr(self.nli, "dtype", None)}
        if self.embedder is not None:
            out["embedder"] = {"name": getattr(self.embedder, "name", repr(self.embedder)), "revision": getattr(self.embedder, "revision", None)}
        if self.judge is not None:
            describe = getattr(self.judge, "describe", None)
            out["judge"] = describe() if callable(describe) else {"name": repr(self.judge)}
        if self.notes:
            out["notes"] = dict(self.notes)
        return out


def _needs(metrics: Iterable[str]) -> dict[str, bool]:
    m = set(metrics)
    return {"nli": "citation_accuracy" in m, "embedder": "soft_heading_recall" in m,
            "judge": bool(m & {"structure_quality", "content_quality"})}


def load_models(config: EvalConfig, metrics: Optional[Iterable[str]] = None, models: Optional[Models] = None) -> Models:
    """Load the models the metrics need; a model that cannot be loaded marks its metrics skipped."""
    from ..models import ModelUnavailable

    models = models or Models()
    wanted = set(metrics if metrics is not None else config.metrics) - set(models.skipped)
    need = _needs(wanted)
    if need["nli"] and models.nli is None:
        try:
            from ..models.nli import load_nli

            models.nli = load_nli(config.nli_model, device=config.device, batch_size=config.nli_batch_size,
                                  dtype=config.nli_dtype)
        except ModelUnavailable as exc:
            models.skipped["citation_accuracy"] = str(exc)
    if need["embedder"] and models.embedder is None:
        try:
            from ..models.embeddings import load_embedder

            models.embedder = load_embedder(config.embed_model, device=config.device)
        except ModelUnavailable as exc:
            models.skipped["soft_heading_recall"] = str(exc)
    if need["judge"] and models.judge is None:
        try:
            from ..models.judge import load_judge

            models.judge = load_judge(base_url=config.judge_base_url, model=config.judge_model,
                                      local=config.judge_local, cache=config.judge_cache)
        except ModelUnavailable as exc:
            for m in ("structure_quality", "content_quality"):
                models.skipped[m] = str(exc)
    return models


# ------------------------------------------------------------------------------------------ files

def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _append_jsonl(path: Path, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def load_records(path: Path) -> dict[str, dict]:
    """Per-survey records of a results.jsonl (later lines update earlier ones; a torn last line is ignored)."""
    records: dict[str, dict] = {}
    if not path.exists():
        return records
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            sid = str(rec.get("survey_id"))
            merged = records.setdefault(sid, {"survey_id": sid, "scores": {}, "details": {}, "done": []})
            merged["scores"].update(rec.get("scores", {}))
            merged["details"].update(rec.get("details", {}))
            merged["done"] = sorted(set(merged["done"]) | set(rec.get("done", [])))
    return records


def nli_cache_id(nli) -> str:
    """What NLI scores depend on besides the pair (model, revision, precision)."""
    return getattr(nli, "cache_id", None) or getattr(nli, "name", "nli")


class NLIScoreCache:
    """NLI probabilities on disk, keyed by a hash of model (with revision and precision) and pair."""

    def __init__(self, path: Optional[Path], model_name: str):
        self.path = path
        self.model = model_name
        self.scores: dict[str, list[float]] = {}
        if path is not None and path.exists():
            with open(path, encoding="utf-8") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                        self.scores[rec["k"]] = rec["p"]
                    except (json.JSONDecodeError, KeyError):
                        continue

    def key(self, pair: tuple[str, str]) -> str:
        h = hashlib.sha1()
        for part in (self.model, pair[0], pair[1]):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
        return h.hexdigest()

    def add(self, keys: list[str], probs: np.ndarray) -> None:
        rows = probs.tolist()
        lines = []
        for k, p in zip(keys, rows):
            self.scores[k] = p
            lines.append(json.dumps({"k": k, "p": p}))
        if self.path is not None and lines:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")


def score_pairs(nli, pairs: Sequence[tuple[str, str]], cache: Optional[NLIScoreCache] = None,
                chunk: int = NLI_CHUNK, progress: bool = True) -> np.ndarray:
    """Probabilities [n, 3] for pairs: distinct pairs once, longest first, in chunks, cached on disk."""
    cache = cache or NLIScoreCache(None, nli_cache_id(nli))
    keys = [cache.key(p) for p in pairs]
    todo: dict[str, tuple[str, str]] = {}
    for k, p in zip(keys, pairs):
        if k not in cache.scores and k not in todo:
            todo[k] = p
    order = sorted(todo, key=lambda k: len(todo[k][0]) + len(todo[k][1]), reverse=True)
    with tqdm(total=len(order), desc="NLI pairs", unit="pair", disable=not progress or not order) as bar:
        for start in range(0, len(order), chunk):
            ks = order[start:start + chunk]
            probs = np.asarray(nli.predict([todo[k] for k in ks]), dtype=np.float64).reshape(len(ks), 3)
            cache.add(ks, probs)
            bar.update(len(ks))
    if not keys:
        return np.zeros((0, 3))
    return np.asarray([cache.scores[k] for k in keys], dtype=np.float64)


# ------------------------------------------------------------------------------------------ the run

@dataclass
class _Pending:
    survey_id: str
    path: Path
    todo: list[str]
    gen: Optional[GeneratedSurvey] = None
    gt: Any = None
    resolutions: Optional[dict[str, Resolution]] = None
    plan: Optional[ca.CitationAccuracyPlan] = None


def _mean(values: list[float]) -> Optional[float]:
    return float(sum(values) / len(values)) if values else None


def aggregate(records: dict[str, dict], keys: Sequence[str] = RESULT_KEYS) -> tuple[dict, dict]:
    """Means over the surveys where each figure is defined, and how many surveys that is."""
    agg: dict[str, Optional[float]] = {}
    counts: dict[str, int] = {}
    for key in keys:
        vals = [r["scores"][key] for r in records.values() if r["scores"].get(key) is not None]
        if any(key in r["scores"] for r in records.values()):
            agg[key] = _mean(vals)
            counts[key] = len(vals)
    return agg, counts


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}" if abs(v) >= 10 else f"{v:.4f}"
    return str(v)


def results_markdown(results: dict) -> str:
    """results.json as a Markdown table (one row per survey, then the mean)."""
    keys = [k for k in RESULT_KEYS if k in results["aggregate"]]
    cfg = results.get("config", {})
    lines = [f"# Evaluation of `{cfg.get('generated_dir', '')}`", "",
             f"mode: `{cfg.get('mode')}` - data: `{cfg.get('data', {}).get('source')}` - surveys: {len(results['surveys'])}", ""]
    lines.append("| survey | " + " | ".join(keys) + " |")
    lines.append("|---|" + "---:|" * len(keys))
    for sid, scores in results["surveys"].items():
        lines.append(f"| {sid} | " + " | ".join(_fmt(scores.get(k)) for k in keys) + " |")
    lines.append("| **mean** | " + " | ".join(f"**{_fmt(results['aggregate'].get(k))}**" for k in keys) + " |")
    if results.get("skipped"):
        lines += ["", "Skipped metrics:", ""] + [f"- {m}: {why}" for m, why in results["skipped"].items()]
    if results.get("errors"):
        lines += ["", "Errors:", ""] + [f"- {sid}: {'; '.join(msgs)}" for sid, msgs in results["errors"].items()]
    return "\n".join(lines) + "\n"


def results_table(results: dict) -> str:
    """A plain-text table of the aggregate (for the terminal)."""
    rows = [(k, _fmt(v), str(results.get("counts", {}).get(k, ""))) for k, v in results["aggregate"].items()]
    rows += [(m, "skipped", "") for m in results.get("skipped", {})]
    w = max((len(r[0]) for r in rows), default=6)
    return "\n".join([f"{'metric':<{w}}  {'mean':>10}  {'n':>4}"] + [f"{a:<{w}}  {b:>10}  {c:>4}" for a, b, c in rows])


def evaluate_dir(
    generated_dir: str | os.PathLike,
    surveys: dict[int, Any],
    corpus,
    out_dir: Optional[str | os.PathLike] = None,
    config: Optional[EvalConfig] = None,
    *,
    models: Optional[Models] = None,
    data_source: Optional[str] = None,
    data_revision: Optional[str] = None,
    progress: bool = True,
    on_survey: Optional[Callable[[str, dict], None]] = None,
) -> dict:
    """Evaluate every generated survey under ``generated_dir`` against the GT ``surveys``.

    Returns the results dict (also written to ``out_dir`` when given). Surveys that cannot be read or
    have no GT survey are listed under ``errors`` and do not stop the run.
    """
    config = config or EvalConfig()
    mode = config.mode
    out = Path(out_dir) if out_dir is not None else None
    records: dict[str, dict] = {}
    jsonl = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        jsonl = out / "results.jsonl"
        records = load_records(jsonl)
        state = out / "run.json"
        if state.exists():
            previous = json.loads(state.read_text(encoding="utf-8"))
            if previous.get("mode") != mode:
                raise ValueError(f"{out} holds results made in mode {previous.get('mode')!r}; use another --out for mode {mode!r}")
        _atomic_write(state, json.dumps({"mode": mode, "generated_dir": str(generated_dir)}, indent=2))

    errors: dict[str, list[str]] = {}
    listing = list_generated_dir(generated_dir)
    if config.limit:
        listing = listing[: config.limit]
    pending: list[_Pending] = []
    for sid, path in listing:
        done = set(records.get(sid, {}).get("done", []))
        todo = [m for m in config.metrics if m not in done]
        if todo:
            pending.append(_Pending(sid, path, todo))

    models = load_models(config, {m for p in pending for m in p.todo}, models) if pending else (models or Models())
    skipped = dict(models.skipped)

    # stage 1: read, find the GT survey, resolve references, plan the NLI pairs
    for p in tqdm(pending, desc="reading", unit="survey", disable=not progress or len(pending) < 2):
        try:
            p.gen = read_generated(p.path, mode=mode, survey_id=p.survey_id)
        except GeneratedReadError as exc:
            errors.setdefault(p.survey_id, []).append(str(exc))
            continue
        try:
            p.gt = surveys[int(p.survey_id)]
        except (KeyError, ValueError):
            errors.setdefault(p.survey_id, []).append(f"{p.path}: no GT survey with id {p.survey_id!r} in the data")
            p.gen = None
            continue
        if {"recall", "citation_accuracy"} & set(p.todo):
            p.resolutions = resolve_references(p.gen, corpus, mode, config.fuzzy_threshold)
        if "citation_accuracy" in p.todo and "citation_accuracy" not in skipped:
            p.plan = ca.plan_citation_accuracy(p.gen, p.gt, corpus, p.resolutions, mode)
    ready = [p for p in pending if p.gen is not None]

    # stage 2: one NLI pass over the distinct pairs of all surveys
    probs_of: dict[str, np.ndarray] = {}
    planned = [p for p in ready if p.plan is not None]
    if planned and models.nli is not None:
        cache = NLIScoreCache(out / "nli_cache.jsonl" if out is not None else None, nli_cache_id(models.nli))
        all_pairs = [pair for p in planned for pair in p.plan.pairs]
        probs = score_pairs(models.nli, all_pairs, cache, progress=progress)
        start = 0
        for p in planned:
            probs_of[p.survey_id] = probs[start:start + len(p.plan.pairs)]
            start += len(p.plan.pairs)

    # stage 3: the remaining metrics, survey by survey, each line written as it finishes
    for p in tqdm(ready, desc="evaluating", unit="survey", disable=not progress):
        scores: dict[str, Any] = {}
        details: dict[str, Any] = {"layout": p.gen.layout, "n_references": len(p.gen.references),
                                   "n_headings": len(p.gen.headings())}
        done: list[str] = []
        if p.gen.warnings:
            details["warnings"] = list(p.gen.warnings)
        for metric in p.todo:
            if metric in skipped:
                continue
            try:
                if metric == "recall":
                    scores["recall"] = recall_from_resolutions(p.gt.all_cites, p.resolutions, mode)
                    details["resolution"] = resolution_summary(p.resolutions)
                elif metric == "citation_accuracy":
                    scores.update(ca.score_plan(p.plan, probs_of.get(p.survey_id, np.zeros((0, 3)))))
                    details["citation_accuracy"] = p.plan.counts()
                elif metric == "soft_heading_recall":
                    from .structure import soft_heading_recall

                    scores["soft_heading_recall"] = _float(soft_heading_recall(p.gt, p.gen, models.embedder, mode))
                elif metric == "structure_quality":
                    from .structure import structure_quality

                    scores["structure_quality"] = _float(structure_quality(p.gt, p.gen, models.judge, mode))
                elif metric == "content_quality":
                    from .content import content_quality

                    scores["content_quality"] = _float(content_quality(p.gen, models.judge, mode))
                elif metric == "rouge_bleu":
                    scores.update(rouge_bleu_survey(p.gt, p.gen))
                done.append(metric)
            except Exception as exc:  # one metric failing on one survey must not stop the run
                log.exception("survey %s, metric %s", p.survey_id, metric)
                errors.setdefault(p.survey_id, []).append(f"{metric}: {type(exc).__name__}: {exc}")
        record = {"survey_id": p.survey_id, "scores": scores, "details": details, "done": done}
        if jsonl is not None:
            _append_jsonl(jsonl, record)
        merged = records.setdefault(p.survey_id, {"survey_id": p.survey_id, "scores": {}, "details": {}, "done": []})
        merged["scores"].update(scores)
        merged["details"].update(details)
        merged["done"] = sorted(set(merged["done"]) | set(done))
        if on_survey is not None:
            on_survey(p.survey_id, scores)

    listed = [sid for sid, _ in listing]
    records = {sid: records[sid] for sid in listed if sid in records}
    agg, counts = aggregate(records)
    results = {
        "aggregate": agg,
        "surveys": {sid: {k: r["scores"][k] for k in RESULT_KEYS if k in r["scores"]} for sid, r in records.items()},
        "details": {sid: r["details"] for sid, r in records.items()},
        "counts": counts,
        "skipped": skipped,
        "errors": errors,
        "config": {
            "mode": mode,
            "metrics": list(config.metrics),
            "models": models.describe(),
            "requested_models": {"nli": config.nli_model, "embedder": config.embed_model,
                                 "judge": {"base_url": config.judge_base_url, "model": config.judge_model, "local": config.judge_local}},
            "data": {"source": data_source, "revision": data_revision},
            "generated_dir": str(generated_dir),
            "package": {"name": "surge-datasets", "version": __version__},
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    }
    if out is not None:
        _atomic_write(out / "results.json", json.dumps(results, indent=2, ensure_ascii=False))
        _atomic_write(out / "results.md", results_markdown(results))
    return results


def _float(v: Any) -> Optional[float]:
    return None if v is None else float(v)
