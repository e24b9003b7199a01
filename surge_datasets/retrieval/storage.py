"""Atomic files and JSON manifests of retrieval artefacts (indexes, embeddings, checkpoints).

Every artefact folder carries a ``manifest.json`` naming its kind and the settings it was built with, so
that readers can refuse a folder built for another corpus or model instead of returning wrong results.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

MANIFEST = "manifest.json"


def _temp_beside(path: Path, suffix: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f"{suffix}.tmp", dir=path.parent)
    os.close(fd)
    return Path(tmp)


def write_json(path: str | os.PathLike, data: Any) -> None:
    """Write JSON atomically (temporary file in the same folder, then ``os.replace``)."""
    path = Path(path)
    tmp = _temp_beside(path)
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, ensure_ascii=False, sort_keys=False)
            fh.write("\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def save_npy(path: str | os.PathLike, array: np.ndarray) -> None:
    """``np.save`` atomically: a reader never sees a half-written array."""
    path = Path(path)
    tmp = _temp_beside(path)
    try:
        with open(tmp, "wb") as fh:  # a file object: np.save would add ".npy" to a path
            np.save(fh, array, allow_pickle=False)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_manifest(folder: str | os.PathLike, kind: str | None = None) -> dict:
    """The manifest of an artefact folder; ``kind`` checks what the folder holds."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {MANIFEST} (not a folder written by surge retrieval)")
    manifest = read_json(path)
    if kind is not None and manifest.get("kind") != kind:
        raise ValueError(f"{path}: holds a {manifest.get('kind')!r} artefact, expected {kind!r}")
    return manifest


def write_manifest(folder: str | os.PathLike, manifest: dict) -> None:
    write_json(Path(folder) / MANIFEST, manifest)


def array_fingerprint(array: np.ndarray) -> str:
    """Short content hash of an array (dtype, shape and bytes)."""
    h = hashlib.sha256()
    array = np.ascontiguousarray(array)
    h.update(f"{array.dtype.str}{array.shape}".encode())
    h.update(memoryview(array).cast("B"))
    return h.hexdigest()[:16]
