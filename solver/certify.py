"""Certificates and a second opinion for solver obligations.

* :func:`farkas_certificate`: for an UNSAT obligation whose constraints are linear
  (over the reals, rational coefficients; one top-level disjunction allowed), extract
  the rows in exact rationals and find Farkas multipliers by solving the dual system
  (an exact-rational LP feasibility query, written as SMT-LIB 2 text, in one fresh z3 context
  per certificate).  The multipliers are then checked by :mod:`verify.solver.recheck`, which
  imports no solver: the solver that found them is not trusted.
* :func:`cvc5_opinion`: re-solve the same SMT-LIB 2 encoding with cvc5 (fixed seed,
  time limit) and report its answer; a disagreement with z3 is surfaced, never hidden.
"""

from __future__ import annotations

import collections
import copy
import os
import threading
from fractions import Fraction
from typing import Any, Sequence

import z3

from verify import interrupts, runcache
from verify.faults import seam
from verify.solver.common import SolverAnswer, seeded_solver, solve
from verify.solver.recheck import check_certificate, encoding_hash


class NonLinear(ValueError):
    """The obligation is not a linear real arithmetic system (no Farkas certificate)."""


Poly = dict  # monomial key ('' constant, 'x', 'x*y') -> Fraction


def _pmul(p: Poly, q: Poly) -> Poly:
    from verify.solver.recheck import mono_mul

    out: Poly = {}
    for m1, a in p.items():
        for m2, b in q.items():
            m = mono_mul(m1, m2)
            if m.count("*") >= 2:
                raise NonLinear("degree above 2")
            out[m] = out.get(m, Fraction(0)) + a * b
    return out


def _padd(p: Poly, q: Poly, sign: int = 1) -> Poly:
    out = dict(p)
    for m, b in q.items():
        out[m] = out.get(m, Fraction(0)) + sign * b
    return out


