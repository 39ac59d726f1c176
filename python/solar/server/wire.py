"""The messages between a client and the server: a 4-byte big-endian length, then that many
bytes of JSON. The first message of a connection may carry file descriptors (SCM_RIGHTS):
a command's stdin, stdout, stderr and working folder, which the child takes over.

    client -> server   {"op": "run", "argv": [...], "sys_argv": [...], "env": {...},
                        "path": [...], "umask": N, "streams": [...]}
                        with fds 0, 1, 2 and the working folder (O_PATH)
                       {"op": "status"} | {"op": "stop"}
    server -> client   {"pid": N}, later {"exit": CODE}     (run)
                       {"pid": ..., "key": ..., ...}         (status, stop)
                       {"refused": WHY}                      (nothing was run)

Each side checks the other's uid (peer_uid) before it trusts a connection: the server runs
a request as its own user, and a client hands the server its streams and environment.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple

_HEADER = struct.Struct(">I")
_MAX_MESSAGE = 16 << 20  # an environment and an argv: far less; more is not a client's
_CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid


class WireError(Exception):
    """The other side closed the connection, or sent something that is no message."""


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of the connected Unix socket `sock`, as the
    kernel recorded it when that process connected (or listened): SO_PEERCRED."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDENTIALS.size)
    return _CREDENTIALS.unpack(creds)[1]


def send(sock: socket.socket, message: Dict[str, Any], fds: Sequence[int] = ()) -> None:
    """Sends one message, with `fds` attached to its first byte."""
    body = json.dumps(message).encode()
    frame = _HEADER.pack(len(body)) + body
    sent = socket.send_fds(sock, [frame], list(fds)) if fds else 0
    if sent < len(frame):
        sock.sendall(frame[sent:])


def _message(body: bytes) -> Dict[str, Any]:
    try:
        message = json.loads(body)
    except ValueError as e:
        raise WireError(f"not JSON: {e}") from None
    if not isinstance(message, dict):
        raise WireError("not a JSON object")
    return message


def _size(header: bytes) -> int:
    (size,) = _HEADER.unpack(header)
    if size > _MAX_MESSAGE:
        raise WireError(f"a message of {size} bytes (at most {_MAX_MESSAGE})")
    return size


def _exactly(sock: socket.socket, n: int, fds: List[int], max_fds: int) -> bytes:
    data = b""
    while len(data) < n:
        if max_fds and not fds and not data:
            chunk, got, _, _ = socket.recv_fds(sock, n, max_fds)
            fds.extend(got)
        else:
            chunk = sock.recv(n - len(data))
        if not chunk:
            raise WireError("connection closed")
        data += chunk
    return data


def receive(sock: socket.socket, max_fds: int = 0) -> Tuple[Dict[str, Any], List[int]]:
    """One message and the descriptors that came with it (at most `max_fds`), read from a
    blocking socket."""
    fds: List[int] = []
    size = _size(_exactly(sock, _HEADER.size, fds, max_fds))
    return _message(_exactly(sock, size, fds, 0)), fds


class Incoming:
    """One message read from a non-blocking socket as its bytes come, so that a server reads
    many connections at once and none waits on another's slow client."""

    def __init__(self, max_fds: int):
        self.data = bytearray()
        self.fds: List[int] = []  # the caller closes them
        self._max_fds = max_fds

    def _wanted(self) -> int:
        if len(self.data) < _HEADER.size:
            return _HEADER.size - len(self.data)
        return _HEADER.size + _size(bytes(self.data[:_HEADER.size])) - len(self.data)

    def read(self, sock: socket.socket) -> Optional[Dict[str, Any]]:
        """Reads what has come; the message once it is whole, else None (more to come).
        Raises WireError: the connection closed first, too many descriptors, no message."""
        while True:
            wanted = self._wanted()
            if wanted == 0:
                return _message(bytes(self.data[_HEADER.size:]))
            try:
                chunk, got, flags, _ = socket.recv_fds(sock, wanted, self._max_fds or 1)
            except (BlockingIOError, InterruptedError):
                return None
            self.fds.extend(got)
            if len(self.fds) > self._max_fds or flags & socket.MSG_CTRUNC:
                raise WireError(f"more than {self._max_fds} file descriptors")
            if not chunk:
                raise WireError("connection closed before the whole message came")
            self.data += chunk
