"""Publishing a built dataset folder to the Hugging Face Hub.

``plan()`` says what would be uploaded (files, sizes, the card's metadata) and touches nothing;
``publish()`` creates the repo if needed and uploads the folder in one commit (optionally on a
branch or as a pull request). The token comes from the standard places (``HF_TOKEN``, the login
cache) and is never printed or written by us.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from huggingface_hub import DatasetCard, HfApi

# local-only parts of a build folder: the memory-mapped store and temporary files
IGNORE = ["store/**", "store", ".*", "**/.*", "rejects/**"]


@dataclass
class PublishPlan:
    folder: Path
    repo_id: str
    revision: Optional[str]
    private: bool
    create_pr: bool
    files: list[tuple[str, int]] = field(default_factory=list)
    card_metadata: dict = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size in self.files)

    def render(self) -> str:
        lines = [
            f"repo:      datasets/{self.repo_id}" + (" (private)" if self.private else ""),
            f"revision:  {self.revision or 'main'}" + (" as a pull request" if self.create_pr else ""),
            f"files:     {len(self.files)} ({_human(self.total_bytes)})",
        ]
        lines += [f"  {_human(size):>10}  {name}" for name, size in self.files]
        meta = self.card_metadata
        lines.append("card:")
        for key in ("pretty_name", "license", "size_categories", "task_categories"):
            if key in meta:
                lines.append(f"  {key}: {meta[key]}")
        for cfg in meta.get("configs", []):
            for df in cfg.get("data_files", []):
                lines.append(f"  config {cfg.get('config_name')}: split {df['split']} <- {df['path']}")
        for split in (meta.get("dataset_info") or {}).get("splits", []):
            lines.append(f"  split {split['name']}: {split['num_examples']:,} rows")
        return "\n".join(lines)


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _ignored(rel: str) -> bool:
    return any(fnmatch.fnmatch(rel, pat) for pat in IGNORE) or any(part.startswith(".") for part in rel.split("/"))


def plan(folder: os.PathLike, repo_id: str, *, revision: Optional[str] = None, private: bool = False,
         create_pr: bool = False) -> PublishPlan:
    """What ``publish`` would upload. Raises if the folder is not a dataset folder with a card and data."""
    folder = Path(folder)
    card_path = folder / "README.md"
    if not card_path.exists():
        raise FileNotFoundError(f"{folder}: no README.md dataset card (run `surge build` first)")
    files = sorted(
        (p.relative_to(folder).as_posix(), p.stat().st_size)
        for p in folder.rglob("*") if p.is_file() and not _ignored(p.relative_to(folder).as_posix())
    )
    if not any(name.startswith("data/") for name, _ in files):
        raise FileNotFoundError(f"{folder}: no data files under data/")
    card = DatasetCard.load(card_path)
    return PublishPlan(folder, repo_id, revision, private, create_pr, files, card.data.to_dict())


def publish(p: PublishPlan, *, token: Optional[str] = None, endpoint: Optional[str] = None,
            commit_message: Optional[str] = None):
    """Create the repo (if needed) and upload the planned files in one commit. Returns the commit info."""
    api = HfApi(endpoint=endpoint, token=token)
    api.create_repo(p.repo_id, repo_type="dataset", private=p.private, exist_ok=True)
    if p.revision and p.revision != "main":
        api.create_branch(p.repo_id, repo_type="dataset", branch=p.revision, exist_ok=True)
    return api.upload_folder(
        folder_path=str(p.folder), repo_id=p.repo_id, repo_type="dataset", revision=p.revision,
        create_pr=p.create_pr, allow_patterns=[name for name, _ in p.files],
        commit_message=commit_message or f"Upload {p.repo_id} built by surge-datasets",
    )
