"""Zipping a folder into a model bundle, reproducibly: members in sorted order, a fixed date and
mode, so the same folder always gives the same bytes and the same sha256 (the run records it).
``__pycache__`` folders and compiled files are left out (the bundle check refuses them)."""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

from ..sandbox.layout import MODEL_ENTRY_FILE

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
FIXED_DATE = (1980, 1, 1, 0, 0, 0)   # the earliest date a zip can hold
LEFT_OUT_SUFFIXES = (".pyc", ".pyo")


def bundle_members(folder: Path) -> list[tuple[str, Path]]:
    """(path in the zip, file) for every regular file below ``folder``, sorted."""
    members = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(name for name in dirs if name != "__pycache__")
        for name in sorted(files):
            path = Path(root) / name
            if path.is_file() and not path.is_symlink() and not name.endswith(LEFT_OUT_SUFFIXES):
                members.append((path.relative_to(folder).as_posix(), path))
    return sorted(members)


def write_bundle(members: list[tuple[str, Path]], destination: str | os.PathLike) -> Path:
    destination = Path(destination)
    with zipfile.ZipFile(destination, "w") as archive:
        for name, path in members:
            info = zipfile.ZipInfo(name, date_time=FIXED_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o100644 << 16
            archive.writestr(info, path.read_bytes())
    return destination


def build_bundle(folder: str | os.PathLike, destination: str | os.PathLike) -> Path:
    """Zip the contents of ``folder`` (which must hold ``predict.py``) as a bundle."""
    folder = Path(folder)
    if not (folder / MODEL_ENTRY_FILE).is_file():
        raise FileNotFoundError(f"{folder} holds no {MODEL_ENTRY_FILE}")
    return write_bundle(bundle_members(folder), destination)


def build_reference_bundle(destination: str | os.PathLike) -> Path:
    """The reference bundle: ``reference/predict.py`` alone at the root."""
    return write_bundle([(MODEL_ENTRY_FILE, REFERENCE_DIR / MODEL_ENTRY_FILE)], destination)
