"""A Ctrl-C that cannot be lost (and SIGTERM, taken the same way: exit 143 instead of 130).

Without it, an in-process run (``--serial``, or a claim with one layer) loses a Ctrl-C in two ways:

- Python ignores an exception raised inside a destructor (it prints "Exception ignored in ..." and
  goes on), and z3's Python objects run ``Z3_dec_ref`` in ``__del__`` all the time;
- z3 takes SIGINT itself while it works; when its call ends with an answer anyway (the search
  finished as the key came, or the call was not a search), nothing is left of the key.

While :func:`watching` is active (the command line's whole run):

- SIGINT sets a flag as well as raising ``KeyboardInterrupt``; :func:`check` turns the flag back into
  ``KeyboardInterrupt`` at the next checkpoint (each solver call, each layer) and the command line
  reads :func:`pressed` before it reports anything;
- z3 is told to leave SIGINT alone (``ctrl_c`` off, see :func:`z3_takes_ctrl_c`), and a watcher thread,
  woken by Python's own C-level handler through :func:`signal.set_wakeup_fd`, interrupts the z3
  contexts that are inside a call (:func:`interruptible`), so a long search still stops at once;
- an error that a destructor raises after the key (a z3 object half-built when it came) is not
  printed under the one-line "verify: aborted".

No dependencies (no z3 import): the solver, numeric and proofs layers all import this module, and the
parent of a parallel run must stay light.
"""

from __future__ import annotations

import functools
import os
import select
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

_pressed = threading.Event()
_watched = threading.Event()
_lock = threading.Lock()
_note_lock = threading.RLock()
_running: set[Any] = set()  # z3 contexts inside a call now: what the watcher interrupts


_deferring = False
_signum = [int(signal.SIGINT)]  # the signal that stopped the run: SIGINT (exit 130) or SIGTERM (exit 143)


def _note(signum: int) -> None:
    """Set the flag, remembering the first signal (the watcher thread may see it before the handler runs)."""
    with _note_lock:  # reentrant: a handler may run inside another (never _lock, which the main thread holds in interruptible)
        if not _pressed.is_set():
            _signum[0] = int(signum)
            _pressed.set()


def _on_sigint(signum: int, frame: Any) -> None:
    _note(signum)
    if not _deferring:
        raise KeyboardInterrupt


@contextmanager
def deferred() -> Iterator[None]:
    """Within the block a Ctrl-C only sets the flag; :func:`check` raises it at the end.  For code
    that cannot take an exception half-way: ``import torch`` interrupted inside its pybind11
    initialisation ends the process with a C++ ``terminate`` (SIGABRT) instead of stopping.

    Raises:
        KeyboardInterrupt: on exit, when Ctrl-C was pressed in the current :func:`watching` block.
    """
    global _deferring
    was, _deferring = _deferring, True
    try:
        yield
    finally:
        _deferring = was
    check()


def _interrupt_running(signum: int = signal.SIGINT) -> None:
    _note(signum)
    with _lock:
        running = list(_running)
    for ctx in running:
        ctx.interrupt()  # z3: "can be invoked from a thread different from the one executing"


def _watch(fd: int) -> None:
    """The watcher thread: each byte on ``fd`` is a signal number Python's C-level handler wrote
    (the main thread may be inside z3 and unable to run Python handlers); EOF ends it."""
    while True:
        select.select([fd], [], [])
        data = os.read(fd, 64)
        if not data:
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            if sig in data:
                _interrupt_running(sig)
                break


@contextmanager
def watching() -> Iterator[None]:
    """Watch for Ctrl-C over a whole run (module docstring).  Installed only from the main thread
    and only over Python's default SIGINT handler (an embedding program's own handler is left
    alone); SIGTERM is taken the same way (workers stopped, one line, exit 143) where its handler is
    the default one, also when SIGINT is ignored (a job a non-interactive shell put in the
    background).  The previous handlers, wake-up fd and unraisable hook are restored on exit, and
    the flag is cleared so that a later call starts clean."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    previous_term = signal.getsignal(signal.SIGTERM) if main else None
    _pressed.clear()
    _signum[0] = int(signal.SIGINT)
    take_int = previous is signal.default_int_handler
    take_term = main and previous_term == signal.SIG_DFL
    if not (take_int or take_term):
        yield
        return
    hook = sys.unraisablehook
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    old_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(read_end,), name="verify-ctrl-c", daemon=True)
    watcher.start()
    if take_int:
        signal.signal(signal.SIGINT, _on_sigint)
    if take_term:
        signal.signal(signal.SIGTERM, _on_sigint)
    sys.unraisablehook = functools.partial(_quiet_when_pressed, hook)
    _watched.set()
    try:
        yield
    finally:
        _watched.clear()
        signal.set_wakeup_fd(old_fd)
        os.close(write_end)  # the watcher reads EOF and ends
        watcher.join(1.0)
        os.close(read_end)
        sys.unraisablehook = hook
        _pressed.clear()
        signal.signal(signal.SIGINT, previous)  # also undoes a stopping run's SIG_IGN
        if take_term:
            signal.signal(signal.SIGTERM, previous_term)


def _quiet_when_pressed(hook: Any, unraisable: Any) -> None:
    """After Ctrl-C, what destructors raise is not news: the key's own swallowed KeyboardInterrupt
    (the flag carries it), or the error of an object the key left half-built (z3's ``Context``
    without ``owner``).  Before it, everything goes to ``hook``."""
    if _pressed.is_set():
        return
    hook(unraisable)


def pressed() -> bool:
    """Whether Ctrl-C was pressed (or SIGTERM came) inside the current :func:`watching` block."""
    return _pressed.is_set()


def exit_code() -> int:
    """The exit code of a stopped run: 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM)."""
    return 128 + _signum[0]


def z3_takes_ctrl_c() -> bool:
    """Whether z3 should install its own SIGINT handler during a call: not while :func:`watching`
    (the watcher interrupts z3 instead, and never loses the key), as z3 does by default otherwise."""
    return not _watched.is_set()


@contextmanager
def blocked_for_children() -> Iterator[None]:
    """SIGINT blocked in this thread within the block: processes started here (forked, or spawned
    by fork and exec) begin with it blocked, so a Ctrl-C during their start-up, before they ignore
    it, cannot print a traceback from each; a key pressed meanwhile reaches this process at the end."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


@contextmanager
def interruptible(ctx: Any) -> Iterator[None]:
    """Within the block, Ctrl-C interrupts ``ctx`` (a z3 ``Context``) from the watcher thread;
    :func:`check` runs before it.

    Raises:
        KeyboardInterrupt: Ctrl-C was pressed before the block.
    """
    check()
    with _lock:
        _running.add(ctx)
    try:
        yield
    finally:
        with _lock:
            _running.discard(ctx)


def check() -> None:
    """A checkpoint: raise ``KeyboardInterrupt`` if Ctrl-C was pressed, even if the exception it
    raised at the time was swallowed (inside a destructor) or z3 took the key.

    Raises:
        KeyboardInterrupt: Ctrl-C was pressed in the current :func:`watching` block.
    """
    if _pressed.is_set():
        raise KeyboardInterrupt
