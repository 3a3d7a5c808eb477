"""User-defined positional feature maps and tasks for pr26's positional-only head.

A PE designer brings a feature map the built-in table (:mod:`verify.constructions.pe`) does
not have.  This module turns each user input into a :class:`~verify.constructions.pe.Family`
(or :class:`~verify.constructions.pe.Task`) that every layer evaluates in its own arithmetic,
like the built-in families:

* :func:`expression_family` -- comma-separated expressions in the position ``i`` (absolute
  features phi(i), logit phi(i)^T W phi(j)) or in the offset ``d`` (relative features
  psi(d), kernel k(d) = w . psi(d)), e.g. ``"1, i, i**2"`` or ``"cos(d/10), sin(d/10)"``.
  Parsed by sympy's parser with a whitelist of names and tokens (:func:`parse_expressions`);
  nothing the user writes is evaluated by Python: the parsed tree is walked by
  :func:`evaluate`, which knows only the whitelisted operations and caps the size of exact
  intermediate values.
* :func:`callable_family` -- ``MODULE:CALLABLE``, a Python function ``f(positions:
  LongTensor[n]) -> Tensor[n, k]``.  Importing it runs the user's code: that is an explicit
  opt-in by the user (the CLI says so in its help).
* :func:`nope_family` -- no positional information: the single constant feature phi(i) = [1],
  so every key of a row has the same logit (a tie: the strict argmax fails on every row).
* :func:`alibi_fixed_family` -- canonical ALiBi with a fixed slope m: the bias -m (i - j), a
  relative kernel with no trained parameter (the parameter is fixed to [1]).  The built-in
  ``alibi`` family learns a - m delta with the sign of m free.
* :func:`trig_family` -- sinusoidal or RoPE features with a chosen base and number of
  frequencies (theta_k = base^(-k/F), k = 0..F-1; the built-in families use 10000 and 16).
* :func:`expression_task` -- a task given by its target key t(i) (an expression in the query
  row ``i`` and the length ``L``) and its first query row (an expression in ``L``).

Source: pr26 (TMLR 2026), the positional-only head whose logits are linear in the parameter
(full text not reachable; reconstructed, see :mod:`verify.constructions.pe`).  Positions are
0-indexed, as everywhere in the code.
"""

from __future__ import annotations

import importlib
import io
import math
import re
import sys
import tokenize
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Sequence

from verify.constructions.pe import TRIG_DENOM_BITS, Family, FloatArith, FractionArith, Task
from verify.faults import seam

#: longest expression text accepted (all features together)
MAX_EXPR_CHARS = 1000
#: most features in one map
MAX_FEATURES = 64
#: most tree nodes in one parsed expression, deepest nesting
MAX_NODES = 200
MAX_DEPTH = 30
#: longest number literal (digits)
MAX_DIGITS = 30
#: largest constant integer exponent (|p|)
MAX_CONST_EXPONENT = 64
#: largest exact intermediate value, bits of numerator or denominator (a blow-up such as i**i**i is refused)
MAX_EXACT_BITS = 4096
#: most positions a feature table is built for
MAX_POSITIONS = 1 << 20

#: the functions an expression may call (sympy classes; sqrt parses to a power 1/2)
_FUNCS: dict[str, Any] = {}
_CONSTS: dict[str, Any] = {}
_OPS = {"+", "-", "*", "/", "**", "(", ")", ","}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]{1,3})?|\.[0-9]+(?:[eE][+-]?[0-9]{1,3})?")


class FeatureError(ValueError):
    """A feature map, expression or task the tool refuses (the message is one line, for the user)."""


def _tables() -> tuple[dict[str, Any], dict[str, Any]]:
    if not _FUNCS:
        import sympy as sp

        _FUNCS.update({"sin": sp.sin, "cos": sp.cos, "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt, "Abs": sp.Abs,
                       "abs": sp.Abs, "floor": sp.floor, "ceiling": sp.ceiling, "Min": sp.Min, "Max": sp.Max,
                       "Rational": sp.Rational})
        _CONSTS.update({"pi": sp.pi, "E": sp.E})
    return _FUNCS, _CONSTS


ALLOWED_NAMES = ("sin", "cos", "exp", "log", "sqrt", "Abs", "abs", "floor", "ceiling", "Min", "Max", "Rational",
                 "pi", "E")


def _symbols(names: Sequence[str]) -> dict[str, Any]:
    import sympy as sp

    return {n: sp.Symbol(n, integer=True, nonnegative=True) for n in names}


def _scan(text: str, variables: Sequence[str], flag: str) -> None:
    """Refuse anything but numbers, whitelisted names, the variables and + - * / ** ( ) , (token level)."""
    allowed = set(ALLOWED_NAMES) | set(variables)
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError) as e:
        raise FeatureError(f"{flag}: cannot read the expression ({str(e).splitlines()[0][:80]})") from None
    depth = 0
    for tok in toks:
        if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
            continue
        s = tok.string
        if tok.type == tokenize.NAME:
            if "__" in s:
                raise FeatureError(f"{flag}: names with '__' are not allowed ({s[:40]!r})")
            if s not in allowed:
                raise FeatureError(f"{flag}: unknown name {s[:40]!r}; allowed: {', '.join(variables)} and "
                                   f"{', '.join(ALLOWED_NAMES)}")
        elif tok.type == tokenize.NUMBER:
            if not _NUMBER.fullmatch(s):
                raise FeatureError(f"{flag}: unsupported number {s[:40]!r} (decimal numbers only)")
            if len(re.sub(r"[^0-9]", "", s.split("e")[0].split("E")[0])) > MAX_DIGITS:
                raise FeatureError(f"{flag}: a number with more than {MAX_DIGITS} digits")
        elif tok.type == tokenize.OP:
            if s == ".":
                raise FeatureError(f"{flag}: attribute access ('.') is not allowed")
            if s not in _OPS:
                raise FeatureError(f"{flag}: operator {s!r} is not allowed; use + - * / ** ( ) ,")
            depth += (s == "(") - (s == ")")
            if depth > MAX_DEPTH:
                raise FeatureError(f"{flag}: parentheses nested deeper than {MAX_DEPTH}")
        else:
            raise FeatureError(f"{flag}: unexpected {tokenize.tok_name.get(tok.type, '?').lower()} {s[:20]!r}")


