"""Compile the Coq theories, read what the kernel checked, and cache it.

One build covers every theory listed in ``theories/_CoqProject`` (in that order):

1. each ``X.v`` is compiled with ``coqc -Q . Verify`` in a private copy of the theories (a file that does
   not compile is recorded with the first lines of Coq's error; the other theories still build);
2. for every theorem the catalogs report, ``Print Assumptions`` is read: a kernel result is accepted only
   when every assumption belongs to Coq's standard library or the libraries named in
   :data:`TRUSTED_LIBRARIES` (the axioms of the classical reals, functional extensionality, and the
   specifications of Coq's primitive integers and floats that Coq-Interval computes with); an
   assumption of ours (``Admitted``, an ``Axiom`` or ``Parameter`` in a theory) refuses the result;
3. ``coqchk -o -norec Verify.X`` re-checks each compiled module with Coq's independent checker and lists
   its axioms with full paths (the libraries themselves are trusted as installed, not re-checked);
4. the statement of each theorem is taken from its source text, as a referee reads it.

The result is written once per Coq version and source hash into the user cache
(``$XDG_CACHE_HOME/verify/kernel`` or ``~/.cache/verify/kernel``), under a file lock so that parallel
workers build it once; a warm lookup reads one JSON file.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from verify.kernel.spec import KernelStatement
from verify.safeio import atomic_write

#: the theories shipped with the package
THEORIES = Path(__file__).resolve().parent / "theories"

#: what to run when coqc is missing (the README's install line)
INSTALL_HINT = ("coqc not found; install Coq 8.16 and its libraries: apt-get update && apt-get install -y coq "
                "libcoq-mathcomp-ssreflect libcoq-interval libcoq-coquelicot libcoq-flocq")

#: libraries whose axioms and opaque module fields a kernel result may rest on (by logical path)
TRUSTED_LIBRARIES = ("Coq.", "mathcomp.", "Interval.", "Flocq.", "Coquelicot.", "Bignums.")

#: Print Assumptions prints short names; these are the standard library's modules that declare axioms
#: (the classical reals, extensionality, classical logic) or the specifications of primitive
#: integers and floats (what Coq-Interval's computations rely on)
STDLIB_AXIOM_MODULES = ("ClassicalDedekindReals.", "FunctionalExtensionality.", "Classical_Prop.", "ClassicalEpsilon.",
                        "PropExtensionality.", "Classical_Pred_Type.", "ProofIrrelevance.", "Eqdep.", "Eqdep_dec.",
                        "JMeq.", "Epsilon.", "Description.", "IndefiniteDescription.", "ChoiceFacts.",
                        "FloatAxioms.", "PrimFloat.", "PrimInt63.", "Uint63.", "Int63.", "PArray.", "PrimArray.",
                        "Rdefinitions.", "Raxioms.", "SpecFloat.", "FloatOps.", "FloatClass.", "ssrunder.",
                        "Under_rel.", "Float64.", "Sint63.")

#: how every theory is compiled (``coqc COQC_ARGS X.v``) and re-checked (``coqchk COQCHK_ARGS Verify.X``): coqchk
#: re-does every conversion with its own checker; no option trusting the bytecode VM or native compilation is given
COQC_ARGS = ("-q", "-Q", ".", "Verify")
COQCHK_ARGS = ("-silent", "-o", "-Q", ".", "Verify", "-norec")

#: seconds one coqc call may take before the build records it as timed out
COQC_TIMEOUT_S = 300

#: bumped when the build format or the checks change (part of the cache key)
DRIVER_VERSION = "2"

_MARK = "@@verify-begin "


class KernelUnavailable(RuntimeError):
    """coqc or coqchk is not installed (the message is :data:`INSTALL_HINT`)."""


def coq_version() -> str | None:
    """The version coqc reports (``"8.16.1"``), or None when coqc is not on the PATH."""
    exe = shutil.which("coqc")
    return None if exe is None else _version_of(exe)


@functools.lru_cache(maxsize=8)
def _version_of(exe: str) -> str | None:
    try:
        out = subprocess.run([exe, "--print-version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.split()[0] if out.split() else None


def theory_names(theories: Path = THEORIES) -> list[str]:
    """The theories ``_CoqProject`` lists, in build order (``["Ws24", "Pr26", ...]``)."""
    names = []
    for line in (theories / "_CoqProject").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.endswith(".v") and not line.startswith("-"):
            names.append(line[:-2])
    return names


def source_hashes(theories: Path = THEORIES, sources: Mapping[str, str] | None = None) -> dict[str, str]:
    """sha256 of each theory's source text (``sources`` overrides files by theory name)."""
    out = {}
    for name in theory_names(theories):
        text = sources[name] if sources and name in sources else (theories / f"{name}.v").read_text()
        out[name] = hashlib.sha256(text.encode()).hexdigest()
    return out


