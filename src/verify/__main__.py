"""``python -m verify``: the command line (the guard keeps spawned worker processes from re-running it)."""

from verify.frontends.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