def _check_tree(e: Any, variables: Sequence[str], flag: str) -> None:
    """Only whitelisted node types, at most MAX_NODES nodes and MAX_DEPTH deep; constant exponents capped."""
    import sympy as sp

    funcs, _ = _tables()
    fclasses: tuple[Any, ...] = tuple({f for k, f in funcs.items() if isinstance(f, type) and k not in ("Rational",)})
    count = 0
    stack: list[tuple[Any, int]] = [(e, 0)]
    while stack:
        node, d = stack.pop()
        count += 1
        if count > MAX_NODES or d > MAX_DEPTH:
            raise FeatureError(f"{flag}: expression too large (at most {MAX_NODES} nodes, depth {MAX_DEPTH})")
        if isinstance(node, sp.Symbol):
            if node.name not in variables:
                raise FeatureError(f"{flag}: unknown symbol {node.name!r}")
        elif isinstance(node, (sp.Rational, sp.Float)) or node in (sp.pi, sp.E):
            pass
        elif isinstance(node, (sp.Add, sp.Mul)) or isinstance(node, fclasses):
            stack += [(a, d + 1) for a in node.args]
        elif isinstance(node, sp.Pow):
            b, x = node.args
            if x.is_number and isinstance(x, sp.Rational) and abs(x.p) > MAX_CONST_EXPONENT:
                raise FeatureError(f"{flag}: constant exponent {x} beyond +-{MAX_CONST_EXPONENT}")
            stack += [(b, d + 1), (x, d + 1)]
        else:
            raise FeatureError(f"{flag}: unsupported construct {type(node).__name__}")


def parse_expressions(text: str, variables: Sequence[str] = ("i",), flag: str = "--pe-features",
                      max_count: int = MAX_FEATURES) -> list[Any]:
    """Parse comma-separated expressions in the given variables, safely.

    The text is first scanned token by token (numbers, the variables, the whitelisted names
    :data:`ALLOWED_NAMES`, and ``+ - * / ** ( ) ,`` only: no attribute access, no '__', no
    strings, no lambda, no keywords), then parsed by ``sympy.parsing.sympy_parser.parse_expr``
    with ``evaluate=False`` (so nothing is computed while parsing), the transformations
    ``auto_number`` and ``rationalize`` only (decimals become exact rationals; no automatic
    symbols), an empty ``__builtins__`` and a global table holding only sympy's number and
    arithmetic classes; the resulting tree is checked node by node.

    Args:
        text: e.g. ``"1, i, i**2"``; at most :data:`MAX_EXPR_CHARS` characters.
        variables: the free symbols allowed (``("i",)``, ``("d",)``, ``("i", "L")``).
        flag: the option name used in messages.
        max_count: most expressions.
    Returns:
        list of sympy expressions (unevaluated trees).
    Raises:
        FeatureError: anything outside the grammar, too long, too many, too deep.
    """
    if not isinstance(text, str):
        raise FeatureError(f"{flag}: expected text")
    if len(text) > MAX_EXPR_CHARS:
        raise FeatureError(f"{flag}: at most {MAX_EXPR_CHARS} characters, got {len(text)}")
    if not text.strip():
        raise FeatureError(f"{flag}: empty")
    if not text.isprintable():
        raise FeatureError(f"{flag}: one line of printable characters only")
    _scan(text, variables, flag)
    import sympy as sp
    from sympy.parsing.sympy_parser import auto_number, parse_expr, rationalize

    funcs, consts = _tables()
    local = {**funcs, **consts, **_symbols(variables)}
    glob = {"__builtins__": {}, "Integer": sp.Integer, "Float": sp.Float, "Rational": sp.Rational,
            "Add": sp.Add, "Mul": sp.Mul, "Pow": sp.Pow}
    try:
        out = parse_expr(text, local_dict=local, global_dict=glob, transformations=(auto_number, rationalize),
                         evaluate=False)
    except Exception as e:  # noqa: BLE001 - sympy raises many kinds; each is a refusal of the text
        msg = str(e).splitlines()[0][:80] if str(e) else type(e).__name__
        raise FeatureError(f"{flag}: cannot parse ({type(e).__name__}: {msg})") from None
    exprs = list(out) if isinstance(out, tuple) else [out]
    if not exprs or len(exprs) > max_count:
        raise FeatureError(f"{flag}: between 1 and {max_count} expressions, got {len(exprs)}")
    for expr in exprs:
        if not isinstance(expr, sp.Basic):
            raise FeatureError(f"{flag}: not an expression ({type(expr).__name__})")
        _check_tree(expr, variables, flag)
    return exprs


# ----------------------------------------------------------------------------- evaluation


class NotExact(FeatureError):
    """The value is irrational (sin, exp, pi, a non-integer power): no exact rational exists."""


def is_rational_expr(e: Any) -> bool:
    """True when every value of ``e`` at integer points is rational (no pi, E, sin, cos, exp, log, sqrt,
    non-integer constant power); a symbolic exponent must then evaluate to an integer (checked when evaluated)."""
    import sympy as sp

    for node in sp.preorder_traversal(e):
        if node in (sp.pi, sp.E) or isinstance(node, (sp.sin, sp.cos, sp.exp, sp.log)):
            return False
        if isinstance(node, sp.Pow) and node.args[1].is_number and not (isinstance(node.args[1], sp.Rational)
                                                                         and node.args[1].q == 1):
            return False
    return True


def _bits(q: Fraction) -> int:
    return max(abs(q.numerator).bit_length(), q.denominator.bit_length())


def _exact(e: Any, env: dict[str, int]) -> Fraction:
    import sympy as sp

    if isinstance(e, sp.Rational):
        return Fraction(int(e.p), int(e.q))
    if isinstance(e, sp.Float):
        return Fraction(str(e))
    if isinstance(e, sp.Symbol):
        return Fraction(env[e.name])
    if isinstance(e, sp.Add):
        return sum((_exact(a, env) for a in e.args), Fraction(0))
    if isinstance(e, sp.Mul):
        out = Fraction(1)
        for a in e.args:
            out *= _exact(a, env)
        return out
    if isinstance(e, sp.Pow):
        b = _exact(e.args[0], env)
        x = _exact(e.args[1], env)
        if x.denominator != 1:
            raise NotExact("a non-integer power")
        if b == 0 and x < 0:
            raise FeatureError("division by zero")
        if abs(x) * max(_bits(b), 1) > MAX_EXACT_BITS:
            raise FeatureError(f"a power too large to evaluate exactly (more than {MAX_EXACT_BITS} bits)")
        return b ** int(x)
    if isinstance(e, sp.Abs):
        return abs(_exact(e.args[0], env))
    if isinstance(e, sp.floor):
        return Fraction(math.floor(_exact(e.args[0], env)))
    if isinstance(e, sp.ceiling):
        return Fraction(math.ceil(_exact(e.args[0], env)))
    if isinstance(e, sp.Min):
        return min(_exact(a, env) for a in e.args)
    if isinstance(e, sp.Max):
        return max(_exact(a, env) for a in e.args)
    raise NotExact(f"{type(e).__name__} is not rational")


