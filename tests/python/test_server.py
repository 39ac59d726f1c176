"""The Solar server (solar.server, docs/server.md): commands forwarded to a server that has
torch and JAX imported give what a fresh process gives (outputs, report files, exit codes,
errors), with the client's stdin, folder and signals; other environments are not served;
the server ends on `stop`, when idle, and refuses an unsafe folder; it serves its own user
only (the folder, the socket's mode, the peer's uid); a command ends with its client and
with its server; a slow or malformed request holds up nothing and is answered."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Dict, Sequence

import pytest
import solar.server.cli  # noqa: F401  (the unprivileged children's `solar server`)
from conftest import EXAMPLES, ROOT, UNPRIVILEGED, run_unprivileged, solar_main_unprivileged
from solar.server import client, place, wire

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


# Sleeps in get_inputs, then writes a file and prints: what it does past the sleep shows
# whether it outlived its client or its server. It ignores SIGTERM, as a program may.
OUTLIVES = textwrap.dedent("""\
    import os
    import signal
    import time
    import torch

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open("started", "w") as f:
        f.write(str(os.getpid()))


    class Model(torch.nn.Module):
        def forward(self, x):
            return x + 1


    def get_inputs():
        time.sleep(SLEEP)
        with open("past", "w") as f:
            f.write("past the sleep")
        print("past the sleep", flush=True)
        return [torch.randn(4)]


    def get_init_inputs():
        return []
    """)
SLEEP = 6.0  # OUTLIVES's sleep, s


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


def _status(env: Dict[str, str]) -> Dict[str, Any]:
    """pid, served and running counts and socket of the server of `env` (empty: none)."""
    r = _solar(env, "server", "status")
    m = re.search(r"pid (\d+), .*?(\d+) command\(s\) served, (\d+) running.*socket (\S+)\)",
                  r.stdout)
    if r.returncode != 0 or not m:
        assert r.returncode == 1, r.stdout + r.stderr
        return {}
    return {"pid": int(m.group(1)), "served": int(m.group(2)), "running": int(m.group(3)),
            "socket": m.group(4)}


def _counts(env: Dict[str, str]) -> Dict[str, int]:
    return {k: v for k, v in _status(env).items() if k in ("served", "running")}


def _raw(path: str, message: Any, fds: Sequence[int] = ()) -> Dict[str, Any]:
    """The server's answer to one message sent by hand (a dict: as JSON; bytes: as they are)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(path)
        try:
            if isinstance(message, bytes):
                sock.sendall(message)
            else:
                wire.send(sock, message, fds)
        except BrokenPipeError:  # refused before it was read: the answer is there to read
            pass
        return wire.receive(sock)[0]


def _run_request(argv: Sequence[str], **fields: Any) -> Dict[str, Any]:
    """A well-formed `run` request of this process, as client.forward makes it."""
    return {"op": "run", "argv": list(argv), "sys_argv": list(argv), "env": dict(os.environ),
            "path": list(sys.path), "umask": 0o022,
            "streams": [{"encoding": "utf-8", "errors": "strict"}] * 3, **fields}


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
def server_env():
    """A server started with umask 000 in a folder it makes, under a folder the
    unprivileged user may enter (/tmp/solar-test-XXXX/sockets)."""
    top = Path(tempfile.mkdtemp(prefix="solar-test-", dir="/tmp"))
    top.chmod(0o755)
    env = _env(top / "sockets")
    try:
        # Idle long enough for the tests between two served ones on a loaded machine (the
        # fixture stops it at the end).
        r = _solar(env, "server", "start", "--idle", "600", preexec_fn=lambda: os.umask(0))
        assert r.returncode == 0 and "started" in r.stdout, r.stdout + r.stderr
        yield env
        pid = _status(env).get("pid")
        assert _solar(env, "server", "stop").returncode == 0
        if pid:
            _wait_for(lambda: _gone(pid))
    finally:
        shutil.rmtree(top)


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
    assert _counts(server_env) == {"served": before + 2, "running": 1}
    slow.send_signal(signal.SIGTERM)
    assert slow.wait(timeout=60) == -signal.SIGTERM


def _started(folder: Path) -> int:
    """The pid OUTLIVES wrote in `folder` once it has been imported."""
    started = folder / "started"
    _wait_for(lambda: started.exists() and started.read_text() != "", 60)
    return int(started.read_text())


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().split(") ")[1].split()[1])


