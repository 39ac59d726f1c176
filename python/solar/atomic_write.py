"""Output files written whole or not at all, without losing what was there.

Every file the Python side writes (--json, --save-trace, --ski-slope, --html, --csv, a
suite's document, sweep's table and plots) goes through here, by the rules the C++ CLI's
outputs follow (solar/util/output_file.h, docs/cli.md "Output files"):

- the text is written to a temporary file in the target's folder and renamed over the
  target when complete, so a failure leaves no partial file and an earlier file as it was;
- an existing target keeps its mode (and its owner, where this user may give it); a new one
  gets 0666 less the umask, as open() and the C++ CLI give (mkstemp's own 0600 is replaced);
- an existing target with no write bit is refused (UserError, kind io), whoever runs the
  command: root's access() would let it through, so the mode bits are read;
- a symlink is written through (the file it points to is replaced; the link stays);
- every failure is a solar.UserError (kind io) whose message names the path as given,
  never the temporary file.

`check` is the check a command makes before any work: its outputs against its inputs and
each other, and whether each can be written (solar._core.check_outputs, the C++ CLI's own).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import IO, Iterator, Optional, Sequence, Tuple

from . import _core
from .errors import user_error


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


def _followed(path: str) -> str:
    """The file a write to `path` replaces: `path`, or the end of its chain of symlinks."""
    seen = 0
    while os.path.islink(path) and seen < 40:
        link = os.readlink(path)
        path = link if os.path.isabs(link) else os.path.join(os.path.dirname(path), link)
        seen += 1
    return path


def _refusal(target: str) -> Optional[str]:
    """Why an existing `target` may not be replaced (None when it is missing or may be)."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return None
    except OSError as e:
        return e.strerror or str(e)
    if stat.S_ISDIR(st.st_mode):
        return "it is a folder"
    if not stat.S_ISREG(st.st_mode):
        return ("it is not a regular file (a device, pipe or socket); give a file path, or `-` "
                "for stdout where the option takes it")
    if not st.st_mode & 0o222:
        return (f"the file is read-only (mode {stat.S_IMODE(st.st_mode):04o}); make it writable "
                "(chmod u+w) or give another path")
    if not os.access(target, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
        return "the file is not writable by this user (Permission denied)"
    return None


def _io(path: str, why: str):
    return user_error(f"cannot write '{path}': {why}", "io")


@contextlib.contextmanager
def atomic_file(path: str, binary: bool = False) -> Iterator[IO]:
    """A text file (a binary one with binary=True: Parquet) to write `path`'s contents to;
    renamed over `path` when the block ends without an exception, removed otherwise."""
    target = _followed(path)
    why = _refusal(target)
    if why is not None:
        raise _io(path, why)
    folder = os.path.dirname(os.path.abspath(target))
    shown = os.path.dirname(path if target == path else target) or "."
    if not os.path.isdir(folder):
        raise _io(path, f"folder '{shown}' does not exist")
    try:
        old = os.stat(target)
    except OSError:
        old = None
    name = os.path.basename(target)[:200]  # the temporary's name stays within NAME_MAX
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise _io(path, f"folder '{shown}' does not accept new files "
                        f"({e.strerror or e})") from None
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")) as f:
            yield f
        if old is not None:
            if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):  # not this user's to give: stays theirs
                    os.chown(tmp, old.st_uid, old.st_gid)
            os.chmod(tmp, stat.S_IMODE(old.st_mode) & 0o777)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        # A write or rename that failed (a full disk): named by the user's path. An error of
        # the caller's own (another file it read) passes as it is.
        if isinstance(e, OSError) and e.filename in (None, tmp, target):
            raise _io(path, e.strerror or str(e)) from None
        raise


def write_atomically(path: str, text: str) -> None:
    """Writes `text` to `path` (see atomic_file)."""
    with atomic_file(path) as f:
        f.write(text)


def check(inputs: Sequence[Tuple[str, Optional[str]]],
          outputs: Sequence[Tuple[str, Optional[str]]]) -> None:
    """Before any work: no output (what, path) names an input (what, path) or an earlier
    output (the same file: device and inode, or real path), and each can be written (its
    folder accepts a new file, it is no folder and not read-only). Raises solar.UserError
    (kind io) naming the path; None paths and `-` are skipped."""
    _core.check_outputs([(w, p) for w, p in inputs if p],
                        [(w, p) for w, p in outputs if p])
