"""verify: a formal-verification-backed checker for published claims about transformer attention.

Layers: ``verify.symbolic`` (sympy, exact), ``verify.solver`` (z3 with cvc5 as a second
opinion, bounded), ``verify.numeric`` (torch, at the papers' scale); ``verify.proofs``
wires each paper's claims to the layers and holds the registry, verdicts, CLI and reports.
"""

__version__ = "0.2.0"
