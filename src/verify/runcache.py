"""Run-scoped memo tables: every memo of the layers and constructions lives as long as one run.

A memo here is pure (a hit returns what a fresh computation would, for fixed code), so its lifetime
changes speed only, never an answer.  It still matters: a test that changes a construction or a solver
between two runs (a fault injection) must see the second run compute afresh, and a long-lived process
(a service calling :mod:`verify.api`) must not grow its memos without bound across runs.

* :class:`RunCache` holds one table per memo; :func:`scope` makes one current for a ``with`` block
  (a context variable, like :func:`verify.evidence.using`);
* :func:`run_scope` is what a run opens: the enclosing scope where a caller opened one (runs in it share
  memos), else a fresh one that ends with the run.  The pipeline opens it per run, a worker process of the
  pool (started for one run) :func:`enter`-s one for its life, the test suite's fixture :func:`scope` per test;
* outside every scope the memos use one process-wide default cache, so a caller of the layer functions
  gets the same hits as inside a run;
* :class:`Memo` is a named table (a ``dict``-like handle to the current scope's table), :func:`memoize`
  a ``functools.lru_cache`` whose entries live in the current scope.

This module imports the standard library only: every layer and construction may import it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from typing import Any, Callable, Iterator, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class RunCache:
    """The memo tables of one scope, one per :class:`Memo` or :func:`memoize`-d function."""

    def __init__(self) -> None:
        self._tables: dict[object, Any] = {}

    def table(self, owner: object, factory: Callable[[], Any]) -> Any:
        """The table of ``owner`` in this scope (made by ``factory`` on first use)."""
        t = self._tables.get(owner)
        if t is None:
            t = self._tables[owner] = factory()
        return t

    def clear(self) -> None:
        """Drop every table of this scope."""
        self._tables.clear()

    def __len__(self) -> int:
        """The number of entries over all tables."""
        return sum(len(t) for t in self._tables.values())


_DEFAULT = RunCache()
_CURRENT: contextvars.ContextVar[RunCache | None] = contextvars.ContextVar("verify_runcache", default=None)


def current() -> RunCache:
    """The cache of the innermost open scope, or the process-wide default outside every scope."""
    cache = _CURRENT.get()
    return _DEFAULT if cache is None else cache  # not ``or``: an empty cache is falsy


@contextlib.contextmanager
def scope(cache: RunCache | None = None) -> Iterator[RunCache]:
    """Make ``cache`` (a fresh :class:`RunCache` when None) current for the ``with`` block."""
    cache = RunCache() if cache is None else cache
    token = _CURRENT.set(cache)
    try:
        yield cache
    finally:
        _CURRENT.reset(token)


def enter() -> RunCache:
    """Make a fresh cache current for the rest of this thread's context, with no end: the scope of a
    worker process, which lives for one run (the pool's workers are started for one run and stopped after)."""
    cache = RunCache()
    _CURRENT.set(cache)
    return cache


@contextlib.contextmanager
def run_scope() -> Iterator[RunCache]:
    """The scope of one run: the enclosing one where a caller opened a scope, else a fresh one."""
    open_ = _CURRENT.get()
    if open_ is not None:
        yield open_
        return
    with scope() as cache:
        yield cache


class Memo:
    """A named memo table whose entries live in the current scope.

    ``table()`` is the current scope's container (made by ``factory``: ``dict``, ``OrderedDict``, ``list``);
    a caller that evicts or reorders entries works on it directly.  The mapping methods reach the same table.
    """

    def __init__(self, name: str, factory: Callable[[], Any] = dict) -> None:
        self.name, self.factory = name, factory

    def table(self) -> Any:
        """This memo's table in the current scope."""
        return current().table(self, self.factory)

    def get(self, key: Any, default: Any = None) -> Any:
        return self.table().get(key, default)

    def pop(self, key: Any, *default: Any) -> Any:
        return self.table().pop(key, *default)

    def clear(self) -> None:
        self.table().clear()

    def __getitem__(self, key: Any) -> Any:
        return self.table()[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.table()[key] = value

    def __contains__(self, key: Any) -> bool:
        return key in self.table()

    def __len__(self) -> int:
        return len(self.table())

    def __repr__(self) -> str:
        return f"Memo({self.name!r}, {len(self)} entries in this scope)"


_KWARGS = object()  # separates positional from keyword arguments in a key (as functools.lru_cache does)


def memoize(maxsize: int | None = 128) -> Callable[[F], F]:
    """``functools.lru_cache(maxsize)`` with its entries in the current scope: the same key (the positional
    arguments, then the keyword arguments in call order), a hit returns the very object computed, the least
    recently used entry goes first past ``maxsize``.  The wrapper keeps ``cache_clear()`` (the current scope's
    entries) and ``__wrapped__``."""
    import collections

    def decorate(fn: F) -> F:
        memo = Memo(f"{fn.__module__}.{fn.__qualname__}", collections.OrderedDict)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = args + (_KWARGS,) + tuple(kwargs.items()) if kwargs else args
            table = memo.table()
            try:
                value = table[key]
            except KeyError:
                pass
            else:
                table.move_to_end(key)
                return value
            value = fn(*args, **kwargs)
            table[key] = value
            if maxsize is not None and len(table) > maxsize:
                table.popitem(last=False)
            return value

        wrapper.cache_clear = memo.clear  # type: ignore[attr-defined]
        wrapper.memo = memo  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
