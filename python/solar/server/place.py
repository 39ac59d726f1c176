"""Where a server listens: one socket per installation and environment (docs/server.md).

A server serves a command only when the command would behave in its forked child exactly
as in a fresh process: the same interpreter started with the same flags, the same Solar
files, the same installed packages and the same environment variables. All of that is
hashed into a key, and the key names the socket, so a command from anywhere else finds no
socket and runs in its own process as before. Editing a Solar file, installing a package
(which changes its site-packages folder) or exporting a variable changes the key; a server
of an old key ends when it has been idle long enough (daemon.py).

The process's resource limits, CPU affinity and niceness are in the key too: a child has
the server's. A few variables a shell changes between commands (VOLATILE) are left out of
the key; the child still gets the client's values of them. sys.path[0] is left out too: it is the
folder `python -m solar` starts in (or the console script's), and the child gets the
client's.

The sockets live in a folder only this user may enter: $SOLAR_SERVER_DIR, else
$XDG_RUNTIME_DIR/solar, else /tmp/solar-UID, created with mode 0700 whatever the umask. A
folder that another user owns, or whose mode gives group or others any permission (enter,
list or write; a POSIX ACL's entries show in the group bits), is never used: another user
who could reach a socket could have a program run as this user. The socket itself is
made 0600 (daemon.bind), and the server checks every connection's uid (wire.peer_uid).
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import stat
import sys
from typing import Dict, List, Optional

DIR_ENV = "SOLAR_SERVER_DIR"  # the sockets' folder (tests, or several setups side by side)
OFF_ENV = "SOLAR_NO_SERVER"   # set (non-empty): every command runs in its own process

# Set by a shell or a terminal, different from one command to the next, and read by none
# of the server's imports.
VOLATILE = frozenset({
    "PWD", "OLDPWD", "SHLVL", "_", "COLUMNS", "LINES", "WINDOWID", "TERM_SESSION_ID",
    "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "TMUX_PANE", "STY", "WINDOW",
    "PS1", "PROMPT_COMMAND", "HISTFILE", "HISTSIZE",
})

# The resource limits a memory estimate (solar.memory_limit) or a program could meet.
_LIMITS = (resource.RLIMIT_AS, resource.RLIMIT_DATA, resource.RLIMIT_STACK,
           resource.RLIMIT_NOFILE, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE)

# Python's own limit on a Unix socket's path (sun_path), less the terminating zero.
_MAX_SOCKET_PATH = 107
_KEY_DIGITS = 24  # key()'s length


class PlaceError(Exception):
    """The sockets' folder cannot be used safely (its owner or its permissions)."""


def folder(environ: Optional[Dict[str, str]] = None) -> str:
    """The folder of this user's server sockets (created 0700 when missing, not checked)."""
    env = os.environ if environ is None else environ
    if env.get(DIR_ENV):
        return os.path.abspath(env[DIR_ENV])
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, "solar")
    return f"/tmp/solar-{os.getuid()}"


def checked_folder(create: bool) -> str:
    """folder(), made with mode 0700 when `create` and missing; raises PlaceError when it is
    no folder of this user's alone (another user owns it, group or others have any
    permission on it, it is a symbolic link or no folder), or when it is too long a path
    for a socket; FileNotFoundError when it is missing and not created."""
    path = folder()
    if socket_path("k" * _KEY_DIGITS, path) is None:
        raise PlaceError(f"{path}: too long a folder for a socket's path; set {DIR_ENV} to "
                         "a shorter one")
    if create:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            os.mkdir(path, 0o700)  # 0700 less the umask: never more than 0700 ...
        except FileExistsError:
            pass  # checked below, never changed: it is the user's own folder
        else:
            os.chmod(path, 0o700)  # ... and not less (a umask of 0o200 would leave 0500)
    st = os.lstat(path)
    uid = os.getuid()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise PlaceError(f"{path}: not a folder (the server's sockets need a folder of "
                         "this user's)")
    if st.st_uid != uid:
        raise PlaceError(f"{path}: owned by uid {st.st_uid}, not by this user (uid {uid}); "
                         "the server's sockets need a folder of this user's")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        may = ("write to" if mode & 0o022 else "enter" if mode & 0o011 else "list")
        raise PlaceError(f"{path}: other users may {may} it (mode {mode:o}); the server's "
                         f"sockets need a folder only this user may enter: `chmod 700 {path}`")
    return path


def _package_files() -> List[str]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        files += [os.path.join(dirpath, f) for f in sorted(filenames)]
    return files


def _stamp(path: str) -> List[int]:
    try:
        st = os.stat(path)
    except OSError:
        return [-1, -1]
    return [st.st_mtime_ns, st.st_size]


def key(environ: Optional[Dict[str, str]] = None) -> str:
    """The key of this process's installation and environment: 24 hex digits."""
    env = os.environ if environ is None else environ
    paths = sys.path[1:]
    facts = {
        "python": [os.path.realpath(sys.executable), sys.version, list(sys.flags),
                   sorted(sys._xoptions.items()), sys.warnoptions],  # noqa: SLF001
        "path": paths,
        # A package installed or removed changes its site-packages folder's time.
        "path_stamps": [_stamp(p) for p in paths],
        "solar": [[f, *_stamp(f)] for f in _package_files()],
        "env": sorted((k, v) for k, v in env.items() if k not in VOLATILE),
        # What a child inherits from the server's process rather than the client's.
        "limits": [resource.getrlimit(r) for r in _LIMITS],
        "cpus": sorted(os.sched_getaffinity(0)),
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
    }
    blob = json.dumps(facts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:_KEY_DIGITS]


def socket_path(server_key: str, directory: str) -> Optional[str]:
    """The socket of the server with this key, or None when the path is too long for a
    Unix socket (then there is no server)."""
    path = os.path.join(directory, f"{server_key}.sock")
    return path if len(os.fsencode(path)) <= _MAX_SOCKET_PATH else None


def usable_socket_path(server_key: str, directory: str) -> str:
    """socket_path(), or PlaceError saying how to get a usable one (where a server starts)."""
    path = socket_path(server_key, directory)
    if path is None:
        raise PlaceError(f"{directory}: too long a folder for a socket's path; set "
                         f"{DIR_ENV} to a shorter one")
    return path