class _Terms:
    """Reads z3 terms through the C API on raw AST pointers, without a Python wrapper per node: the
    wrappers (each made with several C calls, and freed with another) were most of the time of walking an
    obligation's terms.  The pointers stay valid while the wrapped root term is alive (the caller holds it)."""

    def __init__(self, ctx: z3.Context) -> None:
        self.ctx, self.c = ctx, ctx.ref()

    def kind(self, a: Any) -> int:
        """The declaration kind of the application ``a`` (Z3_OP_*), or -1 for a quantifier or bound variable."""
        if z3.Z3_get_ast_kind(self.c, a) not in (z3.Z3_NUMERAL_AST, z3.Z3_APP_AST):
            return -1
        return z3.Z3_get_decl_kind(self.c, z3.Z3_get_app_decl(self.c, a))

    def args(self, a: Any) -> list[Any]:
        return [z3.Z3_get_app_arg(self.c, a, i) for i in range(z3.Z3_get_app_num_args(self.c, a))]

    def name(self, a: Any) -> str:
        return self.decl_name(z3.Z3_get_app_decl(self.c, a))

    def decl_name(self, d: Any) -> str:
        sym = z3.Z3_get_decl_name(self.c, d)  # z3's public C API (its Python _symbol2py does the same)
        if z3.Z3_get_symbol_kind(self.c, sym) == z3.Z3_INT_SYMBOL:
            return f"k!{z3.Z3_get_symbol_int(self.c, sym)}"
        return str(z3.Z3_get_symbol_string(self.c, sym))

    def text(self, a: Any) -> str:
        """The term as z3 prints it (for messages)."""
        return str(z3.Z3_ast_to_string(self.c, a))

    def numeral(self, a: Any) -> Fraction:
        return Fraction(z3.Z3_get_numeral_string(self.c, a))

    def linearize(self, a: Any) -> Poly:
        k = self.kind(a)
        if k == z3.Z3_OP_ANUM:  # an integer or rational numeral
            return {"": self.numeral(a)}
        if k == z3.Z3_OP_UNINTERPRETED and z3.Z3_get_app_num_args(self.c, a) == 0:
            name = self.name(a)
            if "*" in name:
                raise NonLinear(f"variable name {name!r} contains '*'")
            return {name: Fraction(1)}
        if k == -1:
            raise NonLinear(f"unsupported term {self.text(a)}")
        kids = [self.linearize(x) for x in self.args(a)]
        if k == z3.Z3_OP_ADD:
            out: Poly = {}
            for q in kids:
                out = _padd(out, q)
            return out
        if k == z3.Z3_OP_SUB:
            out = kids[0]
            for q in kids[1:]:
                out = _padd(out, q, -1)
            return out
        if k == z3.Z3_OP_UMINUS:
            return {m: -x for m, x in kids[0].items()}
        if k == z3.Z3_OP_MUL:
            out = {"": Fraction(1)}
            for q in kids:
                out = _pmul(out, q)
            return out
        if k == z3.Z3_OP_POWER:
            base, ex = kids
            if set(ex) - {""} or ex.get("", Fraction(0)).denominator != 1 or ex.get("", Fraction(0)) < 0:
                raise NonLinear(f"non-constant or fractional power in {self.text(a)}")
            out = {"": Fraction(1)}
            for _ in range(int(ex.get("", Fraction(0)))):
                out = _pmul(out, base)
            return out
        if k == z3.Z3_OP_DIV:
            num, den = kids
            if set(den) - {""} or den.get("", Fraction(0)) == 0:
                raise NonLinear(f"division by a variable or zero in {self.text(a)}")
            return {m: x / den[""] for m, x in num.items()}
        if k == z3.Z3_OP_TO_REAL:
            return kids[0]
        raise NonLinear(f"unsupported operator {self.name(a)} in {self.text(a)}")

    def row(self, atom: Any) -> dict:
        """One atom as {"coeffs", "op", "rhs"} with op in <=, <, =."""
        k = self.kind(atom)
        if k == z3.Z3_OP_NOT:
            (inner,) = self.args(atom)
            ik = self.kind(inner)
            flip = {z3.Z3_OP_LE: z3.Z3_OP_GT, z3.Z3_OP_LT: z3.Z3_OP_GE, z3.Z3_OP_GE: z3.Z3_OP_LT,
                    z3.Z3_OP_GT: z3.Z3_OP_LE}
            if ik not in flip:
                raise NonLinear(f"negation of {self.text(inner)}")
            a, b = self.args(inner)
            return self.rel(flip[ik], a, b)
        if k in (z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE, z3.Z3_OP_GT, z3.Z3_OP_EQ):
            a, b = self.args(atom)
            return self.rel(k, a, b)
        raise NonLinear(f"unsupported atom {self.text(atom)}")

    def rel(self, k: int, a: Any, b: Any) -> dict:
        diff = _padd(self.linearize(a), self.linearize(b), -1)  # a - b  op  0
        rhs = -diff.pop("", Fraction(0))
        co = diff
        if k in (z3.Z3_OP_GE, z3.Z3_OP_GT):
            co = {v: -x for v, x in co.items()}
            rhs = -rhs
        op = {z3.Z3_OP_LE: "<=", z3.Z3_OP_GE: "<=", z3.Z3_OP_LT: "<", z3.Z3_OP_GT: "<", z3.Z3_OP_EQ: "="}[k]
        return {"coeffs": {v: str(x) for v, x in sorted(co.items()) if x != 0}, "op": op, "rhs": str(rhs)}


def linearize(e: z3.ExprRef) -> Poly:
    """A z3 arithmetic term as a polynomial of degree <= 2 with exact rational coefficients.

    Raises:
        NonLinear: degree above 2, division by a non-constant, an unsupported operator.
    """
    return _Terms(e.ctx).linearize(e.as_ast())


def cases_of(constraints: Sequence[z3.BoolRef]) -> list[list[dict]]:
    """The obligation as linear row systems: one per disjunct of its (single) top-level Or.

    Raises:
        NonLinear: nonlinear terms, nested or multiple disjunctions, other connectives.
    """
    if not constraints:
        return [[]]
    t = _Terms(constraints[0].ctx)
    base: list[dict] = []
    disj: list[Any] | None = None
    stack = [c.as_ast() for c in constraints]
    while stack:
        a = stack.pop(0)
        k = t.kind(a)
        if k == z3.Z3_OP_AND:
            stack = t.args(a) + stack
        elif k == z3.Z3_OP_OR:
            if disj is not None:
                raise NonLinear("more than one disjunction")
            disj = t.args(a)
        elif k == z3.Z3_OP_TRUE:
            continue
        else:
            base.append(t.row(a))
    if disj is None:
        return [base]
    out = []
    for d in disj:
        if t.kind(d) == z3.Z3_OP_AND:
            out.append(base + [t.row(x) for x in t.args(d)])
        else:
            out.append(base + [t.row(d)])
    return out


