"""Hostile-input guards shared by the CLI and the pytest plugin.

Every option and file a user hands to ``verify`` is checked here *before any work starts*;
a refusal is one :class:`~verify.core.model.InputError` line (the CLI prints it and exits 2).
The rules, one per input kind:

* ``--timeout SECONDS``: a finite number in [:data:`MIN_TIMEOUT_S`, :data:`MAX_TIMEOUT_S`]
  (the solvers take whole milliseconds, and 0 ms means "no limit" to z3, so a budget under
  10 ms cannot be honoured and is refused rather than silently lifted);
* ``--seed N``: an integer in [0, :data:`MAX_SEED`] (every derived seed stays inside the
  64-bit range torch and numpy generators accept);
* output paths (``--report``, ``--junit``, ``--certificates``, ``--plots``): the parent
  directory must already exist and accept a new file (probed by creating and removing a
  temporary file), no two outputs may name the same path, and ``--report -`` means stdout;
* every output is written atomically (:func:`atomic_write_text`: a temporary file in the
  same directory, then ``os.replace``), so an interrupted run never leaves a half-written file;
* input files are read only when they are regular files under a size cap
  (:func:`read_input_file`): a FIFO, a device or a directory is refused, never waited on;
* a flag given twice is refused (:func:`check_duplicate_flags`), and an error line never
  echoes more than :data:`ECHO_LIMIT` characters of what the user typed (:func:`clip`).
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Sequence

from verify.core.model import InputError
from verify.safeio import UnsafeInput, atomic_write, read_regular_file

MIN_TIMEOUT_S = 0.01
MAX_TIMEOUT_S = 86_400.0
MAX_SEED = 2**31 - 1
ECHO_LIMIT = 80


def clip(text: object, limit: int = ECHO_LIMIT, quote: bool = False) -> str:
    """``text`` as a string of at most ``limit`` characters (the middle elided, with the length of
    ``text`` itself); ``quote``: the shown part in Python quotes, so blanks and escapes are visible."""
    s = str(text)
    if len(s) <= limit:
        return repr(s) if quote else s
    shown = f"{s[: limit // 2]}...{s[-(limit // 4):]}"
    return f"{repr(shown) if quote else shown} ({len(s)} characters)"


def check_timeout(value: float, flag: str = "--timeout") -> int:
    """Validate a per-obligation solver budget in seconds; return it in whole milliseconds.

    Raises:
        InputError: NaN, infinite, or outside [MIN_TIMEOUT_S, MAX_TIMEOUT_S].
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise InputError(f"{flag} must be a finite number of seconds, got {clip(value)}")
    if not MIN_TIMEOUT_S <= value <= MAX_TIMEOUT_S:
        raise InputError(f"{flag} must be between {MIN_TIMEOUT_S} and {MAX_TIMEOUT_S:g} seconds, got {value:g}")
    return int(round(value * 1000))


