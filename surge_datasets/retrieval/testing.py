"""Retrievers built locally, for tests and the offline demo: no download, seconds on a CPU.

:func:`build_tiny_roberta` trains a byte-level BPE tokenizer on the given texts (``tokenizers``) and
writes a randomly initialised RoBERTa of a few thousand parameters with it, laid out like a Hub
checkpoint, so every code path that takes ``roberta-base`` takes this folder too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from .dense_model import DualEncoder, RetrieverConfig

SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def build_tiny_roberta(
    folder: str | os.PathLike,
    texts: Iterable[str],
    *,
    vocab_size: int = 400,
    hidden_size: int = 32,
    layers: int = 2,
    heads: int = 2,
    max_length: int = 128,
    seed: int = 0,
) -> Path:
    """Write a tiny RoBERTa retriever (weights, tokenizer, retriever settings) to ``folder``."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from tokenizers.processors import RobertaProcessing
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(list(texts), vocab_size=vocab_size, min_frequency=1, special_tokens=SPECIAL_TOKENS, show_progress=False)
    bpe.post_processor = RobertaProcessing(("</s>", bpe.token_to_id("</s>")), ("<s>", bpe.token_to_id("<s>")))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>", eos_token="</s>", cls_token="<s>", sep_token="</s>",
        pad_token="<pad>", unk_token="<unk>", mask_token="<mask>",
        model_max_length=max_length,
    )
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=hidden_size * 2,
        max_position_embeddings=max_length + 2,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(seed)
    encoder = RobertaModel(config, add_pooling_layer=False)
    model = DualEncoder(encoder, RetrieverConfig(pooling="cls", query_max_length=32, doc_max_length=max_length))
    model.save_pretrained(folder, tokenizer)
    return folder


# ------------------------------------------------------------------------------------ toy benchmark

_TOPIC_WORDS = {
    "graph": "graph node edge vertex neighbor message walk spectral",
    "vision": "image pixel convolution camera detection segmentation object scene",
    "speech": "speech audio acoustic phoneme speaker voice spectrogram prosody",
    "robot": "robot grasp manipulation motion arm control locomotion gripper",
    "protein": "protein molecule fold residue enzyme ligand binding sequence",
    "market": "market price trading stock portfolio asset finance volatility",
}
_COMMON = "method approach result study propose novel paper performance evaluation framework".split()


def build_toy_benchmark(folder: str | os.PathLike, *, docs_per_topic: int = 10, seed: int = 0) -> dict[str, Path]:
    """A small benchmark with clustered topics: ``corpus/``, ``surveys/`` and ``queries/`` dataset folders.

    Each topic has ``docs_per_topic`` papers written from its own words; its GT survey cites all but the
    last two of them, and it has two queries, one in each split. Returns the three folders.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..corpus import Corpus
    from ..schemas import CorpusDoc, PrefixTitle, Query, Survey, arrow_schema, to_row

    folder = Path(folder)
    rng = np.random.default_rng(seed)
    docs, surveys, queries = [], [], []
    for t, (topic, words) in enumerate(_TOPIC_WORDS.items()):
        words = words.split()
        ids = []
        for j in range(docs_per_topic):
            doc_id = 1000 + t * 100 + j
            title = " ".join(rng.choice(words, 4))
            abstract = " ".join(rng.choice(words, 12).tolist() + rng.choice(_COMMON, 5).tolist())
            docs.append(CorpusDoc(doc_id=doc_id, title=title.capitalize(), abstract=abstract.capitalize() + "."))
            ids.append(doc_id)
        cited = ids[:-2]
        surveys.append(Survey(survey_id=t, title=f"A survey of {topic} {words[1]} and {words[2]} methods", all_cites=cited))
        for split, (q_words, cites) in zip(("train", "test"), ((words[3:5], cited[:4]), (words[5:7], cited[4:]))):
            qid = 2 * t + (split == "test")
            text = f"What are the {q_words[0]} and {q_words[1]} methods in {topic}?"
            queries.append(Query(query_id=qid, original_id=f"{t}-{qid}", survey_id=t, prefix_titles=[PrefixTitle(level="title", title=topic)],
                                 prefix_titles_query=text, cites=cites, split=split))
    Corpus.from_docs(docs, folder / "corpus")
    for name, model, rows in (("surveys", Survey, surveys), ("queries", Query, queries)):
        (folder / name / "data").mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pylist([to_row(r) for r in rows], schema=arrow_schema(model))
        pq.write_table(table, folder / name / "data" / "train-00000-of-00001.parquet")
    return {name: folder / name for name in ("corpus", "surveys", "queries")}