def _real(q: str | Fraction) -> str:
    """An exact rational as an SMT-LIB 2 real term (``(/ 3.0 4.0)``, ``(- 2.0)``)."""
    f = Fraction(q)
    mag = f"{abs(f.numerator)}.0" if f.denominator == 1 else f"(/ {abs(f.numerator)}.0 {f.denominator}.0)"
    return f"(- {mag})" if f < 0 else mag


def _sum(terms: list[str]) -> str:
    return f"(+ {' '.join(terms)} 0.0)" if terms else "0.0"


def _core(rows: list[dict], timeout_ms: int, ctx: z3.Context) -> list[int] | None:
    """Indices of an infeasible subset of the rows (a z3 unsat core of the linear system,
    monomials read as plain variables), or None when the system is not found infeasible."""
    s = seeded_solver(ctx, timeout_ms)
    s.set("core.minimize", True)
    names = sorted({m for r in rows for m in r["coeffs"]})
    index = {m: i for i, m in enumerate(names)}
    lines = [f"(declare-fun x{i} () Real)" for i in range(len(names))]
    lines += [f"(declare-fun row{i} () Bool)" for i in range(len(rows))]
    for i, r in enumerate(rows):
        lhs = _sum([f"(* {_real(a)} x{index[m]})" for m, a in r["coeffs"].items()])
        lines.append(f"(assert (=> row{i} ({r['op']} {lhs} {_real(r['rhs'])})))")
    s.from_string("\n".join(lines))
    lits = [z3.Bool(f"row{i}", ctx) for i in range(len(rows))]
    if solve(s, *lits) != z3.unsat:
        return None
    core = {str(c) for c in s.unsat_core()}
    return [i for i in range(len(rows)) if f"row{i}" in core]


def _multipliers(rows: list[dict], timeout_ms: int, ctx: z3.Context) -> list[Fraction] | None:
    """Farkas multipliers for an infeasible row system, or None when none is found.

    The dual LP is solved on an unsat core of the rows (the other rows get multiplier
    0), which keeps large encodings (pr26 Prop. 1 has thousands of margin rows) cheap.
    """
    if len(rows) > 40:
        core = _core(rows, timeout_ms, ctx)
        if core is None:
            return None
        full = _multipliers_on_core(rows, core, timeout_ms, ctx)
        if full is not None:
            return full
    return _multipliers_on(rows, timeout_ms, ctx)


def _multipliers_on_core(rows: list[dict], core: Sequence[int], timeout_ms: int, ctx: z3.Context
                         ) -> list[Fraction] | None:
    """Multipliers found on the rows ``core`` alone, every other row's multiplier 0 (None when the core's
    dual LP has no solution).  Product rows reference their factors, which need not be in the core; that
    is fine: the checker re-derives each product row from the full row list."""
    sub = _multipliers_on([rows[i] for i in core], timeout_ms, ctx)
    if sub is None:
        return None
    full = [Fraction(0)] * len(rows)
    for i, y in zip(core, sub):
        full[i] = y
    return full


