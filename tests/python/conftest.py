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


# An unprivileged user for the tests whose subject is a permission: they run as root here
# and in CI, where permission bits do not bind. The interpreter cannot be started as that
# user (it lives under root's 0700 home), so the test forks and the child drops its
# privileges: what it runs must already be imported in the parent.
UNPRIVILEGED = 65534  # nobody / nogroup


@pytest.fixture
def unprivileged_dir():
    """A fresh folder under /tmp owned by the unprivileged user (mode 0755); removed after."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="solar-unpriv-", dir="/tmp"))
    os.chown(path, UNPRIVILEGED, UNPRIVILEGED)
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run_unprivileged(fn, *args, cwd: str | Path | None = None, timeout: float = 120):
    """(return value, stdout, stderr) of fn(*args) run in a forked child that has dropped to
    the unprivileged user (and folder `cwd`); fn's stdout and stderr (file descriptors 1 and
    2) are captured. An exception in the child is raised here as a RuntimeError with its
    traceback. The value must pickle."""
    import pickle
    import select
    import tempfile
    import time
    import traceback

    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 0
        try:
            os.close(rd)
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            # Python's own streams too: under pytest they are capture buffers, not fds 1, 2
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            os.setgroups([])
            os.setgid(UNPRIVILEGED)
            os.setuid(UNPRIVILEGED)
            if cwd is not None:
                os.chdir(cwd)
            try:
                result = ("ok", fn(*args))
            except BaseException:  # noqa: BLE001 - carried to the parent
                result = ("raised", traceback.format_exc())
            sys.stdout.flush()
            sys.stderr.flush()
            os.write(wr, pickle.dumps(result))
        except BaseException:  # noqa: BLE001
            status = 1
        finally:
            os._exit(status)
    os.close(wr)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([rd], [], [], left)[0]:
                os.kill(pid, 9)
                raise TimeoutError(f"the unprivileged child ran past {timeout} s")
            chunk = os.read(rd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(rd)
        os.waitpid(pid, 0)
    out.seek(0)
    err.seek(0)
    stdout, stderr = out.read().decode(), err.read().decode()
    if not chunks:
        raise RuntimeError(f"the unprivileged child died; stderr: {stderr}")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "raised":
        raise RuntimeError(f"in the unprivileged child: {value}")
    return value, stdout, stderr


def solar_main_unprivileged(*args: str, cwd: str | Path | None = None):
    """(exit code, stdout, stderr) of `solar ARGS...` run by the unprivileged user, in a
    fork of this process (solar.cli.main; what the command needs must already be imported:
    a graph's commands need nothing more)."""
    import solar.cli

    def main():
        return solar.cli.main(["solar", *args])

    return run_unprivileged(main, cwd=cwd)
