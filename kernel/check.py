"""The kernel layer's check of one claim variant: the catalog's theorems, as Coq's kernel checked them.

Status rules (the README, "What the kernel checks and what it trusts"):

* ``proved``: every theorem the catalog gives the variant has role ``proves``, compiled, rests only on
  trusted assumptions, and its module passed ``coqchk``: the statement holds for every size it quantifies over;
* ``proved (idealised)``: as ``proved``, but some theorem assumes an idealisation the paper does not make
  (:attr:`KernelStatement.idealised`, e.g. exactly orthonormal embeddings): evidence, not a proof of the statement;
* ``refuted``: the same, with at least one theorem of role ``refutes`` (a kernel-checked counterexample);
* ``error``: a theory did not compile, a theorem is missing, an assumption of ours was found, or coqchk
  complained (never read as a pass);
* ``skipped``: coqc is not installed (with the install line), the claim has no kernel statement for
  this variant, or the variant runs at options the theorems do not cover.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from verify.evidence import Context, Evidence, Layer, Status
from verify.kernel import catalog
from verify.kernel.driver import INSTALL_HINT, Build, KernelUnavailable, cached_build
from verify.kernel.spec import KernelStatement


def statements_for(claim_id: str, variant: str) -> list[KernelStatement]:
    """The catalog's theorems for one claim variant (empty when there are none)."""
    return [s for s in catalog.statements() if s.claim == claim_id and s.variant == variant]


def uncovered_options(statements: Sequence[KernelStatement], changed: Sequence[str]) -> list[str]:
    """The options changed from their defaults that some theorem does not quantify over."""
    return [o for o in changed if any(o not in s.covers for s in statements)]


def evidence_from_build(build: Build, statements: Sequence[KernelStatement],
                        changed_options: Sequence[str] = ()) -> Evidence:
    """The kernel Evidence for one variant's theorems from a build (no Coq is run here).  The theorems that answer a
    part of the claim (:attr:`KernelStatement.part`) go to ``numbers["parts"]`` (``{part: {"status", "theorem",
    "reading"}}``, or ``"skipped"`` when the run changes an option the theorem does not cover); the others set the
    layer's status."""
    parted = [s for s in statements if s.part]
    main = [s for s in statements if not s.part]
    ev = _main_evidence(build, main) if main else Evidence(layer=Layer.KERNEL, status=Status.SKIPPED,
                                                           summary="no kernel statement for this variant")
    if parted:
        parts: dict[str, dict[str, str]] = {}
        for s in parted:
            one = _main_evidence(build, [s])
            uncovered = uncovered_options([s], changed_options)
            status = str(Status.SKIPPED if uncovered else one.status)
            parts[s.part] = {"status": status, "theorem": s.qualified,
                             "reading": (f"the theorem does not quantify over {', '.join('--' + o for o in uncovered)}"
                                         if uncovered else one.summary)}
        ev.numbers = {**ev.numbers, "parts": parts}
    return ev


def _main_evidence(build: Build, statements: Sequence[KernelStatement]) -> Evidence:
    problems: list[str] = []
    rows = []
    for s in statements:
        theory = s.theory
        fact = build.theorems.get(s.qualified)
        if not build.compiled.get(theory, False):
            problems.append(f"Verify.{theory} did not compile: {build.errors.get(theory, 'not in _CoqProject').splitlines()[-1]}")
            continue
        if fact is None or not fact.found:
            problems.append(f"{s.qualified} does not exist in the compiled theory")
            continue
        if fact.untrusted:
            problems.append(f"{s.qualified} rests on assumptions of ours: {', '.join(fact.untrusted)}")
        if build.coqchk.get(theory) != "ok":
            problems.append(f"coqchk refused Verify.{theory}: {build.coqchk.get(theory, 'not run')}")
        ours = build.untrusted_axioms(theory)
        if ours:
            problems.append(f"coqchk lists axioms of ours in Verify.{theory}: {', '.join(ours)}")
        rows.append({"theorem": s.qualified, "role": s.role, "reading": s.reading, "statement": fact.statement,
                     "assumptions": list(fact.assumptions), "sha256": build.sources.get(theory, ""),
                     "hypothesis": s.hypothesis or "none beyond the paper's setting", "tag": s.tag,
                     "idealised": s.idealised})
    engines = {"coq": build.coq_version}
    if problems:
        return Evidence(layer=Layer.KERNEL, status=Status.ERROR, summary="kernel check not accepted: " + "; ".join(problems),
                        engines=engines, details=problems)
    refuting = [r for r in rows if r["role"] == "refutes"]
    idealised = not refuting and any(r["idealised"] for r in rows)
    status = Status.REFUTED if refuting else (Status.PROVED_IDEALISED if idealised else Status.PROVED)
    shown = refuting[0] if refuting else next((r for r in rows if r["idealised"]), rows[0])
    names = ", ".join(r["theorem"] for r in rows)
    verb = ("kernel-checked counterexample" if refuting else
            "kernel-checked theorem of an idealisation (not of the statement)" if idealised else "kernel-checked theorem")
    tag = f", {shown['tag']}" if shown["tag"] else ""
    summary = f"{verb}{tag} (Coq {build.coq_version}, coqchk passed): {shown['reading']}"
    certificate = {"coq_version": build.coq_version, "theorems": rows, "coqchk": "passed",
                   "trusted_base": "Coq's kernel, the standard library's axioms listed under each theorem"}
    return Evidence(layer=Layer.KERNEL, status=status, summary=summary, certificate=certificate, engines=engines,
                    bound="every size the theorem quantifies over",
                    details=[f"{r['theorem']} ({r['role']}; hypothesis: {r['hypothesis']}): {r['statement']}"
                             for r in rows],
                    numbers={"theorems": names})


def check(claim_id: str, variant: str, changed_options: Sequence[str], ctx: Context,
          cache_dir: Path | None = None) -> Evidence:
    """The kernel layer's Evidence for ``claim_id[variant]`` run with ``changed_options`` away from
    their defaults."""
    statements = statements_for(claim_id, variant)
    if not statements:
        return Evidence(layer=Layer.KERNEL, status=Status.SKIPPED, summary="no kernel statement for this variant")
    uncovered = uncovered_options([s for s in statements if not s.part], changed_options)
    if uncovered:
        return Evidence(layer=Layer.KERNEL, status=Status.SKIPPED,
                        summary=f"the kernel theorems do not quantify over {', '.join('--' + o for o in uncovered)}; "
                                "they answer the variant at its default values of these options")
    try:
        build = cached_build(catalog.statements(), cache_dir=cache_dir, progress=ctx.progress)
    except KernelUnavailable:
        return Evidence(layer=Layer.KERNEL, status=Status.SKIPPED, summary=INSTALL_HINT)
    return evidence_from_build(build, statements, changed_options)


def kernel_statements(claim_id: str) -> Mapping[str, list[KernelStatement]]:
    """variant label -> the catalog's theorems, for ``verify show``."""
    out: dict[str, list[KernelStatement]] = {}
    for s in catalog.statements():
        if s.claim == claim_id:
            out.setdefault(s.variant, []).append(s)
    return out
