"""Solver-free re-checking of certificates (imports no solver: fractions, json, hashlib, re only).

A Farkas certificate proves a system of linear constraints over the reals infeasible:

    rows i:  sum_j a_ij x_j  op_i  b_i,     op_i in {"<=", "<", "="}

with multipliers y_i (y_i >= 0 for inequalities, any sign for equalities) such that

    sum_i y_i a_ij = 0            for every variable j, and
    sum_i y_i b_i < 0,   or   sum_i y_i b_i = 0 and y_i > 0 for some strict row i.

Adding the rows with these weights then gives 0 <= negative, or 0 < 0: a contradiction
(Farkas' lemma / Motzkin's transposition theorem).  The check is exact arithmetic on
``fractions.Fraction``; nothing here trusts the solver that produced the multipliers.

An obligation whose constraint set contains one top-level disjunction is split into its
cases; the certificate then carries one Farkas certificate per case and is valid when
every case is.

Degree-2 encodings (products of two unknowns, as in the ws24 near-orthogonality bounds)
are certified the same way after adding product rows: for two linear rows
a1.x <= b1 and a2.x <= b2 the row (b1 - a1.x)(b2 - a2.x) >= 0 holds for every real x;
a certificate row tagged ``"product_of": [i, j]`` is accepted only after the checker
re-expands that product itself, and each monomial 'x*y' is then an ordinary variable
of the linear combination (a Positivstellensatz certificate of degree 2).
"""

from __future__ import annotations

import hashlib
import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable

from verify.safeio import UnsafeInput, read_regular_file

OPS = ("<=", "<", "=")
#: cap on the terms of one re-derived product row (a hostile file cannot make the checker quadratic)
MAX_PRODUCT_TERMS = 1_000_000


def mono_mul(a: str, b: str) -> str:
    """Product of two monomial keys ('' is the constant 1; 'x*y' sorted names)."""
    names = sorted([n for n in a.split("*") if n] + [n for n in b.split("*") if n])
    return "*".join(names)


def product_row(r1: dict, r2: dict) -> dict:
    """The row (b1 - a1.x)(b2 - a2.x) >= 0 implied by two rows a1.x <= b1, a2.x <= b2.

    Written as  b2 a1.x + b1 a2.x - (a1.x)(a2.x) <= b1 b2  over monomials (a degree-2
    Positivstellensatz product: sound for every real assignment).

    Raises:
        ValueError: a factor is not a linear '<=' row.
    """
    for r in (r1, r2):
        if r["op"] != "<=" or any("*" in m for m in r["coeffs"]):
            raise ValueError("products are formed from linear '<=' rows only")
    if len(r1["coeffs"]) * len(r2["coeffs"]) > MAX_PRODUCT_TERMS:
        raise ValueError(f"a product row with more than {MAX_PRODUCT_TERMS} terms")
    b1, b2 = frac(r1["rhs"]), frac(r2["rhs"])
    co: dict[str, Fraction] = {}

    def add(m: str, c: Fraction) -> None:
        co[m] = co.get(m, Fraction(0)) + c

    for m, a in r1["coeffs"].items():
        add(m, b2 * frac(a))
    for m, a in r2["coeffs"].items():
        add(m, b1 * frac(a))
    for m1, a1 in r1["coeffs"].items():
        for m2, a2 in r2["coeffs"].items():
            add(mono_mul(m1, m2), -frac(a1) * frac(a2))
    return {"coeffs": {m: str(c) for m, c in sorted(co.items()) if c != 0}, "op": "<=", "rhs": str(b1 * b2)}


def _expand(rows: list[dict]) -> tuple[list[dict] | None, str]:
    """Replace rows tagged ``product_of: [i, j]`` by the product they claim to be,
    after checking the claim exactly; monomials 'x*y' are then plain variables."""
    out = []
    for k, r in enumerate(rows):
        if "product_of" in r:
            i, j = r["product_of"]
            if not (0 <= i < k and 0 <= j < k) or "product_of" in rows[i] or "product_of" in rows[j]:
                return None, f"row {k}: product_of must name two earlier base rows"
            try:
                want = product_row(rows[i], rows[j])
            except ValueError as e:
                return None, f"row {k}: {e}"
            got = {"coeffs": {m: str(frac(c)) for m, c in sorted(r["coeffs"].items()) if frac(c) != 0},
                   "op": r["op"], "rhs": str(frac(r["rhs"]))}
            if got != want:
                return None, f"row {k}: is not the product of rows {i} and {j}"
        out.append(r)
    return out, ""


#: the only number syntax a certificate may use: an integer or p/q, each part at most MAX_DIGITS digits
#: (no exponent, no decimal point: "1e999999999" would build 10^999999999 before any check)
MAX_DIGITS = 2000
_RATIONAL = re.compile(r"-?[0-9]{1,%d}(?:/[0-9]{1,%d})?" % (MAX_DIGITS, MAX_DIGITS))


