"""Named fault seams: construction functions a test may replace, by name, for the length of a ``with`` block.

A test that shows a check can fail corrupts the construction the check verifies.  Marking a construction
function ``@seam("kvshift24.logits")`` registers it under that name; :func:`inject` then replaces it::

    with faults.inject("kvshift24.logits", flipped):
        ev = check_theorem2(...)

Rules:

* zero cost: :func:`seam` returns the function itself (no wrapper), so a run with nothing injected calls
  the very same function object as an unmarked one;
* reach: :func:`inject` replaces the function wherever a name points to it, namely its owner's attribute (the
  module, or the class of a method) and every module-level alias made by ``from ... import name`` in a
  module already imported; leaving the block restores each of them, also when the block raises;
* refusal: an unknown name raises ``KeyError`` listing the known seams, so a renamed construction fails the
  test that injects into it instead of leaving the construction untouched; so does a seam whose function
  was replaced by someone else meanwhile;
* a seam is registered when its module is imported: import the construction module before injecting;
* out of reach: a reference captured before the block in a closure, a default argument or a
  ``functools.partial``.

This module imports the standard library only: every layer and construction may import it.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: seam name -> (module name, qualified name) of the function it names
_SEAMS: dict[str, tuple[str, str]] = {}


def seam(name: str) -> Callable[[F], F]:
    """Register the decorated function as the fault seam ``name`` and return it unchanged.

    Raises:
        ValueError: ``name`` already names another function.
    """

    def mark(fn: F) -> F:
        where = (fn.__module__, fn.__qualname__)
        known = _SEAMS.setdefault(name, where)
        if known != where:
            raise ValueError(f"fault seam {name!r} already names {known[0]}.{known[1]}")
        return fn

    return mark


def names() -> tuple[str, ...]:
    """The registered seam names, sorted."""
    return tuple(sorted(_SEAMS))


def _owner(name: str) -> tuple[Any, str]:
    if name not in _SEAMS:
        raise KeyError(f"no fault seam named {name!r} (is its construction module imported?); "
                       f"seams: {', '.join(names()) or 'none'}")
    module, qualname = _SEAMS[name]
    owner: Any = sys.modules[module]
    *path, attr = qualname.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner, attr


def original(name: str) -> Callable[..., Any]:
    """The function the seam ``name`` currently names (for a replacement that calls through to it)."""
    owner, attr = _owner(name)
    fn = vars(owner)[attr]
    return fn.__func__ if isinstance(fn, staticmethod) else fn


@contextmanager
def inject(name: str, replacement: Callable[..., Any]) -> Iterator[None]:
    """Replace the seam ``name`` by ``replacement`` inside the ``with`` block, everywhere a name points to it.

    Raises:
        KeyError: no seam of that name is registered, or its function is no longer where it was registered.
    """
    owner, attr = _owner(name)
    fn = vars(owner)[attr]
    module, qualname = _SEAMS[name]
    if getattr(fn, "__qualname__", None) != qualname:
        raise KeyError(f"fault seam {name!r}: {module}.{qualname} is replaced already (nested injection?)")
    if isinstance(fn, staticmethod):  # a static method stays one, so calls through an instance pass no self
        replacement = staticmethod(replacement)
    patched: list[tuple[Any, str]] = [(owner, attr)]
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if d is None or mod is owner:
            continue
        patched.extend((mod, k) for k, v in list(d.items()) if v is fn)
    try:
        for obj, key in patched:
            setattr(obj, key, replacement)
        yield
    finally:
        for obj, key in patched:
            setattr(obj, key, fn)