def _multipliers_on(rows: list[dict], timeout_ms: int, ctx: z3.Context) -> list[Fraction] | None:
    """The dual LP of Farkas' lemma, written as SMT-LIB 2 text and parsed by z3 in ``ctx`` (one
    C call instead of a Python call per term): y >= 0 on the inequality rows, y^T A = 0, and
    y^T b <= -1 ("negative") or y^T b <= 0 with the strict rows' y summing to >= 1 ("strict")."""
    variables = sorted({v for r in rows for v in r["coeffs"]})
    base = [f"(declare-fun y{i} () Real)" for i in range(len(rows))]
    base += [f"(assert (>= y{i} 0.0))" for i, r in enumerate(rows) if r["op"] != "="]
    for v in variables:
        terms = ["(* y%d %s)" % (i, _real(r["coeffs"][v])) for i, r in enumerate(rows) if v in r["coeffs"]]
        base.append(f"(assert (= {_sum(terms)} 0.0))")
    rhs = _sum([f"(* y{i} {_real(r['rhs'])})" for i, r in enumerate(rows)])
    strict = [f"y{i}" for i, r in enumerate(rows) if r["op"] == "<"]
    for mode in ("negative", "strict"):
        if mode == "negative":
            goal = [f"(assert (<= {rhs} (- 1.0)))"]
        elif strict:
            goal = [f"(assert (<= {rhs} 0.0))", f"(assert (>= {_sum(strict)} 1.0))"]
        else:
            continue
        s = seeded_solver(ctx, timeout_ms)
        s.from_string("\n".join(base + goal))
        if solve(s) == z3.sat:
            values = _model_values(s.model())
            return [values.get(f"y{i}", Fraction(0)) for i in range(len(rows))]  # absent: 0, as model completion
    return None


def _model_values(m: z3.ModelRef) -> dict[str, Fraction]:
    """Every constant a model interprets, name -> its exact rational value, read through the C API (one
    wrapped term per value cost four C round trips each through Python wrappers)."""
    t, raw = _Terms(m.ctx), m.model
    out = {}
    for i in range(z3.Z3_model_get_num_consts(t.c, raw)):
        d = z3.Z3_model_get_const_decl(t.c, raw, i)
        name = t.decl_name(d)
        value = z3.Z3_model_get_const_interp(t.c, raw, d)
        if z3.Z3_is_numeral_ast(t.c, value):
            out[name] = t.numeral(value)
        else:  # not a numeral (never seen for these LPs): z3's own evaluation, as before
            v = m.eval(z3.Real(name, m.ctx), model_completion=True)
            out[name] = Fraction(v.numerator_as_long(), v.denominator_as_long())
    return out


def with_products(rows: list[dict]) -> list[dict]:
    """Append the degree-2 product rows a Farkas certificate may need.

    For every monomial x*y that occurs, and every pair of single-variable '<=' rows
    bounding x and y (x <= u, -x <= -l, ...), the product row of the pair is appended,
    tagged ``product_of`` so the checker re-derives it (McCormick-style envelopes).
    """
    from verify.solver.recheck import product_row

    monos = {m for r in rows for m in r["coeffs"] if "*" in m}
    if not monos:
        return rows
    bounds: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if r["op"] == "<=" and len(r["coeffs"]) == 1:
            (m,) = r["coeffs"]
            if "*" not in m:
                bounds.setdefault(m, []).append(i)
    out = list(rows)
    seen = set()
    for mono in sorted(monos):
        x, y = mono.split("*")
        for i in bounds.get(x, []):
            for j in bounds.get(y, []):
                key = (min(i, j), max(i, j))
                if key in seen:
                    continue
                seen.add(key)
                pr = product_row(rows[i], rows[j])
                out.append({**pr, "product_of": [i, j]})
    return out


