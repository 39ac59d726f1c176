"""Shared paths and helpers for the Python tests (run against the installed `solar`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = ROOT / "tests" / "golden"


@pytest.fixture
def in_root(monkeypatch):
    """Runs the test from the repository root, so that relative example paths (and the
    `source` they leave in reports) are the same on every machine."""
    monkeypatch.chdir(ROOT)
    return ROOT


def run_solar(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`solar ARGS...` as a user runs it (python -m solar == the console script)."""
    return subprocess.run(
        [sys.executable, "-m", "solar", *args],
        cwd=cwd or ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        timeout=300,
    )
