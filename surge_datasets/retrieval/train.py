"""Training the dual encoder as in the paper (§5.1).

Training pairs are ``(query text, cited doc_id)``: every query of the ``train`` split
(``prefix_titles_query`` -> each of its ``cites``) and, as the paper does, every GT survey
(title -> each of its ``all_cites``). Each pair is scored against ``negatives`` documents drawn uniformly
at random from the corpus (never one of the query's own positives); the loss is the softmax cross-entropy
of the positive among them. With ``in_batch_negatives`` every document of the batch (other pairs'
positives and negatives) is a candidate too. AdamW, lr 5e-6, 10 epochs, fp16 on GPU.

Note that the GT surveys are also the topics of the paper's Table 3; training on topic -> citations and
then evaluating on the same topics is what the paper did. ``with_topics=False`` trains on queries only.

Distribution is 🤗 Accelerate's: ``accelerate launch -m surge_datasets.retrieval.train ...`` runs the same
code on several GPUs or nodes (data parallel). Checkpoints are ``Accelerator.save_state`` folders under
``<out>/checkpoints``; a rerun with the same ``out`` resumes from the newest one, at the same batch, with
the same negatives (the order and the negatives of every epoch derive from the seed alone).
"""

from __future__ import annotations

import math
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, Optional

import numpy as np
import torch

from .dense_model import PAPER_MODEL, DualEncoder, RetrieverConfig, load_tokenizer
from .documents import DocTexts, open_corpus
from .storage import read_json, write_json

TRAINER_STATE = "trainer_state.json"


@dataclass
class TrainConfig:
    queries: str
    corpus: str
    out: str
    model: str = PAPER_MODEL
    surveys: Optional[str] = None
    with_topics: bool = True
    epochs: int = 10
    lr: float = 5e-6
    weight_decay: float = 0.01
    batch_size: int = 16
    negatives: int = 7
    in_batch_negatives: bool = False
    query_max_length: int = 64
    doc_max_length: int = 256
    mixed_precision: Literal["auto", "no", "fp16", "bf16"] = "auto"
    gradient_accumulation_steps: int = 1
    seed: int = 42
    checkpoint_every: int = 0  # optimizer steps; 0 = at the end of each epoch
    keep_checkpoints: int = 1
    max_steps: Optional[int] = None  # stop early (smoke tests, benchmarks)
    log_every: int = 10
    progress: bool = True


@dataclass
class TrainResult:
    out: str
    steps: int
    epochs_done: float
    losses: list[float] = field(default_factory=list)
    pairs: int = 0
    resumed_from: Optional[str] = None
    seconds: float = 0.0


# ------------------------------------------------------------------------------------------ data

@dataclass(frozen=True)
class Pair:
    text: str
    positive: int
    group: int  # index of the query/topic, whose positives are never negatives


def training_pairs(
    queries_source: str,
    corpus_ids: set[int] | None = None,
    *,
    surveys_source: Optional[str] = None,
    with_topics: bool = True,
) -> tuple[list[Pair], list[frozenset[int]]]:
    """Pairs from the train split of the queries (and the GT surveys' titles), plus each group's positives.

    Citations missing from the corpus are dropped, as are texts left with no positive.
    """
    from .topics import load_topics

    groups: list[tuple[str, tuple[int, ...]]] = []
    for t in load_topics(queries_source, "queries", split="train"):
        groups.append((t.text, t.relevant))
    if with_topics:
        source = surveys_source or _surveys_next_to(queries_source)
        if source is None:
            raise FileNotFoundError(
                f"{queries_source}: no GT surveys found next to the queries; pass the surveys or train without topics"
            )
        for t in load_topics(source, "surveys"):
            groups.append((t.text, t.relevant))
    pairs: list[Pair] = []
    positives: list[frozenset[int]] = []
    for text, relevant in groups:
        rel = [d for d in relevant if corpus_ids is None or d in corpus_ids]
        if not text.strip() or not rel:
            continue
        g = len(positives)
        positives.append(frozenset(rel))
        pairs.extend(Pair(text, d, g) for d in rel)
    return pairs, positives


def _surveys_next_to(queries_source: str) -> Optional[str]:
    path = Path(queries_source)
    for candidate in (path / "surveys", path.parent / "surveys", path.with_name("surveys.json")):
        if candidate.exists():
            return str(candidate)
    return None


