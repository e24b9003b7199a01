"""NLI cross-encoder for citation accuracy, through sentence-transformers' ``CrossEncoder``.

The label order is read from the model's config (``id2label``) and the output columns are always
returned as (contradiction, entailment, neutral), whatever order the checkpoint uses. Pairs are
de-duplicated, sorted by length and batched across all surveys; on CUDA the forward pass runs
under fp16/bf16 autocast.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Optional, Sequence

import numpy as np
from tqdm.auto import tqdm

from . import ModelUnavailable, cached_revision, hub_offline, is_local_path

__all__ = ["PAPER_NLI_MODEL", "LABELS", "NLIModel", "load_nli", "label_columns"]

log = logging.getLogger(__name__)

PAPER_NLI_MODEL = "cross-encoder/nli-deberta-v3-base"
#: column order of :meth:`NLIModel.predict`
LABELS = ("contradiction", "entailment", "neutral")

# chunks handed to CrossEncoder.predict at once; the progress bar advances per chunk
_CHUNK_BATCHES = 8


def label_columns(id2label: dict) -> list[int]:
    """Model output column of each of :data:`LABELS`, read from a config's ``id2label``.

    Raises ValueError when a label cannot be found (e.g. generic ``LABEL_0`` names).
    """
    found: dict[str, int] = {}
    for idx, name in id2label.items():
        key = str(name).strip().lower()
        for label in LABELS:
            if key == label or key.startswith(label[:5]):
                if label in found:
                    raise ValueError(f"label {label!r} appears twice in id2label {id2label}")
                found[label] = int(idx)
    missing = [label for label in LABELS if label not in found]
    if missing:
        raise ValueError(f"id2label {id2label} does not name the NLI labels {missing}")
    return [found[label] for label in LABELS]


class NLIModel:
    """A loaded NLI cross-encoder. ``predict`` returns probabilities in :data:`LABELS` order."""

    def __init__(self, cross_encoder, name: str, revision: Optional[str] = None, batch_size: int = 32,
                 show_progress: bool = True):
        self.cross_encoder = cross_encoder
        self.name = name
        self.revision = revision
        self.batch_size = batch_size
        self.show_progress = show_progress
        config = cross_encoder.model.config
        try:
            self.columns = label_columns(dict(config.id2label))
        except ValueError as exc:
            raise ModelUnavailable(name, f"it is not a 3-way NLI classifier ({exc})",
                                   "use an NLI cross-encoder such as cross-encoder/nli-deberta-v3-base") from None
        self.pairs_scored = 0  # distinct pairs sent to the model, over the object's life

    @property
    def device(self) -> str:
        return str(self.cross_encoder.device)

    def _autocast(self):
        import torch

        if self.device.startswith("cuda"):
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
            return torch.autocast("cuda", dtype=dtype)
        return contextlib.nullcontext()

    def predict(self, pairs: Sequence[tuple[str, str]], *, desc: str = "NLI") -> np.ndarray:
        """Class probabilities, shape [n, 3], columns (contradiction, entailment, neutral).

        Each pair is (premise, hypothesis), passed to the model in that order. Identical pairs are
        scored once; pairs are sorted by length so batches hold texts of similar size.
        """
        pairs = [(str(a), str(b)) for a, b in pairs]
        if not pairs:
            return np.zeros((0, 3), dtype=np.float32)
        index: dict[tuple[str, str], int] = {}
        for pair in pairs:
            index.setdefault(pair, len(index))
        unique = list(index)
        order = sorted(range(len(unique)), key=lambda i: len(unique[i][0]) + len(unique[i][1]), reverse=True)
        probs = np.zeros((len(unique), 3), dtype=np.float32)
        chunk = self.batch_size * _CHUNK_BATCHES
        with tqdm(total=len(unique), desc=desc, unit="pair", disable=not self.show_progress or len(unique) < chunk,
                  leave=False) as bar, self._autocast():
            for start in range(0, len(order), chunk):
                ids = order[start:start + chunk]
                scores = self.cross_encoder.predict([unique[i] for i in ids], batch_size=self.batch_size,
                                                    apply_softmax=True, show_progress_bar=False,
                                                    convert_to_numpy=True)
                scores = np.asarray(scores, dtype=np.float32).reshape(len(ids), -1)
                probs[ids] = scores[:, self.columns]
                bar.update(len(ids))
        self.pairs_scored += len(unique)
        return probs[[index[p] for p in pairs]]

    def __repr__(self) -> str:
        return f"NLIModel({self.name!r}, revision={self.revision!r}, device={self.device!r})"


def load_nli(name_or_path: str = PAPER_NLI_MODEL, device: Optional[str] = None, batch_size: int = 32,
             revision: Optional[str] = None, show_progress: bool = True) -> NLIModel:
    """Load an NLI cross-encoder (a Hub id or a local folder saved with ``save_pretrained``).

    Honours HF_HUB_OFFLINE: offline, only local folders and models already in the Hub cache load.
    Raises :class:`~surge_datasets.models.ModelUnavailable` naming the model when it cannot be loaded.
    """
    from sentence_transformers import CrossEncoder

    name = str(name_or_path)
    local = is_local_path(name)
    offline = hub_offline()
    try:
        ce = CrossEncoder(name, device=device, revision=None if local else revision,
                          local_files_only=offline and not local)
    except Exception as exc:  # OSError, ValueError, connection errors ... all mean "cannot load"
        reason = "the Hub is offline (HF_HUB_OFFLINE) and it is not in the local cache" if offline and not local \
            else f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise ModelUnavailable(name, reason) from exc
    rev = None if local else (cached_revision(name, revision) or revision)
    model = NLIModel(ce, name, revision=rev, batch_size=batch_size, show_progress=show_progress)
    log.info("loaded NLI model %s (labels at columns %s) on %s", name, model.columns, model.device)
    return model
