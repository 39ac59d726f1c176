"""The server: imports Solar's frontends once, then forks a child per command.

One thread, one loop over a selector: the listening socket, the connections whose request
is still coming, and per running command the client's connection and a pidfd of its child.
Requests are read as their bytes come, each connection on its own: a request has 5 s in
all (not per read) to come whole, else its connection is dropped, and a slow client never
holds up another's command. Only this user's connections are served: the kernel's record
of the peer's uid (SO_PEERCRED) is checked as each connection is accepted, and another
user's is refused before a byte of it is read; the socket is 0600 and its folder 0700
(place.checked_folder), so such a connection needs this user's own doing to get this far.

A `run` request is checked whole (argv, environment, umask, streams, the four file
descriptors), then forks at once; one that is malformed is answered with what is wrong
with it and runs nothing. The child takes over the client's streams, folder, environment,
umask, argv and sys.path (_become), runs the command with `run_command` (the console
script's main) and ends as the console script ends (_finish): non-daemon threads joined,
atexit handlers run, streams flushed, os._exit. The server sends the client the child's
pid, then its exit code (a negative code: the signal that ended it).

A command ends with its client and with its server, and writes nothing after either:

- a client that goes away (its connection closes: it was killed) takes its command with
  it: the child's process group (the child and what it started) gets SIGKILL, as the
  fresh process would have died with nothing more written. SIGTERM, which a program may
  catch, could let it write on to a terminal whose command has ended;
- a server that ends, however it ends, takes its children with it. Each child asks the
  kernel for SIGKILL when the server dies (prctl PR_SET_PDEATHSIG), right after the fork,
  then checks that its parent is still the server (it could have died before the prctl).
  A process group the server kills on its way out would not do: a server killed with
  SIGKILL runs no code on its way out. The death signal follows the thread that forked,
  which is this loop's, the server's only thread that forks, alive until the server ends.

The server ends after `idle` seconds without a command, on `solar server stop` or SIGTERM
(after its running commands end), or when its socket file is gone. Holding `KEY.lock`
(flock) while it runs keeps a second server of the same key from starting.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import ctypes
import fcntl
import io
import os
import random
import selectors
import signal
import socket
import stat
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

from .. import _core
from . import place, wire

RunCommand = Callable[[List[str]], int]
_REQUEST_SECONDS = 5.0  # the longest a client may take to send its whole request
_TICK = 1.0             # how often the loop looks at the idle time and the socket file
_INTERNAL = _core.EXIT_CODES["internal"]  # the child failed outside the command
_RUN_FDS = 4            # a run request's stdin, stdout, stderr and working folder
_PR_SET_PDEATHSIG = 1   # <linux/prctl.h>


class AlreadyRunning(Exception):
    """A server of this key holds the lock."""


@dataclass
class _Command:
    pid: int
    pidfd: int
    conn: socket.socket
    client_gone: bool = False


@dataclass
class _Pending:
    """A connection whose request is still coming."""

    conn: socket.socket
    incoming: wire.Incoming
    deadline: float  # time.monotonic()


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


def _prctl() -> Callable[..., int]:
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def bind(idle: float, preload: Callable[[], Dict[str, str]]) -> Server:
    """Takes the lock of this environment's key, runs `preload` (the frontends' imports),
    then listens on a socket of mode 0600: clients that come while it imports find no
    socket and run the command themselves. Raises AlreadyRunning, place.PlaceError."""
    directory = place.checked_folder(create=True)
    key = place.key()
    path = place.usable_socket_path(key, directory)
    try:  # the loop waits on its children's pidfds (Linux 5.3); children die with it (prctl)
        os.close(os.pidfd_open(os.getpid()))
        _prctl()
    except (AttributeError, OSError) as e:
        raise place.PlaceError(f"the server needs Linux 5.3 or later (pidfd_open, prctl): "
                               f"{e}") from None
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
    mask = os.umask(0o177)  # the socket file is made 0600, whatever the umask
    try:
        listener.bind(path)
    finally:
        os.umask(mask)
    os.chmod(path, 0o600)
    listener.listen(64)
    listener.setblocking(False)
    return Server(key, path, listener, lock_fd, preloaded, idle, time.time())


def _status(server: Server, running: int) -> Dict[str, Any]:
    return {"pid": os.getpid(), "key": server.key, "socket": server.path,
            "started": server.started, "served": server.served, "running": running,
            "idle_limit": server.idle, "preloaded": server.preloaded,
            "stopping": server.stopping}


def _strings(value: Any, name: str) -> Optional[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"{name} must be a list of strings"
    if any("\0" in v for v in value):
        return f"{name} holds a NUL character"
    return None


def _run_problem(request: Dict[str, Any], fds: Sequence[int]) -> Optional[str]:
    """What is wrong with a `run` request, or None: checked before the fork, so that a
    malformed one is answered, not run."""
    if len(fds) != _RUN_FDS:
        return (f"a run request comes with {_RUN_FDS} file descriptors (the client's stdin, "
                f"stdout, stderr and working folder); this one came with {len(fds)}")
    for name in ("argv", "sys_argv", "path"):
        why = _strings(request.get(name), name)
        if why:
            return why
    if not request["argv"]:
        return "argv is empty"
    env = request.get("env")
    if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and k and "=" not in k
            and "\0" not in k + v for k, v in env.items()):
        return "env must map variable names (no '=' or NUL) to strings (no NUL)"
    umask = request.get("umask")
    if not isinstance(umask, int) or isinstance(umask, bool) or not 0 <= umask <= 0o777:
        return "umask must be an integer from 0 to 0o777"
    streams = request.get("streams")
    if not isinstance(streams, list) or len(streams) != 3 or not all(
            isinstance(s, dict) for s in streams):
        return "streams must be 3 objects (stdin, stdout, stderr)"
    for s in streams:
        try:
            codecs.lookup(s.get("encoding"))
            codecs.lookup_error(s.get("errors"))
        except (LookupError, TypeError):
            return (f"a stream's encoding {s.get('encoding')!r} or errors "
                    f"{s.get('errors')!r} is unknown")
    try:
        folder = stat.S_ISDIR(os.fstat(fds[3]).st_mode)
    except OSError:
        folder = False
    if not folder:
        return "the fourth file descriptor is not the client's folder"
    return None


def _open_stream(fd: int, mode: str, spec: Dict[str, str],
                 always_lines: bool) -> io.TextIOWrapper:
    lines = always_lines or os.isatty(fd)
    return open(fd, mode, buffering=1 if lines and mode == "w" else -1,  # noqa: SIM115
                encoding=spec.get("encoding"), errors=spec.get("errors"), closefd=False)


def _become(request: Dict[str, Any], fds: Sequence[int]) -> List[str]:
    """Turns the forked child into the client's command; returns its argv."""
    # Above 2 first: a descriptor that came as 0, 1 or 2 is not overwritten before its dup2.
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in fds[:3]]
    # The client's folder itself, even if it was renamed or removed since (no path to race).
    os.fchdir(fds[3])
    for fd in fds:
        os.close(fd)
    for target, fd in enumerate(high):
        os.dup2(fd, target)
        os.close(fd)
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


