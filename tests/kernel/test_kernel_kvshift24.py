"""The Coq theory of kvshift24 (kernel/theories/Kvshift24.v) tied to the Python constructions, and refused when changed.

Tie (arXiv 2411.19574 v2, Definition 1 / Eq. 7, Eqs. 4-6, Appendix B, Appendix F):
* Theorem 2: the Coq KVSA and IH over Q (the same definitions the R theorems use, the softmax weights given as
  rationals in place of exp) on (A, B, A) and on a seeded random rational instance, against
  ``verify.constructions.kvshift24``'s term tables (``logits`` and ``evaluate_weighted`` in Fractions), for
  the three variants and two (m, sigma); the A coefficient the refutation theorem states in closed form is
  checked against the Python construction at rational stand-ins for e^{-2m} and e^{1/sigma - m}.
* decode: the Coq slot lists (``full_forward``, ``decode``) for every L in 3..5, every prefill and every
  policy, read back into ``verify.constructions.kvshift24_pe`` objects, must have the Python slot lists'
  ``normal_form`` query by query.
Faults: Theorem 2's repaired statement with the s = L summand back, or with b1 = 1/sigma back, must no longer
compile; so must the raw-key theorem when the decoder stops writing its shift state, and the rope-offset
counterexample when a zero offset rotates at the true position.

Needs coqc: skipped without it, failed under CI.
"""

from __future__ import annotations

import random
import re
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
from kernel_support import need_coq, private_theory

from verify.constructions import kvshift24 as kc
from verify.constructions import kvshift24_pe as kpe
from verify.kernel.driver import THEORIES, coq_compute

SEED = 2411




@pytest.fixture(scope="module")
def theories(tmp_path_factory) -> Path:
    """A private copy of Kvshift24.v (never compiled inside kernel/theories)."""
    return private_theory(tmp_path_factory, "Kvshift24")


def compute(theories: Path, exprs: list[str]) -> list[str]:
    return coq_compute("Kvshift24", exprs, theories=theories, workdir=theories / "work",
                       preamble=("From Coq Require Import List QArith. Import ListNotations. Open Scope Q_scope. "
                                 "Open Scope Z_scope."))


def q_lit(x: Fraction) -> str:
    x = Fraction(x)
    return f"({x.numerator} # {x.denominator})"


def q_rows(X) -> str:
    return "[" + "; ".join("[" + "; ".join(q_lit(a) for a in row) + "]" for row in X) + "]"


def q_list(xs) -> str:
    return "[" + "; ".join(q_lit(a) for a in xs) + "]"


# ------------------------------------------------------------------ Theorem 2

VARIANTS = {"none": "v_none", "mask": "v_mask", "mask+scale": "v_mask_scale"}
PARAMS = ((Fraction(1, 2), Fraction(2)), (Fraction(1, 3), Fraction(3, 4)))


def aba() -> list[tuple[Fraction, ...]]:
    A, B = (Fraction(1), Fraction(0)), (Fraction(0), Fraction(1))
    return [A, B, A]


def random_instance() -> list[tuple[Fraction, ...]]:
    rng = random.Random(SEED)
    return [tuple(Fraction(rng.randint(-4, 4), rng.randint(1, 3)) for _ in range(3)) for _ in range(5)]


def weights(L: int, salt: int) -> list[Fraction]:
    """Positive rational stand-ins for the exponentials, one per s = 1..L (seeded)."""
    rng = random.Random(SEED + salt)
    return [Fraction(rng.randint(1, 9), rng.randint(1, 5)) for _ in range(L)]


def py_dot_query(X):
    def dot(i: int) -> Fraction:
        if i == 0:
            return Fraction(0)
        return sum((a * b for a, b in zip(X[-1], X[i - 1])), Fraction(0))
    return dot


def py_vector(coefs: dict[int, Fraction], X) -> list[Fraction]:
    out = [Fraction(0)] * len(X[0])
    for i, c in coefs.items():
        for j, a in enumerate(X[i - 1]):
            out[j] += c * a
    return out


@pytest.mark.parametrize("name,X", [("(A, B, A)", aba()), ("random rational, L = 5, d = 3", random_instance())])
def test_theorem2_q_instance_matches_python_term_tables(theories, name, X):
    L = len(X)
    ws = weights(L, L)
    exprs, expect = [], []
    for m, sigma in PARAMS:
        dq = py_dot_query(X)
        ih_terms = kc.ih_terms(L)
        exprs.append(f"ih_logits_Q {q_lit(sigma)} {q_lit(m)} {q_rows(X)}")
        expect.append(kc.logits(ih_terms, dq, sigma, m, Fraction(0)))
        ih_w = [ws[t.s - 1] for t in ih_terms]
        exprs.append(f"IH_Q {q_rows(X)} {q_list(ih_w)}")
        expect.append(py_vector(kc.evaluate_weighted(ih_terms, ih_w, Fraction(0)), X))
        for var, coq_var in VARIANTS.items():
            terms = kc.kvsa_terms(L, var, sigma)
            exprs.append(f"kvsa_logits_Q {q_lit(sigma)} {q_lit(m)} {q_rows(X)}")
            full = kc.logits(kc.kvsa_terms(L, "none", sigma), dq, sigma, m, Fraction(0))  # every s = 1..L
            expect.append(full)
            exprs.append(f"KVSA_Q {coq_var} {q_lit(sigma)} {q_rows(X)} {q_list(ws)}")
            expect.append(py_vector(kc.evaluate_weighted(terms, [ws[t.s - 1] for t in terms], Fraction(0)), X))
    got = compute(theories, [f"qz_list ({e})" for e in exprs])
    for e, g, want in zip(exprs, got, expect):
        assert q_values(g) == list(want), f"{name}: {e}"