@dataclass
class TheoremFact:
    """What the build learned about one reported theorem.

    Attributes:
        qualified: ``Verify.Theory.name``.
        statement: the theorem's statement as its source writes it (binders and proposition).
        assumptions: ``Print Assumptions`` output names (empty: closed under the global context).
        untrusted: the assumptions outside the trusted libraries (non-empty refuses the result).
        found: False when the theory did not compile or has no such theorem.
    """

    qualified: str
    statement: str = ""
    assumptions: list[str] = field(default_factory=list)
    untrusted: list[str] = field(default_factory=list)
    found: bool = False


@dataclass
class Build:
    """One build of the theories (what the cache stores).

    Attributes:
        coq_version: coqc's version.
        sources: theory -> sha256 of its source.
        compiled: theory -> True when it compiled.
        errors: theory -> the first lines of Coq's error (for theories that did not compile).
        coqchk: theory -> ``"ok"`` or the checker's complaint.
        coqchk_axioms: theory -> the axioms coqchk lists, with full paths.
        theorems: qualified name -> :class:`TheoremFact`.
        compile_s: seconds the cold build took.
        key: the cache key.
    """

    coq_version: str
    sources: dict[str, str]
    compiled: dict[str, bool] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    coqchk: dict[str, str] = field(default_factory=dict)
    coqchk_axioms: dict[str, list[str]] = field(default_factory=dict)
    theorems: dict[str, TheoremFact] = field(default_factory=dict)
    compile_s: float = 0.0
    key: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Build":
        raw = json.loads(text)
        raw["theorems"] = {k: TheoremFact(**v) for k, v in raw["theorems"].items()}
        return cls(**raw)

    def untrusted_axioms(self, theory: str) -> list[str]:
        """coqchk's axioms of ``theory`` outside the trusted libraries (ours: must be empty)."""
        return [a for a in self.coqchk_axioms.get(theory, []) if not a.startswith(TRUSTED_LIBRARIES)]


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/verify/kernel``, or ``~/.cache/verify/kernel`` when XDG_CACHE_HOME is unset or empty."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base) if base else Path.home() / ".cache") / "verify" / "kernel"


def _trusted_short(name: str, ours: Iterable[str]) -> bool:
    """Whether a ``Print Assumptions`` name is an assumption the kernel layer accepts."""
    head = name.split(" ", 1)[0]
    if any(head.startswith(f"{t}.") or head.startswith(f"Verify.{t}.") for t in ours):
        return False
    return head.startswith(STDLIB_AXIOM_MODULES) or head.startswith(TRUSTED_LIBRARIES)