def _mp(e: Any, env: dict[str, int], m: Any) -> Any:
    """Evaluate in an mpmath context ``m`` (``mpmath.mp``, high precision; intervals are arb balls: :func:`ball`)."""
    import sympy as sp

    if isinstance(e, sp.Rational):
        return m.mpf(int(e.p)) / int(e.q)
    if isinstance(e, sp.Float):
        return m.mpf(str(e))
    if isinstance(e, sp.Symbol):
        return m.mpf(env[e.name])
    if e == sp.pi:
        return m.pi
    if e == sp.E:
        return m.e
    if isinstance(e, sp.Add):
        out = m.mpf(0)
        for a in e.args:
            out = out + _mp(a, env, m)
        return out
    if isinstance(e, sp.Mul):
        out = m.mpf(1)
        for a in e.args:
            out = out * _mp(a, env, m)
        return out
    if isinstance(e, sp.Pow):
        x = e.args[1]
        b = _mp(e.args[0], env, m)
        if isinstance(x, sp.Rational) and x.q == 1:
            if int(x.p) < 0:
                return 1 / (b ** (-int(x.p)))
            return b ** int(x.p)
        if isinstance(x, sp.Rational) and x == sp.Rational(1, 2):
            return m.sqrt(b)
        return m.exp(_mp(x, env, m) * m.log(b))
    one = {sp.sin: "sin", sp.cos: "cos", sp.exp: "exp", sp.log: "log"}
    for cls, name in one.items():
        if isinstance(e, cls):
            return getattr(m, name)(_mp(e.args[0], env, m))
    if isinstance(e, sp.Abs):
        return abs(_mp(e.args[0], env, m))
    if isinstance(e, (sp.floor, sp.ceiling)):
        v = _mp(e.args[0], env, m)
        f = math.floor if isinstance(e, sp.floor) else math.ceil
        if hasattr(v, "a"):  # an interval: the integers its endpoints round to
            return m.mpf([f(v.a), f(v.b)])
        return m.mpf(f(v))
    if isinstance(e, (sp.Min, sp.Max)):
        vals = [_mp(a, env, m) for a in e.args]
        if hasattr(vals[0], "a"):
            pick = min if isinstance(e, sp.Min) else max
            return m.mpf([pick(v.a for v in vals), pick(v.b for v in vals)])
        return (min if isinstance(e, sp.Min) else max)(vals)
    raise FeatureError(f"cannot evaluate {type(e).__name__}")


def _np(e: Any, env: dict[str, Any]) -> Any:
    """Evaluate vectorised in float64 numpy arrays (over every position at once)."""
    import numpy as np
    import sympy as sp

    if isinstance(e, sp.Rational):
        return np.float64(int(e.p)) / np.float64(int(e.q))
    if isinstance(e, sp.Float):
        return np.float64(str(e))
    if isinstance(e, sp.Symbol):
        return env[e.name]
    if e == sp.pi:
        return np.float64(math.pi)
    if e == sp.E:
        return np.float64(math.e)
    if isinstance(e, sp.Add):
        out = np.float64(0)
        for a in e.args:
            out = out + _np(a, env)
        return out
    if isinstance(e, sp.Mul):
        # a rational coefficient p/q is applied as (x * p) / q, never x * fl(1/q): on integer points the
        # product is exact and the division correctly rounded, so floor/ceiling of an exact integer such as
        # 49 * (1/49) see the integer (fl(1/49) * 49 = 0.9999999999999999 floors to 0); the parser keeps
        # x/q as x * q**-1, so a factor with a negative integer power joins the denominator
        out = np.float64(1)
        den: Any = np.float64(1)
        for a in e.args:
            if isinstance(a, sp.Rational) and a.q != 1:
                out, den = out * np.float64(int(a.p)), den * np.float64(int(a.q))
            elif isinstance(a, sp.Pow) and isinstance(a.args[1], sp.Integer) and a.args[1] < 0:
                den = den * np.power(np.asarray(_np(a.args[0], env), dtype=np.float64), np.float64(-int(a.args[1])))
            else:
                out = out * _np(a, env)
        return out / den
    if isinstance(e, sp.Pow):
        return np.power(np.asarray(_np(e.args[0], env), dtype=np.float64), _np(e.args[1], env))
    table = {sp.sin: np.sin, sp.cos: np.cos, sp.exp: np.exp, sp.log: np.log, sp.Abs: np.abs, sp.floor: np.floor,
             sp.ceiling: np.ceil}
    for cls, fn in table.items():
        if isinstance(e, cls):
            return fn(_np(e.args[0], env))
    if isinstance(e, (sp.Min, sp.Max)):
        pick = np.minimum if isinstance(e, sp.Min) else np.maximum
        vals = [_np(a, env) for a in e.args]
        out = vals[0]
        for v in vals[1:]:
            out = pick(out, v)
        return out
    raise FeatureError(f"cannot evaluate {type(e).__name__}")


def evaluate(e: Any, env: dict[str, int], mode: str = "exact") -> Any:
    """The value of a parsed expression at one point.

    Args:
        e: a tree from :func:`parse_expressions`.
        env: symbol name -> int (``{"i": 5}``).
        mode: ``"exact"`` (fractions.Fraction; raises :class:`NotExact` for irrational values),
            ``"mp"`` (mpmath at 50 digits); an enclosure is :func:`ball`.
    Raises:
        FeatureError: division by zero, a log of a non-positive number, an exact value beyond
            :data:`MAX_EXACT_BITS` bits; NotExact (exact mode) for irrational values.
    """
    try:
        if mode == "exact":
            return _exact(e, env)
        import mpmath

        if mode != "mp":
            raise ValueError(f"evaluate: mode {mode!r} is not 'exact' or 'mp'")
        with mpmath.workdps(50):
            return +_mp(e, env, mpmath.mp)
    except (ZeroDivisionError, ValueError, OverflowError) as err:
        if isinstance(err, FeatureError):
            raise
        raise FeatureError(f"cannot evaluate at {_env(env)} ({type(err).__name__})") from None


def _env(env: dict[str, int]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in env.items())


def evaluate_table(exprs: Sequence[Any], var: str, n: int, flag: str = "--pe-features") -> Any:
    """float64 values of every expression at the points 0..n-1, shape (n, len(exprs)) (numpy).

    Raises:
        FeatureError: a value that is not finite (overflow, division by zero, log of 0, a
            blow-up such as i**i**i), naming the first bad point.
    """
    import numpy as np

    if n > MAX_POSITIONS:
        raise FeatureError(f"{flag}: at most {MAX_POSITIONS} positions")
    pts = np.arange(n, dtype=np.float64)
    cols = []
    with np.errstate(all="ignore"):
        for k, e in enumerate(exprs):
            try:
                v = np.broadcast_to(np.asarray(_np(e, {var: pts}), dtype=np.float64), (n,)).copy()
            except OverflowError:  # an exact constant beyond float64 (1e400): Python raises, numpy would give inf
                raise FeatureError(f"{flag}: expression {k + 1} ({_short(e)}) is beyond the float64 range") from None
            bad = ~np.isfinite(v)
            if bad.any():
                p = int(np.argmax(bad))
                raise FeatureError(f"{flag}: expression {k + 1} ({_short(e)}) is not finite at {var} = {p} "
                                   f"(value {v[p]})")
            cols.append(v)
    return np.stack(cols, axis=1) if cols else np.zeros((n, 0))


