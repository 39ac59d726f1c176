"""The Solar server (solar.server, docs/server.md): commands forwarded to a server that has
torch and JAX imported give what a fresh process gives (outputs, report files, exit codes,
errors), with the client's stdin, folder and signals; other environments are not served;
the server ends on `stop`, when idle, and refuses an unsafe folder."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict

import pytest

from conftest import EXAMPLES, ROOT
from solar.server import place

pytest.importorskip("torch")

MATMUL = textwrap.dedent("""\
    import sys
    import torch

    N = int(sys.stdin.readline())          # the size comes from the command's stdin
    SCALE = float(open("scale.txt").read())  # a file of the command's folder


    class Model(torch.nn.Module):
        def forward(self, a, b):
            return (a @ b) * SCALE


    def get_inputs():
        return [torch.randn(N, N), torch.randn(N, N)]


    def get_init_inputs():
        return []
    """)

SLOW = textwrap.dedent("""\
    import time
    import torch


    class Model(torch.nn.Module):
        def forward(self, x):
            return x + 1


    def get_inputs():
        time.sleep(60)
        return [torch.randn(4)]


    def get_init_inputs():
        return []
    """)


def _env(folder: Path, **extra: str) -> Dict[str, str]:
    # pytest's own variable changes between a test's phases: it would change the key.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_CURRENT_TEST", place.OFF_ENV)}
    env.update(SOLAR_SERVER_DIR=str(folder), PYTHONUNBUFFERED="1", **extra)
    if env.get("PYTHONPATH"):  # the same package whichever folder a command starts in
        env["PYTHONPATH"] = os.pathsep.join(
            str(ROOT / p) for p in env["PYTHONPATH"].split(os.pathsep))
    return env


def _solar(env: Dict[str, str], *args: str, cwd: Path = ROOT, stdin: str = "",
           **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "solar", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=300, **kwargs)


def _status(env: Dict[str, str]) -> Dict[str, int]:
    """served and running counts of the server of `env` (empty: none)."""
    r = _solar(env, "server", "status")
    m = re.search(r"pid (\d+), .*?(\d+) command\(s\) served, (\d+) running", r.stdout)
    if r.returncode != 0 or not m:
        assert r.returncode == 1, r.stdout + r.stderr
        return {}
    return {"pid": int(m.group(1)), "served": int(m.group(2)), "running": int(m.group(3))}


def _wait_for(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as f:  # a zombie: ended, not yet reaped by its parent
        return f.read().split(") ")[1].startswith("Z")


@pytest.fixture(scope="module")
def server_env(tmp_path_factory):
    env = _env(tmp_path_factory.mktemp("sockets"))
    r = _solar(env, "server", "start", "--idle", "10")
    assert r.returncode == 0 and "started" in r.stdout, r.stdout + r.stderr
    yield env
    pid = _status(env).get("pid")
    assert _solar(env, "server", "stop").returncode == 0
    if pid:
        _wait_for(lambda: _gone(pid))


def _program(tmp_path: Path, text: str, name: str = "prog.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_served_command_gives_what_a_fresh_process_gives(server_env, tmp_path):
    program = EXAMPLES / "torch" / "mlp.py"
    before = _status(server_env)["served"]
    served = _solar(server_env, "analyze", str(program), "--json", str(tmp_path / "s.json"))
    assert _status(server_env)["served"] == before + 1
    fresh = _solar({**server_env, place.OFF_ENV: "1"}, "analyze", str(program),
                   "--json", str(tmp_path / "f.json"))
    assert served.returncode == fresh.returncode == 0, served.stderr + fresh.stderr
    assert served.stdout == fresh.stdout
    assert served.stderr == fresh.stderr
    assert (json.loads((tmp_path / "s.json").read_text())
            == json.loads((tmp_path / "f.json").read_text()))


def test_errors_keep_their_message_and_exit_code(server_env, tmp_path):
    bad = _program(tmp_path, "import torch\nx = = 1\n")
    served = _solar(server_env, "analyze", str(bad), "--json", str(tmp_path / "r.json"))
    fresh = _solar({**server_env, place.OFF_ENV: "1"}, "analyze", str(bad))
    assert served.returncode == fresh.returncode == 9
    assert served.stderr == fresh.stderr
    assert "line 2" in served.stderr
    assert not (tmp_path / "r.json").exists()
    usage = _solar(server_env, "analyze", str(bad), "--top", "-1")
    assert usage.returncode == 2 and "--top -1" in usage.stderr


def test_the_command_gets_the_clients_stdin_folder_and_umask(server_env, tmp_path):
    n = 48
    program = _program(tmp_path, MATMUL)
    (tmp_path / "scale.txt").write_text("0.5")
    before = _status(server_env)["served"]
    r = _solar(server_env, "analyze", program.name, "--json", "out.json", cwd=tmp_path,
               stdin=f"{n}\n", preexec_fn=lambda: os.umask(0o077))
    assert r.returncode == 0, r.stderr
    assert _status(server_env)["served"] == before + 1
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["totals"]["macs"] == n * n * n
    assert (tmp_path / "out.json").stat().st_mode & 0o077 == 0  # the client's umask


def test_only_commands_of_this_environment_that_read_programs_are_served(server_env):
    program = str(EXAMPLES / "torch" / "activations.py")
    before = _status(server_env)["served"]
    other = {**server_env, "SOLAR_TEST_OTHER_ENVIRONMENT": "1"}
    r = _solar(other, "analyze", program)
    assert r.returncode == 0, r.stderr
    assert _status(server_env)["served"] == before
    assert _status(other) == {}  # no server for that key
    assert "(1 of another installation or environment" in _solar(
        other, "server", "status").stdout
    # A graph's analysis imports no framework: it runs in its own process.
    r = _solar(server_env, "analyze", str(EXAMPLES / "gemm.solar"))
    assert r.returncode == 0 and _status(server_env)["served"] == before
    # A variable a shell changes between commands is not part of the key.
    r = _solar({**server_env, "OLDPWD": "/somewhere/else"}, "analyze", program)
    assert r.returncode == 0 and _status(server_env)["served"] == before + 1


def test_ctrl_c_ends_the_command_as_in_a_fresh_process(server_env, tmp_path):
    program = _program(tmp_path, SLOW)
    results = []
    for env in (server_env, {**server_env, place.OFF_ENV: "1"}):
        proc = subprocess.Popen([sys.executable, "-m", "solar", "analyze", str(program)],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        if env is server_env:
            _wait_for(lambda: _status(server_env)["running"] == 1)
        time.sleep(5)  # a fresh process is importing torch, then sleeping in get_inputs
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        results.append((proc.returncode, err.strip().splitlines()[-1]))
    assert results[0] == results[1] == (-signal.SIGINT, "KeyboardInterrupt")
    assert _status(server_env)["running"] == 0


def test_commands_run_side_by_side(server_env, tmp_path):
    """Two commands at once, each in its own child; the second does not wait for the
    first, which sleeps until the second has ended."""
    before = _status(server_env)["served"]
    slow = subprocess.Popen([sys.executable, "-m", "solar", "analyze",
                             str(_program(tmp_path, SLOW))], cwd=ROOT, env=server_env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(lambda: _status(server_env)["running"] == 1)
    quick = _solar(server_env, "analyze", str(EXAMPLES / "torch" / "activations.py"))
    assert quick.returncode == 0 and slow.poll() is None
    assert _status(server_env) | {"pid": 0} == {"pid": 0, "served": before + 2, "running": 1}
    slow.send_signal(signal.SIGTERM)
    assert slow.wait(timeout=60) == -signal.SIGTERM


def test_a_client_that_is_killed_takes_its_command_with_it(server_env, tmp_path):
    program = _program(tmp_path, SLOW)
    proc = subprocess.Popen([sys.executable, "-m", "solar", "analyze", str(program)],
                            cwd=ROOT, env=server_env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _wait_for(lambda: _status(server_env)["running"] == 1)
    proc.kill()
    proc.wait(timeout=30)
    _wait_for(lambda: _status(server_env)["running"] == 0)


def test_the_server_ends_when_idle_and_on_stop(tmp_path):
    env = _env(tmp_path / "sockets")
    assert _solar(env, "server", "start", "--idle", "0.02").returncode == 0  # 1.2 s
    pid = _status(env)["pid"]
    sockets = list((tmp_path / "sockets").glob("*.sock"))
    assert len(sockets) == 1
    _wait_for(lambda: _gone(pid))
    assert _status(env) == {} and not sockets[0].exists()

    assert _solar(env, "server", "start").returncode == 0
    pid = _status(env)["pid"]
    again = _solar(env, "server", "start")
    assert again.returncode == 0 and "already running" in again.stdout
    assert _solar(env, "server", "stop").returncode == 0
    _wait_for(lambda: _gone(pid))
    assert _solar(env, "server", "stop").returncode == 1  # none running


def test_a_folder_others_may_write_is_refused(tmp_path):
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)
    env = _env(folder)
    r = _solar(env, "server", "start")
    assert r.returncode == 3 and "may be written by other users" in r.stderr
    assert not list(folder.iterdir())
    ok = _solar(env, "analyze", str(EXAMPLES / "torch" / "activations.py"))  # its own process
    assert ok.returncode == 0, ok.stderr


def test_a_folder_too_long_for_a_socket_is_refused(tmp_path):
    folder = tmp_path / ("x" * 120)  # past a Unix socket's 107-byte path
    r = _solar(_env(folder), "server", "start")
    assert r.returncode == 3 and "too long a folder" in r.stderr, r.stderr
    assert not list(folder.iterdir())


def test_the_key_follows_the_environment_not_the_shell(tmp_path):
    base = {"PATH": "/usr/bin", "HOME": "/root"}
    key = place.key(base)
    assert place.key(dict(base)) == key
    assert place.key({**base, "PWD": "/x", "SHLVL": "3", "OLDPWD": "/y"}) == key
    assert place.key({**base, "OMP_NUM_THREADS": "1"}) != key
    assert place.key({**base, "PATH": "/bin"}) != key