def farkas_certificate(constraints: Sequence[z3.BoolRef], timeout_ms: int = 20_000,
                       cases: list[list[dict]] | None = None, core: list[int] | None = None) -> dict:
    """A checked Farkas certificate for an UNSAT linear obligation.

    Returns:
        ``{"kind": "farkas", "cases": [{"rows", "multipliers"}], "encoding_sha256",
        "checked": bool, "check": str}``; ``checked`` is the verdict of the solver-free
        checker (:func:`verify.solver.recheck.check_certificate`).

    Raises:
        NonLinear: the obligation is not linear (no Farkas certificate exists to extract).
    """
    cases = [with_products(rows) for rows in (cases if cases is not None else cases_of(constraints))]
    key = (encoding_hash(cases), tuple(core) if core is not None else None, int(timeout_ms))
    certified = _CERTIFIED.table()
    hit = certified.get(key)
    if hit is not None:  # the same rows were certified before in this run: the same certificate
        certified.move_to_end(key)
        return copy.deepcopy(hit)
    out_cases = []
    lp = z3.Context()  # one fresh context for every LP of this certificate: a function of its rows alone
    for rows in cases:
        ys = None
        if core is not None and len(cases) == 1:  # an unsat core from the solve itself
            ys = _multipliers_on_core(rows, core, timeout_ms, lp)
        if ys is None:
            ys = _multipliers(rows, timeout_ms, lp)
        if ys is None:
            return {"kind": "farkas", "cases": [], "encoding_sha256": encoding_hash(cases), "checked": False,
                    "check": "no multipliers found (the case may be feasible, or the LP timed out)"}
        out_cases.append({"rows": rows, "multipliers": [str(y) for y in ys]})
    cert: dict[str, Any] = {"kind": "farkas", "cases": out_cases, "encoding_sha256": key[0]}
    ok, why = check_certificate(cert)
    cert.update(checked=ok, check=why)
    if ok:
        certified[key] = copy.deepcopy(cert)
        while len(certified) > _CERTIFIED_MAX:
            certified.popitem(last=False)
    return cert


#: certificates that passed the exact re-check, by (encoding hash, unsat core, budget).  A pure memo:
#: the search is deterministic for the same rows and core (fixed seed, one fresh context per
#: certificate), so a hit returns what a new search would, and the variants of a claim (which share
#: many obligations) pay once.  Run-scoped (:mod:`verify.runcache`), in least-recently-used order.
_CERTIFIED = runcache.Memo("solver.certify: checked certificates", collections.OrderedDict)
_CERTIFIED_MAX = 1024


def cvc5_opinion(smt2: str, timeout_ms: int, seed: int = 0) -> tuple[str, str]:
    """Re-solve an SMT-LIB 2 encoding with cvc5, under a hard wall-clock limit.

    cvc5 runs in a helper child process (:class:`_Cvc5Helper`, forked once per process and reused
    for every obligation: forking a process that holds torch, sympy and z3 cost 30-60 ms per
    obligation, about 69 times per ``verify all``), each obligation in a fresh cvc5 solver with its own
    ``tlimit-per`` budget and seed; the parent waits at most the budget plus one second and kills the
    helper after that (cvc5's nonlinear procedures do not always poll their time limit), so an overrun
    becomes ``unknown`` instead of a hang, and the next obligation gets a new helper.

    Returns:
        ``(answer, reason)`` with answer a :class:`~verify.solver.common.SolverAnswer`
        (``"unavailable"`` when the cvc5 package is missing).
    """
    try:
        import cvc5  # noqa: F401  (imported once here, inherited by the helper)
    except ImportError:  # pragma: no cover
        return "unavailable", "the cvc5 package is not installed"
    with _Cvc5Helper.lock:  # one exchange at a time: threads of one process share its helper
        helper = _Cvc5Helper.current()
        limit = timeout_ms / 1000 + 1.0
        try:
            helper.requests.send((smt2, timeout_ms, seed))
            if helper.answers.poll(limit):
                answer: tuple[str, str] = helper.answers.recv()
                return answer
            helper.stop()
            return SolverAnswer.UNKNOWN, f"wall-clock limit of {limit:.1f} s exceeded (cvc5 stopped)"
        except (EOFError, OSError):
            helper.stop()
            return SolverAnswer.UNKNOWN, "cvc5 exited without an answer"
        except BaseException:  # Ctrl-C while waiting: the helper may be mid-obligation, so it goes
            helper.stop()
            raise


