"""Freeze a claim's protocol: write its hash and today's date into its paper package's protocols.json.

    python tools/freeze_protocol.py pr26:auc

A version already frozen is never rewritten: a protocol changed after it was frozen needs a new version (the
test suite fails until then).  The file is written atomically.
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    from verify.core import registry
    from verify.core.protocol import registered, registry_path
    from verify.safeio import atomic_write

    if len(argv) != 1:
        print("usage: python tools/freeze_protocol.py CLAIM", file=sys.stderr)
        return 2
    claim = registry.get(argv[0])
    proto = claim.protocol
    if proto is None:
        print(f"{claim.id} has no protocol", file=sys.stderr)
        return 2
    entry = registered(proto)
    if entry is not None:
        same = entry.get("sha256") == proto.sha256
        print(f"{proto.claim} v{proto.version} is already frozen ({entry.get('frozen')})"
              + ("" if same else ": it changed since; give it a new version"), file=sys.stderr)
        return 0 if same else 2
    path = registry_path(proto.claim)
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc.setdefault(proto.claim, {})[str(proto.version)] = {"sha256": proto.sha256,
                                                          "frozen": time.strftime("%Y-%m-%d", time.gmtime())}
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    atomic_write(path, lambda f: f.write(text.encode()))
    print(f"froze {proto.claim} v{proto.version}: {proto.sha256}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
