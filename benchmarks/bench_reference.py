"""impl:reference's cost per model at the default size (a batch of 2, L = 8), in this process after the imports
(what a second claim of `verify all` pays), as seconds and as a ratio to bench_all's reference workload timed in
the same run.

    python benchmarks/bench_reference.py [--json FILE]

Measured: the median of 3 runs of each check (the tiny models' eager and sdpa paths in float64 and bfloat16; the
example module, good and with a planted bug, whose explanation tries every alternative specification).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def _median(fn, n: int = 3) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default=None, help="write the measurements here")
    a = ap.parse_args(argv)
    out_file = Path(a.json).resolve() if a.json else None
    import torch

    torch.set_num_threads(1)
    from bench_all import reference_workload

    from verify.numeric import impl_reference as R

    unit = _median(reference_workload)
    rows = {}
    R.check_hf("hf:llama", "eager", "float64", 0, 8, None)  # imports and the first build, not counted
    for model, window in (("hf:llama", None), ("hf:mistral", 4), ("hf:qwen2", 4), ("hf:gemma2", 4), ("hf:gpt2", None),
                          ("hf:bloom", None), ("hf:falcon", None), ("hf:mpt", None)):
        for attn in ("eager",) if model in ("hf:gemma2", "hf:bloom", "hf:mpt") else ("eager", "sdpa"):
            for dtype in ("float64", "bfloat16"):
                s = _median(lambda: R.check_hf(model, attn, dtype, 0, 8, window))
                rows[f"{model} {attn} {dtype}"] = {"s": round(s, 3), "ratio": round(s / unit, 2)}
    os.chdir(ROOT / "examples" / "attention_modules")
    for factory in ("good_attention:make", "full_pass_bugs:make_gqa_strided", "full_pass_bugs:make_alibi_geometric"):
        s = _median(lambda: R.check_module(f"module:{factory}", "float64", 0, 8))
        rows[f"module:{factory}"] = {"s": round(s, 3), "ratio": round(s / unit, 2)}
    doc = {"reference_workload_s": round(unit, 4), "checks": rows}
    text = json.dumps(doc, indent=1)
    print(text)
    if out_file is not None:
        out_file.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