def parse_assumptions(output: str) -> dict[str, list[str]]:
    """Split the output of the assumptions file into marker -> assumption names.

    Coq prints ``Closed under the global context`` or ``Axioms:`` followed by ``name : type`` entries
    whose continuation lines are indented; only the names are kept."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        if line.startswith(_MARK):
            current = out.setdefault(line[len(_MARK):].strip(), [])
            continue
        if current is None or not line.strip() or line.startswith((" ", "\t")):
            continue
        if line.startswith(("Axioms:", "Closed under the global context", "Opaque", "Transparent")):
            continue
        current.append(line.split(" : ", 1)[0].strip())
    return out


def parse_coqchk_axioms(output: str) -> list[str]:
    """The fully qualified names coqchk lists under ``* Axioms:``."""
    names, inside = [], False
    for line in output.splitlines():
        s = line.strip()
        if s.startswith("* "):
            inside = s.startswith("* Axioms")
            continue
        if inside and s:
            names.append(s)
    return names


_THEOREM_RE = r"(?:Theorem|Lemma|Corollary|Proposition|Fact|Remark)\s+{name}\b(.*?)\.\s*(?:\n|$)\s*Proof"


def statement_text(source: str, name: str) -> str:
    """The statement of theorem ``name`` as written in ``source`` (comments dropped, spaces folded),
    or ``""`` when the source has no such theorem."""
    no_comments = _strip_comments(source)
    m = re.search(_THEOREM_RE.format(name=re.escape(name)), no_comments, flags=re.S)
    if not m:
        return ""
    body = " ".join(m.group(1).split())
    return body[1:].strip() if body.startswith(":") else body


def _strip_comments(text: str) -> str:
    out, depth, i = [], 0, 0
    while i < len(text):
        if text.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*)", i) and depth:
            depth, i = depth - 1, i + 2
        else:
            if not depth:
                out.append(text[i])
            i += 1
    return "".join(out)


_FORBIDDEN_RE = re.compile(r"\b(Admitted|admit|Axiom|Axioms|Parameter|Parameters|Conjecture)\b|"
                           r"Unset\s+Guard\s+Checking|Unset\s+Positivity\s+Checking|Unset\s+Universe\s+Checking")


def forbidden_vernacular(source: str) -> list[str]:
    """Commands a theory may not use, found in its text outside comments (an assumption of ours, or a
    switched-off kernel check).  Section ``Variable``/``Hypothesis`` are allowed: closing the section
    makes them hypotheses of each theorem, and ``Print Assumptions`` would show one left open."""
    return sorted({m.group(0) for m in _FORBIDDEN_RE.finditer(_strip_comments(source))})


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the Coq child gets SIGKILL when the process that started it dies (a worker stopped by
    Ctrl-C or killed leaves no coqc running behind it)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the timeout still bounds the child
        pass


def _run(cmd: Sequence[str], cwd: Path, timeout: float = COQC_TIMEOUT_S) -> tuple[int, str]:
    try:
        p = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                           preexec_fn=_die_with_parent)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:.0f} s"
    return p.returncode, (p.stdout or "") + (p.stderr or "")


def _first_error(output: str, lines: int = 6) -> str:
    text = [x for x in output.splitlines() if x.strip()]
    for i, x in enumerate(text):
        if x.startswith("Error") or "Error:" in x:
            return "\n".join(text[max(0, i - 2):i + lines])
    return "\n".join(text[:lines])


def build_theories(statements: Sequence[KernelStatement], theories: Path = THEORIES,
                   sources: Mapping[str, str] | None = None, workdir: Path | None = None,
                   progress: Callable[[str], None] | None = None) -> Build:
    """Compile every theory (``sources`` replaces files by theory name, for fault tests) in ``workdir``
    (a fresh temporary directory when None), then read the assumptions and run coqchk.

    Raises:
        KernelUnavailable: coqc or coqchk is not installed.
    """
    version = coq_version()
    if version is None or shutil.which("coqchk") is None:
        raise KernelUnavailable(INSTALL_HINT)
    names = theory_names(theories)
    with contextlib.ExitStack() as stack:
        work = workdir if workdir is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        work.mkdir(parents=True, exist_ok=True)
        texts = {}
        for name in names:
            texts[name] = sources[name] if sources and name in sources else (theories / f"{name}.v").read_text()
            (work / f"{name}.v").write_text(texts[name])
        build = Build(coq_version=version, sources={n: hashlib.sha256(t.encode()).hexdigest() for n, t in texts.items()})
        t0 = time.perf_counter()
        for wave in dependency_waves(texts):
            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(len(wave), os.cpu_count() or 1))) as pool:
                list(pool.map(lambda name: _one_theory(build, name, texts, statements, work, progress), wave))
        build.compile_s = round(time.perf_counter() - t0, 2)
    return build


def dependency_waves(texts: Mapping[str, str]) -> list[list[str]]:
    """The theories in build waves: each wave needs only theories of earlier waves (a theory depends
    on the ``Verify.X`` it names); the theories of one wave compile side by side.

    Raises:
        ValueError: the theories require each other in a cycle.
    """
    deps = {n: {m for m in re.findall(r"\bVerify\.(\w+)", _strip_comments(t)) if m in texts and m != n}
            for n, t in texts.items()}
    done: set[str] = set()
    waves = []
    while len(done) < len(texts):
        wave = [n for n in texts if n not in done and deps[n] <= done]
        if not wave:
            raise ValueError(f"the theories require each other in a cycle: {sorted(set(texts) - done)}")
        waves.append(wave)
        done.update(wave)
    return waves


def _one_theory(build: Build, name: str, texts: Mapping[str, str], statements: Sequence[KernelStatement],
                work: Path, progress: Callable[[str], None] | None) -> None:
    """Compile one theory, read its theorems' assumptions, run coqchk on it (fills ``build``)."""
    mine = [s for s in statements if s.theory == name]
    for s in mine:
        build.theorems[s.qualified] = TheoremFact(qualified=s.qualified, statement=statement_text(texts[name], s.theorem))
    bad = forbidden_vernacular(texts[name])
    if bad:
        build.compiled[name] = False
        build.errors[name] = f"refused before compiling: the theory uses {', '.join(bad)}"
        return
    if progress:
        progress(f"kernel: coqc {name}.v")
    rc, out = _run(["coqc", *COQC_ARGS, f"{name}.v"], work)
    build.compiled[name] = rc == 0
    if rc != 0:
        build.errors[name] = _first_error(out)
        return
    _read_assumptions(build, sorted({s.qualified for s in mine}), name, list(texts), work)
    if progress:
        progress(f"kernel: coqchk Verify.{name}")
    rc, out = _run(["coqchk", *COQCHK_ARGS, f"Verify.{name}"], work)
    build.coqchk[name] = "ok" if rc == 0 else _first_error(out)
    build.coqchk_axioms[name] = parse_coqchk_axioms(out)