def test_theorem2_as_written_closed_form_matches_python(theories):
    """The A coefficient theorem2_as_written_refuted states, (e1 + 1) / (sigma (e1 + e2 + 1)) with
    e1 = e^{-2m}, e2 = e^{1/sigma - m}, against the Python construction with rational stand-ins."""
    X = aba()
    x = ("A", "B", "A")
    exprs, want = [], []
    for sigma in (Fraction(2), Fraction(3, 4)):
        for e1, e2 in ((Fraction(1, 3), Fraction(5, 2)), (Fraction(2, 7), Fraction(4))):
            terms = kc.kvsa_terms(3, "none", sigma)
            coefs = kc.evaluate_weighted(terms, [e1, e2, Fraction(1)], Fraction(0))
            by_tok = kc.by_token(coefs, x, Fraction(0))
            closed = (e1 + 1) / (sigma * (e1 + e2 + 1))
            assert by_tok["A"] == closed
            assert by_tok["B"] == e2 / (sigma * (e1 + e2 + 1))
            exprs.append(f"KVSA_Q v_none {q_lit(sigma)} {q_rows(X)} {q_list([e1, e2, 1])}")
            want.append([closed, e2 / (sigma * (e1 + e2 + 1))])
    for g, w in zip(compute(theories, [f"qz_list ({e})" for e in exprs]), want):
        assert q_values(g) == w


# ------------------------------------------------------------------ decode slot lists

POLICIES = {
    ("raw-key", "correct", "correct"): "RawKey OffsetCorrect DistanceCorrect",
    ("mixed-key", "correct", "correct"): "MixedKey OffsetCorrect DistanceCorrect",
    ("unwritten-first", "correct", "correct"): "UnwrittenFirst OffsetCorrect DistanceCorrect",
    ("raw-key", "zero", "correct"): "RawKey OffsetZero DistanceCorrect",
    ("raw-key", "correct", "off-by-one"): "RawKey OffsetCorrect DistanceOffByOne",
}
ROPES = {"none": "RopeNone", "before-shift": "RopeBeforeShift", "after-shift": "RopeAfterShift"}
SIGMA = Fraction(2)


def b1(var: str) -> Fraction:
    """The value scale the Python layer uses for a variant (Appendix B's 1/sigma, or 1 under mask+scale)."""
    return 1 / SIGMA if kc.variant(var).b1_inv_sigma else Fraction(1)


def parse_nested(text: str):
    """Coq's printed nested list of integers (``[[1; -2]; []]``) as nested Python lists of ints."""
    toks = re.findall(r"\[|\]|;|-?\d+", text)
    pos = 0

    def item():
        nonlocal pos
        t = toks[pos]
        if t == "[":
            pos += 1
            out = []
            while toks[pos] != "]":
                out.append(item())
                if toks[pos] == ";":
                    pos += 1
            pos += 1
            return out
        pos += 1
        return int(t)

    value = item()
    assert pos == len(toks), f"trailing tokens in {text!r}"
    return value


def fractions(node, depth: int):
    """Replace the [numerator, denominator] pairs found ``depth`` lists down by Fractions (see ``qz``)."""
    if depth == 0:
        num, den = node
        assert den > 0
        return Fraction(num, den)
    return [fractions(x, depth - 1) for x in node]


def q_values(text: str) -> list[Fraction]:
    """Coq's ``qz_list`` answer as Fractions."""
    return fractions(parse_nested(text), 1)


def _int(q: Fraction) -> int:
    assert q.denominator == 1
    return int(q)


def _opt(flag: Fraction, val: Fraction) -> int | None:
    return _int(val) if flag == 1 else None


def coq_queries(rows) -> list[kpe.Query]:
    """Coq's flattened queries (see ``ser_query`` in the theory) as Python Query objects."""
    out = []
    for q in rows:
        head, rest = q[0], q[1:]
        assert len(rest) % 3 == 0
        slots = []
        for j in range(0, len(rest), 3):
            meta, key, val = rest[j:j + 3]
            keys = tuple((key[i], _int(key[i + 1]), _opt(key[i + 2], key[i + 3])) for i in range(0, len(key), 4))
            vals = tuple((val[i], _int(val[i + 1])) for i in range(0, len(val), 2))
            slots.append(kpe.Slot(_int(meta[0]), keys, vals, _int(meta[1]), meta[2] == 1, meta[3] == 1))
        out.append(kpe.Query(_int(head[0]), _opt(head[1], head[2]), tuple(slots)))
    return out


