"""Comprehensiveness: recall of the GT survey's bibliography, |R_GT n R_G| / |R_GT|, over resolved doc_ids.

``reference`` mode follows the paper's code: every entry of the GT ``all_cites`` list is checked (a
doc_id listed twice counts twice). ``paper`` mode uses sets. A GT survey with an empty bibliography has
no recall (None; the paper's code divides by zero there).
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from ..citations import Resolution


def citation_recall(gt_cites: Sequence[int], generated_doc_ids: Iterable[Optional[int]], mode: str = "reference") -> Optional[float]:
    """Share of GT-cited doc_ids found among the generated survey's resolved references."""
    found = {int(d) for d in generated_doc_ids if d is not None}
    if mode == "reference":
        if not gt_cites:
            return None
        return sum(1 for c in gt_cites if c in found) / len(gt_cites)
    if mode != "paper":
        raise ValueError(f"mode must be 'reference' or 'paper', not {mode!r}")
    gt = set(gt_cites)
    if not gt:
        return None
    return len(gt & found) / len(gt)


def recall_from_resolutions(gt_cites: Sequence[int], resolutions: dict[str, Resolution], mode: str = "reference") -> Optional[float]:
    return citation_recall(gt_cites, (r.doc_id for r in resolutions.values()), mode)