def shown(e: Any) -> str:
    """An expression as a reader writes it: parsed with ``evaluate=False`` it keeps the parser's own
    products (``i - 2`` is ``i - 1*2``), which this folds for display only (the layers evaluate the
    parsed expression).  Only sums and products of literal numbers, and integer powers of them with
    |exponent| <= 64, are folded: display never computes a hostile ``9**9**9``."""
    try:
        return str(_fold(e))
    except Exception:  # noqa: BLE001 - display only: the parsed form is still right
        return str(e)


def _fold(e: Any) -> Any:
    import sympy as sp

    if not getattr(e, "args", ()):
        return e
    args = [_fold(a) for a in e.args]
    if all(a.is_Number for a in args):
        if e.is_Add or e.is_Mul:
            return e.func(*args)
        if e.is_Pow and args[1].is_Integer and abs(int(args[1])) <= 64 and args[0].is_Rational \
                and max(abs(args[0].p), args[0].q) < 10**12:
            return e.func(*args)
    # re-evaluating a node is cheap and tidy (i*(1/3) -> i/3) unless a numeric power is still unfolded
    # below it (a hostile one: evaluation would compute it)
    hostile = (e.is_Pow and all(a.is_Number for a in args)) or any(
        p.is_Pow and p.base.is_Number and p.exp.is_Number for a in args for p in sp.preorder_traversal(a))
    if hostile and all(a is b for a, b in zip(args, e.args)):
        return e
    return e.func(*args, evaluate=not hostile)


def _short(e: Any) -> str:
    s = shown(e)
    return s if len(s) <= 40 else s[:37] + "..."


# ----------------------------------------------------------------------------- families


class _TableFeatures:
    """Feature values by position, in each layer's arithmetic (the callable given to :class:`Family`).

    ``float_table(n)`` builds float64 values once (vectorised); exact values come from
    ``exact_fn`` (Fractions) when given, else from ``rounded_fn`` (the same values from arb balls,
    :func:`arb_rounded`) when given, else from ``mp_fn`` rounded to a multiple of
    2^-TRIG_DENOM_BITS (the convention of :class:`~verify.constructions.pe.FractionArith` for
    irrational features); interval values (arb balls at the current precision) from ``iv_fn``.
    """

    def __init__(self, dim: int, float_table: Callable[[int], Any], exact_fn: Callable[[int], list] | None,
                 mp_fn: Callable[[int], list] | None, iv_fn: Callable[[int], list] | None,
                 sym_fn: Callable[[int], list] | None = None,
                 rounded_fn: Callable[[int], list] | None = None) -> None:
        self.dim, self._float_table, self.exact_fn, self.mp_fn, self.iv_fn = dim, float_table, exact_fn, mp_fn, iv_fn
        self.sym_fn, self.rounded_fn = sym_fn, rounded_fn
        self._table: Any = None
        self._exact: dict[int, list] = {}

    def floats(self, n: int) -> list[float]:
        if self._table is None or n >= len(self._table):
            if n >= MAX_POSITIONS:
                raise FeatureError(f"features requested at position {n}, beyond {MAX_POSITIONS}")
            self._table = self._float_table(min(max(64, 2 * (n + 1)), MAX_POSITIONS))
            if n >= len(self._table):
                raise FeatureError(f"features requested at position {n}, beyond the {len(self._table)} computed")
        return self._table[n].tolist()

    def exact(self, n: int) -> list:
        v = self._exact.get(n)
        if v is None:
            if self.exact_fn is not None:
                v = self.exact_fn(n)
            elif self.rounded_fn is not None:
                v = self.rounded_fn(n)
            else:
                v = [_round(x) for x in self.mp_fn(n)]  # type: ignore[misc]
            self._exact[n] = v
        return v

    def __call__(self, n: int, L0: int, ar: Any) -> list:
        if isinstance(ar, FloatArith):
            return self.floats(n)
        if isinstance(ar, FractionArith):
            return list(self.exact(n))
        if getattr(ar, "interval", False) and self.iv_fn is not None:
            return self.iv_fn(n)
        if self.sym_fn is not None:
            return self.sym_fn(n)
        return [ar.num(x) for x in self.exact(n)]


def _round(x: Any) -> Fraction:
    import mpmath

    with mpmath.workdps(50):
        return Fraction(int(mpmath.nint(x * 2**TRIG_DENOM_BITS)), 2**TRIG_DENOM_BITS)


#: precision (bits) of the arb balls: mpmath's working precision at the 50 digits of :func:`_round`
#: (``mpmath.libmp.dps_to_prec(50)``), so an operation rounds in the ball where it rounds in mpmath
ARB_PREC = 169
#: a rounded value from arb is used only when the ball, widened by ARB_WIDEN_RAD times its radius, plus
#: 2^-ARB_REL_BITS of its magnitude and 2^-ARB_ABS_BITS (in units of 2^-TRIG_DENOM_BITS), lies between two
#: rounding boundaries: the widening covers the error of mpmath's 50-digit value (per operation a rounding
#: of the size the ball's own radius accounts for, at the same precision), so both round to the same multiple
ARB_WIDEN_RAD = 2**20
ARB_REL_BITS = 150
ARB_ABS_BITS = 60


@seam("features._arb_position")
def _arb_position(n: int) -> Any:
    """The position (or offset) n as an exact arb ball."""
    from flint import arb

    return arb(n)


def _arb_widen(v: Any) -> Any:
    from flint import arb

    w = v.rad() * ARB_WIDEN_RAD + abs(v.mid()) * 2.0**-ARB_REL_BITS + 2.0**-ARB_ABS_BITS
    return v + arb(0, w)


def _arb_compile(e: Any) -> Callable[[Any], Any] | None:
    """A function of the position (an arb ball) returning an arb ball that encloses the value of ``e`` there,
    computed at the current arb precision, for every construct :func:`_mp` evaluates; None for any other
    (the caller then uses :func:`_mp`).  Subtrees without the variable are computed once.  Floor and ceiling
    widen their argument as :func:`_arb_round` widens a result: a point where the argument is near an integer
    comes out as a ball holding both integers, never as the one the 50-digit value might not take."""
    from flint import arb

    f = _arb_node(e)
    if f is None or e.free_symbols:
        return f
    try:
        c = f(arb(0))
    except (ValueError, ArithmeticError, TypeError):
        return f
    return lambda x: c


