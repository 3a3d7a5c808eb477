"""Check a head certificate's softmax step in Coq (``verify head --kernel``, ``verify recheck --kernel``).

``verify head`` encloses every pre-softmax score s_ij of one head in arb balls from the stored weights and decides,
row by row, whether the attention mass on the target key is >= tau (or the target is the strict argmax).  This
module hands those decisions to Coq's kernel.  kernel/theories/HeadSoftmax.v states what one row claims for EVERY
score vector inside its bounds (fixed point, z / 2^BITS, rounded outward from the balls), e.g.

    ge_row tb tn td r : forall st so so', dy (t r) <= st -> Forall2 (fun x h => x <= dy h) so (keys r) ->
                        Forall (fun x => x <= dy (rest r)) so' -> length so' <= count r -> tn / td <= mass st (so ++ so')

and proves once, for every row and table, that a row its boolean checker accepts satisfies it (``rows_ge_sound``
and its three siblings).  A certificate file states the rows of each claim as one list and proves
``Forall (ge_row tb tn td) rows_ge`` by that theorem, the checker evaluated by the kernel (``vm_cast_no_check``: the
kernel's conversion at Qed is the only check); when Coq refuses, the file is written again with one theorem per row
so that the refusal names the row.  exp is bounded through tables of exp(k / 2^G) that the kernel validates entry
by entry from one squaring chain; :func:`tables` builds them and :func:`ok` evaluates the same integer checks in
Python, only to choose the step 2^-G and each row's shortest statement (Coq, not the mirror, accepts or refuses).

What is checked where: the scores' enclosures come from the arb evaluation of the head (Python, python-flint);
``verify recheck`` re-derives them from the certificate's weights and requires the kernel data to contain them.
The kernel checks the step from the enclosures to the row's mass (or argmax) statement; the per-head file is
compiled by coqc (not re-run through coqchk, whose lazy conversion would take minutes on the rows' arithmetic);
HeadSoftmax itself goes through the build of the shipped theories (Print Assumptions, coqchk) once per Coq version.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

from verify.kernel.driver import (
    INSTALL_HINT,
    THEORIES,
    KernelUnavailable,
    _first_error,
    _run,
    build_theories,
    coq_version,
    default_cache_dir,
)
from verify.kernel.spec import KernelStatement

#: fixed-point bits of the scores and tables (z stands for z / 2^BITS); every number the file states is a signed
#: 63-bit integer (Coq reads those literals ten times faster than Z's), so scores lie in (-2^22, 2^22)
BITS = 40
#: the largest magnitude of a stated integer
LIMIT = 2**62
#: the table steps tried, coarse to fine: the first at which every row is decided is used
STEPS = (4, 6, 8, 10)
#: the tables reach exp(-RANGE) below 0 (further down an upper bound clamps to the last entry, a lower bound is 0)
#: and exp(RANGE_UP) above (2^40 exp(15) < 2^62; a row needing more is not decided there)
RANGE, RANGE_UP = 30, 15
#: keys over all rows that one kernel file accepts (a hostile certificate cannot make Coq compute for hours)
MAX_KEYS = 400_000
CLAIMS = ("ge", "lt", "argmax", "argmax_no")
#: the theorems of HeadSoftmax.v that the certificate files apply: their Print Assumptions are read, and coqchk run
#: on the theory, once per Coq version and source text
SOUNDNESS = tuple(f"{k}_{c}_sound" for c in CLAIMS for k in ("row", "rows"))


def squarings(G: int, bits: int = BITS) -> int:
    """K, the squarings from y = 2^-(G+K) to the step 2^-G: the start's error 2^-(2G+K+1) balanced against the
    chain's rounding, about 2^(K-bits)."""
    return max(4, (bits - 2 * G - 1) // 2)


class KernelDataError(ValueError):
    """The kernel section of a certificate is malformed (the message says what)."""


@dataclass(frozen=True)
class KernelRow:
    """One row's claim and data: ``ge``/``argmax`` use the target's lower end and the others' upper ends, ``lt``/
    ``argmax_no`` the target's upper end and the others' lower ends (the theorems assume only those sides)."""

    prompt: int
    row: int
    target: int
    claim: str
    target_score: tuple[int, int]
    keys: tuple[int, ...]
    others: tuple[tuple[int, int], ...]

    def to_json(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "row": self.row, "target": self.target, "claim": self.claim,
                "target_score": [str(v) for v in self.target_score], "keys": list(self.keys),
                "others": [[str(a), str(b)] for a, b in self.others]}

    @classmethod
    def from_json(cls, d: Any) -> "KernelRow":
        if not isinstance(d, dict) or d.get("claim") not in CLAIMS:
            raise KernelDataError(f"a kernel row is not an object with a claim in {', '.join(CLAIMS)}")
        others = d.get("others")
        keys = d.get("keys")
        if not isinstance(others, list) or not isinstance(keys, list) or len(keys) != len(others):
            raise KernelDataError("a kernel row's keys and others do not pair up")
        return cls(_int(d.get("prompt"), 10**6), _int(d.get("row"), 10**7), _int(d.get("target"), 10**7), d["claim"],
                   _pair(d.get("target_score")), tuple(_int(k, 10**7) for k in keys),
                   tuple(_pair(o) for o in others))


def _int(v: Any, limit: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < limit:
        raise KernelDataError(f"expected an index in [0, {limit}), got {str(v)[:20]!r}")
    return v


_ZTEXT = re.compile(r"-?[0-9]{1,40}")


def _pair(v: Any) -> tuple[int, int]:
    if not isinstance(v, list) or len(v) != 2 or not all(isinstance(x, str) and _ZTEXT.fullmatch(x) for x in v):
        raise KernelDataError("a score enclosure is not two integer strings [lo, hi] of at most 40 digits")
    lo, hi = int(v[0]), int(v[1])
    if not (-LIMIT < lo and hi < LIMIT):
        raise KernelDataError(f"an enclosure [{lo}, {hi}] lies outside the kernel's fixed-point range (|z| < 2^62)")
    if lo > hi:
        raise KernelDataError(f"an enclosure [{lo}, {hi}] is empty")
    return lo, hi


# ----------------------------------------------------------------------------- tables (mirror of HeadSoftmax.v)


def _cdiv(a: int, b: int) -> int:
    return -((-a) // b)


def _ceil_shift(u: int, q: int) -> int:
    """ceil(u / 2^q), as HeadSoftmax's ``ceil_shift``."""
    return -((-u) >> q)


def _floor_shift(u: int, q: int) -> int:
    """floor(u / 2^q), as HeadSoftmax's ``floor_shift``."""
    return u >> q


def side(bits: int, G: int, K: int, length: int, up: bool, pos: bool) -> dict[str, Any]:
    """One table: bounds of exp(+-k 2^-G), k = 1..length, from above (``up``) or below, with the squaring chain from
    y = 2^-(G+K) that bounds the step (the integers [side_up_ok]/[side_dn_ok] check)."""
    S = 1 << bits
    N = 1 << (G + K)
    if up:
        c = _cdiv(S * N, N - 1 if pos else N + 1)
    else:
        c = (S * (N + 1 if pos else N - 1)) // N
    chain0, chain = c, []
    for _ in range(K):
        c = _cdiv(c * c, S) if up else (c * c) // S
        chain.append(c)
    e, t, entries = c, S, []
    for _ in range(length):
        t = _cdiv(t * e, S) if up else (t * e) // S
        entries.append(t)
    return {"n": 1 << G, "chain0": chain0, "chain": chain, "entries": entries}


def _exp_up(tb: dict[str, Any], u: int) -> int | None:
    m = _ceil_shift(u, tb["P"] - tb["G"])
    if m <= 0:
        ent = tb["up_neg"]["entries"]
        i = min(-m, len(ent))
        return (1 << tb["P"]) if i == 0 else ent[i - 1]
    ent = tb["up_pos"]["entries"]
    return ent[m - 1] if m <= len(ent) else None


def _exp_dn(tb: dict[str, Any], u: int) -> int:
    m = _floor_shift(u, tb["P"] - tb["G"])
    if m >= 0:
        ent = tb["dn_pos"]["entries"]
        i = min(m, len(ent))
        return (1 << tb["P"]) if i == 0 else ent[i - 1]
    ent = tb["dn_neg"]["entries"]
    return ent[-m - 1] if -m <= len(ent) else 0


@dataclass(frozen=True)
class Stated:
    """What a row's theorem states (HeadSoftmax's ``row``): the target's end ``t``, the ends of the keys stated one
    by one (``ends``, of the keys ``which``), and one upper end ``rest`` shared by at most ``count`` further keys."""

    t: int
    which: tuple[int, ...]
    ends: tuple[int, ...]
    rest: int = 0
    count: int = 0


def ok(tb: dict[str, Any], claim: str, st: Stated, tau: Fraction) -> bool:
    """What the row's Coq checker computes (ge_ok, lt_ok, argmax_ok, argmax_no_ok), in Python integers."""
    S, tn, td = 1 << tb["P"], tau.numerator, tau.denominator
    if claim == "ge":
        ups = [_exp_up(tb, h - st.t) for h in st.ends]
        e = _exp_up(tb, st.rest - st.t)
        return (td > 0 and st.count >= 0 and None not in ups and e is not None
                and tn * (S + sum(ups) + st.count * e) <= td * S)  # type: ignore[arg-type]
    if claim == "lt":
        return td > 0 and tn > 0 and td * S < tn * (S + sum(_exp_dn(tb, lo - st.t) for lo in st.ends))
    if claim == "argmax":
        return all(h < st.t for h in st.ends) and st.rest < st.t
    return any(st.t <= lo for lo in st.ends)


def state(tb: dict[str, Any], r: KernelRow, tau: Fraction) -> Stated | None:
    """The shortest statement of the row that its checker accepts, or None: ``ge`` states the keys with the largest
    upper ends one by one and the others through one shared bound (the fewer, the fewer integers Coq reads);
    ``lt`` the keys with the largest lower ends, as many as the bound needs (the others, any number, only lower
    the mass); ``argmax`` one bound for all other keys; ``argmax_no`` one key at least the target."""
    lo_t, hi_t = r.target_score
    order = sorted(range(len(r.others)), key=lambda k: (-r.others[k][1], k))
    if r.claim in ("ge", "argmax"):
        stated = (0, 4, 16, 64, len(order)) if r.claim == "ge" else (0,)
        for m in stated:
            top, tail = order[:m], order[m:]
            st = Stated(lo_t, tuple(r.keys[k] for k in top), tuple(r.others[k][1] for k in top),
                        max((r.others[k][1] for k in tail), default=lo_t - 1 if r.claim == "argmax" else lo_t),
                        len(tail))
            if ok(tb, r.claim, st, tau):
                return st
        return None
    order = sorted(range(len(r.others)), key=lambda k: (-r.others[k][0], k))
    if r.claim == "argmax_no":
        st = Stated(hi_t, tuple(r.keys[k] for k in order[:1]), tuple(r.others[k][0] for k in order[:1]))
        return st if ok(tb, "argmax_no", st, tau) else None
    S, tn, td = 1 << tb["P"], tau.numerator, tau.denominator
    total = 0
    for m, k in enumerate(order, start=1):
        total += _exp_dn(tb, r.others[k][0] - hi_t)
        if td * S < tn * (S + total):
            top = order[:m]
            return Stated(hi_t, tuple(r.keys[k] for k in top), tuple(r.others[k][0] for k in top))
    return None


def tables(rows: Sequence[KernelRow], G: int, bits: int = BITS) -> dict[str, Any]:
    """The four tables at step 2^-G, each as long as the rows need (at most RANGE 2^G entries below 0, RANGE_UP 2^G
    above)."""
    q, cap, cap_up, K = bits - G, RANGE << G, RANGE_UP << G, squarings(G, bits)
    up_pos = up_neg = dn_pos = dn_neg = 0
    for r in rows:
        lt, ht = r.target_score
        if r.claim == "ge":
            for _, h in r.others:
                m = _ceil_shift(h - lt, q)
                up_pos, up_neg = max(up_pos, m), max(up_neg, -m)
        elif r.claim == "lt":
            for lo, _ in r.others:
                m = _floor_shift(lo - ht, q)
                dn_pos, dn_neg = max(dn_pos, m), max(dn_neg, -m)
    return {"P": bits, "G": G, "K": K,
            "up_pos": side(bits, G, K, min(up_pos, cap_up), True, True),
            "up_neg": side(bits, G, K, min(up_neg, cap), True, False),
            "dn_pos": side(bits, G, K, min(dn_pos, cap_up), False, True),
            "dn_neg": side(bits, G, K, min(dn_neg, cap), False, False)}


def full(r: KernelRow) -> Stated:
    """The row's statement with every other key stated one by one."""
    lo_t, hi_t = r.target_score
    if r.claim in ("ge", "argmax"):
        return Stated(lo_t, r.keys, tuple(h for _, h in r.others), lo_t - 1 if r.claim == "argmax" else lo_t, 0)
    return Stated(hi_t, r.keys, tuple(lo for lo, _ in r.others))


def choose(rows: Sequence[KernelRow], tau: Fraction,
           ) -> tuple[dict[str, Any], list[tuple[KernelRow, Stated]], list[KernelRow]]:
    """The coarsest step at which every row has a statement its checker accepts (else the finest step), the rows
    with their statements there, and the rows without one (reported as decided in arb but not at the tables'
    resolution: Coq is not asked about them)."""
    best: tuple[dict[str, Any], list[tuple[KernelRow, Stated]], list[KernelRow]] | None = None
    for G in STEPS:
        tb = tables(rows, G)
        said = [(r, state(tb, r, tau)) for r in rows]
        best = (tb, [(r, st) for r, st in said if st is not None], [r for r, st in said if st is None])
        if not best[2]:
            break
    assert best is not None
    return best


# ----------------------------------------------------------------------------- the Coq file


def _z(v: int) -> str:
    if not -LIMIT < v < LIMIT:
        raise KernelDataError(f"{v} lies outside the kernel's fixed-point range (|z| < 2^62)")
    return f"({v})" if v < 0 else str(v)


def _zs(vs: Sequence[int]) -> str:
    """A list of Z stated as signed 63-bit literals: ``map Sint63.to_Z [...]%sint63``."""
    return "(map Sint63.to_Z [" + "; ".join(_z(v) for v in vs) + "]%sint63)"


def _side_text(sd: dict[str, Any]) -> str:
    return (f"{{| n := {sd['n']}; chain0 := {_z(sd['chain0'])};\n     chain := {_zs(sd['chain'])};\n"
            f"     entries := {_zs(sd['entries'])} |}}")


def theorem_name(r: KernelRow) -> str:
    return f"row_{r.prompt}_{r.row}_{r.claim}"


#: per claim: the one-row soundness theorem, the many-rows one, the statement's name in HeadSoftmax.v and words
_KIND = {"ge": ("row_ge_sound tb {tn} {td}", "rows_ge_sound tb {tn} {td}", "ge_row tb {tn} {td}", "mass >= {tau}"),
         "lt": ("row_lt_sound tb {tn} {td}", "rows_lt_sound tb {tn} {td}", "lt_row tb {tn} {td}", "mass < {tau}"),
         "argmax": ("row_argmax_sound (P tb)", "rows_argmax_sound (P tb)", "argmax_row (P tb)",
                    "the target the strict argmax"),
         "argmax_no": ("row_argmax_no_sound (P tb)", "rows_argmax_no_sound (P tb)", "argmax_no_row (P tb)",
                       "the target not the strict argmax")}


def _where(r: KernelRow, st: Stated) -> str:
    more = f"; {st.count} more <= rest" if r.claim in ("ge", "argmax") else ""
    shown = ", ".join(map(str, st.which[:6])) + (", ..." if len(st.which) > 6 else "")
    return (f"prompt {r.prompt}, query {r.row} -> key {r.target}: {len(r.keys)} other keys, stated "
            f"[{shown}]{more}")


def _row_text(st: Stated) -> str:
    """``mk t [keys] rest count`` (HeadSoftmax.mk), to be read in the sint63 scope."""
    return f"mk {_z(st.t)} [{'; '.join(_z(v) for v in st.ends)}] {_z(st.rest)} {_z(st.count)}"


def coq_text(tb: dict[str, Any], rows: Sequence[tuple[KernelRow, Stated]], tau: Fraction, header: str = "",
             per_row: bool = False) -> tuple[str, list[tuple[int, int, str]]]:
    """The file and, for each theorem, its first and last line and what it states (to name the one Coq refuses).

    By default the rows of each claim form one list and one theorem, ``Forall (ge_row tb tn td) rows_ge``, proved
    by one computation; ``per_row``: one theorem per row (slower; names the first row the kernel refuses)."""
    tn, td = tau.numerator, tau.denominator
    out = [f"(* {_comment(header)}\n   written by verify (kernel/head_replay.py); the statements: HeadSoftmax.v *)",
           "From Coq Require Import ZArith Reals List Sint63.", "Import ListNotations.", "Require Import Verify.HeadSoftmax.",
           "Open Scope Z_scope.", "",
           f"Definition tb : tables := {{| P := {tb['P']}; G := {tb['G']};",
           f"  up_pos := {_side_text(tb['up_pos'])};", f"  up_neg := {_side_text(tb['up_neg'])};",
           f"  dn_pos := {_side_text(tb['dn_pos'])};", f"  dn_neg := {_side_text(tb['dn_neg'])} |}}.", ""]
    spans: list[tuple[int, int, str]] = []

    def add(lines: list[str], what: str) -> None:
        first = sum(x.count("\n") + 1 for x in out) + 1
        out.extend(lines)
        spans.append((first, first + sum(x.count("\n") + 1 for x in lines) - 1, what))

    add(["(** exp(k / 2^G) bounded for every table entry *)", "Lemma tb_ok : tables_ok tb = true.",
         "Proof. vm_cast_no_check (eq_refl true). Qed.", ""], "the exp tables (tables_ok)")
    for claim in CLAIMS:
        mine = [(r, st) for r, st in rows if r.claim == claim]
        if not mine:
            continue
        one, many, stmt, said = (x.format(tn=tn, td=td, tau=tau) for x in _KIND[claim])
        tables_arg = " tb_ok" if claim in ("ge", "lt") else ""
        if per_row:
            for r, st in mine:
                name = theorem_name(r)
                add([f"(** {_where(r, st)}: {said} *)", f"Definition {name}_data : row := ({_row_text(st)})%sint63.",
                     f"Theorem {name} : {stmt} {name}_data.",
                     f"Proof. refine ({one} {name}_data{tables_arg} _). vm_cast_no_check (eq_refl true). Qed.", ""],
                    f"{_where(r, st)}: {said}")
            continue
        items = [f"  (* {k}: {_where(r, st)} *)\n  {_row_text(st)}" for k, (r, st) in enumerate(mine)]
        add([f"Definition rows_{claim} : list row := ([", ";\n".join(items), "])%sint63.",
             f"(** {len(mine)} rows: {said} *)", f"Theorem head_{claim} : Forall ({stmt}) rows_{claim}.",
             f"Proof. refine ({many} rows_{claim}{tables_arg} _). vm_cast_no_check (eq_refl true). Qed.", ""],
            f"the {len(mine)} rows with {said}")
    return "\n".join(out) + "\n", spans


def _comment(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9 _.,:;=<>+\-/\[\]()'!?#%&|^~@$]", "?", text[:300])


# ----------------------------------------------------------------------------- running Coq


@dataclass
class KernelResult:
    """``status``: ``checked`` (Coq accepted every row theorem), ``refuted`` (it refused one: ``first_refused``),
    ``error`` (Coq could not run the file or an assumption is not trusted)."""

    status: str
    message: str
    coq_version: str | None
    rows: int
    seconds: float
    first_refused: str | None = None
    G: int | None = None


def _theory_dir(version: str) -> Path:
    """HeadSoftmax compiled once per Coq version and source text, kept in the kernel cache beside ``trust.json``:
    coqchk's answer on it and the assumptions of every theorem in :data:`SOUNDNESS`, read by the same build the
    shipped theories get (:func:`verify.kernel.driver.build_theories`: the vernacular guard, coqc, Print
    Assumptions, coqchk); refused, and not cached, when one assumption is not the trusted libraries'.

    Raises:
        KernelUnavailable: coqc or coqchk is missing.
        RuntimeError: the theory does not compile, coqchk refuses it, or it rests on an assumption of ours.
    """
    import json

    text = (THEORIES / "HeadSoftmax.v").read_text()
    digest = hashlib.sha256(text.encode() + version.encode()).hexdigest()[:16]
    root = default_cache_dir()
    target = root / f"headsoftmax-{digest}"
    if (target / "HeadSoftmax.vo").is_file() and (target / "trust.json").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="headsoftmax-", dir=root))
    try:
        src, work = tmp / "src", tmp / "work"
        src.mkdir()
        (src / "_CoqProject").write_text("-Q . Verify\nHeadSoftmax.v\n")
        (src / "HeadSoftmax.v").write_text(text)
        wanted = [KernelStatement("verify:head", "", "HeadSoftmax", name, "proves", name) for name in SOUNDNESS]
        build = build_theories(wanted, theories=src, workdir=work)
        if not build.compiled.get("HeadSoftmax"):
            raise RuntimeError(f"Verify.HeadSoftmax does not compile: {build.errors.get('HeadSoftmax', '')}")
        if build.coqchk.get("HeadSoftmax") != "ok":
            raise RuntimeError(f"coqchk refuses Verify.HeadSoftmax: {build.coqchk.get('HeadSoftmax')}")
        facts = {s.theorem: build.theorems[s.qualified] for s in wanted}
        missing = [n for n, f in facts.items() if not f.found]
        if missing:
            raise RuntimeError(f"Print Assumptions on Verify.HeadSoftmax found no {', '.join(missing)}")
        ours = sorted({a for f in facts.values() for a in f.untrusted}) + build.untrusted_axioms("HeadSoftmax")
        if ours:
            raise RuntimeError(f"Verify.HeadSoftmax rests on assumptions of ours: {', '.join(ours)}")
        (work / "trust.json").write_text(json.dumps(
            {"coq_version": version, "coqchk": "ok", "coqchk_axioms": build.coqchk_axioms["HeadSoftmax"],
             "assumptions": {n: f.assumptions for n, f in facts.items()}}, indent=1, sort_keys=True))
        try:
            os.replace(work, target)
        except OSError:  # another process put it there first
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def trust(version: str) -> dict[str, Any]:
    """coqchk's answer on HeadSoftmax and the assumptions of its soundness theorems (compiling it when needed)."""
    import json

    return json.loads((_theory_dir(version) / "trust.json").read_text())


def check(tb: dict[str, Any], rows: Sequence[tuple[KernelRow, Stated]], tau: Fraction, header: str = "",
          keep: Path | None = None) -> KernelResult:
    """Write the rows' theorems and compile them; ``keep``: also write the .v file there.

    Raises:
        KernelUnavailable: coqc is not installed.
    """
    version = coq_version()
    if version is None:
        raise KernelUnavailable(INSTALL_HINT)
    n_keys = sum(len(st.ends) for _, st in rows)
    if n_keys > MAX_KEYS:
        return KernelResult("error", f"{n_keys} keys exceed the kernel file's budget of {MAX_KEYS}", version,
                            len(rows), 0.0)
    theory = _theory_dir(version)
    t0 = time.perf_counter()
    for per_row in (False, True):
        text, spans = coq_text(tb, rows, tau, header, per_row=per_row)
        if keep is not None and not per_row:
            from verify.safeio import atomic_write

            atomic_write(keep, lambda f: f.write(text.encode()))
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "HeadCert.v").write_text(text)
            rc, out = _run(["coqc", "-q", "-Q", str(theory), "Verify", "HeadCert.v"], Path(tmp))
        secs = time.perf_counter() - t0
        if rc == 0 and not per_row:
            kinds = ", ".join(f"head_{c} by rows_{c}_sound" for c in CLAIMS if any(r.claim == c for r, _ in rows))
            return KernelResult("checked", f"Coq {version}: {kinds}; HeadSoftmax coqchk-checked, assumptions only the "
                                "standard library's", version, len(rows), secs, G=tb["G"])
        m = re.search(r'File "[^"]*HeadCert\.v", line (\d+)', out)
        line = int(m.group(1)) if m else -1
        what = next((w for a, b, w in spans if a <= line <= b), None)
        if what is None:
            return KernelResult("error", f"coqc failed: {' '.join(_first_error(out, 3).split())[:300]}", version,
                                len(rows), secs, G=tb["G"])
        if per_row or what.startswith("the exp tables"):
            return KernelResult("refuted", f"the Coq kernel refuses {what}", version, len(rows), secs, what, tb["G"])
    raise AssertionError("unreachable: the per-row file either compiles or names a theorem")


def replay_document(doc: dict[str, Any], keep: Path | None = None) -> tuple[bool, str]:
    """``verify recheck --kernel`` on a head certificate: its kernel section's rows, handed to Coq (the Python
    re-check has already tied their bounds to the weights).  Valid only when Coq accepts every row.

    Raises:
        KernelUnavailable: coqc is not installed.
    """
    section = doc.get("kernel")
    if section is None:
        return True, "a head bound without a kernel section (written without --kernel): not replayed in Coq"
    try:
        if not isinstance(section, dict) or section.get("bits") != BITS or not isinstance(section.get("rows"), list):
            raise KernelDataError(f"the kernel section is not {{'bits': {BITS}, 'rows': [...]}}")
        rows = [KernelRow.from_json(d) for d in section["rows"]]
        tau = Fraction(str(doc.get("threshold")))
        if not 0 < tau <= 1:
            raise KernelDataError("the threshold is not in (0, 1]")
    except (KernelDataError, ValueError, ZeroDivisionError) as e:
        return False, f"not replayed in the kernel: {str(e)[:200]}"
    if not rows:
        return True, "no decided row to replay"
    tb, stated, missed = choose(rows, tau)
    # every row of the section was accepted when the file was written: one the Python mirror now rejects goes to Coq
    # with all its keys stated, for the kernel to refuse (and name)
    res = check(tb, stated + [(r, full(r)) for r in missed], tau, str(doc.get("statement", ""))[:200], keep=keep)
    if res.status != "checked":
        return False, f"{res.status} in the kernel: {res.message}"
    return True, f"{res.message}: {len(rows)} rows ({res.seconds:.2f} s)"
