"""Symbolic layer for ws24 Theorem 2 (Eq. 13) and Eq. 14: exact orthonormal idealization.

Source: Wang & Sato, arXiv 2412.11459 v2, Theorem 2 (appendix Theorem 3, Eq. 13) and
Eq. 14.  The papers' Assumption 1 (near-orthogonal embeddings) is idealized here as an
exact orthonormal family: <x, y> = [x = y] for every pair of named vectors
(w_E(k), r_{-1}, Phi_1 w_E(k)).

Correctness argument, next to the construction.  With W = sum_k c(k) a_k b_k^T and the
orthonormal Gram, u^T W v = sum_k c(k) [u = a_k][b_k = v].
* Eq. 13 as written (a_k = w_E(k), b_k = r_{-1}): the displayed score
  r_{-1}^T W w_E(v) has [r_{-1} = w_E(k)] = 0 in every term, so it is 0, while the
  model's own score w_E(v)^T W r_{-1} = sum_k chi(k) [k = v] = chi(v).
* Transposed (a_k = r_{-1}, b_k = w_E(k)): the two scores swap: displayed chi(v), model 0.
* Eq. 14 the same way with b_k = Phi_1 w_E(k): displayed (Phi_1 w_E(s))^T W w_E(T) is 0
  as written and psi(T)[s = T] transposed.
The sums are done by sympy for a symbolic vocabulary size V (every V >= the indices
involved), with chi, psi arbitrary functions; the concrete construction (its own chi)
is then evaluated exactly and compared with the statement.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import sympy as sp

from verify.constructions.bilinear import (
    ORIENTATIONS,
    InductionKeyConstruction,
    OuterSum,
    PrevTokenConstruction,
    Vec,
    bilinear,
    model_score_text,
    reading_text,
    show,
)
from verify.evidence import Evidence, Layer, Status, engine_versions


class OrthonormalGram:
    """The exact orthonormal Gram <x, y> = [x = y] in sympy (indices may be Symbols)."""

    def __call__(self, x: Vec, y: Vec) -> sp.Expr:
        if x[0] != y[0]:
            return sp.Integer(0)
        return sp.KroneckerDelta(sp.sympify(x[1]), sp.sympify(y[1]))

    @staticmethod
    def coef(c: Any) -> sp.Expr:
        return sp.Rational(c.numerator, c.denominator) if isinstance(c, Fraction) else sp.sympify(c)


class _SympyOf:
    """A sympy view of an exact Fraction-valued Gram function."""

    def __init__(self, gram: Callable[[Vec, Vec], Fraction]) -> None:
        self.gram = gram

    def __call__(self, x: Vec, y: Vec) -> sp.Expr:
        v = Fraction(self.gram(x, y))
        return sp.Rational(v.numerator, v.denominator)

    coef = staticmethod(OrthonormalGram.coef)


class FractionOrthonormalGram:
    """The same Gram in fractions.Fraction (used to re-check witnesses outside sympy)."""

    def __call__(self, x: Vec, y: Vec) -> Fraction:
        return Fraction(1) if x == y else Fraction(0)


def _sum_over_vocab(summand: Callable[[sp.Symbol], sp.Expr], upper: sp.Expr) -> sp.Expr:
    k = sp.Symbol("k", integer=True, positive=True)
    return sp.simplify(sp.Sum(summand(k), (k, 1, upper)).doit())


def theorem2_closed_forms(convention: str = "query-key") -> dict[str, dict[str, sp.Expr]]:
    """Closed forms of the displayed and model scores of Eq. 13, for symbolic V, under a score convention
    (``query-key``: the model scores w_E(v)^T W r_{-1}; ``key-query``: r_{-1}^T W w_E(v)).

    Returns:
        ``{orientation: {"displayed": expr, "model": expr}}`` for every orientation of
        :data:`ORIENTATIONS`, with expressions in ``chi(v)``; valid for every vocabulary
        size V >= v (V = v + m, m >= 0).  "displayed" is the variant's reading of the
        association (r_{-1}^T W w_E(v), or w_E(v)^T W r_{-1} for ``read-score``); "model"
        is the model's own score w_E(v)^T W r_{-1} (query^T W_K key).
    """
    v = sp.Symbol("v", integer=True, positive=True)
    m = sp.Symbol("m", integer=True, nonnegative=True)
    chi = sp.Function("chi")
    gram = OrthonormalGram()
    out: dict[str, dict[str, sp.Expr]] = {}
    for orientation in ORIENTATIONS:
        def W_k(k: sp.Symbol, orientation: str = orientation) -> OuterSum:
            return OuterSum((PrevTokenConstruction.term(k, chi(k), orientation),), "W^1_K")

        model_lr = (("w_E", v), ("r", -1)) if convention == "query-key" else (("r", -1), ("w_E", v))
        disp_left, disp_right = model_lr if orientation == "read-score" else (("r", -1), ("w_E", v))
        displayed = _sum_over_vocab(lambda k: bilinear(disp_left, W_k(k), disp_right, gram), v + m)
        model = _sum_over_vocab(lambda k: bilinear(model_lr[0], W_k(k), model_lr[1], gram), v + m)
        out[orientation] = {"displayed": displayed, "model": model}
    return out


def eq14_closed_forms(convention: str = "query-key") -> dict[str, dict[str, sp.Expr]]:
    """Closed forms of the Eq. 14 scores for symbolic V, by the three cases of (s, T), under a score convention
    (the model's score w_E(z_T)^T W Phi_1 w_E(z_s) under ``query-key``, its transpose under ``key-query``).

    Returns:
        ``{orientation: {"displayed": {case: expr}, "model": {case: expr}}}`` with
        cases ``"s = T"``, ``"s < T"``, ``"s > T"`` (V >= max(s, T) arbitrary), for every
        orientation of :data:`ORIENTATIONS`.
    """
    v = sp.Symbol("v", integer=True, positive=True)
    j = sp.Symbol("j", integer=True, nonnegative=True)
    m = sp.Symbol("m", integer=True, nonnegative=True)
    psi = sp.Function("psi")
    gram = OrthonormalGram()
    cases = {"s = T": (v, v, v + m), "s < T": (v, v + j + 1, v + j + 1 + m), "s > T": (v + j + 1, v, v + j + 1 + m)}
    out: dict[str, Any] = {}
    for orientation in ORIENTATIONS:
        def W_k(k: sp.Symbol, orientation: str = orientation) -> OuterSum:
            return OuterSum((InductionKeyConstruction.term(k, psi(k), orientation),), "W^2_K")

        disp, mod = {}, {}
        for case, (s, T, V) in cases.items():
            qk, kq = (("w_E", T), ("Phi_1 w_E", s)), (("Phi_1 w_E", s), ("w_E", T))
            lr = qk if convention == "query-key" else kq
            dl, dr = lr if orientation == "read-score" else kq
            disp[case] = _sum_over_vocab(lambda k: bilinear(dl, W_k(k), dr, gram), V)
            mod[case] = _sum_over_vocab(lambda k: bilinear(lr[0], W_k(k), lr[1], gram), V)
        out[orientation] = {"displayed": disp, "model": mod}
    return out


def _sym_rat(x: Fraction) -> sp.Rational:
    return sp.Rational(x.numerator, x.denominator)


def position_profile(con: PrevTokenConstruction, v: int, u: int, gram: Callable[[Vec, Vec], Any]) -> sp.Expr:
    """The model's layer-1 score of the previous position as a function of the position t:
    w_E(v)^T W^1_K (w_E(u) + r_{s-t}) at s = t - 1, with t a sympy integer symbol and the
    RPE relative index taken from the construction (``rel_offset``).  Independence of t
    means the simplified expression has no t in it."""
    t = sp.Symbol("t", integer=True)
    return sp.simplify(sp.sympify(con.layer1_score(t, t - 1, v, u, gram)))


def check_theorem2(con: PrevTokenConstruction, family_gram: Callable[[Vec, Vec], Fraction] | None = None) -> Evidence:
    """Exact check of ws24 Theorem 2 under the orthonormal idealization.

    Statement checked (the whole statement, for the variant's reading of the score):
    (a) the association (r_{-1}^T W^1_K w_E(v), or w_E(v)^T W^1_K r_{-1} for ``read-score``)
        equals chi(v), nonzero and equal for every v in Q;
    (b) the model's own previous-token score w_E(v)^T W^1_K r_{-1} (query^T W_K key, the
        convention of the base model) equals chi(v): the head still attends to t - 1;
    (c) the model's layer-1 score at (t, t - 1), built for a symbolic position t through the
        RPE key w_E(z_s) + r_{s-t}, has no t in it and equals chi(v);
    (d) (a)-(c) token by token for the index probe chi(k) = (-1)^(k+1) k (distinct, so a
        coefficient, target or vector read at the wrong row changes a compared value; the
        uniform data's constant chi would hide it).  'Equal for every v' is a property of the
        data's chi and is checked on ``con`` only.

    Args:
        con: the construction (V, chi, orientation).
        family_gram: an exact Fraction Gram of the concrete family (default: orthonormal);
            the fault-injection tests pass a non-orthogonal one.

    Returns:
        ``proved`` when (a)-(c) hold for every v and the symbolic-V closed forms equal
        chi(v); ``refuted`` with the first failing clause and v as witness (re-checked in
        fractions.Fraction) otherwise.  Numbers carry ``displayed_score`` and
        ``model_score`` (closed forms) for every variant.
    """
    f = theorem2_facts(con, family_gram)
    numbers = {
        "displayed_score": str(f.forms["displayed"]),
        "model_score": str(f.forms["model"]),
        "closed_form_displayed": str(f.forms["displayed"]),
        "closed_form_model": str(f.forms["model"]),
        "displayed_scores": [str(s) for s in f.scores],
        "model_scores": [str(s) for s in f.model],
        "layer1_score_at_(t,t-1)": str(f.profile),
        "t_in_layer1_score": f.t in f.profile.free_symbols,
        "chi": [str(c) for c in con.chi],
    }
    base: dict[str, Any] = dict(layer=Layer.SYMBOLIC, engines=engine_versions("sympy"), numbers=numbers,
                                bound=f"closed form for every V >= v; concrete construction at V = {con.V}; position t symbolic")
    details = [
        f"closed form (every V): {f.reading} = {f.forms['displayed']}  (the variant's reading of the association)",
        f"closed form (every V): w_E(v)^T W^1_K r_{{-1}} = {f.forms['model']}  (the model's query^T W_K key)",
        f"layer-1 score at (t, t-1), v = 1, z_{{t-1}} = {f.u}, symbolic t: {f.profile}",
    ]
    for clause in (_theorem2_reading, _theorem2_model, _theorem2_position):
        ev = clause(f, base, details)
        if ev is not None:
            return ev
    # (d) the same identities with distinct coefficients: a wrong row must change a number
    probe = _theorem2_probe(con, f.gram, f.frac_gram, base, details)
    if probe is not None:
        return probe
    return Evidence(status=Status.PROVED, summary=(
        f"{f.reading} = w_E(v)^T W^1_K r_{{-1}} = chi(v) exactly (orthonormal family), for every V; all {con.V} "
        f"concrete scores equal chi(v) != 0, and the model's layer-1 score at (t, t-1) is {f.profile} for symbolic t; "
        f"with distinct coefficients chi(k) = (-1)^(k+1) k the same identities hold token by token"),
        details=details, **base)


@dataclass
class Theorem2Facts:
    """The exact values ws24 Theorem 2's clauses are decided on: the closed forms (every V), the concrete
    scores v = 1..V under the variant's reading and the model's own, and the layer-1 score at (t, t-1) for
    symbolic t (v = 1, z_{t-1} = u)."""

    con: PrevTokenConstruction
    forms: dict[str, Any]
    gram: Any
    frac_gram: Callable[[Vec, Vec], Fraction] | Any
    scores: list[Any]
    model: list[Any]
    u: int
    profile: Any
    t: Any
    reading: str


def theorem2_facts(con: PrevTokenConstruction, family_gram: Callable[[Vec, Vec], Fraction] | None) -> Theorem2Facts:
    """The closed forms, the concrete scores and the position profile of ``con`` (:func:`check_theorem2`)."""
    gram = OrthonormalGram() if family_gram is None else _SympyOf(family_gram)
    u = 2 if con.V >= 2 else 1
    return Theorem2Facts(
        con, theorem2_closed_forms(con.convention)[con.orientation], gram,
        FractionOrthonormalGram() if family_gram is None else family_gram,
        scores=[sp.sympify(con.displayed_score(v, gram)) for v in range(1, con.V + 1)],
        model=[sp.sympify(con.model_score(v, gram)) for v in range(1, con.V + 1)],
        u=u, profile=position_profile(con, 1, u, gram), t=sp.Symbol("t", integer=True),
        reading=reading_text(con.orientation, con.convention))


_CHI_V = sp.Function("chi")(sp.Symbol("v", integer=True, positive=True))


def _theorem2_reading(f: Theorem2Facts, base: dict, details: list[str]) -> Evidence | None:
    """Clause (a): the variant's reading equals chi(v), nonzero and equal for every v in Q; refuted, else None."""
    con, scores, frac_gram = f.con, f.scores, f.frac_gram
    bad = _first_violation([(v, scores[v - 1], con.target(v)) for v in range(1, con.V + 1)],
                           recheck=lambda v: con.displayed_score(v, frac_gram))
    if bad is None and len(set(scores)) > 1:
        v2 = next(v for v in range(2, con.V + 1) if scores[v - 1] != scores[0])
        return Evidence(status=Status.REFUTED, summary=(
            f"the scores are not equal across Q: v = 1 gives {scores[0]}, v = {v2} gives {scores[v2 - 1]}"),
            witness={"clause": "equal for every v in Q", "v": [1, v2],
                     "displayed_score": [str(con.displayed_score(1, frac_gram)), str(con.displayed_score(v2, frac_gram))],
                     "rechecked_in": "fractions.Fraction"}, details=details, **base)
    if bad is None and sp.simplify(f.forms["displayed"] - _CHI_V) != 0:
        bad = (1, scores[0], con.target(1), con.displayed_score(1, frac_gram))
    if bad is None:
        return None
    v, got, want, exact = bad
    return Evidence(status=Status.REFUTED, summary=(
        f"{f.reading} = {f.forms['displayed']} in closed form; at v = {v} the score is {got} "
        f"where the statement needs chi({v}) = {want} (nonzero, equal across Q)"),
        witness={"clause": "the association equals chi(v)", "v": v, "displayed_score": str(exact),
                 "chi(v)": str(want), "rechecked_in": "fractions.Fraction"},
        details=details, **base)


def _theorem2_model(f: Theorem2Facts, base: dict, details: list[str]) -> Evidence | None:
    """Clause (b): the model's own score equals chi(v), so the previous-token head still works; refuted, else None."""
    con, model, frac_gram = f.con, f.model, f.frac_gram
    bad = _first_violation([(v, model[v - 1], con.target(v)) for v in range(1, con.V + 1)],
                           recheck=lambda v: con.model_score(v, frac_gram))
    if bad is None and sp.simplify(f.forms["model"] - _CHI_V) != 0:
        bad = (1, model[0], con.target(1), con.model_score(1, frac_gram))
    if bad is None:
        return None
    v, got, want, exact = bad
    return Evidence(status=Status.REFUTED, summary=(
        f"the variant's reading gives chi(v), but the model's own score {model_score_text(f.con.convention)} = "
        f"{f.forms['model']} "
        f"in closed form: at v = {v} it is {got} where the previous-token head needs chi({v}) = {want}"),
        witness={"clause": f"the model's score {model_score_text(f.con.convention)} equals chi(v)", "v": v,
                 "model_score": str(exact), "chi(v)": str(want), "rechecked_in": "fractions.Fraction"},
        details=details, **base)


def _theorem2_position(f: Theorem2Facts, base: dict, details: list[str]) -> Evidence | None:
    """Clause (c): the layer-1 score at (t, t-1) has no t in it and equals chi(1); refuted, else None."""
    con, profile, t = f.con, f.profile, f.t
    if t not in profile.free_symbols and sp.simplify(profile - _sym_rat(con.target(1))) == 0:
        return None
    vals = {tt: sp.simplify(profile.subs(t, tt)) for tt in (2, 3, 4, 5)}
    return Evidence(status=Status.REFUTED, summary=(
        f"the model's layer-1 score at (t, t-1) is {profile} as a function of t "
        f"(t = 2..5: {', '.join(str(x) for x in vals.values())}), not the constant chi(1) = {con.target(1)}"),
        witness={"clause": "independent of the position t", "v": 1, "z_(t-1)": f.u,
                 "score_at_t": {str(k): str(x) for k, x in vals.items()}, "chi(v)": str(con.target(1)),
                 "rechecked_in": "sympy substitution at t = 2..5"},
        details=details, **base)


_LABEL = {"displayed_score": "variant's reading", "model_score": "model's own score",
          "layer1_score_at_(t,t-1)": "layer-1 score at (t, t-1)"}


def _probe_size(V: int) -> int:
    return max(V, 3)


def _theorem2_probe(con: PrevTokenConstruction, gram, frac_gram, base: dict, details: list[str]) -> Evidence | None:
    """Clause (d): the per-token identities (a)-(c) for the index probe chi(k) = (-1)^(k+1) k
    (distinct coefficients, same variant, V = max(con.V, 3)), where a coefficient, target or
    vector looked up at the wrong row changes the compared value.  The layer-1 score at
    (t, t-1) is built for every query token v with a different key token z_(t-1) = v + 1
    (cyclically), so a query/key token swap is seen too.  Returns the refutation, or None."""
    probe = PrevTokenConstruction.index_probe(_probe_size(con.V), con.orientation, convention=con.convention)
    t = sp.Symbol("t", integer=True)
    chi_txt = "chi(k) = (-1)^(k+1) k"
    base["numbers"]["index_probe"] = {"chi": [str(c) for c in probe.chi], "V": probe.V}
    details.append(f"index probe ({chi_txt}, V = {probe.V}): the reading, the model's score and the layer-1 score at "
                   "(t, t-1) compared with chi(v) token by token")
    for v in range(1, probe.V + 1):
        want = _sym_rat(probe.target(v))
        u = v % probe.V + 1
        checks = (("the association equals chi(v)", "displayed_score", lambda: probe.displayed_score(v, gram),
                   lambda: probe.displayed_score(v, frac_gram)),
                  ("the model's score w_E(v)^T W^1_K r_{-1} equals chi(v)", "model_score",
                   lambda: probe.model_score(v, gram), lambda: probe.model_score(v, frac_gram)),
                  ("the layer-1 score at (t, t-1) equals chi(z_t)", "layer1_score_at_(t,t-1)",
                   lambda: position_profile(probe, v, u, gram), None))
        for clause, key, score, exact in checks:
            got = sp.simplify(sp.sympify(score()))
            if t in got.free_symbols or sp.simplify(got - want) != 0:
                witness = {"clause": f"{clause} (index probe, {chi_txt})", "v": v, "chi(v)": str(want),
                           key: str(exact() if exact is not None else got), "probe_chi": [str(c) for c in probe.chi],
                           "rechecked_in": "fractions.Fraction" if exact is not None else "sympy"}
                if exact is None:
                    witness["z_(t-1)"] = u
                return Evidence(status=Status.REFUTED, summary=(
                    f"with distinct coefficients {chi_txt} (V = {probe.V}) the {_LABEL[key]} at v = {v} is "
                    f"{got} where chi({v}) = {want}: the identity does not hold token by token"),
                    witness=witness, details=details, **base)
    return None


READING_CLAUSE = "the variant's reading equals psi(z_T)[z_s = z_T]"
MODEL_CLAUSE = "the model's score w_E(z_T)^T W^2_K Phi_1 w_E(z_s) equals psi(z_T)[z_s = z_T]"


def check_eq14(con: InductionKeyConstruction, family_gram: Callable[[Vec, Vec], Fraction] | None = None) -> Evidence:
    """Exact check of ws24 Eq. 14 under the orthonormal idealization.

    Statement checked: the variant's reading of the score ((Phi_1 w_E(z_s))^T W^2_K w_E(z_T),
    or w_E(z_T)^T W^2_K Phi_1 w_E(z_s) for ``read-score``) equals psi(z_T) [z_s = z_T] with
    psi(v) != 0, and so does the model's own layer-2 score w_E(z_T)^T W^2_K Phi_1 w_E(z_s)
    (query^T W_K key), for all tokens z_s, z_T; then the same for every pair with the index
    probe psi(k) = (-1)^(k+1) k (distinct coefficients: a wrong row changes a compared value).

    Returns:
        ``proved`` or ``refuted`` (witness pair re-checked in fractions.Fraction); numbers
        carry ``displayed_score`` and ``model_score`` closed forms by case.
    """
    forms = eq14_closed_forms(con.convention)[con.orientation]
    gram = OrthonormalGram() if family_gram is None else _SympyOf(family_gram)
    frac_gram = FractionOrthonormalGram() if family_gram is None else family_gram
    rows, mrows = [], []
    for T in range(1, con.V + 1):
        for s in range(1, con.V + 1):
            rows.append(((s, T), sp.sympify(con.displayed_score(s, T, gram)), con.target(s, T)))
            mrows.append(((s, T), sp.sympify(con.model_score(s, T, gram)), con.target(s, T)))
    nonzero_bad = next((v for v in range(1, con.V + 1) if con.psi[v - 1] == 0), None)
    psi_v = sp.Function("psi")(sp.Symbol("v", integer=True, positive=True))

    def ok(cases: dict) -> bool:
        g = {c: sp.simplify(e) for c, e in cases.items()}
        return sp.simplify(g["s = T"] - psi_v) == 0 and g["s < T"] == 0 and g["s > T"] == 0

    general = {c: sp.simplify(e) for c, e in forms["displayed"].items()}
    gmodel = {c: sp.simplify(e) for c, e in forms["model"].items()}
    reading = ("w_E(T)^T W^2_K Phi_1 w_E(s)" if con.orientation == "read-score" else "(Phi_1 w_E(s))^T W^2_K w_E(T)")
    details = [f"closed form, case {c}: {reading} = {e}" for c, e in general.items()]
    details += [f"closed form, case {c}: w_E(T)^T W^2_K Phi_1 w_E(s) = {e}  (the model's query^T W_K key)"
                for c, e in gmodel.items()]
    base: dict[str, Any] = dict(layer=Layer.SYMBOLIC, engines=engine_versions("sympy"),
                numbers={"displayed_score": {c: str(e) for c, e in general.items()},
                         "model_score": {c: str(e) for c, e in gmodel.items()},
                         "psi": [str(p) for p in con.psi]},
                bound=f"closed form for every V >= max(s, T); concrete construction at V = {con.V}",
                details=details)
    bad = _first_violation(rows, recheck=lambda st: con.displayed_score(st[0], st[1], frac_gram))
    if bad is None and (nonzero_bad is not None or not ok(forms["displayed"])):
        v = nonzero_bad or 1
        bad = ((v, v), sp.sympify(con.displayed_score(v, v, gram)), con.target(v, v),
               con.displayed_score(v, v, frac_gram))
    if bad is not None:
        (s, T), got, want, exact = bad
        return Evidence(status=Status.REFUTED, summary=(
            f"{reading} at s = T = {T}: closed form {general['s = T']}; the score is {got} "
            f"where the statement needs psi({T})[s = T] = {want if want != 0 else 'psi(T) != 0'}"),
            witness={"clause": READING_CLAUSE, "z_s": s, "z_T": T,
                     "displayed_score": str(exact), "psi(z_T)[z_s = z_T]": str(want),
                     "rechecked_in": "fractions.Fraction"}, **base)
    bad = _first_violation(mrows, recheck=lambda st: con.model_score(st[0], st[1], frac_gram))
    if bad is None and not ok(forms["model"]):
        bad = ((1, 1), sp.sympify(con.model_score(1, 1, gram)), con.target(1, 1), con.model_score(1, 1, frac_gram))
    if bad is not None:
        (s, T), got, want, exact = bad
        return Evidence(status=Status.REFUTED, summary=(
            f"the variant's reading gives psi(T)[s = T], but the model's own score w_E(T)^T W^2_K Phi_1 w_E(s) at "
            f"s = T = {T} is {got} (closed form {gmodel['s = T']}) where the induction head needs psi({T}) = {want}"),
            witness={"clause": MODEL_CLAUSE,
                     "z_s": s, "z_T": T, "model_score": str(exact), "psi(z_T)[z_s = z_T]": str(want),
                     "rechecked_in": "fractions.Fraction"}, **base)
    # the same identities with distinct coefficients, so that a wrong row changes a number
    probe_ev = _eq14_probe(con, gram, frac_gram, base, details)
    if probe_ev is not None:
        return probe_ev
    return Evidence(status=Status.PROVED, summary=(
        f"{reading} = w_E(T)^T W^2_K Phi_1 w_E(s) = psi(T)[s = T] exactly (orthonormal family), for every V; "
        f"with distinct coefficients psi(k) = (-1)^(k+1) k the same identity holds pair by pair"), **base)


def _eq14_probe(con: InductionKeyConstruction, gram: Any, frac_gram: Any, base: dict[str, Any],
                details: list[str]) -> Evidence | None:
    """Eq. 14 pair by pair with the index probe psi(k) = (-1)^(k+1) k (distinct coefficients, so that a wrong
    row changes a number): refuted at the first failing pair, else None.  Adds the probe to ``base``."""
    probe = InductionKeyConstruction.index_probe(_probe_size(con.V), con.orientation, convention=con.convention)
    base["numbers"]["index_probe"] = {"psi": [str(p) for p in probe.psi], "V": probe.V}
    base["details"] = details + [f"index probe (psi(k) = (-1)^(k+1) k, V = {probe.V}): the reading and the model's score "
                                 "compared with psi(z_T)[z_s = z_T] for every pair"]
    for kind, fn in (("displayed_score", probe.displayed_score), ("model_score", probe.model_score)):
        prow = [((s_, T_), sp.sympify(fn(s_, T_, gram)), probe.target(s_, T_))
                for T_ in range(1, probe.V + 1) for s_ in range(1, probe.V + 1)]
        bad = _first_violation(prow, recheck=functools.partial(_recheck_pair, fn, frac_gram))
        if bad is not None:
            (s, T), got, want, exact = bad
            return Evidence(status=Status.REFUTED, summary=(
                f"with distinct coefficients psi(k) = (-1)^(k+1) k (V = {probe.V}) the {_LABEL[kind]} at "
                f"z_s = {s}, z_T = {T} is {got} where psi({T})[z_s = z_T] = {want}: the identity does not hold pair by pair"),
                witness={"clause": (READING_CLAUSE if kind == "displayed_score" else MODEL_CLAUSE)
                                   + " (index probe, psi(k) = (-1)^(k+1) k)",
                         "z_s": s, "z_T": T, kind: str(exact), "psi(z_T)[z_s = z_T]": str(want),
                         "probe_psi": [str(p) for p in probe.psi], "rechecked_in": "fractions.Fraction"}, **base)
    return None


def _recheck_pair(score: Callable[..., Fraction], gram: Any, st: tuple[int, int]) -> Fraction:
    """A score ``score(s, T, gram)`` at the pair ``st = (s, T)``, for :func:`_first_violation`'s exact re-check."""
    return score(st[0], st[1], gram)


def _first_violation(rows: list[tuple[Any, Any, Fraction]], recheck: Callable[[Any], Fraction]):
    """First row whose exact score differs from its target, or where the target is 0
    for a diagonal row that must be nonzero; returns (index, score, target, rechecked)."""
    for idx, score, target in rows:
        diag = (not isinstance(idx, tuple)) or idx[0] == idx[1]
        if sp.sympify(score - sp.Rational(target.numerator, target.denominator)) != 0 or (diag and target == 0):
            exact = recheck(idx)
            if exact == target and not (diag and target == 0):
                raise RuntimeError(f"sympy and Fraction disagree at {idx}: {score} vs {exact}")
            return idx, score, target, exact
    return None


__all__ = ["check_theorem2", "check_eq14", "theorem2_closed_forms", "eq14_closed_forms", "OrthonormalGram", "show"]


def check_prop4(claimed: Callable[[sp.Expr], sp.Expr] | None = None) -> Evidence:
    """ws24 Prop. 4, exact for a symbolic number of visible keys t >= 1.

    Args:
        claimed: the paper's closed form as a function of t (default e / (t + e - 1));
            the fault-injection tests pass a wrong one.

    Returns:
        ``proved`` when softmax(1 on the previous key, 0 on t - 1 others) simplifies to the
        claimed form for symbolic t; ``refuted`` with the first t in 1..64 where they
        differ (re-checked at 50 digits with mpmath) otherwise.
    """
    from verify.constructions.bilinear import prev_token_weight

    t = sp.Symbol("t", integer=True, positive=True)
    claimed = claimed or (lambda tt: sp.E / (tt + sp.E - 1))
    weight = prev_token_weight(t, sp.exp)
    diff = sp.simplify(weight - claimed(t))
    base: dict[str, Any] = dict(layer=Layer.SYMBOLIC, engines=engine_versions("sympy"),
                numbers={"softmax_weight": str(sp.simplify(weight)), "claimed": str(claimed(t)), "difference": str(diff)})
    if diff == 0:
        shown = str(sp.simplify(weight)).replace("E", "e")
        return Evidence(status=Status.PROVED, summary=f"softmax weight on the previous key = {shown} = e/(t + e - 1) for every t >= 1",
                        bound="every t >= 1 (symbolic)", **base)
    import mpmath

    with mpmath.workdps(50):  # the global precision is left as it was
        for tt in range(1, 65):
            w = mpmath.e / (mpmath.e + tt - 1)
            c = mpmath.mpf(sp.N(claimed(sp.Integer(tt)), 60))
            if abs(w - c) > mpmath.mpf(10) ** -40:
                return Evidence(status=Status.REFUTED, summary=(f"at t = {tt} the softmax weight is {mpmath.nstr(w, 12)}, the claimed form "
                                                                f"gives {mpmath.nstr(c, 12)}"),
                                witness={"t": tt, "softmax_weight": mpmath.nstr(w, 20), "claimed": mpmath.nstr(c, 20),
                                         "rechecked_in": "mpmath, 50 digits"}, **base)
    return Evidence(status=Status.INCONCLUSIVE,
                    summary=f"sympy could not simplify the difference {diff} to 0 and no t <= 64 separates them", **base)