def ball(e: Any, env: dict[str, int]) -> Any:
    """An arb ball that contains the value of ``e`` at the point ``env`` (one variable), at the current arb
    precision (the interval re-check's: ``flint.ctx.workprec``).

    Raises:
        FeatureError: a construct without a ball form, or a ball flint refuses (a log of a ball reaching 0).
    """
    f = _arb_compile(e)
    if f is None:
        raise FeatureError(f"{_short(e)}: no interval (arb ball) form")
    (n,) = env.values() if env else (0,)
    try:
        return f(_arb_position(int(n)))
    except (ValueError, ArithmeticError, TypeError) as err:
        raise FeatureError(f"cannot enclose {_short(e)} at {_env(env)} ({type(err).__name__})") from None


def _arb_node(e: Any) -> Callable[[Any], Any] | None:
    import sympy as sp
    from flint import arb

    if isinstance(e, sp.Rational):
        p, q = int(e.p), int(e.q)
        return lambda x: arb(p) / q
    if isinstance(e, sp.Float):
        text = str(e)
        return lambda x: arb(text)
    if isinstance(e, sp.Symbol):
        return lambda x: x
    if e == sp.pi:
        return lambda x: arb.pi()
    if e == sp.E:
        return lambda x: arb.const_e()
    subs = [_arb_compile(a) for a in e.args]
    if any(f is None for f in subs):
        return None
    fs: list[Callable[[Any], Any]] = subs  # type: ignore[assignment]
    if isinstance(e, (sp.Add, sp.Mul)):
        plus = isinstance(e, sp.Add)
        if len(fs) == 2:
            f0, f1 = fs
            return (lambda x: f0(x) + f1(x)) if plus else (lambda x: f0(x) * f1(x))

        def fold(x: Any) -> Any:
            out = fs[0](x)
            for f in fs[1:]:
                out = out + f(x) if plus else out * f(x)
            return out
        return fold
    if isinstance(e, sp.Pow):
        xe = e.args[1]
        fb, fx = fs
        if isinstance(xe, sp.Rational) and xe.q == 1:
            k = int(xe.p)
            if k < 0:
                return lambda x: 1 / (fb(x) ** (-k))
            return lambda x: fb(x) ** k
        if isinstance(xe, sp.Rational) and xe == sp.Rational(1, 2):
            return lambda x: fb(x).sqrt()
        return lambda x: (fx(x) * fb(x).log()).exp()
    one = {sp.sin: "sin", sp.cos: "cos", sp.exp: "exp", sp.log: "log"}
    for cls, name in one.items():
        if isinstance(e, cls):
            f0, op = fs[0], name

            def fn(x: Any) -> Any:
                return getattr(f0(x), op)()
            return fn
    if isinstance(e, sp.Abs):
        return lambda x: abs(fs[0](x))
    if isinstance(e, sp.floor):
        return lambda x: _arb_widen(fs[0](x)).floor()
    if isinstance(e, sp.ceiling):
        return lambda x: _arb_widen(fs[0](x)).ceil()
    if isinstance(e, (sp.Min, sp.Max)):
        pick = "min" if isinstance(e, sp.Min) else "max"

        def minmax(x: Any) -> Any:
            out = fs[0](x)
            for f in fs[1:]:
                out = getattr(out, pick)(f(x))
            return out
        return minmax
    return None


def _arb_round(v: Any) -> Fraction | None:
    """``v`` rounded to the nearest multiple of 2^-TRIG_DENOM_BITS when the widened ball decides it (the value
    :func:`_round` gives for the 50-digit value), else None: a near tie, or a ball that is not finite."""
    if not v.is_finite():
        return None
    y = v * 2**TRIG_DENOM_BITS
    # the common case in float64: |y| < 2^42 makes float(mid) err by at most 2^-12, and a tight ball (the
    # widening then adds under 2^-9) whose midpoint is more than 2^-8 from a half-integer rounds to the
    # nearest integer of that midpoint
    m, r = float(y.mid()), float(y.rad())
    if abs(m) < 2.0**42 and r < 2.0**-30:
        fl = math.floor(m)
        if abs(m - fl - 0.5) > 2.0**-8:
            return Fraction(int(fl) + (m - fl > 0.5), 2**TRIG_DENOM_BITS)
    from flint import arb

    k = _arb_widen(y + arb(1) / 2).floor().unique_fmpz()
    return None if k is None else Fraction(int(k), 2**TRIG_DENOM_BITS)


def arb_rounded(exprs: Sequence[Any], var: str) -> Callable[[int], list]:
    """The function of a position n giving each expression's value rounded to a multiple of
    2^-TRIG_DENOM_BITS (:func:`_round` of the 50-digit value), from arb balls at :data:`ARB_PREC` bits
    (python-flint: rigorous enclosures, far faster than mpmath); an expression or a point the balls do not
    decide (a construct without an arb form, a value that is not finite, a near tie) takes the 50-digit
    mpmath value instead, so every result (and every error) is the one of :func:`_round` on mpmath's."""
    fns: list = []

    def rounded(n: int) -> list:
        from flint import ctx

        out: list = []
        with ctx.workprec(ARB_PREC):
            if not fns:
                fns.extend(_arb_compile(e) for e in exprs)
            x = _arb_position(n)
            for f in fns:
                v = None
                if f is not None:
                    try:
                        v = _arb_round(f(x))
                    except (ValueError, ArithmeticError, TypeError):  # a ball flint refuses: the mpmath value
                        v = None
                out.append(v)
        return [v if v is not None else _round(evaluate(e, {var: n}, "mp")) for e, v in zip(exprs, out)]

    return rounded


@dataclass(frozen=True)
class FeatureSpec:
    """A user feature map resolved to a family, with what the layers need to know about it.

    Attributes:
        family: the :class:`~verify.constructions.pe.Family` (absolute or relative).
        fixed_param: the parameter when the family has none to fit (``alibi-fixed``: [1]), else None.
        exact: True when every feature value is an exact rational (decisions and margins in Fractions).
        source: how the map was given (for the JSON), e.g. ``"expressions: 1, i, i**2"``.
        note: what the exact arithmetic means for this map (rounding, float64 values taken exactly).
    """

    family: Family
    fixed_param: Any = None
    exact: bool = True
    source: str = ""
    note: str = ""


def expression_family(text: str, name: str | None = None) -> FeatureSpec:
    """A family from comma-separated expressions in ``i`` (absolute) or ``d`` (relative offset i - j).

    Raises:
        FeatureError: the text fails :func:`parse_expressions`, or mixes ``i`` and ``d``.
    """
    try:
        exprs = parse_expressions(text, ("i",))
        var, kind = "i", "absolute"
    except FeatureError as e_abs:
        try:
            exprs = parse_expressions(text, ("d",))
            var, kind = "d", "relative"
        except FeatureError:
            raise e_abs from None
    return _from_exprs(exprs, var, kind, name or f"features({text.strip()[:60]})", f"expressions in {var}: {text}")


