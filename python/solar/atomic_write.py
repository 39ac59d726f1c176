"""Output files written whole or not at all, with the permissions any other file gets.

Every file the Python side writes (--json, --save-trace, --ski-slope, --csv, a suite's
document) goes through here: the text is written to a temporary file in the target's folder
and renamed over the target when complete, so a failure leaves no partial file. mkstemp
creates its file 0600 (private); the finished file is given 0666 less the umask, as
open() and the C++ CLI's graph outputs get, so reports stay readable by the user's group
the way their umask says.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import IO, Iterator


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_file(path: str, binary: bool = False) -> Iterator[IO]:
    """A text file (a binary one with binary=True: Parquet) to write `path`'s contents to;
    renamed over `path` when the block ends without an exception, removed otherwise."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")) as f:
            yield f
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_atomically(path: str, text: str) -> None:
    """Writes `text` to `path` (see atomic_file)."""
    with atomic_file(path) as f:
        f.write(text)