def check_seed(value: int, flag: str = "--seed") -> int:
    """Validate the master seed.

    Raises:
        InputError: not an integer in [0, MAX_SEED].
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise InputError(f"{flag} must be an integer between 0 and {MAX_SEED}, got {clip(value)}")
    return value


def _probe_dir(directory: Path, what: str) -> None:
    """Refuse a directory that is missing, not a directory, or does not accept a new file."""
    if not directory.is_dir():
        raise InputError(f"{what}: directory {clip(directory)} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".verify-probe-", dir=directory)
    except OSError as e:
        raise InputError(f"{what}: cannot write in {clip(directory)} ({e.strerror or e})") from None
    os.close(fd)
    os.unlink(tmp)


def _refuse_empty(path: str, flag: str, wanted: str) -> None:
    """An empty or all-blank path (``--junit ""``, a shell variable that was not set) is a mistake,
    not the current directory."""
    if not path.strip():
        raise InputError(f"{flag} needs {wanted}, got an empty one")


def probe_output_file(path: str | None, flag: str) -> None:
    """Check before any work that ``path`` can be written (``-`` is stdout and always can).

    Raises:
        InputError: the parent directory is missing or read-only, or the path is a directory.
    """
    if path is None or path == "-":
        return
    _refuse_empty(path, flag, "a file name")
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{flag} {clip(path)}: is a directory")
    if p.exists() and not p.is_file():
        raise InputError(f"{flag} {clip(path)}: exists and is not a regular file")
    _probe_dir(p.resolve().parent, f"{flag} {clip(path)}")


def probe_output_dir(path: str | None, flag: str) -> None:
    """Check before any work that directory ``path`` exists and is writable, or that its
    parent does (it is then created when the outputs are written: one level only, as for files).

    Raises:
        InputError: a missing parent, a read-only location, or a path that is a file.
    """
    if path is None:
        return
    _refuse_empty(path, flag, "a directory name")
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise InputError(f"{flag} {clip(path)}: exists and is not a directory")
        _probe_dir(p, f"{flag} {clip(path)}")
    else:
        _probe_dir(p.resolve().parent, f"{flag} {clip(path)}")


def parse_layers(raw: str, flag: str = "--layers") -> tuple[str, ...]:
    """A comma-separated list of layer names (``symbolic,solver``), checked.

    Raises:
        InputError: an empty list or a name that is not a layer.
    """
    from verify.evidence import LAYERS

    names = tuple(x.strip() for x in raw.split(",") if x.strip())
    if not names or any(n not in LAYERS for n in names):
        raise InputError(f"{flag} {clip(repr(raw))}: choose from {', '.join(LAYERS)}")
    return names


def check_cache_dir(path: str | None, flag: str = "--cache-dir") -> str | None:
    """Check a checkpoint cache directory before any work (as :func:`probe_output_dir`); return it.

    Raises:
        InputError: a path that is a file, a missing parent, or a read-only location.
    """
    if path is None:
        return None
    probe_output_dir(path, flag)
    return str(path)


def check_distinct_outputs(**paths: str | None) -> None:
    """Refuse two output options that name the same file or directory.

    Raises:
        InputError: naming both flags.
    """
    seen: dict[Path, str] = {}
    for flag, path in paths.items():
        if path is None or path == "-":
            continue
        key = Path(path).resolve()
        name = "--" + flag.replace("_", "-")
        if key in seen:
            raise InputError(f"{seen[key]} and {name} name the same path {clip(path)}; give each its own")
        seen[key] = name


def atomic_write_text(path: str | Path, text: str, flag: str = "output") -> None:
    """Write ``text`` to ``path`` atomically (temporary file in the same directory, then rename).

    Raises:
        InputError: the file cannot be written (the temporary file is removed).
    """
    atomic_write_bytes(path, text.encode("utf-8"), flag)


def atomic_write_bytes(path: str | Path, data: bytes, flag: str = "output") -> None:
    """Bytes version of :func:`atomic_write_text`."""
    try:
        atomic_write(path, lambda fh: fh.write(data))
    except OSError as e:
        raise InputError(f"{flag} {clip(path)}: cannot write ({e.strerror or e})") from None


def read_input_file(path: str | Path, what: str) -> bytes:
    """Read a user's input file (regular files only, size-capped; see :mod:`verify.safeio`).

    Raises:
        InputError: ``what PATH: problem`` in one line.
    """
    try:
        return read_regular_file(path)
    except UnsafeInput as e:
        raise InputError(f"{what} {clip(path)}: {e}") from None


def check_duplicate_flags(argv: Sequence[str]) -> None:
    """Refuse a long option given twice (``--seed 1 --seed 2``): the last one would win silently.

    Only tokens before a ``--`` terminator that start with ``--`` count; a value that
    follows a flag is skipped when it does not itself look like a flag.

    Raises:
        InputError: naming the repeated flag.
    """
    seen: set[str] = set()
    for tok in argv:
        if tok == "--":
            break
        if not tok.startswith("--") or len(tok) < 3:
            continue
        name = tok.split("=", 1)[0]
        if name in ("--help", "--version"):
            continue
        if name in seen:
            raise InputError(f"{clip(name)} is given twice; give each option once")
        seen.add(name)
