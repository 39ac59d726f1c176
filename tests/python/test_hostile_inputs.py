"""Every bad input refused in one line: a table of hostile and careless inputs across the
commands (tests/python/hostile_cases/, one module per area). For each: the documented exit
code, exactly one line on stderr and no traceback, no file of its folder created, changed
or removed, and an end within its time limit."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Tuple

import pytest

from hostile_cases import Case, all_cases

import solar

CASES = all_cases()


def _snapshot(folder: Path) -> Dict[str, Tuple]:
    """Every entry under `folder`: its kind, mode, size, and content digest (files)."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
            seen[str(p.relative_to(folder))] = (st.st_mode, st.st_size, st.st_nlink, digest)
    return seen


def test_the_table_is_large_and_distinct():
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_hostile_input_is_refused_cleanly(case: Case, tmp_path):
    for name, content in case.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    if case.setup is not None:
        case.setup(tmp_path)
    before = _snapshot(tmp_path)
    env = {**os.environ, "SOLAR_NO_SERVER": "1", "PYTHONUNBUFFERED": "1", **case.env}
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "solar", *case.args], cwd=tmp_path, env=env,
                       input=case.stdin, capture_output=True, text=True,
                       timeout=case.limit_s + 30)
    wall = time.monotonic() - start
    expected = solar._core.EXIT_CODES[case.code]
    assert r.returncode == expected, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr[-2000:]
    assert lines[0].startswith("solar") and "Traceback" not in r.stderr
    assert case.message in lines[0], lines[0]
    assert r.stdout == "", r.stdout[-2000:]
    after = {k: v for k, v in _snapshot(tmp_path).items() if k not in case.creates}
    assert after == before
    assert wall < case.limit_s, f"{wall:.1f} s"
