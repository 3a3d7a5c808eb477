"""What the impl claims answer on each transformers release they were run on: a matrix of claims and tiny model
families (:data:`MATRIX`), measured per release by ``python tools/release_matrix.py VERSION ...`` (each release
installed in a throwaway environment beside the main one) into ``releases.json`` beside this module.

A library bug belongs to a release.  When the installed release is in the file and a claim's result there differs
from the contract (``HOLDS``), the claim's report names it: :func:`known_on` gives the line.  The test
tests/impl/test_release_matrix.py reruns the matrix on the installed release and fails when an answer moved from
the one recorded for it (on CI: the pinned 5.x in the main environment, the pinned 4.x in the second).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

RESULTS = Path(__file__).with_name("releases.json")

#: (claim, options) run on every release; ``--model hf:NAME`` tiny models at the claims' defaults otherwise
MATRIX: tuple[tuple[str, dict[str, str]], ...] = (
    *(("impl:decode", {"model": f"hf:{m}"}) for m in ("llama", "mistral", "gpt2", "bloom", "falcon", "mpt", "qwen2",
                                                       "gemma2")),
    *(("impl:window", {"model": f"hf:{m}"}) for m in ("mistral", "qwen2", "gemma2")),
    *(("impl:padding", {"model": f"hf:{m}"}) for m in ("llama", "gpt2")),
    *(("impl:rope", {"model": "hf:llama", "rope-scaling": r}) for r in ("default", "linear", "dynamic", "yarn",
                                                                        "llama3")),
    ("impl:rope", {"model": "hf:qwen2", "rope-scaling": "default"}),
    *(("impl:alibi", {"model": f"hf:{m}"}) for m in ("bloom", "falcon", "mpt")),
    *(("impl:reference", {"model": f"hf:{m}", "attn": a}) for m in ("llama", "mistral", "qwen2", "falcon")
      for a in ("eager", "sdpa")),
    ("impl:reference", {"model": "hf:gemma2", "attn": "eager"}),
)


def key(claim: str, options: Mapping[str, str]) -> str:
    """The matrix entry's name: ``impl:window --model hf:qwen2``."""
    return " ".join([claim, *(f"--{k} {v}" for k, v in options.items())])


def entry_for(claim: str, params: Mapping[str, Any]) -> dict[str, str] | None:
    """The options of the :data:`MATRIX` entry of ``claim`` whose every option has the value ``params`` gives it
    (the entry with the most options when several match), or None."""
    hits = [dict(o) for c, o in MATRIX if c == claim and all(str(params.get(k)) == v for k, v in o.items())]
    return max(hits, key=len, default=None)


def measured() -> dict[str, Any]:
    """The recorded results: ``{"releases": {VERSION: {ENTRY: {"verdict": ..., "witness": ...}}}, ...}``."""
    if not RESULTS.is_file():
        return {"releases": {}}
    return json.loads(RESULTS.read_text())


def known_on(version: str, claim: str, options: Mapping[str, str]) -> str | None:
    """One line when this release's recorded answer for the entry is not HOLDS while another release's is (a bug
    of the release, not of the rule), naming the releases measured each way; None when the entry or the release
    was not measured, or no release holds."""
    rel = measured()["releases"]
    row = rel.get(version, {}).get(key(claim, options))
    holds = [v for v, r in rel.items() if r.get(key(claim, options), {}).get("verdict") == "HOLDS"]
    if row is None or row["verdict"] == "HOLDS" or not holds:
        return None
    same = [v for v, r in rel.items() if r.get(key(claim, options), {}).get("verdict") == row["verdict"]]
    return (f"transformers {version}: {key(claim, options)} was measured {row['verdict']} on this release "
            f"(also on {', '.join(v for v in same if v != version) or 'no other release measured'}; HOLDS on "
            f"{', '.join(holds)}): docs/transformers-releases.md")
