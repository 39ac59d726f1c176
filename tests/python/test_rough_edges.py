"""The rough edges a new user hit (issue 17): each test reproduces one as the user met it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import solar
from conftest import EXAMPLES, ROOT, run_solar


def _program(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# ---- 2. counts past 64 bits are Python ints, not strings

def test_counts_past_64_bits_are_ints():
    n = 10**10
    g = solar.parse_graph(f"""graph huge
a = bf16[{n},{n}]{{dims="M,K"}} input
b = bf16[{n},{n}]{{dims="K,N"}} weight
c = bf16[{n},{n}]{{output}} einsum "mk,kn->mn" (a, b)
""")
    r = solar.analyze(g, arch="H100_SXM")
    assert r.totals.macs == n * n * n and type(r.totals.macs) is int
    assert r.totals.flops == 2 * n * n * n and type(r.totals.flops) is int
    assert r.totals.macs_by_dtype["bf16"] == n * n * n
    assert r.totals.bytes_unfused == 2 * 3 * n * n  # A, B read and C written, 2 B each
    (op,) = [o for o in r.ops if o.macs]
    assert op.macs == n * n * n and type(op.macs) is int
    # The JSON text keeps the documented decimal strings (exact for every reader).
    assert json.loads(r.to_json())["totals"]["macs"] == str(n * n * n)
