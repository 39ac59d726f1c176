"""forward(argv): a `solar` command run by the server of this installation and environment.

The client hands its stdin, stdout and stderr to the server with the command, so the child
writes straight to them (a terminal, a pipe, a file); it keeps the connection open while
the child runs, passes on the signals that would have ended the command (Ctrl-C), and ends
with the child's exit code. When no server serves this key, or the server does not answer
before starting the command, nothing has run and forward returns None: the caller runs the
command itself; so it does when its working folder has been removed (the command then runs
as it would without a server), and when the socket's listener is another user's (the
client's streams and environment are never handed to another user's process).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from typing import Dict, Iterator, List, Optional, Sequence

from .. import _core
from . import place, wire

# The exit code of a command whose server ended while it ran, or did not answer.
LOST = _core.EXIT_CODES["internal"]
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_ANSWER_SECONDS = 30.0  # a server answers a request at once (it forks): else it is stuck


def connect(path: str, timeout: Optional[float] = None) -> Optional[socket.socket]:
    """A connection to the socket at `path`, or None when nothing of this user listens
    there (nothing, or another user's process: SO_PEERCRED)."""
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:  # out of descriptors: no server for this command
        return None
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        if wire.peer_uid(sock) != os.getuid():
            raise PermissionError(f"{path}: another user's socket")
    except OSError:
        sock.close()
        return None
    return sock


def _folder_fd() -> Optional[int]:
    """The working folder, opened for the child to take over (O_PATH: no permission
    needed to read it); None when it has been removed, as a fresh process would find."""
    try:
        os.getcwd()  # a removed folder: as without a server, which this is then
        return os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None


def server_socket() -> Optional[str]:
    """The socket of this installation and environment's server, if the file exists."""
    try:
        directory = place.checked_folder(create=False)
    except (OSError, place.PlaceError):
        return None
    path = place.socket_path(place.key(), directory)
    return path if path is not None and os.path.exists(path) else None


def _streams() -> List[Dict[str, str]]:
    out = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        out.append({"encoding": getattr(stream, "encoding", None) or "utf-8",
                    "errors": getattr(stream, "errors", None) or "strict"})
    return out


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def _signals_to(pid: int) -> Iterator[None]:
    """While the child runs, the signals that end a command are sent on to it."""

    def pass_on(signum, _frame):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    # A signal this process ignores (SIGINT in a shell script's background job) stays ignored.
    saved = {s: signal.signal(s, pass_on) for s in _FORWARDED
             if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def _ended_by_signal(signum: int) -> int:
    """Ends this process by the signal that ended the child (a shell shows the same)."""
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum  # the signal is ignored or blocked here: its conventional code


def forward(argv: Sequence[str]) -> Optional[int]:
    """Runs `solar argv[1:]` in the server's child; its exit code, or None when no server
    started it (nothing ran, or SOLAR_NO_SERVER is set)."""
    if os.environ.get(place.OFF_ENV):
        return None
    folder = _folder_fd()  # first: a removed folder runs the command as without a server
    if folder is None:
        return None
    path = server_socket()
    sock = connect(path) if path else None
    if sock is None:
        os.close(folder)
        return None
    with sock:
        request = {"op": "run", "argv": list(argv), "sys_argv": list(sys.argv),
                   "env": dict(os.environ), "path": list(sys.path),
                   "umask": _umask(), "streams": _streams()}
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            sock.settimeout(_ANSWER_SECONDS)
            try:
                wire.send(sock, request, fds=[0, 1, 2, folder])
            finally:
                os.close(folder)
            started, _ = wire.receive(sock)
            sock.settimeout(None)
        except socket.timeout:
            # It may still start the command: running it here too could run it twice.
            sys.stderr.write(f"solar: error: the Solar server at {path} did not answer in "
                             f"{_ANSWER_SECONDS:g} s; `SOLAR_NO_SERVER=1 solar ...` runs "
                             "without it\n")
            return LOST
        except (OSError, ValueError, wire.WireError):
            return None  # the server ended or refused before starting anything
        pid = started.get("pid")
        if not isinstance(pid, int) or pid <= 0:
            return None
        with _signals_to(pid):
            try:
                done, _ = wire.receive(sock)
            except (OSError, wire.WireError):
                done = {}
    code = done.get("exit")
    if not isinstance(code, int):
        sys.stderr.write(f"solar: error: the Solar server ended while it ran this command "
                         f"(pid {pid}); `SOLAR_NO_SERVER=1 solar ...` runs it without\n")
        return LOST
    return _ended_by_signal(-code) if code < 0 else code