class PairDataset(torch.utils.data.Dataset):
    """Pairs in the order of one epoch: a permutation derived from (seed, epoch)."""

    def __init__(self, pairs: list[Pair], seed: int):
        self.pairs = pairs
        self.seed = seed
        self.order = np.arange(len(pairs))

    def use_epoch(self, epoch: int) -> None:
        # not named set_epoch: Accelerate's data loader calls dataset.set_epoch(<its own iteration count>)
        self.order = np.random.default_rng([self.seed, epoch]).permutation(len(self.pairs))
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: int) -> int:
        return int(self.order[i])


class PairCollator:
    """Turns pair indices into tokenized queries and documents ``[positive, negatives...]`` per pair."""

    def __init__(self, pairs, positives, doc_texts: DocTexts, tokenizer, *, negatives: int, seed: int,
                 query_max_length: int, doc_max_length: int):
        self.pairs, self.positives, self.doc_texts = pairs, positives, doc_texts
        self.tokenizer, self.negatives, self.seed = tokenizer, negatives, seed
        self.query_max_length, self.doc_max_length = query_max_length, doc_max_length
        self.epoch = 0

    def sample_negatives(self, pair_index: int) -> list[int]:
        pair = self.pairs[pair_index]
        rng = np.random.default_rng([self.seed, self.epoch, pair_index, 1])
        taken = self.positives[pair.group]
        ids = self.doc_texts.ids
        out: list[int] = []
        for _ in range(100):
            for row in rng.integers(0, len(ids), size=self.negatives * 2):
                d = int(ids[row])
                if d not in taken and d not in out:
                    out.append(d)
                    if len(out) == self.negatives:
                        return out
        raise ValueError("the corpus is too small to draw the requested number of negatives")

    def __call__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        queries = [self.pairs[i].text for i in indices]
        docs: list[int] = []
        for i in indices:
            docs.append(self.pairs[i].positive)
            docs.extend(self.sample_negatives(i))
        q = self.tokenizer(queries, padding=True, truncation=True, max_length=self.query_max_length, return_tensors="pt")
        d = self.tokenizer(self.doc_texts.texts(docs), padding=True, truncation=True, max_length=self.doc_max_length, return_tensors="pt")
        return {"q_ids": q["input_ids"], "q_mask": q["attention_mask"], "d_ids": d["input_ids"], "d_mask": d["attention_mask"]}


def contrastive_loss(model: DualEncoder, batch: dict[str, torch.Tensor], *, in_batch_negatives: bool = False) -> torch.Tensor:
    """Cross-entropy of each query's positive among its candidates (dot-product scores)."""
    q = model(batch["q_ids"], batch["q_mask"])
    d = model(batch["d_ids"], batch["d_mask"])
    n_q = q.shape[0]
    group = d.shape[0] // n_q
    if in_batch_negatives:
        scores = q @ d.T
        labels = torch.arange(n_q, device=q.device) * group
    else:
        scores = torch.einsum("qh,qgh->qg", q, d.view(n_q, group, -1))
        labels = torch.zeros(n_q, dtype=torch.long, device=q.device)
    return torch.nn.functional.cross_entropy(scores.float(), labels)


# ------------------------------------------------------------------------------------------ training

def _latest_checkpoint(folder: Path) -> Optional[Path]:
    done = [p for p in folder.glob("step-*") if (p / TRAINER_STATE).is_file()]
    return max(done, key=lambda p: int(p.name.split("-")[1]), default=None)


