"""Type-check the ``verify`` package with mypy (the CI gate; configuration in pyproject.toml).

The package's top-level folders are fixed by the design card (symbolic/, solver/, numeric/, proofs/
beside src/verify/), and setuptools maps them into one package ``verify``.  mypy cannot follow that
mapping through an editable install, so this script lays the package out as Python sees it: a
temporary directory of symbolic links ``verify/{evidence.py, constructions, symbolic, solver, numeric,
proofs, ...}``, then runs mypy on ``-p verify`` there.  Messages name the real files.

    python tools/typecheck.py        # exit 0 clean, 1 type errors, 2 mypy could not run
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: package folder -> where it lives in the repository (the [tool.setuptools.package-dir] mapping)
LAYOUT = {"symbolic": "symbolic", "solver": "solver", "numeric": "numeric", "proofs": "proofs"}


def main() -> int:
    from mypy import api

    with tempfile.TemporaryDirectory(prefix="verify-typecheck-") as tmp:
        pkg = Path(tmp) / "verify"
        pkg.mkdir()
        for entry in sorted((ROOT / "src" / "verify").iterdir()):
            if entry.name != "__pycache__":
                os.symlink(entry, pkg / entry.name)
        for name, folder in LAYOUT.items():
            os.symlink(ROOT / folder, pkg / name)
        out, err, code = _run(api, tmp)
        real = {f"verify/{name}/": f"{folder}/" for name, folder in LAYOUT.items()}
        for line in out.splitlines():
            for fake, true in real.items():
                if line.startswith(fake):
                    line = true + line[len(fake):]
                    break
            else:
                if line.startswith("verify/"):
                    line = "src/" + line
            print(line)
        if err:
            print(err, file=sys.stderr, end="")
        return code


def _run(api, tmp: str) -> tuple[str, str, int]:
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        # the cache lives in the temporary tree: mypy keys it by path and modification time, which a
        # link farm rebuilt on every run would make stale
        return api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
                        str(Path(tmp) / ".mypy_cache"), "-p", "verify"])
    finally:
        os.chdir(cwd)


if __name__ == "__main__":
    sys.exit(main())