def decode_cases():
    for L in (3, 4, 5):
        for k in range(1, L):
            for pol in POLICIES:
                yield L, k, pol, "after-shift", "none"
            yield L, k, ("raw-key", "correct", "correct"), "before-shift", "none"
            yield L, k, ("raw-key", "zero", "correct"), "none", "none"
            yield L, k, ("mixed-key", "correct", "correct"), "after-shift", "mask+scale"


def test_decode_slot_lists_match_python(theories):
    cases = list(decode_cases())
    exprs = []
    fulls = sorted({(L, rope, var) for L, _, _, rope, var in cases})
    for L, rope, var in fulls:
        exprs.append(f"full_Q (mkPE {ROPES[rope]} true) {VARIANTS[var]} 0 1 {q_lit(b1(var))} 0 {L}")
    for L, k, pol, rope, var in cases:
        exprs.append(f"decode_Q (mkPE {ROPES[rope]} true) {VARIANTS[var]} 0 1 {q_lit(b1(var))} 0 "
                     f"(mkDecode {k} {POLICIES[pol]}) {L}")
    got = compute(theories, [f"qz_queries ({e})" for e in exprs])
    n_full = len(fulls)
    differing = set()
    for (L, rope, var), text in zip(fulls, got[:n_full]):
        py = kpe.full_forward(L, var, kpe.PE(rope=rope), SIGMA)
        cq = coq_queries(fractions(parse_nested(text), 3))
        assert [q.t for q in cq] == list(range(1, L + 1))
        assert [kpe.normal_form(q) for q in cq] == [kpe.normal_form(q) for q in py], (L, rope, var)
    for (L, k, pol, rope, var), text in zip(cases, got[n_full:]):
        dec = kpe.Decode(k, *pol)
        py = kpe.decode(L, var, kpe.PE(rope=rope), dec, SIGMA)
        cq = coq_queries(fractions(parse_nested(text), 3))
        assert [q.t for q in cq] == list(range(k + 1, L + 1))
        assert [kpe.normal_form(q) for q in cq] == [kpe.normal_form(q) for q in py], (L, k, pol, rope, var)
        if kpe.first_mismatch(kpe.full_forward(L, var, kpe.PE(rope=rope), SIGMA), cq) is not None:
            differing.add(pol)
    # the Coq lists reproduce which policies depart from the full pass (raw-key never does)
    assert differing == set(POLICIES) - {("raw-key", "correct", "correct")}


# ------------------------------------------------------------------ faults

def _enclosing(src: str, line: int) -> str:
    names = re.findall(r"^(?:Theorem|Lemma|Corollary)\s+(\w+)", "\n".join(src.splitlines()[:line]), re.M)
    return names[-1] if names else ""


FAULTS = [
    # (name, old, new, the theorem whose proof must break)
    ("mask+scale with the s = L summand back",
     "  mkVariant false false\n            false false\n            false.",
     "  mkVariant false false\n            true true\n            false.", "theorem2_mask_scale"),
    ("mask+scale with b1 = 1/sigma back",
     "  mkVariant false false\n            false false\n            false.",
     "  mkVariant false false\n            false false\n            true.", "theorem2_mask_scale"),
    ("decoder never writes its shift state",
     "            else dec_loop pe v a1 a2 b1 b2 dec f (S t) cache' raw [(c1, t)])",
     "            else dec_loop pe v a1 a2 b1 b2 dec f (S t) cache' last_k last_v)", "dec_loop_raw"),
    ("zero RoPE offset rotating at the true position",
     "let pos := match dec_offset dec with OffsetCorrect => t | OffsetZero => 0 end in",
     "let pos := match dec_offset dec with OffsetCorrect => t | OffsetZero => t end in",
     "decode_rope_offset_zero_refuted"),
]


@pytest.mark.parametrize("name,old,new,where", FAULTS, ids=[f[0] for f in FAULTS])
def test_changed_statement_is_refused(tmp_path, name, old, new, where):
    need_coq()
    src = (THEORIES / "Kvshift24.v").read_text()
    assert src.count(old) == 1, f"fault anchor not unique: {old!r}"
    bad = src.replace(old, new)
    (tmp_path / "Kvshift24.v").write_text(bad)
    r = subprocess.run(["coqc", "-q", "-Q", ".", "Verify", "Kvshift24.v"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode != 0, f"{name}: the changed theory still compiles"
    m = re.search(r'File "\./Kvshift24\.v", line (\d+)', r.stdout + r.stderr)
    assert m, r.stdout + r.stderr
    assert _enclosing(bad, int(m.group(1))) == where, (name, r.stdout + r.stderr)