def _read_assumptions(build: Build, wanted: Sequence[str], theory: str, ours: Sequence[str], work: Path) -> None:
    """``Print Assumptions`` of each wanted theorem of one compiled theory."""
    if not wanted:
        return
    probe = work / f"VerifyAssumptions{theory}.v"

    def ask(names: Sequence[str]) -> tuple[int, str]:
        lines = [f"Require Verify.{theory}."]
        for q in names:
            lines += [f'Goal True. idtac "{_MARK}{q}". Abort.', f"Print Assumptions {q}."]
        probe.write_text("\n".join(lines) + "\n")
        return _run(["coqc", *COQC_ARGS, probe.name], work)

    rc, out = ask(wanted)
    if rc != 0:  # one missing theorem makes the whole file fail: ask theorem by theorem
        out = "\n".join(o for r, o in (ask([q]) for q in wanted) if r == 0)
    found = parse_assumptions(out)
    for q in wanted:
        if q in found:
            fact = build.theorems[q]
            fact.found = True
            fact.assumptions = found[q]
            fact.untrusted = [a for a in found[q] if not _trusted_short(a, ours)]


def cache_key(version: str, hashes: Mapping[str, str], statements: Sequence[KernelStatement]) -> str:
    h = hashlib.sha256()
    h.update(f"driver {DRIVER_VERSION}\ncoq {version}\n".encode())
    for name, digest in hashes.items():
        h.update(f"{name} {digest}\n".encode())
    for q in sorted({s.qualified for s in statements}):
        h.update(f"theorem {q}\n".encode())
    return h.hexdigest()[:32]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def cached_build(statements: Sequence[KernelStatement], cache_dir: Path | None = None,
                 progress: Callable[[str], None] | None = None) -> Build:
    """The build of the shipped theories for this Coq version and these sources: read from the cache,
    or compiled once (under a lock, so parallel workers wait for one build) and stored.

    Raises:
        KernelUnavailable: coqc or coqchk is not installed.
    """
    version = coq_version()
    if version is None or shutil.which("coqchk") is None:
        raise KernelUnavailable(INSTALL_HINT)
    root = cache_dir if cache_dir is not None else default_cache_dir()
    key = cache_key(version, source_hashes(), statements)
    target = root / key / "build.json"
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        return Build.from_json(target.read_text())
    with _locked(root / ".lock"):
        with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
            return Build.from_json(target.read_text())
        if progress:
            progress("kernel: compiling the Coq theories (once per Coq version and source hash)")
        work = root / key / "theories"
        if work.exists():
            shutil.rmtree(work)
        build = build_theories(statements, workdir=work, progress=progress)
        build.key = key
        atomic_write(target, lambda fh: fh.write(build.to_json().encode()))
        return build


