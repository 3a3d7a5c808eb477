"""Benchmark for pr26 : Prop. 1 solver reach and alpha_L at L = 512.

    python benchmarks/bench_pr26.py

Prints: (1) pr26:prop1's solver layer for n = 3..64, with and without the cvc5 second
opinion and Farkas certificates of verify.solver.common; (2) how far n reaches in 10 s
(z3 only, and with the defaults); (3) fit at L0 = 20 + transfer to L = 512 for every PE
family on prev, split into fit and transfer time.
"""

from __future__ import annotations

import time

from verify.constructions.pe import FAMILIES, get_task
from verify.evidence import Context, using
from verify.numeric import pr26 as num
from verify.solver import pr26 as sol


def _settings(second: bool, certify: bool) -> Context:
    return Context(second_opinion="always" if second else "never", certify=certify)


def prop1_time(N: int, second: bool, certify: bool) -> tuple[float, str]:
    t = time.perf_counter()
    with using(_settings(second, certify)):
        ev = sol.check_prop1(FAMILIES["affine"], N)
    return time.perf_counter() - t, ev.status


def reach(budget: float, second: bool, certify: bool) -> int:
    t0 = time.perf_counter()
    n = 2
    while time.perf_counter() - t0 < budget:
        with using(_settings(second, certify)):
            res = sol.prop1_obligation(FAMILIES["affine"], n + 1, 20_000)
        if res.answer != "unsat" or time.perf_counter() - t0 > budget:
            break
        n += 1
    return n


def main() -> None:
    print("pr26:prop1 solver layer, n = 3..64")
    print(f"{'configuration':<34} {'seconds':>8}  status")
    for label, so, ce in (("z3 only", False, False), ("z3 + cvc5", True, False), ("z3 + cvc5 + Farkas (default)", True, True)):
        secs, status = prop1_time(64, so, ce)
        print(f"{label:<34} {secs:8.2f}  {status}")
    print("\nlargest n with every n' <= n UNSAT within 10 s")
    for label, so, ce in (("z3 only", False, False), ("z3 + cvc5 + Farkas (default)", True, True)):
        print(f"{label:<34} n = {reach(10.0, so, ce)}")
    print("\nalpha_L, fit at L0 = 20 (Adam, 400 steps), transfer to L = 512, task prev")
    print(f"{'family':<18} {'alpha_512':>9} {'fit s':>7} {'transfer s':>10} {'total s':>8}")
    prev = get_task("prev")
    num.fit(FAMILIES["affine"], prev, 20)  # warm-up (autograd first-call cost)
    for name, fam in FAMILIES.items():
        t0 = time.perf_counter()
        fr = num.fit(fam, prev, 20)
        t1 = time.perf_counter()
        tr = num.transfer(fr, 512)
        t2 = time.perf_counter()
        print(f"{name:<18} {tr.alpha:9.4f} {t1 - t0:7.3f} {t2 - t1:10.3f} {t2 - t0:8.3f}")


if __name__ == "__main__":
    main()
