"""Models the metrics run: an NLI cross-encoder, a heading embedder and LLM judges.

Each kind lives in its own module (:mod:`.nli`, :mod:`.embeddings`, :mod:`.judge`); this package
only holds what they share: the error raised when a model cannot be loaded, and the check for
offline mode.
"""

from __future__ import annotations

import os

__all__ = ["ModelUnavailable", "hub_offline"]

_TRUE = {"1", "ON", "YES", "TRUE"}


class ModelUnavailable(Exception):
    """A model could not be loaded. The message names the model and says how to get it.

    Metrics that need the model are reported as skipped (never as 0) when this is raised.
    """

    def __init__(self, model: str, reason: str, how_to_get: str | None = None):
        self.model, self.reason = model, reason
        self.how_to_get = how_to_get or (
            f"download it once where the Hugging Face Hub is reachable (`hf download {model}`), "
            "or pass the path of a local copy"
        )
        super().__init__(f"model {model!r} is not available: {reason}. To get it: {self.how_to_get}.")


def hub_offline() -> bool:
    """True when the Hugging Face Hub must not be contacted (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE).

    Read at call time, so a value set after ``huggingface_hub`` was imported is still honoured.
    """
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").upper() in _TRUE:
            return True
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except Exception:  # pragma: no cover - huggingface_hub always present in practice
        return False


def is_local_path(name_or_path: str) -> bool:
    return os.path.isdir(os.path.expanduser(str(name_or_path)))


def cached_revision(repo_id: str, revision: str | None = None) -> str | None:
    """Commit hash of a Hub model already in the local cache (no network), or None."""
    try:
        from huggingface_hub import snapshot_download

        path = snapshot_download(repo_id, revision=revision, local_files_only=True)
    except Exception:
        return None
    return os.path.basename(os.path.normpath(path))