def test_a_client_that_is_killed_takes_its_command_with_it(server_env, tmp_path):
    """At once and whole (SIGKILL to its process group): a program that ignores SIGTERM
    writes nothing after its client is gone."""
    program = _program(tmp_path, OUTLIVES.replace("SLEEP", str(SLEEP)))
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "solar", "analyze", str(program)],
                                cwd=tmp_path, env=server_env, stdout=f, stderr=f)
    child = _started(tmp_path)
    started = time.monotonic()
    assert _parent(child) == _status(server_env)["pid"]
    proc.kill()
    proc.wait(timeout=30)
    _wait_for(lambda: _gone(child), 5)
    assert _status(server_env)["running"] == 0
    time.sleep(max(0.0, started + SLEEP + 2 - time.monotonic()))  # past the program's sleep
    assert not (tmp_path / "past").exists() and out.read_text() == ""


def test_a_killed_server_takes_its_running_command_with_it(tmp_path):
    """SIGKILL runs nothing of the server: its child dies by the kernel's death signal
    (PR_SET_PDEATHSIG) and writes nothing after; the client says what happened."""
    env = _env(tmp_path / "sockets")
    assert _solar(env, "server", "start").returncode == 0
    server = _status(env)["pid"]
    program = _program(tmp_path, OUTLIVES.replace("SLEEP", str(SLEEP)))
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "solar", "analyze", str(program)],
                                cwd=tmp_path, env=env, stdout=f, stderr=subprocess.PIPE,
                                text=True)
        child = _started(tmp_path)
        started = time.monotonic()
        assert _parent(child) == server
        os.kill(server, signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 70 and "ended while it ran this command" in err, err
    _wait_for(lambda: _gone(server) and _gone(child), 5)
    time.sleep(max(0.0, started + SLEEP + 2 - time.monotonic()))  # past the program's sleep
    assert not (tmp_path / "past").exists() and out.read_text() == ""


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


@pytest.mark.parametrize("mode, owner, message", [
    (0o777, 0, "other users may write to it (mode 777)"),
    (0o755, 0, "other users may enter it (mode 755)"),
    (0o711, 0, "other users may enter it (mode 711)"),
    (0o750, 0, "other users may enter it (mode 750)"),
    (0o704, 0, "other users may list it (mode 704)"),
    (0o700, UNPRIVILEGED, f"owned by uid {UNPRIVILEGED}, not by this user"),
])
def test_a_folder_another_user_may_use_is_refused(tmp_path, mode, owner, message):
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(mode)
    os.chown(folder, owner, owner)
    env = _env(folder)
    for action in ("start", "status", "stop"):
        r = _solar(env, "server", action)
        assert r.returncode == 3 and message in r.stderr and r.stdout == "", r.stderr
        assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("solar: error: ")
    assert not list(folder.iterdir()) and stat_mode(folder) == mode
    if mode == 0o755:  # a command runs in its own process
        ok = _solar(env, "analyze", str(EXAMPLES / "torch" / "activations.py"))
        assert ok.returncode == 0, ok.stderr


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777


def test_the_folder_and_socket_are_this_users_alone_whatever_the_umask(server_env):
    """The server started with umask 000: its folder is 0700, its files 0600, and the
    unprivileged user cannot so much as reach the socket."""
    path = Path(_status(server_env)["socket"])
    assert stat_mode(path.parent) == 0o700
    assert {f.suffix: stat_mode(f) for f in path.parent.iterdir()} == {
        ".sock": 0o600, ".lock": 0o600, ".log": 0o600}

    def connect() -> str:
        try:
            _raw(str(path), {"op": "status"})
        except OSError as e:
            return type(e).__name__
        return "connected"

    assert run_unprivileged(connect)[0] == "PermissionError"


def test_another_users_connection_is_refused_and_runs_nothing(server_env, tmp_path):
    """Past a folder and a socket opened to everyone by hand, the server still checks
    each connection's uid (SO_PEERCRED): another user's run and stop are refused."""
    path = Path(_status(server_env)["socket"])
    marker = tmp_path / "ran"
    program = _program(tmp_path, f"open({str(marker)!r}, 'w').close()\n" + MATMUL)
    before = _counts(server_env)

    def attack() -> list:
        stdin, stdout = os.pipe()
        folder = os.open("/tmp", os.O_PATH | os.O_DIRECTORY)
        run = _raw(str(path), _run_request(["solar", "analyze", str(program)]),
                   fds=[stdin, stdout, stdout, folder])
        return [run, _raw(str(path), {"op": "stop"})]

    path.parent.chmod(0o711)
    path.chmod(0o666)
    try:
        answers = run_unprivileged(attack, cwd="/tmp")[0]
    finally:
        path.chmod(0o600)
        path.parent.chmod(0o700)
    assert answers == [{"refused": f"this server serves uid {os.getuid()} only"}] * 2
    assert _counts(server_env) == before  # still running, nothing served
    time.sleep(1)
    assert not marker.exists()


def test_a_client_hands_nothing_to_another_users_listener(unprivileged_dir, monkeypatch):
    """A socket at this user's key path that another user listens on (root, here) gets
    no request, streams or environment: the command runs in its own process."""
    folder = unprivileged_dir / "sockets"
    folder.mkdir(mode=0o700)
    os.chown(folder, UNPRIVILEGED, UNPRIVILEGED)
    monkeypatch.setenv(place.DIR_ENV, str(folder))
    monkeypatch.delenv(place.OFF_ENV, raising=False)
    # (its key, not root's: root's interpreter is under a folder it may not read)
    path = place.socket_path(run_unprivileged(place.key)[0], str(folder))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        os.chmod(path, 0o666)
        listener.listen(1)
        listener.settimeout(10)
        assert run_unprivileged(client.forward, ["solar", "analyze", "model.py"],
                                cwd=unprivileged_dir)[0] is None
        conn, _ = listener.accept()  # it did connect
        with conn:
            conn.settimeout(10)
            assert conn.recv(1 << 16) == b""  # connected, then closed: nothing sent


def test_an_unprivileged_user_refuses_a_folder_others_may_enter(unprivileged_dir,
                                                                 monkeypatch):
    """As a user whom permissions bind: a folder of its own that others may enter (0755)
    is refused, and one it makes is 0700 under umask 000."""
    monkeypatch.setenv(place.DIR_ENV, str(unprivileged_dir))
    code, out, err = solar_main_unprivileged("server", "status", cwd="/tmp")
    assert code == 3 and out == "" and "other users may enter it (mode 755)" in err

    def make() -> int:
        os.umask(0)
        os.environ[place.DIR_ENV] = str(unprivileged_dir / "new")
        return os.stat(place.checked_folder(create=True)).st_mode & 0o7777

    assert run_unprivileged(make)[0] == 0o700


def test_a_slow_client_holds_up_no_other_command(server_env):
    """A client that sends a byte every 4 s (each read would come within a per-read
    timeout of 5 s) does not delay another command, and is dropped 5 s after it
    connected, its whole request's deadline."""
    path = _status(server_env)["socket"]
    program = str(EXAMPLES / "torch" / "activations.py")
    t0 = time.monotonic()
    assert _solar(server_env, "analyze", program).returncode == 0
    alone = time.monotonic() - t0

    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.connect(path)
    connected = time.monotonic()
    heard: Dict[str, Any] = {}

    def dribble() -> None:
        frame = b"\0\0\0\x64{}"  # a 100-byte message, 2 bytes of it sent: 24 s at most
        for i in range(len(frame)):
            try:
                slow.send(frame[i:i + 1])
            except OSError:
                pass
            if select.select([slow], [], [], 4.0)[0]:  # the server answered: dropped
                heard["after"] = time.monotonic() - connected
                heard["answer"] = slow.recv(1 << 16)
                return

    thread = threading.Thread(target=dribble)
    thread.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    quick = _solar(server_env, "analyze", program)
    beside = time.monotonic() - t0
    thread.join()
    slow.close()
    assert quick.returncode == 0, quick.stderr
    assert beside < alone + 8, (alone, beside)  # the old per-read timeout: 24 s and more
    assert 5.0 <= heard["after"] < 8.0, heard
    assert b"no whole request within 5 s" in heard["answer"]


@pytest.mark.parametrize("message, fds, answer", [
    (_run_request(["solar", "analyze", "x.py"]), 0,
     "comes with 4 file descriptors (the client's stdin, stdout, stderr and working folder)"),
    (_run_request(["solar", "analyze", "x.py"]), 0, "this one came with 0"),
    (_run_request(["solar", "analyze", "x.py"]), 3, "this one came with 3"),
    ({"op": "run"}, 4, "argv must be a list of strings"),
    (_run_request([]), 4, "argv is empty"),
    (_run_request(["solar", "analyze", "x\0.py"]), 4, "argv holds a NUL character"),
    (_run_request(["solar"], env=["PATH"]), 4, "env must map variable names"),
    (_run_request(["solar"], env={"A=B": "1"}), 4, "env must map variable names"),
    (_run_request(["solar"], umask=0o1000), 4, "umask must be an integer from 0 to 0o777"),
    (_run_request(["solar"], umask="022"), 4, "umask must be an integer"),
    (_run_request(["solar"], streams=[{}]), 4, "streams must be 3 objects"),
    (_run_request(["solar"], streams=[{"encoding": "klingon", "errors": "strict"}] * 3), 4,
     "encoding 'klingon' or errors 'strict' is unknown"),
    (_run_request(["solar"]), "file", "the fourth file descriptor is not the client's folder"),
    ({"op": "status"}, 1, "a status request comes with no file descriptors"),
    ({"op": "launch"}, 0, "no such request: 'launch' (run, status or stop)"),
    ({}, 0, "no such request: None"),
    (b"\0\0\0\x03[1]", 0, "not a JSON object"),
    (b"\0\0\0\x03{x}", 0, "not JSON"),
    (b"\xff\xff\xff\xff", 0, "a message of 4294967295 bytes"),
])
def test_a_malformed_request_is_answered_with_what_is_wrong(server_env, tmp_path, message,
                                                            fds, answer):
    path = _status(server_env)["socket"]
    before = _counts(server_env)
    (tmp_path / "f").write_text("")
    opened = ([os.open(tmp_path / "f", os.O_RDONLY)] * 4 if fds == "file" else
              [0, 1, 2, os.open(tmp_path, os.O_PATH | os.O_DIRECTORY)][:fds])
    try:
        reply = _raw(path, message, opened)
    finally:
        for fd in set(opened) - {0, 1, 2}:
            os.close(fd)
    assert list(reply) == ["refused"] and answer in reply["refused"], reply
    assert _counts(server_env) == before


def test_a_command_run_from_a_removed_folder_runs_as_without_a_server(server_env, tmp_path):
    """No traceback: the command runs in its own process, as it would without a server.
    (Started as the console script starts: `python -m solar` in a removed folder has no
    sys.path[0], a sys.path of another key.)"""
    before = _counts(server_env)
    console = "import sys; from solar.cli import run; sys.argv[0] = 'solar'; run()"
    for program in ("prog.py", str(EXAMPLES / "torch" / "activations.py")):
        results = []
        for env in (server_env, {**server_env, place.OFF_ENV: "1"}):
            gone = tmp_path / "gone"
            gone.mkdir()
            script = 'cd "$1" && rmdir "$1" && exec "$2" -c "$3" analyze "$4"'
            r = subprocess.run(["sh", "-c", script, "sh", str(gone), sys.executable, console,
                                program], env=env, capture_output=True, text=True, timeout=300)
            results.append((r.returncode, r.stdout, r.stderr))
        assert results[0] == results[1]
        assert "Traceback" not in results[0][2]
    assert _counts(server_env) == before
    # Started so from a folder that exists, the same command is served.
    r = subprocess.run([sys.executable, "-c", console, "analyze", program], cwd=tmp_path,
                       env=server_env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and _counts(server_env)["served"] == before["served"] + 1


def test_a_folder_too_long_for_a_socket_is_refused(tmp_path):
    folder = tmp_path / ("x" * 120)  # past a Unix socket's 107-byte path
    r = _solar(_env(folder), "server", "start")
    assert r.returncode == 3 and "too long a folder" in r.stderr, r.stderr
    assert not folder.exists()  # refused before it is made


def test_the_key_follows_the_environment_not_the_shell(tmp_path):
    base = {"PATH": "/usr/bin", "HOME": "/root"}
    key = place.key(base)
    assert place.key(dict(base)) == key
    assert place.key({**base, "PWD": "/x", "SHLVL": "3", "OLDPWD": "/y"}) == key
    assert place.key({**base, "OMP_NUM_THREADS": "1"}) != key
    assert place.key({**base, "PATH": "/bin"}) != key