def frac(s: Any) -> Fraction:
    """Parse an exact rational written as ``"p/q"``, ``"p"`` or an int (strict grammar, size-capped).

    Raises:
        ValueError: anything else (floats, exponents, decimals, booleans, more than
            ``MAX_DIGITS`` digits per part, a zero denominator).
    """
    if isinstance(s, bool):
        raise ValueError("boolean is not a rational")
    if isinstance(s, int):
        if s.bit_length() > MAX_DIGITS * 10 // 3:
            raise ValueError(f"integer with more than {MAX_DIGITS} digits")
        return Fraction(s)
    if isinstance(s, str):
        if len(s) > 2 * MAX_DIGITS + 2 or not _RATIONAL.fullmatch(s):
            raise ValueError(f"not an exact rational 'p' or 'p/q' (at most {MAX_DIGITS} digits each): "
                             f"{s[:40]!r}{'...' if len(s) > 40 else ''}")
        num, _, den = s.partition("/")
        if den and int(den) == 0:
            raise ValueError("zero denominator")
        return Fraction(int(num), int(den) if den else 1)
    raise ValueError(f"not an exact rational: {str(s)[:40]!r} (write rationals as strings 'p/q')")


def check_farkas(rows: list[dict], multipliers: list[Any]) -> tuple[bool, str]:
    """Check one Farkas certificate exactly.

    Args:
        rows: ``{"coeffs": {var: "p/q"}, "op": "<=" | "<" | "=", "rhs": "p/q"}``.
        multipliers: one exact rational per row.

    Returns:
        ``(True, "0 < 0")``-style success with the contradiction derived, or
        ``(False, reason)``.
    """
    if len(rows) != len(multipliers):
        return False, f"{len(rows)} rows but {len(multipliers)} multipliers"
    expanded, why = _expand(rows)
    if expanded is None:
        return False, why
    rows = expanded
    total: dict[str, Fraction] = {}
    rhs = Fraction(0)
    strict = Fraction(0)
    for i, (row, y_raw) in enumerate(zip(rows, multipliers)):
        y = frac(y_raw)
        op = row.get("op")
        if op not in OPS:
            return False, f"row {i}: unknown relation {op!r}"
        if op != "=" and y < 0:
            return False, f"row {i}: negative multiplier {y} on an inequality"
        for var, a in row["coeffs"].items():
            total[var] = total.get(var, Fraction(0)) + y * frac(a)
        rhs += y * frac(row["rhs"])
        if op == "<":
            strict += y
    nonzero = {v: c for v, c in total.items() if c != 0}
    if nonzero:
        v, c = sorted(nonzero.items())[0]
        return False, f"the combination keeps variable {v} with coefficient {c}"
    if rhs < 0:
        return True, f"0 <= {rhs}"
    if rhs == 0 and strict > 0:
        return True, "0 < 0"
    return False, f"the combination gives 0 <= {rhs}{' (no strict row used)' if rhs == 0 else ''}: no contradiction"


def check_certificate(cert: dict) -> tuple[bool, str]:
    """Check a certificate dict: ``{"kind": "farkas", "cases": [{"rows", "multipliers"}]}``."""
    if cert.get("kind") != "farkas":
        return False, f"unsupported certificate kind {cert.get('kind')!r}"
    cases = cert.get("cases") or []
    if not cases:
        return False, "no cases"
    for k, case in enumerate(cases):
        ok, why = check_farkas(case["rows"], case["multipliers"])
        if not ok:
            return False, f"case {k}: {why}"
    return True, f"{len(cases)} case(s), each a Farkas contradiction"


def encoding_hash(rows_by_case: Iterable[list[dict]]) -> str:
    """SHA-256 of the canonical JSON of the encoding's rows (all cases)."""
    canon = json.dumps(list(rows_by_case), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


def recheck_file(path: Path, data: bytes | None = None) -> tuple[bool, str]:
    """Re-check one certificate file written by ``verify CLAIM --certificates DIR``
    (``data``: its bytes when the caller has already read them).

    The file's ``encoding_sha256`` must match its rows (an edited constraint is caught
    even when the multipliers would still cancel), and every case must be a valid Farkas
    contradiction. SAT witnesses (``kind: witness``) are re-evaluated by their claim's
    exact construction elsewhere; here they are reported as not re-checkable.
    """
    try:
        doc = json.loads((read_regular_file(path) if data is None else data).decode("utf-8"))
    except UnsafeInput as e:
        return False, str(e)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        return False, f"unreadable: {type(e).__name__}: {str(e)[:120]}"
    if not isinstance(doc, dict):
        return False, f"a certificate file holds a JSON object, not {type(doc).__name__}"
    if doc.get("format") not in (None, "verify-certificate/1"):
        return False, f"unknown certificate format {doc.get('format')!r}"
    if doc.get("answer") not in (None, "unsat"):  # the JSON text of SolverAnswer.UNSAT; this checker imports no solver
        return False, f"a certificate file must record an UNSAT answer, not {doc.get('answer')!r}"
    try:
        cert = doc["certificate"]
        rows = [case["rows"] for case in cert["cases"]]
        if doc.get("encoding_sha256") != encoding_hash(rows):
            return False, "the encoding does not match its recorded hash (edited constraints)"
        return check_certificate(cert)
    except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError, RecursionError) as e:
        return False, f"malformed certificate: {type(e).__name__}: {str(e)[:120]}"
