"""Dense-retriever throughput on a GPU: corpus encoding docs/s and training step time, fp32/fp16/bf16.

    python benchmarks/gpu_retrieval.py                      # roberta-base shape, on the GPU
    python benchmarks/gpu_retrieval.py --tiny --device cpu  # dry run (seconds, any machine)

The model has roberta-base's shape (RobertaConfig defaults: 12 layers, 768 hidden, 125M parameters) with
random weights, fed random token ids of the paper's lengths, so nothing is downloaded and the cost is that
of the real model. Encoding: documents of --doc-len tokens through DualEncoder.encode under
torch.inference_mode. Training: the package's contrastive_loss on --batch queries x (1 + --negatives)
documents, AdamW step, with autocast + GradScaler for fp16. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from surge_datasets.retrieval.dense_model import DualEncoder, RetrieverConfig  # noqa: E402
from surge_datasets.retrieval.train import contrastive_loss  # noqa: E402


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_model(tiny: bool, device: torch.device) -> DualEncoder:
    from transformers import RobertaConfig, RobertaModel

    config = RobertaConfig(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1, pad_token_id=1)
    if tiny:
        config = RobertaConfig(vocab_size=1000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=514, pad_token_id=1)
    torch.manual_seed(0)
    return DualEncoder(RobertaModel(config, add_pooling_layer=False), RetrieverConfig()).to(device)


def tokens(n: int, length: int, vocab: int, device: torch.device):
    ids = torch.randint(5, vocab, (n, length), device=device)
    ids[:, 0] = 0
    return ids, torch.ones_like(ids)


def bench_encode(model, dtype, args, device) -> dict:
    model.eval()
    vocab = model.encoder.config.vocab_size
    ids, mask = tokens(args.encode_batch, args.doc_len, vocab, device)
    autocast = torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32)
    with torch.inference_mode(), autocast:
        for _ in range(args.warmup):
            model.encode(ids, mask)
        _sync(device)
        t = time.perf_counter()
        for _ in range(args.encode_steps):
            model.encode(ids, mask)
        _sync(device)
    seconds = time.perf_counter() - t
    docs = args.encode_batch * args.encode_steps
    return {"docs_per_second": round(docs / seconds, 1),
            "corpus_hours_1086992": round(1_086_992 / (docs / seconds) / 3600, 3)}


def bench_train(model, dtype, args, device) -> dict:
    model.train()
    vocab = model.encoder.config.vocab_size
    group = 1 + args.negatives
    q_ids, q_mask = tokens(args.batch, args.query_len, vocab, device)
    d_ids, d_mask = tokens(args.batch * group, args.doc_len, vocab, device)
    batch = {"q_ids": q_ids, "q_mask": q_mask, "d_ids": d_ids, "d_mask": d_mask}
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-6)
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
    times = []
    for step in range(args.warmup + args.train_steps):
        _sync(device)
        t = time.perf_counter()
        with torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
            loss = contrastive_loss(model, batch)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        _sync(device)
        if step >= args.warmup:
            times.append(time.perf_counter() - t)
    step_s = sum(times) / len(times)
    out = {"step_seconds": round(step_s, 4), "pairs_per_second": round(args.batch / step_s, 1), "loss": round(loss.item(), 4)}
    if device.type == "cuda":
        out["max_memory_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
        torch.cuda.reset_peak_memory_stats(device)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tiny", action="store_true", help="Tiny model and sizes: a dry run that works on a CPU.")
    ap.add_argument("--dtypes", default="float32,float16,bfloat16")
    ap.add_argument("--doc-len", type=int, default=256)
    ap.add_argument("--query-len", type=int, default=64)
    ap.add_argument("--encode-batch", type=int, default=512)
    ap.add_argument("--encode-steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--negatives", type=int, default=7)
    ap.add_argument("--train-steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.tiny:
        args.encode_batch, args.encode_steps, args.train_steps, args.warmup, args.batch = 8, 2, 2, 1, 2
        args.doc_len, args.query_len = 32, 16
    device = torch.device(args.device)
    result = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
              "torch": torch.__version__, "model": "tiny" if args.tiny else "roberta-base shape (random weights)",
              "doc_len": args.doc_len, "query_len": args.query_len, "encode_batch": args.encode_batch,
              "train_batch": args.batch, "negatives": args.negatives, "runs": {}}
    for name in args.dtypes.split(","):
        dtype = getattr(torch, name)
        if device.type == "cuda" and dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
            result["runs"][name] = "bf16 not supported"
            continue
        if device.type == "cpu" and dtype == torch.float16:
            result["runs"][name] = "skipped on cpu"
            continue
        model = make_model(args.tiny, device)
        result["runs"][name] = {"encode": bench_encode(model, dtype, args, device), "train": bench_train(model, dtype, args, device)}
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
