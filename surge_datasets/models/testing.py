"""Tiny stand-in models for tests: built on the spot, saved like real checkpoints, loaded by the same code.

* :func:`build_tiny_nli` - a 3-label BERT cross-encoder whose ``id2label`` is NOT in the usual
  (contradiction, entailment, neutral) order, so tests prove the order is read from the config;
* :func:`build_tiny_embedder` - a sentence-transformers model (BERT, CLS pooling, L2 normalisation:
  the module layout of the paper's BGE model).

Both use a word-level tokenizer built with ``tokenizers``; nothing is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["TINY_NLI_LABELS", "build_tiny_tokenizer", "build_tiny_nli", "build_tiny_embedder"]

#: label order of the tiny NLI model (deliberately not the usual one)
TINY_NLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}

_WORDS = (
    "the a an of to in and or for on with is are was be by as at from that this it its paper survey section "
    "sentence cited could relevant title abstract there learning deep neural network model models graph data "
    "language retrieval generation text image vision reinforcement agent training method methods approach "
    "evaluation benchmark dataset attention transformer knowledge large small new we propose show results "
    "introduction background related work conclusion future challenges applications overview taxonomy"
).split()


def build_tiny_tokenizer(words: Sequence[str] = _WORDS, max_length: int = 128):
    """A lower-casing word-level BERT-style fast tokenizer ([CLS] a [SEP] b [SEP])."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {tok: i for i, tok in enumerate(specials + sorted(set(w.lower() for w in words)))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase(), normalizers.StripAccents()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=max_length)


def _tiny_bert_config(vocab_size: int, **extra):
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=128, type_vocab_size=2, **extra)


def build_tiny_nli(folder: str | os.PathLike, id2label: Optional[dict[int, str]] = None,
                   logit_bias: Optional[Sequence[float]] = None, seed: int = 0) -> str:
    """Save a tiny random 3-label NLI cross-encoder into ``folder``; returns the folder path.

    ``logit_bias`` (one value per model output id) replaces the classifier so its logits equal the
    bias for every input - a model with a known answer, e.g. ``[3, 0, 0]`` always picks id 0.
    """
    import torch
    from transformers import BertForSequenceClassification

    id2label = dict(id2label or TINY_NLI_LABELS)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_tokenizer()
    config = _tiny_bert_config(len(tokenizer), num_labels=len(id2label), id2label=id2label,
                               label2id={v: k for k, v in id2label.items()})
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    if logit_bias is not None:
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.copy_(torch.tensor(list(logit_bias), dtype=model.classifier.bias.dtype))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def build_tiny_embedder(folder: str | os.PathLike, seed: int = 0) -> str:
    """Save a tiny random sentence-transformers model (BERT + CLS pooling + Normalize); returns the path."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import BertModel

    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer import modules as models
    except ImportError:  # pragma: no cover - older releases
        from sentence_transformers import models

    folder = Path(folder)
    hf_dir = folder.parent / (folder.name + ".hf")
    tokenizer = build_tiny_tokenizer()
    torch.manual_seed(seed)
    BertModel(_tiny_bert_config(len(tokenizer))).save_pretrained(hf_dir)
    tokenizer.save_pretrained(hf_dir)
    transformer = models.Transformer(str(hf_dir), max_seq_length=128)
    dim = (getattr(transformer, "get_embedding_dimension", None) or transformer.get_word_embedding_dimension)()
    pooling = models.Pooling(dim, pooling_mode="cls")
    st = SentenceTransformer(modules=[transformer, pooling, models.Normalize()], device="cpu")
    st.save(str(folder))
    return str(folder)
