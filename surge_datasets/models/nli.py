"""NLI cross-encoder for citation accuracy, through sentence-transformers' ``CrossEncoder``.

The label order is read from the model's config (``id2label``) and the output columns are always
returned as (contradiction, entailment, neutral), whatever order the checkpoint uses. Pairs are
de-duplicated, sorted by length and batched across all surveys.

Precision (``dtype``): ``"auto"`` runs the forward pass under bf16 autocast on CUDA GPUs that support
it (fp16 on older ones) and on CPUs with native bf16 instructions (AVX512-BF16 or AMX), and in float32
everywhere else; ``"float32"`` always gives the full-precision scores of the paper's code. The NLI
stage is compute-bound, so reduced precision is where most of the speed on a CPU comes from
(benchmarks/bench_nli.py measures both, and how often the label decisions agree).
"""

from __future__ import annotations

import contextlib
import logging
import platform
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np
from tqdm.auto import tqdm

from . import ModelUnavailable, cached_revision, hub_offline, is_local_path

__all__ = ["PAPER_NLI_MODEL", "LABELS", "DTYPES", "NLIModel", "load_nli", "label_columns", "resolve_dtype",
           "check_dtype", "cpu_has_native_bf16", "cpuinfo_has_bf16", "DEFAULT_BATCH_SIZE"]

log = logging.getLogger(__name__)

PAPER_NLI_MODEL = "cross-encoder/nli-deberta-v3-base"
#: column order of :meth:`NLIModel.predict`
LABELS = ("contradiction", "entailment", "neutral")

#: accepted values of ``dtype``
DTYPES = ("auto", "float32", "bfloat16", "float16")

#: default batch sizes: on a CPU small batches run faster per pair (measured: 8 beats 16 and 32 for
#: DeBERTa-v3- and MiniLM-shaped cross-encoders); on a GPU larger sorted batches keep it busy
DEFAULT_BATCH_SIZE = {"cpu": 8, "cuda": 64}

# chunks handed to CrossEncoder.predict at once; the progress bar advances per chunk
_CHUNK_BATCHES = 8


def cpuinfo_has_bf16(cpuinfo: str) -> bool:
    """Whether a /proc/cpuinfo text lists native bf16 (x86 ``avx512_bf16``/``amx_bf16``, ARM ``bf16``)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            return bool(set(value.split()) & {"avx512_bf16", "amx_bf16", "bf16"})
    return False


@lru_cache(maxsize=1)
def cpu_has_native_bf16() -> bool:
    """True when this CPU computes bf16 natively, read from /proc/cpuinfo on Linux; False where that
    cannot be told (bf16 would then be emulated, and slower than float32)."""
    if platform.system() != "Linux":
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return cpuinfo_has_bf16(f.read())
    except OSError:
        return False


def check_dtype(dtype: str, what: str = "NLI dtype") -> str:
    """``dtype`` itself when it is one of :data:`DTYPES`; a ValueError naming ``what`` and the choices otherwise."""
    if dtype not in DTYPES:
        raise ValueError(f"{what} must be one of {', '.join(DTYPES)}, not {dtype!r}")
    return dtype


def resolve_dtype(dtype: str, device: str) -> str:
    """The precision ``dtype`` means on ``device``: one of float32, bfloat16, float16."""
    if check_dtype(dtype) != "auto":
        return dtype
    if device.startswith("cuda"):
        import torch

        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    if device == "cpu" and cpu_has_native_bf16():
        return "bfloat16"
    return "float32"


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

    def __init__(self, cross_encoder, name: str, revision: Optional[str] = None, batch_size: Optional[int] = None,
                 show_progress: bool = True, dtype: str = "auto"):
        self.cross_encoder = cross_encoder
        self.name = name
        self.revision = revision
        device_type = str(cross_encoder.device).split(":")[0]
        self.batch_size = int(batch_size or DEFAULT_BATCH_SIZE.get(device_type, 32))
        self.show_progress = show_progress
        self.dtype = resolve_dtype(dtype, str(cross_encoder.device))
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

    @property
    def cache_id(self) -> str:
        """What scores depend on besides the pair: model, revision and precision."""
        return f"{self.name}@{self.revision or ''}:{self.dtype}"

    def _autocast(self):
        import torch

        if self.dtype == "float32":
            return contextlib.nullcontext()
        return torch.autocast(self.device.split(":")[0], dtype=getattr(torch, self.dtype))

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
        return f"NLIModel({self.name!r}, revision={self.revision!r}, device={self.device!r}, dtype={self.dtype!r})"


def load_nli(name_or_path: str = PAPER_NLI_MODEL, device: Optional[str] = None, batch_size: Optional[int] = None,
             revision: Optional[str] = None, show_progress: bool = True, dtype: str = "auto") -> NLIModel:
    """Load an NLI cross-encoder (a Hub id or a local folder saved with ``save_pretrained``).

    ``dtype``: one of :data:`DTYPES` (see the module docs); ``"float32"`` reproduces the paper's
    full-precision scores exactly. ``batch_size``: default :data:`DEFAULT_BATCH_SIZE` for the device.

    Honours HF_HUB_OFFLINE: offline, only local folders and models already in the Hub cache load.
    Raises :class:`~surge_datasets.models.ModelUnavailable` naming the model when it cannot be loaded.
    """
    from sentence_transformers import CrossEncoder

    check_dtype(dtype)  # before the (slow) load
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
    model = NLIModel(ce, name, revision=rev, batch_size=batch_size, show_progress=show_progress, dtype=dtype)
    log.info("loaded NLI model %s (labels at columns %s) on %s in %s", name, model.columns, model.device, model.dtype)
    return model
