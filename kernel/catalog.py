"""Every kernel statement: the per-paper catalogs (``catalog_<paper>.py``) gathered in one table."""

from __future__ import annotations

import importlib
from functools import lru_cache

from verify.kernel.spec import KernelStatement

#: the catalogs, one module per theory group
CATALOGS = ("catalog_ws24", "catalog_pr26", "catalog_kvshift24", "catalog_analytic")


@lru_cache(maxsize=None)
def statements() -> tuple[KernelStatement, ...]:
    """Every catalog entry, in catalog order (a catalog module not present yet contributes nothing).

    Raises:
        ValueError: two entries name the same theorem for the same variant.
    """
    out: list[KernelStatement] = []
    for name in CATALOGS:
        try:
            module = importlib.import_module(f"verify.kernel.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"verify.kernel.{name}":
                raise
            continue
        out.extend(module.STATEMENTS)
    seen = set()
    for s in out:
        key = (s.claim, s.variant, s.qualified)
        if key in seen:
            raise ValueError(f"kernel catalog: {s.qualified} listed twice for {s.claim}[{s.variant}]")
        seen.add(key)
    return tuple(out)