class _Cvc5Helper:
    """A child process that answers cvc5 obligations one after another: it reads ``(smt2, timeout_ms,
    seed)`` from one pipe and writes :func:`_cvc5_solve`'s answer to the other.

    One helper per process (:meth:`current`), forked on first use (a forked child of this process starts
    without one: :meth:`_forget_after_fork`); a new one replaces it when it was stopped (overrun, death) or when
    the function behind the seam ``solver.certify._cvc5_solve`` changed (a fault injected or removed: the
    helper runs the function it was forked with).  The helper leaves when its request pipe closes (this
    process exited or stopped it)."""

    _current: _Cvc5Helper | None = None
    lock = threading.Lock()

    def __init__(self) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self.solve = _cvc5_solve
        req_r, self.requests = ctx.Pipe(duplex=False)
        self.answers, ans_w = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_cvc5_helper_loop, args=(req_r, ans_w, self.requests, self.answers),
                                daemon=True)
        # Ctrl-C reaches the whole process group: the parent stops the run, and the helper must not
        # die printing a traceback first; it is forked with SIGINT blocked and ignores it before unblocking
        with interrupts.blocked_for_children():
            self.proc.start()
        req_r.close()
        ans_w.close()

    @classmethod
    def current(cls) -> _Cvc5Helper:
        h = cls._current
        if h is None or h.solve is not _cvc5_solve or not h.proc.is_alive():
            if h is not None:
                h.stop()
            h = cls._current = cls()
        return h

    def stop(self) -> None:
        if _Cvc5Helper._current is self:  # first: a helper half-stopped (a second key meanwhile) is never reused
            _Cvc5Helper._current = None
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.requests.close()
        self.answers.close()

    @classmethod
    def _forget_after_fork(cls) -> None:
        """In a forked child: a fresh lock (another thread of the parent may have held it) and no helper (the
        parent's pipes are not this process's to use)."""
        cls.lock = threading.Lock()
        cls._current = None


os.register_at_fork(after_in_child=_Cvc5Helper._forget_after_fork)


def _cvc5_helper_loop(requests, answers, parent_requests, parent_answers) -> None:  # pragma: no cover - a child
    import gc
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's exit terminates daemonic children: no handler of its
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.set_wakeup_fd(-1)
    gc.freeze()  # the parent's objects are never collected here: none of their finalisers closes a reused descriptor
    parent_requests.close()
    parent_answers.close()
    # every other descriptor inherited from the parent but stdio and this helper's own pipe ends: a write end
    # held here (the Ctrl-C watcher's pipe of verify.interrupts, another child's pipes) would keep its reader
    # from seeing EOF for as long as the helper lives
    keep = sorted({0, 1, 2, requests.fileno(), answers.fileno()})
    for lo, hi in zip(keep, keep[1:] + [os.sysconf("SC_OPEN_MAX")]):
        os.closerange(lo + 1, hi)
    while True:
        try:
            smt2, timeout_ms, seed = requests.recv()
        except (EOFError, OSError):
            return
        try:
            answer = _cvc5_solve(smt2, timeout_ms, seed)
        except Exception as e:  # noqa: BLE001
            answer = (SolverAnswer.UNKNOWN, f"cvc5 error: {type(e).__name__}: {str(e)[:120]}")
        try:
            answers.send(answer)
        except OSError:  # the owner is gone (stopped mid-obligation: SIGTERM, Ctrl-C): nobody to answer, say nothing
            return


@seam("solver.certify._cvc5_solve")
def _cvc5_solve(smt2: str, timeout_ms: int, seed: int) -> tuple[str, str]:
    import re

    import cvc5

    tm = cvc5.TermManager()
    slv = cvc5.Solver(tm)
    slv.setOption("seed", str(seed))
    slv.setOption("tlimit-per", str(int(timeout_ms)))
    sm = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(slv, sm)
    body = "\n".join(line for line in smt2.splitlines() if line.strip() != "(check-sat)")
    # quantifier-free real arithmetic gets cvc5's complete NRA procedure (coverings);
    # under logic ALL it falls back to incremental linearisation, ~50x slower here
    has_functions = re.search(r"\(declare-fun \S+ \([^)]", body) is not None
    real_only = (" Int)" not in body and "forall" not in body and "exists" not in body
                 and not has_functions and "declare-datatype" not in body)
    logic = "QF_NRA" if real_only else "ALL"
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, f"(set-logic {logic})\n" + body, "obligation")
    while True:
        cmd = parser.nextCommand()
        if cmd.isNull():
            break
        cmd.invoke(slv, sm)
    r = slv.checkSat()
    if r.isSat():
        return SolverAnswer.SAT, ""
    if r.isUnsat():
        return SolverAnswer.UNSAT, ""
    return SolverAnswer.UNKNOWN, str(r.getUnknownExplanation())