#: positions 0..CROSS_CHECK_FLOATS-1 where the float64 table is compared with exact (or 50-digit) values
CROSS_CHECK_FLOATS = 64
#: positions where each interval must enclose sympy's own 40-digit value (sympy.N: not our evaluator)
CROSS_CHECK_INTERVALS = (0, 1, 2, 3, 5, 7, 11, 13)
#: arb precision (bits) of the cross-check's balls: the interval re-check's 30 digits
CROSS_CHECK_PREC = 116
#: float64 agreement: |float - reference| <= FLOAT_AGREE * max(1, |reference|); a correctly evaluated
#: expression of the grammar errs by a few units of 2^-53 per operation, far below 1e-9 (a floor or
#: ceiling on the wrong side of an integer errs by >= 1)
FLOAT_AGREE = 1e-9


def cross_check(exprs: Sequence[Any], var: str, rational: bool, table: Any) -> None:
    """The three evaluators of a parsed map checked against each other before any use.

    * float64 (:func:`evaluate_table`, what the fits see) against the exact Fractions (rational maps)
      or 50-digit mpmath values, at positions 0..:data:`CROSS_CHECK_FLOATS`-1, to :data:`FLOAT_AGREE`;
    * the arb ball (what decides ties of irrational maps) must enclose sympy's own 40-digit
      value of the expression (``sympy.N``, independent of :func:`_mp`) at :data:`CROSS_CHECK_INTERVALS`
      (an interval built from the float pi no longer encloses pi: exact ties would be decided as strict).

    Raises:
        FeatureError: a disagreement (a defect of an evaluator, or a float value too rounded to use),
            naming the expression and the position.
    """
    import sympy as sp
    from flint import arb, ctx

    n = min(CROSS_CHECK_FLOATS, len(table))
    for k, e in enumerate(exprs):
        for p in range(n):
            try:
                ref = evaluate(e, {var: p}, "exact" if rational else "mp")
            except FeatureError:
                continue  # a point the exact evaluator refuses (e.g. a power too large) is not compared
            refv = float(ref)
            if not math.isfinite(refv) or abs(float(table[p, k]) - refv) > FLOAT_AGREE * max(1.0, abs(refv)):
                raise FeatureError(f"expression {k + 1} ({_short(e)}): the float64 value {float(table[p, k])!r} at "
                                   f"{var} = {p} disagrees with the exact value {refv!r}")
        sym = sp.Symbol(var, integer=True, nonnegative=True)
        for p in CROSS_CHECK_INTERVALS:
            if p >= n:
                continue
            try:
                with ctx.workprec(CROSS_CHECK_PREC):
                    box = ball(e, {var: p})
                truth = sp.N(e.subs(sym, p), 40)
            except FeatureError:
                continue
            if not truth.is_real:
                continue
            with ctx.workprec(2 * CROSS_CHECK_PREC):
                # sympy's 40 digits are themselves rounded (by at most 1e-39 relative): an exact ball of a long
                # dyadic need not contain them, so the test is that the ball meets [t - err, t + err] (a ball built
                # from the float pi misses pi by ~1e-16, far outside err)
                t = arb(str(truth))
                err = abs(t) * arb(10) ** -38 + arb(10) ** -40
                meets = box.overlaps(t + arb(0, 1) * err)
            if not meets:
                raise FeatureError(f"expression {k + 1} ({_short(e)}): the ball {box} at {var} = {p} "
                                   f"does not enclose its value {truth}")


def _from_exprs(exprs: Sequence[Any], var: str, kind: str, name: str, source: str, description: str = "") -> FeatureSpec:
    import sympy as sp

    rational = all(is_rational_expr(e) for e in exprs)
    dim = len(exprs)
    # check once, before any work, that the map is finite on a first stretch of positions, and that the
    # float64 and interval evaluators agree there with independent references
    cross_check(exprs, var, rational, evaluate_table(exprs, var, 64))

    def exact_fn(n: int) -> list:
        return [evaluate(e, {var: n}, "exact") for e in exprs]

    def mp_fn(n: int) -> list:
        return [evaluate(e, {var: n}, "mp") for e in exprs]

    def iv_fn(n: int) -> list:
        return [ball(e, {var: n}) for e in exprs]

    def sym_fn(n: int) -> list:
        sym = sp.Symbol(var, integer=True, nonnegative=True)
        return [sp.nsimplify(e.subs(sym, n)) if rational else e.subs(sym, n) for e in exprs]

    feats = _TableFeatures(dim, lambda n: evaluate_table(exprs, var, n), exact_fn if rational else None,
                           None if rational else mp_fn, iv_fn, sym_fn, None if rational else arb_rounded(exprs, var))
    desc = description or ((f"phi({var}) = [" if kind == "absolute" else f"psi({var}) = [")
                           + ", ".join(shown(e) for e in exprs) + "]")
    fam = Family(name, kind, lambda L0: dim, feats, desc, rational=rational)
    note = ("exact: every feature is rational, logits and margins in fractions.Fraction" if rational else
            "irrational features: decisions re-checked by mpmath intervals; the solver uses the values rounded to "
            f"multiples of 2^-{TRIG_DENOM_BITS}")
    return FeatureSpec(fam, None, rational, source, note)


def ensure_finite(spec: FeatureSpec, n: int, flag: str = "--pe-features") -> None:
    """Evaluate the map's float64 table on positions 0..n-1 now (refusing a non-finite value before any work).

    Raises:
        FeatureError: a non-finite value (the message names the position).
    """
    feats = spec.family.feature
    if isinstance(feats, _TableFeatures) and n > 0:
        try:
            feats.floats(n - 1)
        except FeatureError as e:
            raise FeatureError(str(e).replace("--pe-features", flag)) from None