def _log(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"solar server: {text}\n")
        sys.stderr.flush()


def serve(server: Server, run_command: RunCommand) -> None:
    """Runs `server` until it ends; each `run` request is forked to run_command(argv)."""
    sel = selectors.DefaultSelector()
    sel.register(server.listener, selectors.EVENT_READ, None)
    commands: Dict[int, _Command] = {}  # by pid
    pending: Dict[socket.socket, _Pending] = {}
    last = time.monotonic()
    terminated: List[int] = []
    prctl = _prctl()
    uid = os.getuid()

    def stop() -> None:
        if not server.stopping:
            server.stopping = True
            sel.unregister(server.listener)
            server.listener.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(server.path)

    def in_child(conn: socket.socket, request: Dict[str, Any], fds: List[int],
                 parent: int) -> None:
        """The forked child: dies with the server, drops what is not its own, runs."""
        try:
            # SIGKILL when the server dies; it may have died before this line: then the
            # child's parent is no longer the server, and it ends here.
            if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 \
                    or os.getppid() != parent:
                os._exit(_INTERNAL)
            os.setpgid(0, 0)  # its own group: a client that goes takes all of it
            sel.close()
            server.listener.close()
            os.close(server.lock_fd)
            for c in commands.values():
                c.conn.close()
                os.close(c.pidfd)
            for p in pending.values():
                p.conn.close()
                for fd in p.incoming.fds:
                    os.close(fd)
            conn.close()
        except BaseException:  # pylint: disable=broad-except
            os._exit(_INTERNAL)
        _child(run_command, request, fds)

    def start(conn: socket.socket, request: Dict[str, Any], fds: List[int]) -> None:
        sys.stdout.flush()  # else the child's copy of a buffer could reach the client's stdout
        sys.stderr.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            in_child(conn, request, fds, parent)
        with contextlib.suppress(OSError):  # (the child may have done it, or ended)
            os.setpgid(pid, pid)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # out of descriptors: a child the loop cannot wait on is not run
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
        server.served += 1
        command = _Command(pid, pidfd, conn)
        commands[pid] = command
        sel.register(command.pidfd, selectors.EVENT_READ, command)
        sel.register(conn, selectors.EVENT_READ, command)
        with contextlib.suppress(OSError):
            wire.send(conn, {"pid": pid})

    def accept() -> None:
        try:
            conn, _ = server.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:  # out of descriptors: the client sees a closed connection
            _log(f"accept failed: {e}")
            time.sleep(0.1)
            return
        conn.setblocking(False)
        try:
            peer = wire.peer_uid(conn)
        except OSError:
            peer = -1
        if peer != uid:  # nothing of it is read: descriptors it sent go with the connection
            _log(f"refused a connection of uid {peer}")
            with contextlib.suppress(OSError):
                wire.send(conn, {"refused": f"this server serves uid {uid} only"})
            conn.close()
            return
        pending[conn] = _Pending(conn, wire.Incoming(max_fds=_RUN_FDS),
                                 time.monotonic() + _REQUEST_SECONDS)
        sel.register(conn, selectors.EVENT_READ, pending[conn])

    def done_with(p: _Pending, fds: Sequence[int], close: bool) -> None:
        sel.unregister(p.conn)
        del pending[p.conn]
        for fd in fds:
            os.close(fd)
        if close:
            p.conn.close()

    def refuse(p: _Pending, why: str) -> None:
        _log(f"refused a request: {why}")
        with contextlib.suppress(OSError):
            wire.send(p.conn, {"refused": why})
        done_with(p, p.incoming.fds, close=True)

    def request_readable(p: _Pending) -> None:
        try:
            request = p.incoming.read(p.conn)
        except (OSError, wire.WireError) as e:
            return refuse(p, f"no request: {e}")
        if request is None:
            return None  # more to come, before its deadline
        fds = p.incoming.fds
        op = request.get("op")
        if op in ("status", "stop"):
            if fds:
                return refuse(p, f"a {op} request comes with no file descriptors")
            if op == "stop":
                stop()
            with contextlib.suppress(OSError):
                wire.send(p.conn, _status(server, len(commands)))
            return done_with(p, (), close=True)
        if op != "run":
            return refuse(p, f"no such request: {op!r} (run, status or stop)")
        why = _run_problem(request, fds)
        if why:
            return refuse(p, why)
        if server.stopping:
            return refuse(p, "the server is stopping")
        done_with(p, (), close=False)
        try:
            start(p.conn, request, fds)
        except OSError as e:  # fork or pidfd_open: out of processes or descriptors
            _log(f"could not start a command: {e}")
            with contextlib.suppress(OSError):
                wire.send(p.conn, {"refused": f"the server could not start it: {e}"})
            p.conn.close()
        finally:
            for fd in fds:
                os.close(fd)
        return None

    def overdue(now: float) -> None:
        for p in [p for p in pending.values() if now >= p.deadline]:
            refuse(p, f"no whole request within {_REQUEST_SECONDS:g} s")

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
        except (BlockingIOError, InterruptedError):
            gone = False
        except OSError:
            gone = True
        if gone:  # its command goes with it, at once
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(command.pid, signal.SIGKILL)
            sel.unregister(command.conn)
            command.conn.close()
            command.client_gone = True

    signal.signal(signal.SIGTERM, lambda *_: terminated.append(1))
    try:
        while commands or pending or not server.stopping:
            if terminated or not os.path.exists(server.path):
                stop()  # SIGTERM, or its socket was removed: no client can reach it
            elif not commands and not pending and time.monotonic() - last > server.idle:
                break
            now = time.monotonic()
            wait = min([_TICK] + [p.deadline - now for p in pending.values()])
            for ready, _ in sel.select(timeout=max(wait, 0.0)):
                data = ready.data
                if data is None:
                    if not server.stopping:
                        accept()
                elif isinstance(data, _Pending):
                    if data.conn in pending:
                        request_readable(data)
                elif data.pid not in commands:
                    continue  # its child exited earlier in this batch
                elif ready.fd == data.pidfd:
                    exited(data)
                elif not data.client_gone:
                    client_readable(data)
            overdue(time.monotonic())
            last = time.monotonic() if commands or pending else last
    finally:
        stop()
        for p in list(pending.values()):
            done_with(p, p.incoming.fds, close=True)
        sel.close()
        os.close(server.lock_fd)
