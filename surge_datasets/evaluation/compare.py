"""Comparing result folders of ``surge evaluate``: a table and a chart (PNG)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from .runner import RESULT_KEYS, _atomic_write, _fmt


def load_results(folder: str | os.PathLike) -> dict:
    """The results.json of a result folder (or the file itself), with a clear error when missing."""
    p = Path(folder)
    f = p / "results.json" if p.is_dir() else p
    if not f.exists():
        raise FileNotFoundError(f"{f}: no results.json (run `surge evaluate ... --out {p}` first)")
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{f}, line {exc.lineno}: not valid JSON ({exc.msg})") from exc


def compare(folders: Sequence[str | os.PathLike], names: Optional[Sequence[str]] = None) -> dict:
    """{"systems": [name], "metrics": [key], "table": {name: {key: value}}, "modes": {name: mode}}."""
    if names and len(names) != len(folders):
        raise ValueError("give one name per result folder")
    table: dict[str, dict] = {}
    modes: dict[str, str] = {}
    for i, folder in enumerate(folders):
        res = load_results(folder)
        name = names[i] if names else Path(folder).resolve().name
        if name in table:
            name = f"{name} ({i + 1})"
        table[name] = res.get("aggregate", {})
        modes[name] = res.get("config", {}).get("mode")
    keys = [k for k in RESULT_KEYS if any(v.get(k) is not None for v in table.values())]
    return {"systems": list(table), "metrics": keys, "table": table, "modes": modes}


def comparison_markdown(cmp: dict) -> str:
    keys = cmp["metrics"]
    lines = ["| system | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for name in cmp["systems"]:
        row = cmp["table"][name]
        best = []
        for k in keys:
            vals = [cmp["table"][n].get(k) for n in cmp["systems"] if cmp["table"][n].get(k) is not None]
            v = row.get(k)
            cell = _fmt(v)
            best.append(f"**{cell}**" if v is not None and len(vals) > 1 and v == max(vals) else cell)
        lines.append(f"| {name} | " + " | ".join(best) + " |")
    if len(set(cmp["modes"].values())) > 1:
        lines += ["", "Warning: the result folders were made in different modes: "
                  + ", ".join(f"{n}={m}" for n, m in cmp["modes"].items())]
    return "\n".join(lines) + "\n"


def comparison_chart(cmp: dict, path: str | os.PathLike) -> Path:
    """One small bar chart per metric (systems side by side), written as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = cmp["metrics"] or ["(none)"]
    n = len(keys)
    cols = min(4, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    systems = cmp["systems"]
    for ax, key in zip(axes.flat, keys):
        vals = [cmp["table"][s].get(key) for s in systems]
        ax.bar(range(len(systems)), [v or 0 for v in vals], color=[colors[i % len(colors)] for i in range(len(systems))])
        for i, v in enumerate(vals):
            ax.text(i, (v or 0), "n/a" if v is None else _fmt(v), ha="center", va="bottom", fontsize=7)
        ax.set_title(key, fontsize=9)
        ax.set_xticks(range(len(systems)))
        ax.set_xticklabels(systems, rotation=30, ha="right", fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".png")
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=120)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_comparison(folders: Sequence[str | os.PathLike], out_dir: str | os.PathLike, names: Optional[Sequence[str]] = None) -> dict:
    """comparison.json, comparison.md and comparison.png in ``out_dir``; returns the comparison."""
    cmp = compare(folders, names)
    out = Path(out_dir)
    _atomic_write(out / "comparison.json", json.dumps(cmp, indent=2, ensure_ascii=False))
    _atomic_write(out / "comparison.md", comparison_markdown(cmp))
    comparison_chart(cmp, out / "comparison.png")
    return cmp
