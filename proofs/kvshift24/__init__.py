"""kvshift24 — Xu et al., "KV Shifting Attention Enhances Language Modeling",
arXiv 2411.19574 v2: Theorem 2 (IH = KVSA, with its repairs), Theorem 1 and Theorem 3,
wired to the three layers.

The constructions (IH of Definition 1, KVSA of Eqs. 4-6 with the ALiBi bias, the
Appendix B parameters and the repairs) are defined once in
:mod:`verify.constructions.kvshift24`; each layer evaluates them in its own arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

from verify.constructions.kvshift24 import EQ10_READINGS, FIXES, T1_MASKS, input_bytes
from verify.constructions.kvshift24_pe import ALIBI_DISTANCES, CACHE_POLICIES, ROPE_OFFSETS, ROPE_PLACEMENTS
from verify.core.model import Claim, InputError, Paper, Params, Part, Provenance, param
from verify.evidence import Context, Evidence, Layer, Outcome, Sized, Status, fmt_measured
from verify.proofs import with_kernel_layer
from verify.proofs.kvshift24 import api, plots
from verify.proofs.kvshift24.api import ALIBI_CHOICES

SOURCE_NOTE = ("Definitions as printed: Shift drops the last row and pads a zero row in front, K^ = a1 K + a2 Shift(K), "
               "V^ = b1 V + b2 Shift(V) (Sec. 2.2, Eqs. 4-5), output = softmax(Q K^T M / sigma) V^ W_O with the causal mask "
               "M and sigma = sqrt(D) (Eq. 6); IH of Definition 1 (Eq. 7) with the ALiBi bias -m|L - s| and the softmax "
               "over s = 2..L-1; Appendix B's parameters a1 = 0, a2 = 1, b1 = 1/sigma, b2 = 0, identity projections "
               "and ALiBi slope p = m. Eq. 6 has no ALiBi bias; Theorem 2's proof adds it (Appendix B), which is the "
               "default here; --alibi no checks Eq. 6 as printed. Positions are 1-indexed as in the paper.")
MAX_BYTES = 4 * 2**30
BATCH = 4
#: kvshift24's work sizes that are not options, per claim, each with its value under the quick and the full
#: profile (``verify show CLAIM`` lists a claim's; the checks read them under the run's profile with ``ctx.size``)
SIZES: dict[str, dict[str, Sized]] = {
    "theorem2": {"extra_sizes": Sized((), ((4096, 1024),), "(L, d) sizes added to the numeric sweep (the paper's)")},
    "theorem3": {"widths": Sized((256, 1024), (256, 1024, 4096), "embedding widths d of the numeric check")},
    "theorem1": {"lengths": Sized((8, 64, 256), (8, 64, 256, 1024), "sequence lengths L of the numeric sweep")},
}

@dataclass(frozen=True)
class Theorem2Params(Params):
    """Options of kvshift24:theorem2 (the repair is the variant; the rest are sizes and the user's input)."""

    fix: str = param("none", "KVSA variant: as written (none), drop s = 1 and s = L (mask), also b1 = 1 (mask+scale)",
                     choices=FIXES, variant=True)
    m: Fraction = param(Fraction(1, 2), "ALiBi slope m (rational, >= 0)", kind="rational", minimum=Fraction(0))
    sigma: Fraction = param(Fraction(2), "score scale sigma = sqrt(D) (rational, > 0; default D = 4)", kind="rational")
    L: int = param(256, "largest sequence length of the numeric sweep (>= 3)", kind="int")
    d: int = param(64, "embedding width of the numeric sweep", kind="int")
    Lmax: int = param(12, "solver bound: equality proved for every L <= Lmax", kind="int")
    alibi: str = param("yes", "KVSA's ALiBi bias: yes (-m|L - s|, the slot distance of Eq. 7 / Appendix B's p = m, the "
                       "default), no (Eq. 6 as printed) or before-shift (distance to the shifted key's source position "
                       "s - 1); IH keeps its own bias (Eq. 7)", choices=ALIBI_CHOICES)
    sequence: str = param("", "your own input, e.g. 'A B C A' (3-12 tokens, <= 6 symbols; orthonormal embeddings unless "
                          "--embeddings): IH, KVSA and KVSA - IH exactly; replaces the witness search", kind="text",
                          maximum=200)
    embeddings: str = param("", "a .npy/.pt file of shape (V, d), one row per distinct symbol of --sequence in order of "
                            "first appearance", kind="text", maximum=400)
    rope: str = param("none", "RoPE: none (Theorem 2), before-shift (raw keys rotated, then shifted) or after-shift (the "
                      "shifted keys rotated, as Appendix F's code does)", choices=ROPE_PLACEMENTS)

    sizes = SIZES["theorem2"]


def _t2_validate(p: Mapping[str, Any]) -> None:
    if p["sigma"] <= 0:
        raise InputError(f"--sigma must be > 0 (it divides the scores), got {p['sigma']}")
    if p["L"] < 3:
        raise InputError(f"--L must be >= 3 (IH's softmax runs over s = 2..L-1), got {p['L']}")
    if p["d"] < 1:
        raise InputError(f"--d must be >= 1, got {p['d']}")
    if not 3 <= p["Lmax"] <= 24:
        raise InputError(f"--Lmax must be in 3..24 (one z3 obligation per L), got {p['Lmax']}")
    if p.get("embeddings") and not p.get("sequence"):
        raise InputError("--embeddings needs --sequence (the file has one row per distinct symbol of the sequence)")
    if p.get("sequence"):
        from verify.proofs.kvshift24.api import read_input

        _, X = read_input(p["sequence"], p.get("embeddings", ""))
        if X is not None and p.get("rope", "none") != "none" and len(X[0]) % 2:
            raise InputError("--rope needs an even embedding width (RoPE rotates coordinate pairs)")
    if p.get("rope", "none") != "none" and p["d"] % 2:
        raise InputError(f"--rope needs an even --d (RoPE rotates coordinate pairs), got {p['d']}")
    need = input_bytes(BATCH, p["L"], p["d"])
    if need > MAX_BYTES:
        raise InputError(f"--L {p['L']} --d {p['d']} needs about {need / 2**30:.1f} GiB for the numeric batch "
                         f"(limit {MAX_BYTES / 2**30:.0f} GiB); lower --L or --d")


def _t2_fix(p: Mapping[str, Any]) -> str | None:
    tail = {"yes": "", "no": " (KVSA without its ALiBi bias, Eq. 6 as printed)",
            "before-shift": " (ALiBi distance to the shifted key's source position)"}[p.get("alibi", "yes")]
    if p.get("rope", "none") != "none":
        tail += f" (with RoPE {p['rope']})"
    if p.get("fix") == "mask":
        return ("a different layer, outside Eqs. 4-6: mask the boundary terms s = 1 and s = L out of KVSA's softmax "
                "(b1 = 1/sigma kept)" + tail)
    if p.get("fix") == "mask+scale":
        return "a different layer, outside Eqs. 4-6: mask s = 1 and s = L out of KVSA's softmax and set b1 = 1" + tail
    return None


def _var(p: Mapping[str, Any]):
    from verify.constructions.kvshift24 import variant

    return variant(p["fix"], alibi=p.get("alibi", "yes") != "no")


def _user_path(p: Mapping[str, Any]) -> bool:
    """The run is about the user's input or a PE placement, not the default witness search."""
    return bool(p.get("sequence")) or p.get("rope", "none") != "none" or p.get("alibi", "yes") == "before-shift"


def _pe(p: Mapping[str, Any]):
    from verify.proofs.kvshift24.api import pe_for

    return pe_for(p.get("rope", "none"), p.get("alibi", "yes"))


def _input(p: Mapping[str, Any]):
    from verify.proofs.kvshift24.api import read_input

    return read_input(p["sequence"], p.get("embeddings", "")) if p.get("sequence") else (None, None)


def _with_existence(ev: Evidence, record: Mapping[str, Any]) -> Evidence:
    """The layer's evidence with its answer to part (b), whether any layer of Eqs. 4-6 equals IH (it does not
    depend on the run's options: it quantifies over every parameter and size)."""
    ev.numbers = {**ev.numbers, "existence": dict(record)}
    return ev


def _t2_symbolic(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.symbolic import kvshift24 as sym

    return _with_existence(_t2_symbolic_construction(p, ctx), sym.decide_existence())


def _t2_symbolic_construction(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.symbolic import kvshift24 as sym

    if _user_path(p):
        from verify.symbolic import kvshift24_pe as sym_pe

        x, X = _input(p)
        ev = sym_pe.check_theorem2_input(x, _var(p), p["m"], p["sigma"], _pe(p), X)
        default_placement = p.get("rope", "none") == "none" and p.get("alibi", "yes") != "before-shift"
        if ev.status == "inconclusive" and default_placement:
            # the given input shows no difference; with the paper's placement the general proof (every input,
            # arbitrary vectors) applies, so it decides the layer and the input's exact result is reported beside it
            general = sym.check_theorem2(_var(p), p["m"], p["sigma"])
            if general.status == "proved":
                general.details = [f"the given input {' '.join(x) if x else ''}: {ev.summary}"] + list(general.details)
                general.numbers = {**general.numbers, "given_input": ev.numbers}
                return general
        return ev
    return sym.check_theorem2(_var(p), p["m"], p["sigma"])


def _t2_solver(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.solver import kvshift24 as sol

    ev = _t2_solver_construction(p, ctx)
    return ev if ev.status == Status.SKIPPED else _with_existence(ev, sol.decide_existence(ctx.timeout_ms))


def _t2_solver_construction(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.solver import kvshift24 as sol

    if _user_path(p):
        if p.get("rope", "none") != "none" or p.get("alibi") == "before-shift" or p.get("embeddings"):
            return Evidence(layer=Layer.SOLVER, status=Status.SKIPPED,
                            summary=("the solver encoding has no RoPE rotation, no source-position ALiBi distance and "
                                     "no embedding file; the symbolic (exact) and numeric layers check this input"))
        x, _ = _input(p)
        return sol.check_sequence(x, _var(p), p["m"], p["sigma"], p["Lmax"], ctx.timeout_ms)
    return sol.check_theorem2(_var(p), p["m"], p["sigma"], p["Lmax"], ctx.timeout_ms)


def _t2_numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    if _user_path(p):
        from verify.numeric import kvshift24_pe as num_pe

        x, X = _input(p)
        if x is not None:
            rows = X if X is not None else _plane_rows(x)
            return num_pe.check_theorem2_pe(_var(p), _pe(p), p["sigma"], p["m"], len(x), 0, ctx.seed,
                                            X=num_pe.rows_tensor(rows))
        return num_pe.check_theorem2_pe(_var(p), _pe(p), p["sigma"], p["m"], p["L"], p["d"], ctx.seed, B=BATCH)
    from verify.numeric import kvshift24 as num

    return num.check_theorem2(_var(p), p["m"], p["sigma"], p["L"], p["d"], ctx.seed,
                             extra_sizes=ctx.size(SIZES["theorem2"]["extra_sizes"]), B=BATCH)


def _plane_rows(x: Sequence[str]) -> list[list[int]]:
    """Orthonormal symbol embeddings, symbol j (order of first appearance) = e_{2j} in width 2V (one symbol
    per RoPE plane, so RoPE keeps distinct symbols orthogonal); the exact layer uses the same embedding."""
    from verify.constructions.kvshift24_pe import symbols_in_order

    order = symbols_in_order(x)
    return [[int(i == 2 * order.index(t)) for i in range(2 * len(order))] for t in x]


def _t2_user_explain(p: Mapping[str, Any], evs: Sequence[Evidence]) -> list[str]:
    out = []
    sym = next((e for e in evs if e.layer == "symbolic" and e.numbers), None)
    if sym is not None and sym.numbers.get("sequence"):
        r = sym.numbers["sequence"]
        out.append(f"Your input ({r['input_class']}), exact: {r['text']}.")
    ran = [e.layer for e in evs if e.status not in ("skipped",)]
    if p.get("sequence"):
        out.append(f"Layers run on the given input: {', '.join(ran) or 'none'} (symbolic: exact sympy; solver: a "
                   f"certified rational gap; numeric: float64 on the same embeddings).")
    if p.get("rope", "none") != "none" or p.get("alibi") == "before-shift":
        w = sym.witness if sym is not None and isinstance(sym.witness, dict) else {}
        num = next((e for e in evs if e.layer == "numeric" and "max_rel_abs_difference" in e.numbers), None)
        out.append(f"Distance from IH with RoPE {p.get('rope', 'none')} and ALiBi {p.get('alibi', 'yes')}: exact "
                   + (f"{w.get('max_abs_difference', 0):.4g} on ({', '.join(w.get('input', []))})" if w else "0 on every "
                      "token input up to L = 5")
                   + (f", largest {w['largest_over_search']:.4g} over the searched inputs" if "largest_over_search" in w
                      else "")
                   + (f"; float64 relative {num.numbers['max_rel_abs_difference']:.4g}" if num else "") + ".")
        if p.get("alibi") == "before-shift":
            out.append("ALiBi measured to the shifted key's source position s - 1 adds the same -m to every slot's "
                       "logit, which the softmax cancels: it is the same construction as the slot distance.")
    return out


def _t2_explain(p: Mapping[str, Any], evs: Sequence[Evidence]) -> list[str]:
    from verify.constructions.kvshift24 import kvsa_table_facts, mechanism_sentence

    if _user_path(p):
        return [mechanism_sentence(_var(p))] + _t2_user_explain(p, evs)

    facts = kvsa_table_facts(_var(p))  # what the evaluated table contains, not the variant's flags
    out = [mechanism_sentence(_var(p))]
    if facts["b1"] == "1/sigma" and p["sigma"] == 1:
        out[0] += " At sigma = 1 that scale is 1, so only the boundary terms and the normaliser change the output."
    sym = next((e for e in evs if e.layer == "symbolic" and e.numbers), None)
    if sym is not None:
        n = sym.numbers
        w = sym.witness or {}
        if n.get("headline_witness"):
            out.append(f"{'Headline witness' if w.get('boundary_tokens') else 'Witness'} (orthonormal tokens, "
                       f"A.A = 1, A.B = 0): {n['headline_witness']}.")
        if w.get("value_scale_fact"):
            out.append(f"Value scale, a separate fact: {w['value_scale_fact']}; every value on that input is the "
                       f"same token, so the boundary terms cannot show there.")
        if "closed_form_ABA_diff_A" in n:
            out.append(f"On x = (A, B, A) (A.A = 1, A.B = 0): KVSA - IH = ({n['closed_form_ABA_diff_A']}) A + "
                       f"({n['closed_form_ABA_diff_B']}) B, exact in m and sigma.")
        if n.get("nonzero_pieces_at_sigma"):
            out.append(f"At sigma = {p['sigma']} the difference has these nonzero pieces: "
                       f"{', '.join(n['nonzero_pieces_at_sigma'])}.")
        if "value scale b1 = 1/sigma" in n.get("nonzero_pieces_at_sigma", []) and facts["masked"]:
            out.append(f"The value scale b1 = 1/sigma = {1 / Fraction(p['sigma'])} multiplies every value: "
                       f"KVSA = (1/sigma) IH even with the boundary terms masked.")
    num = next((e for e in evs if e.layer == "numeric" and e.numbers and "largest_size" in e.numbers), None)
    if num is not None:
        n = num.numbers
        size = n["largest_size"]
        out.append(f"Numeric (L = {size['L']}, d = {size['d']}): max |KVSA - IH| below 1e-6 in "
                   f"{n['cells_below_1e-6']}/{n['cells_total']} (m, sigma) cells; sigma, m -> 0 regime: "
                   + ", ".join(f"{k}: {v:.2g}" for k, v in n["sigma_m_to_0_regime"].items()) + ".")
        reg = n.get("regime_by_input_class")
        if reg and not facts["masked"]:
            c = reg["classes"]
            a, b, z = (c[k] for k in ("last two tokens differ, x_L seen before", "last two tokens equal",
                                      "x_L not seen before"))
            out.append(
                f"In the small-sigma, small-m regime Definition 1 appeals to (sigma = m = {reg['sigma']}, orthonormal "
                f"tokens, L = {reg['L']}): with b1 = 1 the boundary terms cost "
                f"{fmt_measured(a['boundary_error_b1=1'], '.1g')} on inputs whose "
                f"last two tokens differ and whose last token occurred before (the s = L key x_{{L-1}} and the s = 1 key 0 "
                f"score far below a matching key), so there the error as written is the value scale b1 = 1/sigma "
                f"({a['error_as_variant']:.3g}). They persist where no key beats them: x_{{L-1}} = x_L (the s = L key "
                f"matches the query; {b['boundary_error_b1=1']:.3g}) and x_L not seen before (every key scores alike; "
                f"{z['boundary_error_b1=1']:.3g}).")
    if not facts["alibi"]:
        from verify.constructions.kvshift24 import NO_ALIBI

        out.append(NO_ALIBI + f" Here m = {p['m']}.")
    return out


def _t2_construction(p: Mapping[str, Any], evs: Sequence[Evidence]) -> tuple[Outcome | None, str, list[str], dict]:
    """Part (a): the layer this run builds (Appendix B's construction as printed, or a masked layer outside
    Eqs. 4-6) equals IH; judged by every layer's check of it (the kernel's main theorem included)."""
    ran = [e for e in evs if e.status.finished and e.outcome is not None]
    by_layer = {str(e.layer): f"{e.status}: {e.summary[:160]}" for e in ran}
    outcomes = {e.outcome for e in ran}
    if not ran or len(outcomes) != 1:
        return None, ("no layer finished" if not ran else "the layers disagree"), [e.layer for e in ran], by_layer
    what = "Appendix B's construction" if p.get("fix") == "none" else "the masked layer (outside Eqs. 4-6)"
    verb = "equals IH" if outcomes == {Outcome.HOLDS} else "differs from IH"
    return outcomes.pop(), f"{what} {verb}: " + ", ".join(str(e.layer) for e in ran), [e.layer for e in ran], by_layer


def _t2_existence(p: Mapping[str, Any], evs: Sequence[Evidence]) -> tuple[Outcome | None, str, list[str], dict]:
    """Part (b): some layer of Eqs. 4-6 (any parameters, any width) equals IH. The symbolic layer decides it for a
    symbolic width, the solver at D = 1..3 (second opinion), the kernel for every width."""
    said: dict[str, str] = {}
    statuses: dict[str, str] = {}
    for e in evs:
        rec = e.numbers.get("existence") if e.layer != Layer.KERNEL else e.numbers.get("parts", {}).get("existence")
        if not rec:
            continue
        statuses[str(e.layer)] = rec["status"]
        if e.layer == Layer.SYMBOLIC:
            said["symbolic"] = f"{rec['status']} for {rec.get('width', '?')}: {rec.get('beta_solutions', '')}"
        elif e.layer == Layer.SOLVER:
            said["solver"] = (f"{rec['status']}: z3 {', '.join(f'D = {d}: {a}' for d, a in rec['widths'].items())}; "
                              f"cvc5 {', '.join(f'D = {d}: {a}' for d, a in rec['second_opinion'].items() if a)}")
        else:
            said["kernel"] = f"{rec['status']}: {rec['theorem']}"
    decided = {k: v for k, v in statuses.items() if v in (Status.REFUTED, Status.PROVED)}
    unfinished = {k: v for k, v in statuses.items() if k not in decided and v != Status.SKIPPED}
    if not decided or unfinished or len(set(decided.values())) > 1:  # a layer that did not finish is never dropped
        why = ("no layer decided it" if not decided else
               f"not every layer decided it ({', '.join(f'{k} {v}' for k, v in unfinished.items())})" if unfinished
               else "the layers disagree")
        return None, why, list(statuses), said
    if set(decided.values()) == {Status.REFUTED}:
        return (Outcome.FAILS, "no layer of Eqs. 4-6, at any width and with any parameters, equals IH: it differs on "
                "one of (u, 0, 0), (0, u, 0), (0, 0, u) (" + ", ".join(decided) + ")", list(decided), said)
    return Outcome.HOLDS, "a layer of Eqs. 4-6 equals IH (" + ", ".join(decided) + ")", list(decided), said


#: Theorem 2 says "there exists a KVSA ... IH = KVSA" (Eq. 9); Appendix B's construction is its proof
T2_PARTS = (
    Part("construction (the variant's layer)", "detail",
         "the layer this run builds equals IH on every input: Appendix B's construction as printed (--fix none, the "
         "paper's proof), or a masked layer outside Eqs. 4-6 (--fix mask, mask+scale: a finding about a different "
         "layer, not a repair of Theorem 2)", _t2_construction, repairable=False,
         quantifiers="statement: for every L >= 3 and every input x_1..x_L, this one layer's output equals IH; check: "
                     "symbolic for symbolic L and s, solver for L <= Lmax, kernel for every L and width, numeric on "
                     "sampled inputs"),
    Part("existence (Eqs. 4-6)", "main",
         "there exists a one-layer single-head KVSA of Eqs. 4-6 with D = d (any alpha1, alpha2, beta1, beta2, W_Q, W_K, "
         "W_V, W_O, scale and additive position bias, ALiBi's included) equal to IH on every input (Theorem 2, Eq. 9)",
         _t2_existence, repairable=False,
         quantifiers="statement: there exist parameters such that for every L and input KVSA = IH; check: for every "
                     "width D and every parameter choice, an input of length 3 where they differ (symbolic: symbolic "
                     "D; kernel: every D; solver: D = 1..3, the second opinion)"),
)


THEOREM2 = Claim(
    id="kvshift24:theorem2",
    title="one layer of KV-shift attention equals the induction-head machine (IH = KVSA)",
    source="arXiv 2411.19574 v2, Theorem 2 (proof in Appendix B), Definition 1, Eqs. 4-6",
    statement=("There exists a one-layer single-head KV shifting attention KVSA, with D = d, such that IH = KVSA "
               "(Eq. 9), IH(x) = sum_{s=2}^{L-1} softmax_s(x_L x_{s-1}^T / sigma - m|L - s|) x_s (Eq. 7); the proof "
               "(Appendix B) takes a1 = 0, a2 = 1, b1 = 1/sigma, b2 = 0, identity projections and ALiBi slope m."),
    quantifiers=("there exists a layer of Eqs. 4-6 (D = d) such that for every L and every input KVSA = IH",
                 "part existence: for every width and every parameter choice, a length-3 input where they differ "
                 "(symbolic D, kernel every D, solver D <= 3); part construction: for every L and input, the one layer"
                 " the variant builds (symbolic L, solver L <= Lmax, kernel every L, numeric sampled)"),
    options=(),
    params_type=Theorem2Params,
    checks={"symbolic": _t2_symbolic, "solver": _t2_solver, "numeric": _t2_numeric},
    variants=({"fix": "none"}, {"fix": "mask"}, {"fix": "mask+scale"}),
    expected={"none": "FAILS", "mask": "FAILS", "mask+scale": "FAILS"},
    parts=T2_PARTS,
    provenance={"mask": Provenance("outside", "drops s = 1 and s = L from the causal softmax: not a layer of Eqs. 4-6"),
                "mask+scale": Provenance("outside", "drops s = 1 and s = L from the causal softmax and sets b1 = 1: "
                                         "not a layer of Eqs. 4-6")},
    fix=_t2_fix,
    validate=_t2_validate,
    repair=("None within Eqs. 4-6: no layer of that form equals IH (part existence). Outside it, a different layer "
            "does: restrict the softmax at position L to s = 2..L-1 (mask the s = 1 term, key 0 and value x_1, and the "
            "s = L term, key x_{L-1} and value x_L) and set b1 = 1 (--fix mask+scale); every summand then equals IH's."),
    caveats=(SOURCE_NOTE,
             "Symbolic: exact sympy (exp kept symbolic); general L by four pieces (boundary terms, normaliser, value "
             "scale) written in partial sums, checked against the construction's term tables for L = 3..8, and the "
             "summands compared for a symbolic index s. Solver: exp never evaluated (equality obligations use ex(t), "
             "an uninterpreted positive function standing for exp(t), so they have no Farkas certificate and cvc5 "
             "re-solves them; witnesses use rational enclosures of exp plus monotonicity); equality bounded by --Lmax. "
             "Numeric: float64, random token inputs with N(0, I/d) embeddings; agreement there is 'consistent', never "
             "'proved'. Defaults: m = 1/2, sigma = 2 (= sqrt(D), D = 4); the mask variant holds only at sigma = 1.",
             "Every layer first compares its own IH and KVSA values (not only their difference) on three fixed inputs, "
             "(A, B, A), (A, B, C, B, A) and four non-orthogonal rational vectors, at the claim's (m, sigma) (and also at "
             "(1/3, 3/4) when the claim's m = 0 or sigma = 1 would hide a sign or scale error), with a second "
             "evaluation written directly from Definition 1 and Eqs. 4-6 (mpmath interval exp, "
             "no shared code with the term tables); the tables checked are the claim's, the repaired one (which must "
             "equal IH: positive control) and one whose numerator and normaliser differ. A disagreement makes the "
             "layer an error. The solver also checks its exp enclosure against mpmath at five points and that every "
             "enclosure box it certifies with has a model; a refutation's witness must carry the independent value, "
             "and (symbolic) the four pieces evaluated on it must sum to its difference with a reported nonzero piece.",
             "The small-sigma, small-m regime (Definition 1: the machine works for any context when sigma and m are taken "
             "very small) is measured at sigma = m = 1/64 on orthonormal tokens, the d -> infinity idealisation; at "
             "finite d, random cross products amplified by 1/sigma blur the input classes."),
    explain=_t2_explain,
    cost=("symbolic ~2 s (the existence part ~0.6 s of it, once per process); solver < 1 s (L <= 12; the existence "
          "part, z3 at D = 1..3 and cvc5 at D = 1, ~0.2 s); kernel: Kvshift24Exists.v compiles in ~1 s; numeric ~3 s at "
          "L <= 256, d = 64 (+ ~5 s for L = 4096, d = 1024 with full)"),
)


# ------------------------------------------------------------------ theorem3

@dataclass(frozen=True)
class Theorem3Params(Params):
    """Options of kvshift24:theorem3 (the reading of Eq. 10 is the variant)."""

    eq10: str = param("as-printed", "reading of Eq. 10 checked: as printed (beta2*a2 in the x_{i-1} and x_T logits, as "
                      "Table 5) or Appendix C's derivation (beta2*a1 there)", choices=EQ10_READINGS, variant=True)
    T: int = param(16, "vocabulary size; sequences have length T + 1", kind="int", minimum=4, maximum=256)
    N: int = param(128, "sequences per width (fresh embeddings each)", kind="int", minimum=8, maximum=4096)

    sizes = SIZES["theorem3"]


def _t3_validate(p: Mapping[str, Any]) -> None:
    need = 8 * p["N"] * (p["T"] + 2) * 4096 * 3
    if need > MAX_BYTES:
        raise InputError(f"--N {p['N']} --T {p['T']} needs about {need / 2**30:.1f} GiB at d = 4096; lower --N")


def _t3_fix(p: Mapping[str, Any]) -> str | None:
    if p.get("eq10") == "appendix-c":
        return ("read the x_{i-1} and x_T logits of Eq. 10 as beta1/S + beta2 a1 (Appendix C's derivation) instead of "
                "beta1/S + beta2 a2 (Eq. 10 and Table 5 as printed)")
    return None


def _t3_numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.numeric import kvshift24 as num

    ds = ctx.size(SIZES["theorem3"]["widths"])
    return num.check_theorem3(p["T"], ds, p["N"], ctx.seed, reading=p.get("eq10", "as-printed"))


def _t3_explain(p: Mapping[str, Any], evs: Sequence[Evidence]) -> list[str]:
    num = next((e for e in evs if e.layer == "numeric" and e.numbers and "exact_limit_check" in e.numbers), None)
    if num is None:
        return []
    n = num.numbers
    lim = n["exact_limit"]
    ex = n["exact_limit_check"]
    em = n["empirical_check"]
    w = ex["witness"]
    d = max(n["per_d"], key=int)
    top = n["per_d"][d]
    r = top["rmse"]
    if ex["ok"]:
        first = (f"The exact d -> infinity limit (orthonormal embeddings) equals {n['reading']}: largest difference "
                 f"{fmt_measured(ex['max_abs_diff'])} over the grid (tolerance {ex['tolerance']:g}; beta2*a1 and beta2*a2 differ "
                 f"by up to {ex['gap_a1_vs_a2']:.4f}).")
    else:
        first = (f"The exact d -> infinity limit (orthonormal embeddings) is not {n['reading']}: at (alpha1, beta1) = "
                 f"{tuple(w['alpha1_beta1'])} the limit is {w['exact_limit']:.6f} and the reading {w['reading']:.6f} "
                 f"(difference {ex['max_abs_diff']:.4f}, tolerance {ex['tolerance']:g}). Table 5 and Eq. 10 give the "
                 f"x_{{i-1}} and x_T logits beta1/S + beta2 a2 where Appendix C's own derivation (value beta1 x_i + "
                 f"beta2 x_{{i-1}} at position i, weight a1) has beta2 a1, and the limit follows the derivation.")
    return [
        first,
        f"At d = {d} the empirical loss is {'' if em['ok'] else 'not '}within {em['tolerance']:.5f} of {n['reading']} "
        f"(RMSE {em['rmse_vs_reading']:.4f}; the tolerance is a third of the RMSE {em['separation_a2_vs_a1_rmse']:.4f} "
        f"between beta2*a1 and beta2*a2, so at most one of them can match).",
        f"Plotting code finding: within {n['tolerance']:.4f} (a quarter of the separation "
        f"{n['separation_a2*beta2_vs_a2+beta2']:.4f} between a2*beta2, Eq. 10, and a2+beta2, Appendix E's plotting "
        f"code) the empirical loss matches {', '.join(n['empirical_matches']) or 'no reading'} (RMSE: "
        + ", ".join(f"{k} {v:.4f}" for k, v in r.items()) + "), so the data rule out the plotting code's a2+beta2; "
        "that tolerance is too wide to tell beta2*a1 from beta2*a2.",
        f"Minimisers on the grid: empirical {top['argmin_alpha1_beta1']}, exact limit {lim['argmin']}, "
        + ", ".join(f"{k} {v}" for k, v in n["argmin_per_formula"].items()) + ".",
    ]


def _t3_numbers(evs: Sequence[Evidence]) -> dict[str, Any] | None:
    """The numeric layer's measurements when it finished (None: it did not run or did not finish)."""
    num = next((e for e in evs if e.layer == Layer.NUMERIC and e.status.finished and "exact_limit_check" in e.numbers),
               None)
    return None if num is None else num.numbers


def _t3_formula(p: Mapping[str, Any], evs: Sequence[Evidence]) -> tuple[Outcome | None, str, list[str], dict]:
    """Theorem 3's formula part: the exact d -> infinity limit (numeric, 1e-9 on the grid), the empirical loss at
    the largest width (numeric) and the Coq theorem about the formula (kernel) must all agree with Eq. 10."""
    said, layers, fails, holds = [], [], False, False
    n = _t3_numbers(evs)
    if n is not None:
        ex, em = n["exact_limit_check"], n["empirical_check"]
        w = ex["witness"]
        layers.append(Layer.NUMERIC.value)
        if ex["ok"] and em["ok"]:
            holds = True
            said.append(f"the exact limit equals {n['reading']} to {ex['tolerance']:g} on the grid and the empirical "
                        f"loss at d = {em['d']} is within {em['tolerance']:.5f} of it")
        else:
            fails = True
            said.append(f"{n['reading']} is off the exact limit by {ex['max_abs_diff']:.4f} at (alpha1, beta1) = "
                        f"{tuple(w['alpha1_beta1'])} (limit {w['exact_limit']:.4f}, formula {w['reading']:.4f})"
                        if not ex["ok"] else
                        f"the empirical loss at d = {em['d']} is not within {em['tolerance']:.5f} of {n['reading']}")
    ker = next((e for e in evs if e.layer == Layer.KERNEL
                and e.status in (Status.PROVED, Status.PROVED_IDEALISED, Status.REFUTED)), None)
    if ker is not None:
        layers.append(Layer.KERNEL.value)
        if ker.status == Status.REFUTED:
            fails = True
            said.append("Coq's kernel checks that the loss differs from it for every T >= 4 whenever beta2 != 0 "
                        "and alpha1 != alpha2 (tied orthonormal embeddings, the d -> infinity limit)")
        else:
            holds = True
            said.append("Coq's kernel checks that the loss equals it for every T >= 4 with tied orthonormal "
                        "embeddings (the d -> infinity limit: an idealisation, proved (idealised))")
    outcome = Outcome.FAILS if fails else Outcome.HOLDS if holds else None
    return outcome, "; ".join(said) or "no layer that judges the formula finished", layers, {}


def _t3_minimiser(p: Mapping[str, Any], evs: Sequence[Evidence]) -> tuple[Outcome | None, str, list[str], dict]:
    """Theorem 3's minimiser part: the empirical loss at the largest width (numeric) is smallest at the induction
    head (alpha1, beta1) = (0, 1) on the grid."""
    n = _t3_numbers(evs)
    if n is None:
        return None, "the numeric layer, the only one that locates the minimiser, did not finish", [], {}
    top = n["per_d"][max(n["per_d"], key=int)]
    said = (f"the empirical minimiser at d = {n['empirical_check']['d']} is {tuple(top['argmin_alpha1_beta1'])} and "
            f"the exact limit's {tuple(n['exact_limit']['argmin'])}, on the {n['grid']} x {n['grid']} grid")
    return (Outcome.HOLDS if n["argmin_ok"] else Outcome.FAILS), said, [Layer.NUMERIC.value], {}


#: Theorem 3 says two things: the limit is Eq. 10 (a detail the figure is drawn from) and the induction head
#: minimises it (the conclusion the paper draws, Figure 2's caption)
T3_PARTS = (
    Part("formula (Eq. 10)", "detail", "as d -> infinity the last-token loss tends to Eq. 10 (in the reading --eq10 "
         "selects)", _t3_formula),
    Part("minimiser (0, 1)", "main", "the induction head (alpha1, beta1) = (0, 1) minimises the loss (Figure 2's "
         "caption)", _t3_minimiser),
)


THEOREM3 = Claim(
    id="kvshift24:theorem3",
    title="loss landscape of one-layer KV-shift attention as d -> infinity (Eq. 10)",
    source="arXiv 2411.19574 v2, Theorem 3, Eq. 10, Table 5 and proof in Appendix C; plotting code in Appendix E",
    statement=("With tied N(0, 1/d) embeddings, identity projections, no residual/MLP/normalisation/PE, vocabulary T, "
               "length T + 1 (every token once, the last repeated), the last-token loss tends as d -> infinity to Eq. 10 "
               "in (a1, a2, b1, b2); with alpha2 = 1 - alpha1, beta2 = 1 - beta1 the induction head is (alpha1, beta1) "
               "= (0, 1)."),
    quantifiers=("for every (alpha1, alpha2, beta1, beta2), as d -> infinity: the loss tends to Eq. 10",
                 "numeric: the exact orthonormal limit on an 11 x 11 grid and d = 256, 1024; kernel: the formula for "
                 "every T >= 4 on orthonormal embeddings"),
    options=(),
    params_type=Theorem3Params,
    checks={"numeric": _t3_numeric},
    variants=({"eq10": "as-printed"}, {"eq10": "appendix-c"}),
    expected={"as-printed": "FAILS", "appendix-c": "HOLDS WITH FIX"},
    parts=T3_PARTS,
    fix=_t3_fix,
    validate=_t3_validate,
    repair=("In Eq. 10 (and Table 5) write the x_{i-1} and x_T logits as beta1/S + beta2 a1, as Appendix C's derivation "
            "has them; the exact d -> infinity limit is then Eq. 10 and (0, 1) stays the minimiser."),
    caveats=("Eq. 10 as printed: S = e^{alpha2} + 2 e^{alpha1} + O(T), a1 = e^{alpha1}/S, a2 = e^{alpha2}/S, target logit "
             "a2 beta1 + beta2/S, the x_{i-1} and x_T logits beta1/S + beta2 a2 (twice), the repeated token's 2 a1 beta1 + "
             "a2 beta2, plus O(T). The text leaves both O(T) open; we take them from Table 5 and Appendix C: T - 2 "
             "positions with score 0 in S and T - 4 other tokens with logit (beta1 + beta2)/S in the loss. Appendix E's "
             "plotting code writes a2+beta2 for a2 beta2 (and e^{O(T)} for O(T)); Appendix C's derivation has beta2 a1 "
             "where Table 5 has beta2 a2. The repeated position i is drawn from 2..T-2 (footnote 16 assumes 1 < i < T).",
             "--eq10 as-printed checks Eq. 10 with Table 5's beta2 a2; --eq10 appendix-c checks it with Appendix C's "
             "beta2 a1 (a repair of the printed formula, hence HOLDS WITH FIX when it holds). Each reading must (1) equal "
             "the exact d -> infinity limit, the loss on orthonormal embeddings in float64, to 1e-9 at every grid point "
             "(the two readings differ by up to about 0.012 at T = 16), (2) be within a third of the beta2 a1 vs beta2 "
             "a2 RMSE of the empirical loss at the largest d, and (3) the empirical minimiser must be (0, 1). The "
             "orthonormal loss is the limit because every dot product of N(0, I/d) embeddings tends to 0 or 1 and the "
             "loss is continuous in them; this step is argued, not machine-checked.",
             "The minimiser (0, 1) is what Figure 2's caption names as the induction head; the text does not print a "
             "minimiser for Eq. 10 itself. Scores are unscaled (no 1/sqrt(d)), as in Appendix C. The numeric layer "
             "measures both parts (its agreement is 'consistent', never 'proved'); the kernel layer checks the formula "
             "only, on orthonormal embeddings."),
    explain=_t3_explain,
    cost="numeric ~1 s per variant (exact limit plus d = 256, 1024, 11 x 11 grid, N = 128); +2 s for d = 4096 with full",
)


# ------------------------------------------------------------------ theorem1

@dataclass(frozen=True)
class Theorem1Params(Params):
    """Options of kvshift24:theorem1 (the key ranges are the variant)."""

    masks: str = param("as-displayed", "key ranges of the two layers: as Appendix A displays them (layer 1 over "
                       "tau <= s-1, layer 2 over s = 2..L-1) or standard causal (tau <= s, s = 1..L)",
                       choices=T1_MASKS, variant=True)
    pmax: int = param(12, "largest first-layer ALiBi slope p of the sweep", kind="int", minimum=2, maximum=30)
    d: int = param(64, "embedding width", kind="int", minimum=2, maximum=1024)

    sizes = SIZES["theorem1"]


def _t1_masks(p: Mapping[str, Any]):
    from verify.constructions.kvshift24 import t1_masks

    return t1_masks(p["masks"])


def _t1_symbolic(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.symbolic import kvshift24 as sym

    return sym.check_theorem1(_t1_masks(p), Fraction(1, 2), Fraction(1))


def _t1_numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.numeric import kvshift24 as num

    ps = [1, 2] + list(range(4, p["pmax"] + 1, 2))
    Ls = ctx.size(SIZES["theorem1"]["lengths"])
    return num.check_theorem1(_t1_masks(p), ps, Ls, p["d"], 4, ctx.seed)


def _t1_explain(p: Mapping[str, Any], evs: Sequence[Evidence]) -> list[str]:
    from verify.constructions.kvshift24 import T1_DEPARTURES

    out = []
    if p["masks"] == "as-displayed":
        out.append("This verdict is for Appendix A's key ranges (layer 1 over tau = 1..s-1, excluding the current "
                   "key; layer 2 over s = 2..L-1 at the last position), not for standard causal layers; the causal "
                   "variant runs the same construction with standard masks.")
    num = next((e for e in evs if e.layer == "numeric" and e.numbers and "sup_err_vs_IH" in e.numbers), None)
    if num is not None:
        n = num.numbers
        errs = ", ".join(f"p = {q}: {e:.2g}" for q, e in zip(n["p"], n["sup_err_vs_IH"]))
        out.append(f"Sup error against IH ({p['masks']} key ranges): {errs}; log-error slope in p: {-n['fit_rate_lambda']:.3f} "
                   f"(fit err = C e^(-lambda p), C = {n['fit_constant_C']:.3g}).")
    if p["masks"] == "as-displayed":
        out.append("Appendix A's key ranges are not those of standard causal layers; where the construction departs: "
                   + " ".join(T1_DEPARTURES))
    else:
        out.append("With standard causal masks the displayed construction does not approximate IH: " + " ".join(T1_DEPARTURES))
        if num is not None and "attribution_at_largest_p" in num.numbers:
            a = num.numbers["attribution_at_largest_p"]
            out.append(f"One standard causal layer at a time (p = {num.numbers['p'][-1]}): "
                       + "; ".join(f"{k}: sup error {v:.3g}" for k, v in a.items()) + ".")
        out.append("This is about the displayed construction under standard masks; it does not rule out a different "
                   "standard-causal construction (for instance one whose second-layer key undoes the first layer's "
                   "average with weights of size e^p, which the theorem's bound on ||W_K^(2,1)|| excludes).")
    sym = next((e for e in evs if e.layer == "symbolic" and e.status == "refuted"), None)
    if sym is not None:
        out.append("Exact witness: " + sym.summary.split("] ", 1)[-1] + ".")
    return out


THEOREM1 = Claim(
    id="kvshift24:theorem1",
    title="two-layer vanilla ALiBi transformer of width 2d approximates IH with error O(e^-p)",
    source="arXiv 2411.19574 v2, Theorem 1 (Eq. 8), construction and proof in Appendix A",
    statement=("A two-layer single-head ALiBi transformer without FFNs, D = 2d, W_K^(1) = W_Q^(1) = 0, second-layer "
               "slope m (layer 1 with residual, layer 2 without, W^2_O = (I, 0)) approximates IH with sup error "
               "O(e^{-p}), p the first-layer ALiBi slope, uniformly in L."),
    quantifiers=("there exists a two-layer transformer, for every L (sup over L): error O(e^{-p})",
                 "symbolic: the construction's error for symbolic p; numeric: p in 1..12, L in 8, 64, 256; kernel: "
                 "every L (the construction as displayed and with causal ranges). as-displayed HOLDS by exhibiting "
                 "the construction (existence shown); causal FAILS for Appendix A's construction built from standard "
                 "causal layers only: it does not decide whether some other causal two-layer transformer exists"),
    options=(),
    params_type=Theorem1Params,
    checks={"symbolic": _t1_symbolic, "numeric": _t1_numeric},
    variants=({"masks": "as-displayed"}, {"masks": "causal"}),
    expected={"as-displayed": "HOLDS", "causal": "FAILS"},
    provenance={"causal": Provenance("reading", "Appendix A displays key ranges a standard causal layer does not "
                                                "have; this runs the same construction with standard causal masks, "
                                                "to show the displayed ranges are needed")},
    caveats=("The construction follows Appendix A: token embedding (x_s, 0), W_V^(1) writing into the second half, "
             "layer-1 output y_s = sum_{tau=1}^{s-1} softmax(-p(s-1-tau)) x_tau (second half, with the residual x_s in "
             "the first), layer-2 output sum_{s=2}^{L-1} softmax(x_L^T y_s/sigma - m|L - s|) x_s with value x_s and "
             "W_O^(2) = (I, 0). The block matrices W_Q^(2,1), W_K^(2,1) (with an unspecified W*) are garbled in the text "
             "we read, so the second-layer score is taken as displayed, x_L^T y_s/sigma. The proof cites a Lemma D.1 "
             "that the text does not contain (its Appendix D is a data script).",
             "--masks as-displayed uses Appendix A's key ranges, which standard causal layers do not have (layer 1 "
             "excludes the current key tau = s; layer 2 excludes s = 1 and s = L at the last position); --masks causal "
             "runs the same construction with standard causal masks (tau <= s, bias -p|s - tau|; s = 1..L). The causal "
             "verdict is about this construction, not about every standard-causal construction.",
             "Both layers first compare their two-layer outputs (both key-range readings, p = 3) and IH on three fixed "
             "inputs with a second evaluation written directly from Appendix A and Definition 1 (mpmath interval exp); "
             "a disagreement makes the layer an error. Positive control for any reading: the displayed ranges must give "
             "IH's table at p -> infinity (symbolic) and O(e^-p) on the same random inputs (numeric), so a construction "
             "broken further cannot pass as the expected failure of the causal reading.",
             "Symbolic: exact sympy in r = e^-p (layer-1 weights at s = 2..10 against the closed form and the bound "
             "delta_s <= e^-p for a symbolic s; layer-2 table at p -> infinity for L = 3..12; the softmax step stated). "
             "Numeric: float64, random token inputs with N(0, I/d) embeddings, sigma = 1, m = 1/2; agreement is "
             "'consistent', never 'proved'."),
    explain=_t1_explain,
    cost="symbolic < 1 s; numeric < 0.5 s per variant (p in 1..12, L in 8, 64, 256, d = 64; +L = 1024 with full)",
)

# ------------------------------------------------------------------ decode consistency


@dataclass(frozen=True)
class DecodeParams(Params):
    """Options of kvshift24:decode (the decode policy is the variant; the construction is Theorem 2's layer)."""

    cache: str = param("raw-key", "shift state between calls: raw-key (correct), mixed-key (Appendix F's inference "
                       "code keeps the shifted key and value after the prefill call), unwritten-first (an "
                       "implementation hazard, not in the paper: the first one-token call does not write it)",
                       choices=CACHE_POLICIES, variant=True)
    offset: str = param("correct", "RoPE position of a decoded token: correct (its absolute position) or zero (an "
                        "implementation hazard, not in the paper: a one-token call with seqlen_offset = 0, the value "
                        "Appendix F's training forward passes; its inference code calls no RoPE)", choices=ROPE_OFFSETS,
                        variant=True, name="rope-offset")
    distance: str = param("correct", "ALiBi query position during decoding: correct (t) or off-by-one (an "
                          "implementation hazard, not in the paper: t - 1, the cache length before the append)",
                          choices=ALIBI_DISTANCES, variant=True, name="alibi-distance")
    fix: str = param("none", "the layer: Theorem 2's as written (none) or a repair (mask, mask+scale)",
                     choices=FIXES)
    rope: str = param("after-shift", "RoPE placement (Appendix F's code: after-shift)", choices=ROPE_PLACEMENTS)
    m: Fraction = param(Fraction(1, 2), "ALiBi slope m (rational, >= 0; 0 turns ALiBi off)", kind="rational",
                        minimum=Fraction(0), maximum=Fraction(64))
    sigma: Fraction = param(Fraction(2), "score scale sigma (rational, > 0)", kind="rational", maximum=Fraction(10**4))
    sequence: str = param("A B C B", "the input shown exactly (3-12 tokens, <= 6 symbols)", kind="text", maximum=200)
    prefill: int = param(2, "tokens in the first call (then one per call); 1 <= prefill < tokens", kind="int",
                         minimum=1, maximum=11)
    embeddings: str = param("", "a .npy/.pt file of shape (V, d) for --sequence (else orthonormal symbols)",
                            kind="text", maximum=400)
    Lmax: int = param(8, "bound of the symbolic and solver layers: every L <= Lmax and every prefill", kind="int",
                      minimum=3, maximum=12)
    L: int = param(64, "numeric length (random N(0, I/d) inputs, prefill L/2 when --prefill >= L)", kind="int",
                   minimum=4, maximum=4096, full=1024)
    d: int = param(32, "numeric width (even when RoPE is on)", kind="int", minimum=2, maximum=1024)


def _dec_validate(p: Mapping[str, Any]) -> None:
    from verify.proofs.kvshift24.api import read_input

    if p["sigma"] <= 0:
        raise InputError(f"--sigma must be > 0 (it divides the scores), got {p['sigma']}")
    x, X = read_input(p["sequence"], p["embeddings"])
    if p["prefill"] >= len(x):
        raise InputError(f"--prefill must be below the number of tokens ({len(x)}), got {p['prefill']}")
    if p["rope"] != "none" and (p["d"] % 2 or (X is not None and len(X[0]) % 2)):
        raise InputError("--rope needs an even width (RoPE rotates coordinate pairs); set --rope none or an even --d")
    if 8 * 8 * p["L"] * p["L"] > MAX_BYTES:
        raise InputError(f"--L {p['L']} needs too much memory for the score matrix; lower --L")


def _dec_parts(p: Mapping[str, Any]):
    from verify.constructions.kvshift24 import variant
    from verify.constructions.kvshift24_pe import PE, Decode

    return (variant(p["fix"]), PE(rope=p["rope"], alibi=p["m"] != 0),
            Decode(p["prefill"], p["cache"], p["rope-offset"], p["alibi-distance"]))


def _dec_symbolic(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.proofs.kvshift24.api import read_input
    from verify.symbolic import kvshift24_pe as sym_pe

    var, pe, dec = _dec_parts(p)
    x, X = read_input(p["sequence"], p["embeddings"])
    return sym_pe.check_decode(x, var, p["m"], p["sigma"], pe, dec, p["Lmax"], X)


def _dec_solver(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.proofs.kvshift24.api import read_input
    from verify.solver import kvshift24_decode as sol

    var, pe, dec = _dec_parts(p)
    x, X = read_input(p["sequence"], p["embeddings"])
    ev = sol.check_decode(x, var, p["m"], p["sigma"], pe, dec, p["Lmax"], ctx.timeout_ms)
    if X is not None:
        ev.details.insert(0, "the solver's witness search uses orthonormal symbols, not the embeddings file (the "
                             "symbolic and numeric layers use the file)")
    return ev


def _dec_numeric(p: DecodeParams, ctx: Context) -> Evidence:
    from verify.constructions.kvshift24_pe import Decode
    from verify.numeric import kvshift24_pe as num_pe

    var, pe, dec = _dec_parts(p)
    L = p.profiled("L", ctx)
    k = dec.prefill if dec.prefill < L else L // 2
    return num_pe.check_decode(var, pe, Decode(k, dec.cache, dec.rope_offset, dec.alibi_distance), p["sigma"],
                               p["m"], L, p["d"], ctx.seed, B=2)


def _dec_explain(p: Mapping[str, Any], evs: Sequence[Evidence]) -> list[str]:
    out = []
    sym = next((e for e in evs if e.layer == "symbolic" and e.numbers.get("sequence")), None)
    if sym is not None:
        r = sym.numbers["sequence"]
        last = r["last"]
        if last is not None:
            out.append(f"On ({', '.join(r['x'])}), prefill {r['prefill']}, last step t = {last['t']}: full pass "
                       f"{last.get('full', '(vector)')}, incremental decoding {last.get('decoded', '(vector)')}"
                       + (f"; the full pass {'equals' if r['full_equals_ih'] else 'differs from'} IH = {r['IH']} "
                          f"exactly" if r["full_equals_ih"] is not None else "") + ".")
        st = sym.numbers["structure"]
        if st["first"]:
            f = st["first"]
            out.append(f"Where the cache departs (first at L = {f['L']}, prefill {f['prefill']}, t = {f['t']}): "
                       f"{f['slots']}.")
    num = next((e for e in evs if e.layer == "numeric" and "reduced_precision" in e.numbers), None)
    if num is not None:
        n = num.numbers
        out.append("Rounding against a bug (relative max deviation from the float64 full pass, L = "
                   f"{n['L']}, d = {n['d']}): float64 {fmt_measured(n['float64_deviation'])} (correct cache "
                   f"{fmt_measured(n['float64_correct_cache'])}); " + "; ".join(
                       f"{k}: correct cache {v['correct_cache']:.2g}, this policy {v['this_policy']:.2g}, tolerance "
                       f"{v['tolerance']:.2g} (" + ("correct cache within it" if v["correct_within_tolerance"] else
                                   "correct cache NOT within it") + (", this policy beyond it" if v["policy_beyond_tolerance"]
                                                                      else "") + ")"
                       for k, v in n["reduced_precision"].items()) + ".")
    if p["alibi-distance"] == "off-by-one" and p["fix"] != "none":
        out.append("An off-by-one ALiBi query position shifts every slot's distance by the same amount except the "
                   "s = t slot's; with that slot masked the softmax cancels the shift.")
    return out


DECODE = Claim(
    id="kvshift24:decode",
    title="incremental (KV-cache) decoding of KV-shift attention equals the full forward pass",
    source=("arXiv 2411.19574 v2, Sec. 2.2 Eqs. 4-6 (the layer), Appendix B (parameters), Appendix F (reference code "
            "for training and inference)"),
    statement=("Decoding one token at a time after a prefill call, with the stated shift-state policy, RoPE position and "
               "ALiBi distance, gives at every decoded position the output of the full forward pass of the same layer. "
               "Of the failing variants only mixed-key is the paper's (Appendix F's inference code); unwritten-first, "
               "--rope-offset zero and --alibi-distance off-by-one are implementation hazards a decoder must avoid, "
               "not claims of the paper (Appendix F's inference code calls no RoPE and the paper prints no ALiBi "
               "decoding)."),
    quantifiers=("for every length, prefill and decoded position: the cached output equals the full pass",
                 "symbolic: L <= 8 as slot lists; solver: 8 prefills; numeric: L = 64, d = 32; kernel: every length, "
                 "prefill and position (raw-key), one counterexample per failing policy"),
    options=(),
    params_type=DecodeParams,
    checks={"symbolic": _dec_symbolic, "solver": _dec_solver, "numeric": _dec_numeric},
    variants=({"cache": "raw-key"}, {"cache": "mixed-key"}, {"cache": "unwritten-first"}, {"rope-offset": "zero"},
              {"alibi-distance": "off-by-one"}),
    expected={"raw-key,correct,correct": "HOLDS", "mixed-key,correct,correct": "FAILS",
              "unwritten-first,correct,correct": "FAILS", "raw-key,zero,correct": "FAILS",
              "raw-key,correct,off-by-one": "FAILS"},
    provenance={
        "raw-key,correct,correct": Provenance("reading", "the paper states no decoding equality; incremental decoding "
                                              "must give the full pass of Eqs. 4-6, and this is the correct cache"),
        "mixed-key,correct,correct": Provenance("hazard", "Appendix F's inference code keeps the shifted key after "
                                                "the prefill call: the paper's code, not a statement it makes"),
        "*": Provenance("hazard", "a decoding mistake an implementation can make; the paper states none of them"),
    },
    validate=_dec_validate,
    caveats=("Implementation hazards, not claims of the paper: unwritten-first (the first one-token call does not "
             "write the shift state), --rope-offset zero (a decoded token rotated at position 0) and --alibi-distance "
             "off-by-one (the query's ALiBi position taken as t - 1) are mistakes an implementation can make; the paper "
             "states none of them (Appendix F's inference code calls no RoPE; the paper prints no ALiBi decoding). "
             "Their FAILS verdicts say a decoder with that mistake departs from the full pass, not that the paper is "
             "wrong. Only mixed-key is the paper's own code.",
             "Appendix F gives the shift as a width-2 causal convolution of k and v with weights (K, 1 - K), RoPE applied "
             "to q and the convolved k with seqlen_offset = 0, and an inference branch that keeps last_k = k[:, -1:] "
             "after the convolution on the first call and the raw k on later calls (likewise v); mixed-key is that "
             "branch. The paper prints no cache for the rotated keys; we cache the shifted, rotated keys and shifted "
             "values (a standard KV cache). Offsets: zero rotates a decoded token at position 0; off-by-one measures "
             "the ALiBi distance from t - 1. Appendix B's parameters a1 = 0, a2 = 1, b2 = 0 are used, so the value "
             "state shows only through b2 (0 here): the mixed-key failure is the key's.",
             "Symbolic: the decode procedure and the full pass are built as slot lists (keys and values as linear "
             "combinations of the inputs, rotations relative to the query, ALiBi distances relative to the smallest); "
             "equal lists give equal outputs for every input and any positive function in place of exp, checked for "
             "every L <= --Lmax and every prefill; a difference is shown on the given input or a token input of the "
             "first differing shape, exactly (sympy, sign at 60 digits). Symbols are orthonormal, one per RoPE plane "
             "(frequency 10000^(-j/V)). Numeric: a separate tensor implementation (prefill call, then a loop of "
             "one-token calls against a growing cache), float64 with random N(0, I/d) inputs, plus float16/bfloat16 "
             "for the rounding floor; agreement is 'consistent', never 'proved'.",
             "Solver (z3, bounded by --Lmax): one obligation per prefill k, 'some decoded output coefficient at "
             "t = k+1..Lmax differs from the full pass's', with every inner product x_t^T R_delta x_p a free real, "
             "ex(t) an uninterpreted positive function in place of exp(t) and ALiBi distances relative to the "
             "query's smallest; UNSAT for every prefill (confirmed by cvc5; no Farkas certificate exists for the "
             "stand-in) proves equality for every input up to the bound. A SAT model is re-evaluated in Fractions, "
             "then a token input (orthonormal symbols, the given sequence first, then the smallest with the first "
             "differing prefill) is certified: weights inside rational enclosures of exp (RoPE angles' cos by mpmath "
             "interval arithmetic), z3 UNSAT of 'within delta' and the gap >= delta re-checked by Fraction interval "
             "arithmetic with an evaluator of its own. Positive control: the raw-key cache with correct offsets must "
             "be proved equal. With --embeddings the solver still searches orthonormal symbols."),
    explain=_dec_explain,
    cost="symbolic < 1 s; solver ~1.5 s (raw-key, 8 prefills with cvc5), < 0.5 s for a refuted policy; numeric ~1-2 s "
         "at L = 64, d = 32 (L = 1024 with --full)",
)

CLAIMS: list[Claim] = [THEOREM2, THEOREM1, THEOREM3, DECODE]


from verify.proofs.kvshift24.trained import CLAIMS as TRAINED_CLAIMS  # noqa: E402  (heavy claims about trained models)

CLAIMS += TRAINED_CLAIMS

#: this paper as a plugin (the registry reads it; see :class:`verify.core.model.Paper`)
PAPER = with_kernel_layer(Paper(
    key="kvshift24", title="Xu et al., KV Shifting Attention Enhances Language Modeling, arXiv 2411.19574 v2",
    claims=tuple(CLAIMS), plotters={"kvshift24:theorem2": plots.theorem2_grid}, api=api))