def trig_family(kind: str, base: Fraction | int = 10000, frequencies: int = 16) -> FeatureSpec:
    """Sinusoidal (absolute) or RoPE (relative) features with theta_k = base^(-k/F), k = 0..F-1.

    ``kind``: ``"sinusoidal"`` (phi(i) = [sin(i theta_k), cos(i theta_k)]_k) or ``"rope"``
    (psi(d) = [cos(d theta_k), sin(d theta_k)]_k).  With base 10000 and F = 16 these are the
    built-in families' maps (the same order of coordinates).

    Raises:
        FeatureError: base <= 1 or F outside 1..32.
    """
    import sympy as sp

    base = Fraction(base)
    if not base > 1:
        raise FeatureError(f"--base must exceed 1, got {base}")
    if not 1 <= frequencies <= MAX_FEATURES // 2:
        raise FeatureError(f"--frequencies must be in 1..{MAX_FEATURES // 2}, got {frequencies}")
    var = "i" if kind == "sinusoidal" else "d"
    x = _symbols((var,))[var]
    b = sp.Rational(base.numerator, base.denominator)
    exprs = []
    for k in range(frequencies):
        th = sp.Pow(b, sp.Rational(-k, frequencies), evaluate=False)
        arg = sp.Mul(x, th, evaluate=False)
        pair = (sp.sin(arg, evaluate=False), sp.cos(arg, evaluate=False))
        exprs += list(pair) if kind == "sinusoidal" else [pair[1], pair[0]]
    fam_kind = "absolute" if kind == "sinusoidal" else "relative"
    desc = (f"{kind} with theta_k = {base}^(-k/{frequencies}), k = 0..{frequencies - 1}: "
            + ("phi(i) = [sin(i theta_k), cos(i theta_k)]_k" if kind == "sinusoidal"
               else "k(delta) = sum_k a_k cos(delta theta_k) + b_k sin(delta theta_k)"))
    name = f"{kind}(base={base},F={frequencies})"
    spec = _from_exprs(exprs, var, fam_kind, name, f"{kind}, base {base}, {frequencies} frequencies", desc)
    return spec


def nope_family() -> FeatureSpec:
    """No positional encoding: phi(i) = [1], every logit of a row equal (each row is a tie and fails)."""
    fam = Family("nope", "absolute", lambda L0: 1, lambda n, L0, ar: [ar.num(1)],
                 "no positional encoding: phi(i) = [1], every key of a row has the same logit W[0,0]")
    return FeatureSpec(fam, None, True, "nope", "exact: a constant feature; every row is an exact tie")


def alibi_fixed_family(slope: Fraction | int | float) -> FeatureSpec:
    """Canonical ALiBi with a fixed slope m: logit(i, j) = -m (i - j), nothing trained.

    The relative feature is psi(delta) = [-m delta] with the parameter fixed to w = [1], so the
    slope's sign cannot flip (the built-in ``alibi`` family learns a - m delta, m of either sign).
    Source: ALiBi adds -m (i - j) to the logit of key j from query i, one fixed slope per head
    (Press et al., "Train Short, Test Long", ICLR 2022, Section 3).

    Raises:
        FeatureError: a slope that is not a finite rational.
    """
    try:
        m = Fraction(slope)
    except (TypeError, ValueError, OverflowError):
        raise FeatureError(f"--slope expects a finite number, got {slope!r}") from None
    fam = Family(f"alibi-fixed(m={m})", "relative", lambda L0: 1, lambda n, L0, ar: [ar.num(-m * n)],
                 f"canonical ALiBi, fixed slope m = {m}: logit(i, j) = -{m} (i - j), no trained parameter")
    return FeatureSpec(fam, [Fraction(1)], True, f"alibi-fixed, slope {m}",
                       "exact: the bias -m (i - j) with a rational slope")


_MODCALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_]*)")


USER_TIMEOUT_S = 60.0
"""Default limit (seconds, wall clock) on the user's code of ``--pe MODULE:CALLABLE``: its import and
every call of the map together (``--user-timeout``)."""


class _UserTimeout(BaseException):
    """Raised by the alarm inside the user's code (a BaseException: ``except Exception`` there cannot swallow it)."""


def _guarded(call: Callable[[], Any], label: str, what: str, deadline: float, limit: float, flag: str = "--pe",
             limit_hint: str = " (--user-timeout)") -> Any:
    """Run user code under a guard: its ``SystemExit`` and exceptions become one :class:`FeatureError`,
    whatever it prints goes to stderr (never into the report on stdout), and it is stopped at
    ``deadline`` (time.monotonic()) by SIGALRM when called from the main thread of a Unix process.
    KeyboardInterrupt passes through (Ctrl-C still stops the command).  Messages start ``{flag} {label}:``
    (the option that named the code); ``limit_hint`` follows the time limit in its message.
    """
    import contextlib
    import signal
    import threading
    import time

    def over() -> FeatureError:
        return FeatureError(f"{flag} {label}: the user code ran past its time limit of {limit:g} s{limit_hint}")

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise over()
    alarm = math.isfinite(remaining) and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    old: Any = None
    if alarm:
        def on_alarm(signum: int, frame: Any) -> None:
            raise _UserTimeout

        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, remaining)
    try:
        try:
            with contextlib.redirect_stdout(sys.stderr):
                return call()
        finally:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
    except _UserTimeout:
        raise over() from None
    except SystemExit as e:
        raise FeatureError(f"{flag} {label}: the {what} called exit({str(e.code)[:40]})") from None
    except FeatureError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of the user's code is a refusal
        raise FeatureError(f"{flag} {label}: the {what} raised {type(e).__name__}: "
                           f"{str(e).splitlines()[0][:80] if str(e) else ''}") from None


