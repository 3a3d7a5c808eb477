"""Replay the solver layer's Farkas certificates in Coq (``verify recheck --kernel DIR``).

Each certificate file (``verify CLAIM --certificates DIR``) holds the rows of an UNSAT linear system
and its Farkas multipliers, one set per case of a top-level disjunction.  For every case this module
writes a Coq file that states the system as data (``rows_k``, exact rationals, variables numbered in
sorted-name order, the names in a comment) and proves

    Theorem case_k_infeasible : ~ feasible rows_k.

by ``farkas_sound`` (``theories/Farkas.v``, proved once for every system) applied to the file's
multipliers, the checker ``farkas_ok`` evaluated by ``vm_compute``.  A certificate whose multipliers
do not refute its rows makes that file fail to compile: the kernel, not the solver that found the
multipliers nor the Python re-check, accepts or refuses it.

Only linear rows replay: a degree-2 certificate (rows tagged ``product_of``) is reported as not
replayable in the kernel, never as valid.  The rows' hash and the run's manifest are checked by
``verify recheck`` itself before a file reaches this module.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

from verify.kernel.driver import COQC_ARGS, INSTALL_HINT, THEORIES, KernelUnavailable, _first_error, _run, coq_version

#: the relations a row may use, and their names in Farkas.v
RELATIONS = {"<=": "Le", "<": "Lt", "=": "Eq"}
#: digits allowed in one numerator or denominator (a hostile file cannot make Coq compute forever)
MAX_DIGITS = 2000
#: rows, over all cases of one certificate, that one replay accepts
MAX_ROWS = 5_000
_RATIONAL = re.compile(r"-?[0-9]{1,%d}(?:/[0-9]{1,%d})?" % (MAX_DIGITS, MAX_DIGITS))
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\[\],']{0,199}")


class NotReplayable(ValueError):
    """The certificate cannot be stated as a linear Farkas system (the message says why)."""


def _q(raw: Any) -> str:
    """A rational as Coq's Q literal (``(3 # 4)``, ``(-3 # 4)``)."""
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise NotReplayable(f"not an exact rational: {str(raw)[:40]!r}")
    text = str(raw)
    if not _RATIONAL.fullmatch(text):
        raise NotReplayable(f"not an exact rational 'p' or 'p/q': {text[:40]!r}")
    try:
        value = Fraction(text)
    except ZeroDivisionError:
        raise NotReplayable(f"a zero denominator: {text[:40]!r}") from None
    # hexadecimal: Coq reads a decimal numeral in time quadratic in its digits (about 10 s for 2000
    # digits), a hexadecimal one in linear time (a hostile file of huge numbers stays fast)
    sign = "-" if value.numerator < 0 else ""
    return f"({sign}0x{abs(value.numerator):x} # 0x{value.denominator:x})"


#: what text from the file may show inside a Coq comment: no '*' (so no comment delimiter) and no
#: '"' (a string opened inside a Coq comment runs on past its '*)', hiding the code after it)
_COMMENT_SAFE = re.compile(r"[^A-Za-z0-9 _.,:;=<>+\-/\[\]()'!?#%&|^~@$]")


def _comment(text: str, limit: int) -> str:
    """``text`` clipped to ``limit`` characters with every character a Coq comment could misread
    replaced by ``?`` (the file's claim, obligation and variable names are data, never Coq)."""
    return _COMMENT_SAFE.sub("?", text[:limit])


