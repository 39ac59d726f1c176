"""`solar server`: bad command lines, and sockets' folders that another user could use
(docs/server.md, "Where the sockets are"). Every refusal comes before anything is made or
started: no folder, socket, lock or log is left behind."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from . import Case

_OTHER_USER = 65534  # nobody


def _folder(mode: int, owner: int = -1) -> Callable[[Path], None]:
    """A sockets folder `sockets` of this mode (and owner, when given)."""

    def setup(root: Path) -> None:
        folder = root / "sockets"
        folder.mkdir()
        folder.chmod(mode)
        if owner >= 0:
            os.chown(folder, owner, owner)

    return setup


def _symlink(root: Path) -> None:
    (root / "real").mkdir(mode=0o700)
    (root / "sockets").symlink_to(root / "real")


_IN_FOLDER = {"SOLAR_SERVER_DIR": "sockets"}  # relative: the case's own folder

CASES = [
    Case("server-no-action", ["server"], "usage",
         "the following arguments are required: ACTION"),
    Case("server-unknown-action", ["server", "launch"], "usage",
         "invalid value 'launch' (choices: start, run, status, stop)"),
    Case("server-idle-zero", ["server", "start", "--idle", "0"], "usage",
         "expected a number above 0, got '0'"),
    Case("server-idle-negative", ["server", "start", "--idle", "-5"], "usage",
         "expected a number above 0, got '-5'"),
    Case("server-idle-nan", ["server", "run", "--idle", "nan"], "usage",
         "expected a number above 0, got 'nan'"),
    Case("server-idle-infinite", ["server", "start", "--idle", "inf"], "usage",
         "expected a number above 0, got 'inf'"),
    Case("server-idle-text", ["server", "start", "--idle", "soon"], "usage",
         "expected a number above 0, got 'soon'"),
    Case("server-idle-missing", ["server", "run", "--idle"], "usage", "expected one argument"),
    Case("server-wait-zero", ["server", "start", "--wait", "0"], "usage",
         "expected a number above 0, got '0'"),
    Case("server-status-extra", ["server", "status", "now"], "usage",
         "unexpected argument now"),
    Case("server-stop-unknown-option", ["server", "stop", "--force"], "usage",
         "unknown option --force"),
    Case("server-folder-others-write", ["server", "start"], "io",
         "other users may write to it (mode 777)", setup=_folder(0o777), env=_IN_FOLDER),
    Case("server-folder-sticky-like-tmp", ["server", "start"], "io",
         "other users may write to it (mode 1777)", setup=_folder(0o1777), env=_IN_FOLDER),
    Case("server-folder-others-enter", ["server", "start"], "io",
         "other users may enter it (mode 755)", setup=_folder(0o755), env=_IN_FOLDER),
    Case("server-folder-others-enter-only", ["server", "run"], "io",
         "other users may enter it (mode 711)", setup=_folder(0o711), env=_IN_FOLDER),
    Case("server-folder-group-enters", ["server", "status"], "io",
         "other users may enter it (mode 750)", setup=_folder(0o750), env=_IN_FOLDER),
    Case("server-folder-others-list", ["server", "stop", "--all"], "io",
         "other users may list it (mode 704)", setup=_folder(0o704), env=_IN_FOLDER),
    Case("server-folder-another-users", ["server", "start"], "io",
         f"owned by uid {_OTHER_USER}, not by this user",
         setup=_folder(0o700, _OTHER_USER), env=_IN_FOLDER),
    Case("server-folder-is-a-file", ["server", "start"], "io", "sockets: not a folder",
         files={"sockets": "not a folder\n"}, env=_IN_FOLDER),
    Case("server-folder-is-a-symlink", ["server", "start"], "io", "sockets: not a folder",
         setup=_symlink, env=_IN_FOLDER),
    Case("server-folder-too-long", ["server", "start"], "io",
         "too long a folder for a socket's path", env={"SOLAR_SERVER_DIR": "x" * 120}),
    # A command that reads a program, with the server allowed but its folder unsafe: it
    # runs in its own process, and fails there as it would anyway.
    Case("server-client-unsafe-folder", ["analyze", "missing.py"], "io", "missing.py",
         setup=_folder(0o777), env={**_IN_FOLDER, "SOLAR_NO_SERVER": ""}),
]
