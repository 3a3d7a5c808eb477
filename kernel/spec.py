"""What a kernel-checked theorem says about a claim variant (the catalogs' entries)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KernelStatement:
    """One Coq theorem and the claim variant it answers.

    Attributes:
        claim: the claim id (``ws24:theorem2``).
        variant: the variant label as ``Claim.variant_label`` prints it (``as-written``,
            ``raw-key,correct,correct``; ``""`` for a claim without variants).
        theory: the Coq module under the ``Verify`` prefix (``Ws24`` for ``theories/Ws24.v``).
        theorem: the theorem's name inside that module.
        role: ``"proves"`` (the theorem is the variant's statement, for every size: evidence
            ``proved``) or ``"refutes"`` (the theorem is a counterexample to it, or its negation:
            evidence ``refuted``).
        reading: the Coq statement in words, in the paper's notation (printed beside the paper's
            statement by ``verify show`` and the audit).
        covers: the claim's options the theorem quantifies over (``("L", "m", "sigma")``): a run that
            changes only these from their defaults is still answered by the theorem; a run that changes
            another option gets no kernel answer (skipped, with the reason).
        part: ``""`` when the theorem answers the variant's statement (it sets the kernel layer's status); else
            the key of the claim's part it answers (:attr:`verify.core.model.Part.key`), reported under
            ``numbers["parts"]`` for that part's judge and leaving the layer's status to the others.
        hypothesis: the hypothesis on the embeddings (or inputs) the theorem assumes, in words, in the kernel
            evidence's details and certificate (``""``: none beyond the paper's setting).
        tag: the same in a few words, printed in every kernel line right after its verb (``"eps = 0"``).
        idealised: True when that hypothesis is an idealisation the paper does not make (an exactly orthonormal
            family where the paper draws random vectors): a ``proves`` theorem then gives the kernel layer the status
            ``proved (idealised)``, evidence for the statement and not a proof of it.  A ``refutes`` theorem under an
            idealisation is still a counterexample when the idealised case is one the statement covers (an
            orthonormal family is eps-near-orthogonal for every eps): its catalog entry says so.
    """

    claim: str
    variant: str
    theory: str
    theorem: str
    role: str
    reading: str
    covers: tuple[str, ...] = ()
    part: str = ""
    hypothesis: str = ""
    tag: str = ""
    idealised: bool = False

    def __post_init__(self) -> None:
        if self.role not in ("proves", "refutes"):
            raise ValueError(f"{self.claim}[{self.variant}]: role must be 'proves' or 'refutes', got {self.role!r}")
        if bool(self.hypothesis) != bool(self.tag):
            raise ValueError(f"{self.claim}[{self.variant}]: a hypothesis needs its short tag, and a tag its hypothesis")
        if self.idealised and not self.hypothesis:
            raise ValueError(f"{self.claim}[{self.variant}]: an idealised theorem must name its hypothesis")

    @property
    def qualified(self) -> str:
        return f"Verify.{self.theory}.{self.theorem}"