# ----------------------------------------------------------------------------------------------------------
# Evaluating the Coq definitions (the tie to the Python constructions)

def coq_compute(theory: str, exprs: str | Sequence[str], theories: Path = THEORIES, workdir: Path | None = None,
                preamble: str = "") -> list[str]:
    """``Compute`` each expression after ``Require Import Verify.<theory>`` and return Coq's answers
    (the text after ``=`` and before the final ``: type``), one per expression.

    The theories are compiled into ``workdir`` (a temporary directory when None) first.

    Raises:
        KernelUnavailable: coqc is not installed.
        RuntimeError: a theory or an expression does not compile (Coq's error in the message).
    """
    if shutil.which("coqc") is None:
        raise KernelUnavailable(INSTALL_HINT)
    exprs = [exprs] if isinstance(exprs, str) else list(exprs)
    with contextlib.ExitStack() as stack:
        work = workdir if workdir is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        names = theory_names(theories)
        upto = names[: names.index(theory) + 1] if theory in names else [theory]
        for name in upto:
            vo = work / f"{name}.vo"
            if not vo.exists():
                shutil.copy(theories / f"{name}.v", work / f"{name}.v")
                rc, out = _run(["coqc", *COQC_ARGS, f"{name}.v"], work)
                if rc != 0:
                    raise RuntimeError(f"Verify.{name} does not compile:\n{_first_error(out)}")
        lines = [f"Require Import Verify.{theory}.", preamble]
        for i, e in enumerate(exprs):
            lines += [f'Goal True. idtac "{_MARK}{i}". Abort.', f"Compute ({e})."]
        (work / "VerifyCompute.v").write_text("\n".join(lines) + "\n")
        rc, out = _run(["coqc", *COQC_ARGS, "VerifyCompute.v"], work)
        if rc != 0:
            raise RuntimeError(f"Compute failed:\n{_first_error(out)}")
    answers: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in out.splitlines():
        if line.startswith(_MARK):
            current = answers.setdefault(int(line[len(_MARK):]), [])
        elif current is not None:
            current.append(line)
    result = []
    for i in range(len(exprs)):
        text = " ".join(" ".join(answers.get(i, [])).split())
        text = text[1:].strip() if text.startswith("=") else text
        text = text.rsplit(" : ", 1)[0].strip() if " : " in text else text
        result.append(text)
    return result


_Q_RE = re.compile(r"^\(?\s*(-?\d+)\s*(?:#\s*(\d+))?\s*\)?\s*(?:%Q)?$")


def parse_q(text: str) -> Fraction:
    """A rational Coq printed (``3 # 4``, ``(-3 # 4)%Q``, ``5``) as a Fraction.

    Raises:
        ValueError: not a rational literal.
    """
    t = text.strip()
    if t.endswith("%Q"):
        t = t[:-2].strip()
    while t.startswith("(") and t.endswith(")"):
        t = t[1:-1].strip()
    m = _Q_RE.match(t)
    if not m:
        raise ValueError(f"not a Coq rational: {text!r}")
    return Fraction(int(m.group(1)), int(m.group(2) or 1))


def parse_q_list(text: str) -> list[Fraction]:
    """A list of rationals Coq printed (``[1 # 2; -3; 0]%list``) as Fractions."""
    t = text.strip()
    if t.endswith("%list"):
        t = t[:-5].strip()
    if not (t.startswith("[") and t.endswith("]")):
        raise ValueError(f"not a Coq list: {text!r}")
    inner = t[1:-1].strip()
    return [parse_q(x) for x in inner.split(";")] if inner else []
