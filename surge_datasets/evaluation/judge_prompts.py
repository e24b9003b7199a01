"""The LLM-judge prompt templates (SQS, CQS): editable Jinja2 files.

The shipped templates live in ``surge_datasets/prompts/<name>.md.j2``. To try other wording, copy
them to a folder, edit, and point ``prompt_dir=`` (or ``SURGE_PROMPTS_DIR``) at it; a template's text
is part of the judge cache key, so edited prompts are asked afresh.
"""

from __future__ import annotations

import os
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Optional

import jinja2

__all__ = ["PROMPT_NAMES", "PROMPTS_DIR_ENV", "prompt_text", "render_prompt", "shipped_prompts_dir"]

PROMPT_NAMES = ("structure_quality", "content_quality")
PROMPTS_DIR_ENV = "SURGE_PROMPTS_DIR"
_SUFFIX = ".md.j2"


def shipped_prompts_dir() -> Path:
    return Path(str(resources.files("surge_datasets") / "prompts"))


def prompt_text(name: str, prompt_dir: Optional[os.PathLike | str] = None) -> str:
    """Source of template ``name`` from ``prompt_dir``, ``$SURGE_PROMPTS_DIR`` or the shipped folder."""
    folder = Path(prompt_dir or os.environ.get(PROMPTS_DIR_ENV) or shipped_prompts_dir())
    path = folder / f"{name}{_SUFFIX}"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no prompt template {name!r} (expected one of {PROMPT_NAMES})")
    return path.read_text(encoding="utf-8")


@lru_cache(maxsize=16)
def _compile(source: str) -> jinja2.Template:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
    return env.from_string(source)


def render_prompt(name: str, prompt_dir: Optional[os.PathLike | str] = None, **values: str) -> str:
    """The prompt ``name`` with ``values`` filled in (a missing value is an error, never blank)."""
    try:
        return _compile(prompt_text(name, prompt_dir)).render(**values)
    except jinja2.UndefinedError as exc:
        raise ValueError(f"prompt template {name!r}: {exc}") from None