def train(config: TrainConfig) -> TrainResult:
    """Train (or resume training) a dual encoder; the model is saved to ``config.out``."""
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from tqdm.auto import tqdm

    started = time.perf_counter()
    mixed = config.mixed_precision
    if mixed == "auto":
        mixed = "fp16" if torch.cuda.is_available() else "no"
    accelerator = Accelerator(mixed_precision=mixed, gradient_accumulation_steps=config.gradient_accumulation_steps)
    set_seed(config.seed)
    out = Path(config.out)
    ckpt_root = out / "checkpoints"

    corpus = open_corpus(config.corpus)
    doc_texts = DocTexts(corpus)
    pairs, positives = training_pairs(config.queries, set(doc_texts.ids.tolist()),
                                      surveys_source=config.surveys, with_topics=config.with_topics)
    if not pairs:
        raise ValueError(f"{config.queries}: no training pairs (no train-split query cites a corpus document)")

    tokenizer = load_tokenizer(config.model)
    base = RetrieverConfig.for_checkpoint(config.model) if Path(config.model).is_dir() else RetrieverConfig()
    retriever_config = RetrieverConfig(pooling=base.pooling, normalize=base.normalize,
                                       query_max_length=config.query_max_length, doc_max_length=config.doc_max_length)
    model = DualEncoder.from_pretrained(config.model, retriever_config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    dataset = PairDataset(pairs, config.seed)
    collator = PairCollator(pairs, positives, doc_texts, tokenizer, negatives=config.negatives, seed=config.seed,
                            query_max_length=config.query_max_length, doc_max_length=config.doc_max_length)
    loader = torch.utils.data.DataLoader(dataset, batch_size=config.batch_size, shuffle=False, collate_fn=collator, drop_last=False)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    state = {"epoch": 0, "batch_in_epoch": 0, "global_step": 0, "losses": []}
    resumed_from = None
    latest = _latest_checkpoint(ckpt_root) if ckpt_root.is_dir() else None
    if latest is not None:
        accelerator.load_state(str(latest))
        state = read_json(latest / TRAINER_STATE)
        resumed_from = str(latest)

    steps_per_epoch = math.ceil(len(loader) / config.gradient_accumulation_steps)
    total_steps = steps_per_epoch * config.epochs
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    if accelerator.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "train_config.json", {**asdict(config), "pairs": len(pairs), "groups": len(positives),
                                               "processes": accelerator.num_processes, "mixed_precision": mixed})

    def checkpoint() -> None:
        folder = ckpt_root / f"step-{state['global_step']:08d}"
        accelerator.save_state(str(folder))
        if accelerator.is_main_process:
            write_json(folder / TRAINER_STATE, state)  # written last: marks the checkpoint complete
            done = sorted((p for p in ckpt_root.glob("step-*") if p != folder), key=lambda p: p.name)
            for old in done[: max(0, len(done) - config.keep_checkpoints + 1)]:
                shutil.rmtree(old, ignore_errors=True)
        accelerator.wait_for_everyone()

    bar = tqdm(total=total_steps, initial=state["global_step"], desc="train retriever", unit="step",
               disable=not (config.progress and accelerator.is_local_main_process))
    model.train()
    window: list[float] = []
    checkpointed_at = state["global_step"] if resumed_from else -1
    while state["epoch"] < config.epochs and state["global_step"] < total_steps:
        dataset.use_epoch(state["epoch"])
        collator.epoch = state["epoch"]
        batches = accelerator.skip_first_batches(loader, state["batch_in_epoch"]) if state["batch_in_epoch"] else loader
        for batch in batches:
            with accelerator.accumulate(model):
                loss = contrastive_loss(model, batch, in_batch_negatives=config.in_batch_negatives)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            state["batch_in_epoch"] += 1
            window.append(accelerator.gather(loss.detach().float().reshape(1)).mean().item())
            if not accelerator.sync_gradients:
                continue
            state["global_step"] += 1
            state["losses"].append(round(float(np.mean(window)), 6))
            window.clear()
            bar.update(1)
            if state["global_step"] % max(1, config.log_every) == 0:
                bar.set_postfix(loss=f"{np.mean(state['losses'][-config.log_every:]):.4f}")
            if state["batch_in_epoch"] >= len(loader):  # epoch complete
                state["epoch"] += 1
                state["batch_in_epoch"] = 0
            if (config.checkpoint_every and state["global_step"] % config.checkpoint_every == 0) or (
                not config.checkpoint_every and state["batch_in_epoch"] == 0
            ):
                checkpoint()
                checkpointed_at = state["global_step"]
            if state["global_step"] >= total_steps:
                break
    bar.close()
    if checkpointed_at != state["global_step"]:
        checkpoint()  # a run stopped by max_steps resumes from here

    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        unwrapped = accelerator.unwrap_model(model)
        unwrapped.save_pretrained(out, tokenizer)
        write_json(out / "train_log.json", {"losses": state["losses"], "global_step": state["global_step"],
                                            "epochs": state["epoch"], "resumed_from": resumed_from})
    accelerator.wait_for_everyone()
    return TrainResult(out=str(out), steps=state["global_step"], epochs_done=state["epoch"], losses=list(state["losses"]),
                       pairs=len(pairs), resumed_from=resumed_from, seconds=round(time.perf_counter() - started, 2))


def main(argv: list[str] | None = None) -> None:
    """``python -m surge_datasets.retrieval.train`` (also under ``accelerate launch -m``): same options as
    ``surge train-retriever``."""
    from ..cli.retrieval import train_retriever

    train_retriever.main(args=argv, prog_name="python -m surge_datasets.retrieval.train")


if __name__ == "__main__":
    main()
