"""Helpers shared by the tests, the experiments and the benchmarks (never part of the installed package).

``REPO_ROOT`` is the checkout's root; ``UCI_DIR`` the vendored UCI files (``experiments/data/uci``,
sources and licences in its README); ``project_files`` lists the checkout's own files.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
UCI_DIR = REPO_ROOT / "experiments" / "data" / "uci"

_SKIPPED_DIRS = {"__pycache__", "site", "build", "dist", "node_modules"}

__all__ = ["REPO_ROOT", "UCI_DIR", "project_files"]


def project_files(*suffixes: str) -> Iterator[Path]:
    """The checkout's files ending in one of ``suffixes`` (hidden folders such as ``.venv`` and build output skipped)."""
    for folder, dirs, files in os.walk(REPO_ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS and not d.endswith(".egg-info")]
        for name in files:
            if name.endswith(suffixes):
                yield Path(folder) / name
