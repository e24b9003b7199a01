"""What the three builders share: their config (where the input is, how to treat bad records)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import datasets

from ..schemas import BENCHMARK_LICENSE

CITATION = """@inproceedings{surge2026,
  title     = {SurGE: A Benchmark and Evaluation Framework for Scientific Survey Generation},
  booktitle = {Proceedings of the 49th International ACM SIGIR Conference on Research and Development in Information Retrieval},
  year      = {2026},
  eprint    = {2508.15658},
  archivePrefix = {arXiv}
}"""
HOMEPAGE = "https://github.com/oneal2000/SurGE"


@dataclass
class SurgeConfig(datasets.BuilderConfig):
    """``data_dir``: the release folder (official) or the harvest folder (harvest).

    ``skip_invalid``: drop bad records instead of failing; they are written to ``rejects_path`` (JSONL).
    """

    skip_invalid: bool = False
    rejects_path: Optional[str] = None


def configs(description: str) -> list[SurgeConfig]:
    return [
        SurgeConfig(name="official", version=datasets.Version("1.0.0"), description=f"{description} from the paper's release files."),
        SurgeConfig(name="harvest", version=datasets.Version("1.0.0"), description=f"{description} rebuilt from arXiv by `surge harvest`."),
    ]


def input_dir(config: SurgeConfig) -> Path:
    if not config.data_dir:
        raise ValueError(f"builder config {config.name!r} needs data_dir (the release or harvest folder)")
    path = Path(config.data_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such folder")
    return path


def info(description: str, features: datasets.Features, license: str = BENCHMARK_LICENSE) -> datasets.DatasetInfo:
    return datasets.DatasetInfo(description=description, features=features, citation=CITATION, homepage=HOMEPAGE, license=license)


def write_rejects(config: SurgeConfig, rejects: list[dict]) -> None:
    """Write the rejected records (JSONL, atomic). Nothing is written when nothing was rejected."""
    if not rejects or not config.rejects_path:
        return
    path = Path(config.rejects_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in rejects:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
