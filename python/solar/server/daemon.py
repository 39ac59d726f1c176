"""The server: imports Solar's frontends once, then forks a child per command.

One thread, one loop over a selector: the listening socket, and per running command the
client's connection and a pidfd of its child. A request is read whole before anything else
(5 s at most); a `run` forks at once. The child takes over the client's streams, folder,
environment, umask, argv and sys.path (_become), runs the command with `run_command` (the
console script's main) and ends as the console script ends (_finish): non-daemon threads
joined, atexit handlers run, streams flushed, os._exit. The server sends the client the
child's pid, then its exit code (a negative code: the signal that ended it). A client that
goes away (its connection closes) takes its command with it: the child gets SIGTERM.

The server ends after `idle` seconds without a command, on `solar server stop` or SIGTERM
(after its running commands end), or when its socket file is gone. Holding `KEY.lock`
(flock) while it runs keeps a second server of the same key from starting.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import io
import os
import random
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence

from .. import _core
from . import place, wire

RunCommand = Callable[[List[str]], int]
_REQUEST_SECONDS = 5.0  # the longest a client may take to send its request
_TICK = 1.0             # how often the loop looks at the idle time and the socket file
_INTERNAL = _core.EXIT_CODES["internal"]  # the child failed outside the command


class AlreadyRunning(Exception):
    """A server of this key holds the lock."""


@dataclass
class _Command:
    pid: int
    pidfd: int
    conn: socket.socket
    client_gone: bool = False


@dataclass
class Server:
    """A bound, listening server; serve() runs it until it ends."""

    key: str
    path: str
    listener: socket.socket
    lock_fd: int
    preloaded: Dict[str, str]
    idle: float
    started: float
    served: int = 0
    stopping: bool = False


def bind(idle: float, preload: Callable[[], Dict[str, str]]) -> Server:
    """Takes the lock of this environment's key, runs `preload` (the frontends' imports),
    then listens: clients that come while it imports find no socket and run the command
    themselves. Raises AlreadyRunning, place.PlaceError."""
    directory = place.checked_folder(create=True)
    key = place.key()
    path = place.usable_socket_path(key, directory)
    try:  # the loop waits on its children's pidfds (Linux 5.3)
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError) as e:
        raise place.PlaceError(f"the server needs pidfd_open (Linux 5.3 or later): {e}") from None
    lock_fd = os.open(path[: -len(".sock")] + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock_fd)
        raise AlreadyRunning(path) from None
    preloaded = preload()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a socket its server left behind (we hold the lock: no one listens)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    return Server(key, path, listener, lock_fd, preloaded, idle, time.time())


def _status(server: Server, running: int) -> Dict[str, Any]:
    return {"pid": os.getpid(), "key": server.key, "socket": server.path,
            "started": server.started, "served": server.served, "running": running,
            "idle_limit": server.idle, "preloaded": server.preloaded,
            "stopping": server.stopping}


def _open_stream(fd: int, mode: str, spec: Dict[str, str],
                 always_lines: bool) -> io.TextIOWrapper:
    lines = always_lines or os.isatty(fd)
    return open(fd, mode, buffering=1 if lines and mode == "w" else -1,  # noqa: SIM115
                encoding=spec.get("encoding"), errors=spec.get("errors"), closefd=False)


def _become(request: Dict[str, Any], fds: Sequence[int]) -> List[str]:
    """Turns the forked child into the client's command; returns its argv."""
    # Above 2 first: a descriptor that came as 0, 1 or 2 is not overwritten before its dup2.
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in fds[:3]]
    for fd in fds:
        os.close(fd)
    for target, fd in enumerate(high):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.umask(int(request["umask"]))
    sys.path[:] = request["path"]
    sys.argv = list(request["sys_argv"])
    streams = request["streams"]
    sys.stdin = sys.__stdin__ = _open_stream(0, "r", streams[0], False)
    sys.stdout = sys.__stdout__ = _open_stream(1, "w", streams[1], False)
    sys.stderr = sys.__stderr__ = _open_stream(2, "w", streams[2], True)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # A fresh process seeds these from the OS; every child would share the server's state.
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    return list(request["argv"])


def _finish(code: int, signum: int = 0) -> None:
    """Ends the child as the console script ends its process (solar.cli.exit_without_teardown),
    or by `signum` as Python ends after an uncaught KeyboardInterrupt; never returns to the
    server's loop."""
    try:
        for t in threading.enumerate():
            if t is not threading.main_thread() and not t.daemon:
                t.join()
        atexit._run_exitfuncs()  # pylint: disable=protected-access
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # pylint: disable=broad-except
        code = code or 120  # as Python's own exit when stdout cannot be flushed
    if signum:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(code)


