"""The ``evaluate`` metric folders: where they are, publishing them as Hub Spaces, seeding the offline cache.

Each ``metrics/<name>/`` folder (installed as ``surge_datasets.metric_spaces``) is an evaluate Space:
``<name>.py`` (the ``evaluate.Metric``), ``README.md`` (metric card), ``requirements.txt``, ``app.py``.

* :func:`publish_metrics` creates/updates the Spaces ``<org>/<name>`` (Gradio SDK) so that
  ``evaluate.load("<org>/<name>")`` works online. The token comes from the standard Hugging Face
  login or ``HF_TOKEN``; it is never printed.
* :func:`install_metrics` writes each module into evaluate's dynamic-module cache under the Hub name,
  exactly where evaluate 0.4 puts a module it downloaded
  (``$HF_MODULES_CACHE/evaluate_modules/metrics/<org>--<name>/<sha256 of the code>/<name>.py``), so
  that ``evaluate.load("<org>/<name>")`` resolves with ``HF_EVALUATE_OFFLINE=1`` (evaluate falls back
  to the newest cached copy of a Hub module when the Hub cannot be reached).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterable, Optional

__all__ = ["DEFAULT_ORG", "METRIC_NAMES", "SPACE_FILES", "metrics_root", "metric_folder", "PublishStep",
           "plan_publish", "publish_metrics", "install_metrics", "installed_module_path"]

DEFAULT_ORG = "surge"
METRIC_NAMES = ("citation_recall", "citation_accuracy", "soft_heading_recall", "structure_quality",
                "content_quality", "rouge_bleu")
SPACE_FILES = ("{name}.py", "README.md", "requirements.txt", "app.py")


def metrics_root() -> Path:
    """The folder holding the metric folders (the installed ``surge_datasets.metric_spaces``)."""
    try:
        root = Path(str(resources.files("surge_datasets.metric_spaces")))
    except ModuleNotFoundError:  # running from a source tree that is not installed
        root = Path(__file__).resolve().parent.parent / "metrics"
    return root


def metric_folder(name: str, root: Optional[Path] = None) -> Path:
    if name not in METRIC_NAMES:
        raise ValueError(f"unknown metric {name!r}; one of {', '.join(METRIC_NAMES)}")
    folder = (root or metrics_root()) / name
    missing = [f.format(name=name) for f in SPACE_FILES if not (folder / f.format(name=name)).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder}: missing {', '.join(missing)}")
    return folder


def _names(names: Optional[Iterable[str]]) -> list[str]:
    names = list(names) if names else list(METRIC_NAMES)
    for n in names:
        if n not in METRIC_NAMES:
            raise ValueError(f"unknown metric {n!r}; one of {', '.join(METRIC_NAMES)}")
    return names


@dataclass
class PublishStep:
    name: str
    repo_id: str
    folder: str
    files: list[str]
    url: Optional[str] = None
    done: bool = False

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def plan_publish(org: str = DEFAULT_ORG, names: Optional[Iterable[str]] = None) -> list[PublishStep]:
    """What :func:`publish_metrics` would upload, without touching the network."""
    steps = []
    for name in _names(names):
        folder = metric_folder(name)
        steps.append(PublishStep(name, f"{org}/{name}", str(folder), [f.format(name=name) for f in SPACE_FILES]))
    return steps


def publish_metrics(org: str = DEFAULT_ORG, names: Optional[Iterable[str]] = None, *, dry_run: bool = False,
                    private: bool = False, token: Optional[str] = None, api=None, progress=None) -> list[PublishStep]:
    """Create or update one Gradio Space per metric; ``dry_run`` only returns the plan."""
    steps = plan_publish(org, names)
    if dry_run:
        return steps
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    for step in steps:
        api.create_repo(step.repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
        api.upload_folder(repo_id=step.repo_id, repo_type="space", folder_path=step.folder,
                          allow_patterns=step.files, commit_message=f"Update the {step.name} metric")
        step.url, step.done = f"https://huggingface.co/spaces/{step.repo_id}", True
        if progress is not None:
            progress(step)
    return steps


def installed_module_path(org: str, name: str) -> Optional[Path]:
    """Newest cached copy of ``<org>/<name>`` in evaluate's module cache (what offline loading uses)."""
    from evaluate.loading import init_dynamic_modules

    folder = Path(init_dynamic_modules()) / "metrics" / f"{org}--{name}"
    copies = [p / f"{name}.py" for p in folder.glob("*") if len(p.name) == 64 and (p / f"{name}.py").is_file()]
    return max(copies, key=lambda p: p.stat().st_mtime) if copies else None


def install_metrics(org: str = DEFAULT_ORG, names: Optional[Iterable[str]] = None) -> dict[str, Path]:
    """Seed evaluate's module cache so ``evaluate.load("<org>/<name>")`` works offline; returns the paths.

    Uses evaluate's own routine for placing a downloaded Hub module (same folder, same hash), so the
    cached copy is indistinguishable from one evaluate fetched itself.
    """
    from evaluate.loading import DownloadMode, _create_importable_file, init_dynamic_modules

    out: dict[str, Path] = {}
    dynamic = init_dynamic_modules()
    for name in _names(names):
        script = metric_folder(name) / f"{name}.py"
        _create_importable_file(local_path=str(script), local_imports=[], additional_files=[],
                                dynamic_modules_path=dynamic, module_namespace="metrics", name=f"{org}/{name}",
                                download_mode=DownloadMode.REUSE_DATASET_IF_EXISTS)
        path = installed_module_path(org, name)
        if path is None:  # pragma: no cover - evaluate changed its layout
            raise RuntimeError(f"evaluate did not place {org}/{name} in {dynamic}")
        os.utime(path)  # newest copy wins when evaluate picks among cached versions
        out[name] = path
    return out
