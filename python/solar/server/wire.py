"""The messages between a client and the server: a 4-byte big-endian length, then that many
bytes of JSON. The first message of a connection may carry file descriptors (SCM_RIGHTS):
a command's stdin, stdout and stderr, which the child takes over.

    client -> server   {"op": "run", "argv": [...], "cwd": ..., "env": {...}, "path": [...],
                        "streams": [...]} with fds 0, 1, 2
                       {"op": "status"} | {"op": "stop"}
    server -> client   {"pid": N}, later {"exit": CODE}     (run)
                       {"pid": ..., "key": ..., ...}         (status, stop)
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any, Dict, List, Sequence, Tuple

_HEADER = struct.Struct(">I")
_MAX_MESSAGE = 16 << 20  # an environment and an argv: far less; more is not a client's


class WireError(Exception):
    """The other side closed the connection, or sent something that is no message."""


def send(sock: socket.socket, message: Dict[str, Any], fds: Sequence[int] = ()) -> None:
    """Sends one message, with `fds` attached to its first byte."""
    body = json.dumps(message).encode()
    frame = _HEADER.pack(len(body)) + body
    sent = socket.send_fds(sock, [frame], list(fds)) if fds else 0
    sock.sendall(frame[sent:])


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
    """One message and the descriptors that came with it (at most `max_fds`)."""
    fds: List[int] = []
    (size,) = _HEADER.unpack(_exactly(sock, _HEADER.size, fds, max_fds))
    if size > _MAX_MESSAGE:
        raise WireError(f"a message of {size} bytes")
    try:
        message = json.loads(_exactly(sock, size, fds, 0))
    except ValueError as e:
        raise WireError(f"not JSON: {e}") from None
    if not isinstance(message, dict):
        raise WireError("not a JSON object")
    return message, fds
