"""A solver's answer to one obligation and its record, without z3: a check whose answers come from an exact
computation (an LP proposal checked in fractions, Farkas multipliers solved exactly) reports them in the same form
as a z3 check (:mod:`verify.solver.common`, which re-exports both), and importing z3 (0.1 s) waits for the first
check that needs it."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from verify.evidence import _StrEnum


class SolverAnswer(_StrEnum):
    """A solver's answer to one obligation, in the order answer counts are reported.  A string enum:
    it compares, hashes and serialises as ``"unsat"``, ``"sat"`` or ``"unknown"``."""

    UNSAT = "unsat"
    SAT = "sat"
    UNKNOWN = "unknown"

    def __repr__(self) -> str:
        # answers travel in Evidence numbers and witnesses, whose dicts and lists reports print as text
        return repr(self.value)


@dataclass
class ObligationResult:
    """Outcome of one solver call.

    Attributes:
        name: the obligation, in words (e.g. ``"|S(v) - chi(v)| > A(eps) at v = 3"``).
        answer: the solver's :class:`SolverAnswer`.
        reason: z3's reason for ``unknown`` (timeout, incomplete, ...), else ''.
        model: for ``sat``, variable name -> exact Fraction value.
        seconds: wall time of the check in this run (0.0 when the answer was reused: see ``_ANSWERED``).
        smt2_text: the obligation as SMT-LIB 2 text when the second solver ran on it (the encoding
            cvc5 saw), else None: most obligations never need it, and a result holds no z3 object
            (each kept solver would keep its whole context alive, and z3 creates a new context
            several times slower while hundreds are alive: measured 4 ms against 1 ms each).
    """

    name: str
    answer: SolverAnswer
    reason: str = ""
    model: dict[str, Fraction] = field(default_factory=dict)
    seconds: float = 0.0
    smt2_text: str | None = None
    n_constraints: int = 0
    second_answer: SolverAnswer | str = ""  # cvc5's answer, "" when cvc5 did not run
    second_reason: str = ""
    disagreement: str = ""
    certificate: dict | None = None
    certificate_note: str = ""
    certify_seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        """A JSON-ready record of the obligation (for Evidence.certificate)."""
        out: dict[str, Any] = {"name": self.name, "answer": self.answer, "seconds": self.seconds}
        if self.reason:
            out["reason"] = self.reason
        if self.second_answer:
            out["cvc5"] = self.second_answer + (f" ({self.second_reason})" if self.second_reason else "")
        elif self.second_reason:
            out["cvc5"] = self.second_reason
        if self.disagreement:
            out["disagreement"] = self.disagreement
        if self.certificate is not None:
            out["farkas_checked"] = bool(self.certificate.get("checked"))
            out["farkas_certificate"] = self.certificate  # heavy: stripped from reports, written by --certificates
        elif self.certificate_note:
            out["farkas"] = self.certificate_note
        return out