def _child(run_command: RunCommand, request: Dict[str, Any], fds: Sequence[int]) -> None:
    code, signum = _INTERNAL, 0
    try:
        code = run_command(_become(request, fds))
    except SystemExit as e:  # as the interpreter ends on it: an int, None (0), else printed
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            with contextlib.suppress(BaseException):
                print(e.code, file=sys.stderr)
    except BaseException as e:  # pylint: disable=broad-except
        with contextlib.suppress(BaseException):
            traceback.print_exc()
        signum = signal.SIGINT if isinstance(e, KeyboardInterrupt) else 0
    finally:
        _finish(code if isinstance(code, int) else _INTERNAL, signum)


def serve(server: Server, run_command: RunCommand) -> None:
    """Runs `server` until it ends; each `run` request is forked to run_command(argv)."""
    sel = selectors.DefaultSelector()
    sel.register(server.listener, selectors.EVENT_READ, None)
    commands: Dict[int, _Command] = {}  # by pid
    last = time.monotonic()
    terminated: List[int] = []

    def stop() -> None:
        if not server.stopping:
            server.stopping = True
            sel.unregister(server.listener)
            server.listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(server.path)

    def start(conn: socket.socket, request: Dict[str, Any], fds: List[int]) -> None:
        sys.stdout.flush()  # else the child's copy of a buffer could reach the client's stdout
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                sel.close()
                server.listener.close()
                for c in commands.values():
                    c.conn.close()
                    os.close(c.pidfd)
                conn.close()
            finally:
                _child(run_command, request, fds)
        server.served += 1
        command = _Command(pid, os.pidfd_open(pid), conn)
        commands[pid] = command
        sel.register(command.pidfd, selectors.EVENT_READ, command)
        sel.register(conn, selectors.EVENT_READ, command)
        with contextlib.suppress(OSError):
            wire.send(conn, {"pid": pid})

    def accept() -> None:
        try:
            conn, _ = server.listener.accept()
        except OSError as e:  # out of descriptors: the client sees a closed connection
            sys.stderr.write(f"solar server: accept failed: {e}\n")
            time.sleep(0.1)
            return
        fds: List[int] = []
        try:
            conn.settimeout(_REQUEST_SECONDS)
            request, fds = wire.receive(conn, max_fds=3)
            conn.settimeout(None)
            op = request.get("op")
            if op == "run" and len(fds) == 3 and not server.stopping:
                start(conn, request, fds)
                conn = None
            else:
                if op == "stop":
                    stop()
                refused = "the server is stopping" if op == "run" else f"no request: {op!r}"
                wire.send(conn, _status(server, len(commands)) if op in ("status", "stop")
                          else {"refused": refused})
        except (OSError, ValueError, KeyError, TypeError, wire.WireError) as e:
            sys.stderr.write(f"solar server: a request failed: {e}\n")
        for fd in fds:
            os.close(fd)
        if conn is not None:
            conn.close()

    def exited(command: _Command) -> None:
        _, status = os.waitpid(command.pid, 0)
        with contextlib.suppress(OSError):
            wire.send(command.conn, {"exit": os.waitstatus_to_exitcode(status)})
        sel.unregister(command.pidfd)
        os.close(command.pidfd)
        if not command.client_gone:
            sel.unregister(command.conn)
            command.conn.close()
        del commands[command.pid]

    def client_readable(command: _Command) -> None:
        try:
            gone = not command.conn.recv(4096)  # a client sends nothing after its request
        except OSError:
            gone = True
        if gone:  # its command goes with it
            with contextlib.suppress(ProcessLookupError):
                os.kill(command.pid, signal.SIGTERM)
            sel.unregister(command.conn)
            command.conn.close()
            command.client_gone = True

    signal.signal(signal.SIGTERM, lambda *_: terminated.append(1))
    try:
        while commands or not server.stopping:
            if terminated or not os.path.exists(server.path):
                stop()  # SIGTERM, or its socket was removed: no client can reach it
            elif not commands and time.monotonic() - last > server.idle:
                break
            for ready, _ in sel.select(timeout=_TICK):
                if ready.data is None:
                    accept()
                elif ready.data.pid not in commands:
                    continue  # its child exited earlier in this batch
                elif ready.fd == ready.data.pidfd:
                    exited(ready.data)
                elif not ready.data.client_gone:
                    client_readable(ready.data)
            last = time.monotonic() if commands else last
    finally:
        stop()
        sel.close()
        os.close(server.lock_fd)