def check_user_timeout(value: Any) -> float:
    """Validate ``--user-timeout`` (seconds, finite, in [0.01, 86400]).

    Raises:
        FeatureError: not a number in range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0.01 <= value <= 86400:
        raise FeatureError(f"--user-timeout must be a number of seconds in [0.01, 86400], got {str(value)[:40]}")
    return float(value)


def load_callable(spec: str, deadline: float | None = None, limit: float = USER_TIMEOUT_S, flag: str = "--pe",
                  label: str | None = None, limit_hint: str = " (--user-timeout)") -> Callable:
    """Import ``MODULE:CALLABLE`` (the current directory first on the import path).

    This runs the user's module: an explicit opt-in by the user who names it; the import runs under
    :func:`_guarded` (exits, exceptions, stdout, the time limit).  Messages name ``{flag} {label}``
    (``label`` defaults to ``spec``).

    Raises:
        FeatureError: malformed name, the module cannot be imported, no such callable.
    """
    import time

    m = _MODCALL.fullmatch(spec.strip())
    if label is None:
        label = spec
    if not m or "__" in spec:
        example = "mypes:phi" if flag == "--pe" else "pkg.mod:factory"
        raise FeatureError(f"{flag} {label[:60]!r}: expected MODULE:CALLABLE (e.g. {example})")
    modname, attr = m.groups()
    if deadline is None:
        deadline = time.monotonic() + limit
    added = False
    if "" not in sys.path:
        sys.path.insert(0, "")
        added = True
    def imp() -> Any:
        try:
            return importlib.import_module(modname)
        except Exception as e:  # noqa: BLE001 - any failure of the user's import is a refusal
            raise FeatureError(f"{flag} {label}: cannot import module {modname!r} ({type(e).__name__}: "
                               f"{str(e).splitlines()[0][:80] if str(e) else ''})") from None

    try:
        mod = _guarded(imp, label, f"import of module {modname!r}", deadline, limit, flag, limit_hint)
    finally:
        if added:
            sys.path.remove("")
    fn = getattr(mod, attr, None)
    if fn is None or not callable(fn):
        raise FeatureError(f"{flag} {label}: module {modname!r} has no callable {attr!r}")
    return fn


def _call_table(fn: Callable, n: int, label: str, deadline: float = float("inf"), limit: float = USER_TIMEOUT_S) -> Any:
    import numpy as np
    import torch

    pos = torch.arange(n, dtype=torch.long)
    out = _guarded(lambda: fn(pos), label, "feature map", deadline, limit)
    try:
        arr = out.detach().cpu().double().numpy() if isinstance(out, torch.Tensor) else np.asarray(out, dtype=np.float64)
    except Exception:  # noqa: BLE001
        raise FeatureError(f"--pe {label}: the feature map must return a tensor of shape [n, k], got "
                           f"{type(out).__name__}") from None
    if arr.ndim != 2 or arr.shape[0] != n or not 1 <= arr.shape[1] <= MAX_FEATURES:
        raise FeatureError(f"--pe {label}: the feature map must return shape [{n}, k] with 1 <= k <= {MAX_FEATURES} "
                           f"for {n} positions, got {list(arr.shape)}")
    bad = ~np.isfinite(arr)
    if bad.any():
        p = int(np.argwhere(bad)[0][0])
        raise FeatureError(f"--pe {label}: non-finite feature value at position {p}")
    return arr


def callable_family(spec: str | Callable, max_positions: int, check_prefix: int | None = None,
                    timeout_s: float = USER_TIMEOUT_S) -> FeatureSpec:
    """A family from a Python feature map ``f(positions: LongTensor[n]) -> Tensor[n, k]`` (absolute features).

    The map is called once on positions 0..max_positions-1 (float64; the values are taken as the
    exact rationals they are, so the exact layers use them as given) and, when ``check_prefix`` is
    given, once more on 0..check_prefix-1: the two must agree on the shared positions (a feature
    that depends on the sequence length breaks the block identity every transfer relies on).
    The import and both calls run under one time limit, ``timeout_s`` seconds in all (default
    :data:`USER_TIMEOUT_S`), with the user's stdout sent to stderr and its exits made refusals.

    Raises:
        FeatureError: import failure, wrong type or shape, non-finite values, length-dependent values.
    """
    import time

    import numpy as np

    limit = check_user_timeout(timeout_s)
    deadline = time.monotonic() + limit
    label = spec if isinstance(spec, str) else getattr(spec, "__name__", "callable")
    if not 1 <= max_positions <= MAX_POSITIONS:
        raise FeatureError(f"--pe {label}: between 1 and {MAX_POSITIONS} positions")
    fn = load_callable(spec, deadline, limit) if isinstance(spec, str) else spec
    table = _call_table(fn, max_positions, label, deadline, limit)
    if check_prefix is not None and 0 < check_prefix < max_positions:
        short = _call_table(fn, check_prefix, label, deadline, limit)
        if short.shape[1] != table.shape[1] or not np.array_equal(short, table[:check_prefix]):
            raise FeatureError(f"--pe {label}: the features of positions 0..{check_prefix - 1} differ between "
                               f"{check_prefix} and {max_positions} positions (the map must not depend on the length)")
    dim = table.shape[1]

    def float_table(n: int) -> Any:
        return table  # the positions computed (_TableFeatures.floats refuses a position beyond them)

    from flint import arb

    feats = _TableFeatures(dim, float_table, lambda n: [Fraction(float(x)) for x in table[n]], None,
                           lambda n: [arb(float(x)) for x in table[n]])  # each float the exact ball it is
    fam = Family(f"callable({label})", "absolute", lambda L0: dim, feats,
                 f"user feature map {label}: phi(i) in R^{dim}", rational=True)
    return FeatureSpec(fam, None, True, f"callable {label}",
                       "the map's float64 values are taken as the exact rationals they are")


# ----------------------------------------------------------------------------- tasks


def expression_task(target: str, rows: str | None = None) -> Task:
    """A task from its target key t(i) (expression in ``i`` and ``L``) and its first query row (in ``L``).

    Without ``rows`` the first query row at length L is the smallest i whose target lies in the
    causal window 0..i.  Values must be integers (use ``floor``/``ceiling``); every row from the
    first on must keep its target in its window (checked by :func:`check_task` and at evaluation).

    Raises:
        FeatureError: the expressions fail :func:`parse_expressions` or are not rational.
    """
    (t_expr,) = parse_expressions(target, ("i", "L"), "--target", max_count=1)
    if not is_rational_expr(t_expr):
        raise FeatureError("--target: the target must be an integer expression (no sin, exp, pi, ...)")
    r_expr = None
    if rows is not None:
        (r_expr,) = parse_expressions(rows, ("L",), "--rows", max_count=1)
        if not is_rational_expr(r_expr):
            raise FeatureError("--rows: the first row must be an integer expression in L")
    names = {s.name for s in t_expr.free_symbols} | ({s.name for s in r_expr.free_symbols} if r_expr is not None else set())

    def tgt(i: Any, L: Any) -> int:
        v = evaluate(t_expr, {"i": int(i), "L": int(L)}, "exact")
        if v.denominator != 1:
            raise FeatureError(f"--target: t({i}) = {v} at L = {L} is not an integer (use floor or ceiling)")
        return int(v)

    def first(L: Any) -> int:
        L = int(L)
        if r_expr is not None:
            v = evaluate(r_expr, {"L": L}, "exact")
            if v.denominator != 1:
                raise FeatureError(f"--rows: the first row {v} at L = {L} is not an integer")
            return int(v)
        for i in range(L):
            if 0 <= tgt(i, L) <= i:
                return i
        return L

    desc = f"t(i) = {shown(t_expr)}" + (f" on rows i >= {shown(r_expr)}" if r_expr is not None else
                                  " on rows from the first whose target lies in 0..i")
    return Task(f"target({target.strip()[:40]})", first, tgt, desc, length_stable="L" not in names)


def check_task(task: Task, L: int, flag: str = "--target") -> None:
    """Every query row of ``task`` at length L keeps its target in its causal window.

    Raises:
        FeatureError: the first row whose target lies outside 0..i (named).
    """
    for i in task.rows(L):
        t = task.target(i, L)
        if not 0 <= t <= i:
            raise FeatureError(f"{flag}: row i = {i} at L = {L} has target {t} outside its causal window 0..{i}; "
                               "set the first query row with --rows")


__all__ = ["FeatureError", "NotExact", "FeatureSpec", "parse_expressions", "evaluate", "evaluate_table",
           "is_rational_expr", "expression_family", "trig_family", "nope_family", "alibi_fixed_family",
           "callable_family", "load_callable", "check_user_timeout", "USER_TIMEOUT_S",
           "expression_task", "check_task", "ensure_finite",
           "MAX_EXPR_CHARS", "MAX_FEATURES", "MAX_EXACT_BITS", "ALLOWED_NAMES"]
