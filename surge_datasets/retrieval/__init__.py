"""Retrieval for SurGE: BM25 and the paper's dense dual encoder, run files and Recall@k.

Modules: :mod:`.bm25` (bm25s index, memory-mapped search), :mod:`.dense_model` (shared-encoder dual
encoder, [CLS] pooling, dot product), :mod:`.train` (contrastive training with Accelerate),
:mod:`.encode` (sharded, resumable corpus encoding and faiss indexes), :mod:`.search` (run files),
:mod:`.recall` (Recall@k as in the paper's Table 3), :mod:`.topics` (topics and qrels).
Heavy dependencies (torch, faiss, bm25s) load only when the module that needs them is imported.
"""

PAPER_MODEL = "FacebookAI/roberta-base"  # the paper's starting checkpoint (roberta-base)

from .recall import PAPER_KS, RecallReport, evaluate_run, load_qrels, recall_at_k
from .search import Run, read_run, retrieve, write_run, open_index
from .topics import Topic, load_topics

__all__ = [
    "PAPER_KS", "PAPER_MODEL", "RecallReport", "Run", "Topic", "evaluate_run", "load_qrels", "load_topics", "open_index",
    "read_run", "recall_at_k", "retrieve", "write_run",
]