def case_text(rows: list[dict], multipliers: list[Any], k: int) -> tuple[str, list[str]]:
    """The Coq definitions and theorem of one case, and the variable names in index order.

    Raises:
        NotReplayable: a product row, an unknown relation, a malformed number or row.
    """
    if not isinstance(rows, list) or not isinstance(multipliers, list):
        raise NotReplayable("a case holds a list of rows and a list of multipliers")
    if len(rows) != len(multipliers):
        raise NotReplayable(f"case {k}: {len(rows)} rows but {len(multipliers)} multipliers")
    names: set[str] = set()
    for r in rows:
        if not isinstance(r, dict) or not isinstance(r.get("coeffs"), dict):
            raise NotReplayable(f"case {k}: a row is not {{'coeffs', 'op', 'rhs'}}")
        if "product_of" in r:
            raise NotReplayable("a degree-2 certificate (product rows): only linear certificates replay in the kernel")
        for v in r["coeffs"]:
            if "*" in v:
                raise NotReplayable("a degree-2 certificate (monomials x*y): only linear certificates replay in the kernel")
            names.add(v)
    order = sorted(names)
    index = {v: i + 1 for i, v in enumerate(order)}
    row_lines = []
    for r in rows:
        rel = RELATIONS.get(r.get("op"))  # type: ignore[arg-type]
        if rel is None:
            raise NotReplayable(f"case {k}: unknown relation {str(r.get('op'))[:10]!r}")
        coeffs = "; ".join(f"({index[v]}%positive, {_q(a)})" for v, a in r["coeffs"].items())
        row_lines.append(f"    {{| coeffs := [{coeffs}]; op := {rel}; rhs := {_q(r.get('rhs'))} |}}")
    ys = "; ".join(_q(y) for y in multipliers)
    text = (f"Definition rows_{k} : list row := [\n" + ";\n".join(row_lines) + "\n  ].\n"
            f"Definition multipliers_{k} : list Q := [{ys}].\n\n"
            f"(** the system rows_{k} has no real solution *)\n"
            f"Theorem case_{k}_infeasible : ~ feasible rows_{k}.\n"
            f"Proof. apply (farkas_sound rows_{k} multipliers_{k}). vm_compute. reflexivity. Qed.\n")
    return text, order


def certificate_text(doc: dict) -> str:
    """The whole Coq file replaying one certificate document (every case).

    Raises:
        NotReplayable: the document is not a Farkas certificate this module can state.
    """
    cert = doc.get("certificate")
    if not isinstance(cert, dict) or cert.get("kind") != "farkas":
        raise NotReplayable("not a Farkas certificate")
    cases = cert.get("cases")
    if not isinstance(cases, list) or not cases:
        raise NotReplayable("a Farkas certificate with no cases")
    if sum(len(c["rows"]) for c in cases if isinstance(c, dict) and isinstance(c.get("rows"), list)) > MAX_ROWS:
        raise NotReplayable(f"more than {MAX_ROWS} rows")
    out = ["(* Replay of a Farkas certificate written by verify", f"   claim: {_comment(str(doc.get('claim', '')), 100)}",
           f"   obligation: {_comment(str(doc.get('obligation', '')), 300)} *)",
           "From Coq Require Import QArith List.", "Import ListNotations.", "Require Import Verify.Farkas.", ""]
    for k, case in enumerate(cases):
        if not isinstance(case, dict):
            raise NotReplayable(f"case {k} is not an object")
        text, order = case_text(case.get("rows"), case.get("multipliers"), k)  # type: ignore[arg-type]
        shown = ", ".join(f"{i + 1}: {v if _NAME.fullmatch(v) else repr(v)[:40]}" for i, v in enumerate(order))
        out += [f"(* case {k}: variables {_comment(shown, 2000)} *)", text]
    return "\n".join(out)


def replay_documents(docs: list[tuple[str, bytes]], progress: Callable[[str], None] | None = None,
                     ) -> list[tuple[str, bool, str]]:
    """Replay each ``(label, file bytes)`` in Coq; ``(label, ok, message)`` per file.

    Raises:
        KernelUnavailable: coqc is not installed.
    """
    version = coq_version()
    if version is None:
        raise KernelUnavailable(INSTALL_HINT)
    out: list[tuple[str, bool, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copy(THEORIES / "Farkas.v", work / "Farkas.v")
        rc, msg = _run(["coqc", *COQC_ARGS, "Farkas.v"], work)
        if rc != 0:
            raise RuntimeError(f"Verify.Farkas does not compile: {_first_error(msg)}")
        for i, (label, data) in enumerate(docs):
            if progress:
                progress(f"kernel replay {i + 1}/{len(docs)}: {label}")
            try:
                doc = json.loads(data.decode("utf-8"))
                if not isinstance(doc, dict):
                    raise NotReplayable("a certificate file holds a JSON object")
                text = certificate_text(doc)
            except (UnicodeDecodeError, ValueError, RecursionError) as e:
                out.append((label, False, f"not replayed in the kernel: {str(e)[:200]}"))
                continue
            name = f"Replay{i}"
            (work / f"{name}.v").write_text(text)
            rc, msg = _run(["coqc", *COQC_ARGS, f"{name}.v"], work)
            n = len(doc["certificate"]["cases"])
            if rc == 0:
                out.append((label, True, f"Coq {version} kernel: {n} case(s), each ~ feasible rows by farkas_sound"))
            else:
                first = " ".join(_first_error(msg, 3).split())[:200]
                out.append((label, False, f"the Coq kernel refuses the certificate: {first}"))
    return out

