"""Progress on stderr (docs/cli.md, "Progress"): a long analysis names its stages (capture,
lowering with the traced op count, analysis) on a terminal, and says nothing into a pipe or
with --quiet, so that captured output stays exactly the report."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

from conftest import ROOT, run_solar

PROGRAM = "examples/torch/activations.py"


def _run_on_a_terminal(*args: str) -> tuple:
    """`solar ARGS` with stderr on a pseudo-terminal (stdout a pipe): (stdout, terminal
    output, exit code)."""
    leader, follower = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "solar", *args], cwd=ROOT,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal (EIO)
            break
        if not chunk:
            break
        seen += chunk
    out = p.stdout.read().decode()
    code = p.wait(timeout=300)
    os.close(leader)
    return out, seen.decode(errors="replace"), code


def test_a_terminal_sees_the_stages_with_a_count():
    out, tty, code = _run_on_a_terminal("analyze", PROGRAM)
    assert code == 0, tty
    assert f"solar: capturing {PROGRAM}" in tty
    assert "traced ops" in tty and "solar: lowering " in tty
    assert "solar: analyzing on H100_SXM" in tty
    assert tty.endswith("\r\x1b[K")  # the line is cleared before the report
    assert out.startswith("Solar SOL report: activations")  # stdout has only the report


def test_quiet_and_a_pipe_stay_silent():
    _, tty, code = _run_on_a_terminal("analyze", PROGRAM, "--quiet")
    assert code == 0 and "solar: " not in tty, tty
    r = run_solar("analyze", PROGRAM)  # stderr is a pipe
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_a_graph_takes_quiet_too():
    r = run_solar("analyze", "examples/gemm.solar", "--quiet")
    assert r.returncode == 0 and r.stderr == "", r.stderr
