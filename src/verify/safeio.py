"""Reading untrusted input files safely, and writing outputs atomically (shared by every layer and the front ends).

Source files for re-checking (certificates) and user files (expectations) come from
elsewhere and are treated as hostile: only a *regular* file is opened (a FIFO, a device
or a directory is refused before ``open``, so nothing blocks), and its size is capped
before and while reading.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable

#: largest input file read, bytes
MAX_INPUT_BYTES = 64 * 2**20


class UnsafeInput(ValueError):
    """An input file that is not a regular file, is too large, or cannot be read."""


def read_regular_file(path: str | Path, limit: int = MAX_INPUT_BYTES, follow_symlinks: bool = True) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``limit`` bytes.

    Args:
        follow_symlinks: False refuses a symbolic link (for files that must lie inside a
            directory, such as certificates and their manifest).

    Raises:
        UnsafeInput: missing or unreadable, not a regular file (FIFO, device, directory,
            socket; a symbolic link when ``follow_symlinks`` is False), or larger than
            ``limit``; the message names the problem, not the path.
    """
    try:
        st = os.stat(path, follow_symlinks=follow_symlinks)
    except OSError as e:
        raise UnsafeInput(f"cannot read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeInput("not a regular file")
    if st.st_size > limit:
        raise UnsafeInput(f"{st.st_size} bytes, more than the {limit}-byte limit")
    try:
        # O_NONBLOCK: should the file be swapped for a FIFO after the stat, open still returns
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
        with open(os.open(path, flags), "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise UnsafeInput("not a regular file")
            data = fh.read(limit + 1)
    except OSError as e:
        raise UnsafeInput(f"cannot read ({e.strerror or e})") from None
    if len(data) > limit:
        raise UnsafeInput(f"more than the {limit}-byte limit")
    return data


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Write a file atomically: ``write(fh)`` fills a temporary file in the target's directory (a unique name, so
    two writers never share it), which is flushed, fsync'ed and then renamed over ``path`` (``os.replace``): a
    reader sees the old file or the new one, never a half-written one, also after a crash.  The file gets the
    permissions of every other output (0666 less the umask; ``mkstemp`` alone gives 0600).  On any error the
    temporary file is removed and the error raised.

    Returns:
        ``path`` as a Path.
    """
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.resolve().parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p
