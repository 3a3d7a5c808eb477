"""``verify head``: certify one attention head's pattern on real weights.

    verify head --model (hf:NAME | hf-dir:PATH | trained:ws24-rpe | trained:ws24-ape) --layer L --head H
                [--pattern prev|induction] [--prompts FILE | --n-prompts N --length T] [--rows A:B]
                [--criterion mass|argmax] [--threshold TAU] [--fraction F] [--seed S]
                [--certificates DIR] [--format text|json]

Statement checked: at least a fraction F of the checked query rows put attention mass >= TAU on their target key
(``--criterion mass``; default TAU = 1/2, F = 1), or have the target as the strict argmax (``--criterion argmax``);
targets: ``prev`` query i -> key i - 1; ``induction`` query i -> the key after the most recent earlier occurrence of
token x_i.  Every row's mass and score margin are enclosed in arb balls (python-flint, 128 bits) from the head's
stored weights and its input rows (exact for layer 0: embeddings and learned positions; recorded float64 inputs for
deeper layers, which the output says), so the counts are rigorous; the library's own float64 attention is compared
with the extracted head first (a mismatch above 1e-4 stops with exit 3: the head was not taken apart correctly).

Exit codes: 0 HOLDS; 1 FAILS (a witness row is printed: prompt, query, target, the mass's enclosure); 2 bad input,
refused in one line before any work; 3 INCONCLUSIVE (undecided rows, or the cross-check failed).  With
``--certificates DIR`` the bound is written as a certificate that ``verify recheck DIR`` re-derives without torch.
"""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import click

from verify.core.model import InputError

EXIT_OK, EXIT_FAIL, EXIT_INCONCLUSIVE = 0, 1, 3
VERDICT_EXIT = {"HOLDS": EXIT_OK, "FAILS": EXIT_FAIL, "INCONCLUSIVE": EXIT_INCONCLUSIVE}
MAX_PROMPTS = 64
MAX_LENGTH = 1024
#: a prompts file larger than this is refused before it is parsed
MAX_PROMPTS_FILE = 4 * 1024 * 1024
SCHEMA = "verify-head/1"
#: the ball arithmetic's budget: query-key pairs over all prompts (each pair a score and an exp, per layer below)
MAX_PAIRS = 2_000_000


def _rational(text: str, name: str) -> Fraction:
    from verify.numeric.head_bounds import parse_rational

    f = parse_rational(text)
    if f is None:
        raise InputError(f"--{name} {text[:40]!r}: expected a number in (0, 1], e.g. 0.5 or 1/2")
    if not 0 < f <= 1:
        raise InputError(f"--{name} {text[:40]}: must be in (0, 1]")
    return f


def _model(text: str) -> tuple[str, str]:
    from verify.numeric.heads import HF_FAMILIES, TRAINED

    kind, sep, rest = text.partition(":")
    if kind == "hf" and sep and rest in HF_FAMILIES:
        return kind, rest
    if kind == "hf-dir" and sep and rest:
        if not os.path.isfile(os.path.join(rest, "config.json")):
            raise InputError(f"--model {text}: not a local checkpoint directory (no config.json); nothing is downloaded")
        return kind, rest
    if kind == "trained" and sep and rest in TRAINED:
        return kind, rest
    raise InputError(f"--model {text[:80]!r}: expected hf:NAME (NAME one of {', '.join(HF_FAMILIES)}), hf-dir:PATH "
                     f"or trained:NAME (one of {', '.join(TRAINED)})")


def _rows(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    import re

    m = re.fullmatch(r"\s*(\d{1,9})\s*:\s*(\d{1,9})\s*", text)
    if m is None:
        raise InputError(f"--rows {text[:40]!r}: expected A:B with 0 <= A <= B, query positions (0-indexed, inclusive)")
    lo, hi = int(m.group(1)), int(m.group(2))
    if hi < lo:
        raise InputError(f"--rows {text[:40]!r}: expected A:B with 0 <= A <= B")
    return lo, hi


def _prompts(path: str | None) -> list[list[int]] | None:
    if path is None:
        return None
    from verify.safeio import UnsafeInput, read_regular_file

    try:
        data = read_regular_file(Path(path), limit=MAX_PROMPTS_FILE)
        doc = json.loads(data.decode("utf-8"))
    except UnsafeInput as e:
        raise InputError(f"--prompts {path}: {e}") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise InputError(f"--prompts {path}: not JSON ({type(e).__name__}); expected [[token, ...], ...]") from None
    ok = (isinstance(doc, list) and 0 < len(doc) <= MAX_PROMPTS and all(
        isinstance(p, list) and 2 <= len(p) <= MAX_LENGTH and all(isinstance(t, int) and not isinstance(t, bool)
                                                                   for t in p) for p in doc))
    if not ok:
        raise InputError(f"--prompts {path}: expected a JSON list of 1..{MAX_PROMPTS} token lists, each of 2.."
                         f"{MAX_LENGTH} integers")
    return doc


def _preflight(kind: str, certificates: str | None) -> None:
    if kind in ("hf", "hf-dir"):
        from verify import hfcompat
        from verify.core.model import missing_packages

        if missing_packages((("transformers", ""),)):
            raise InputError("--model hf:...: needs the transformers package: pip install 'verify-attention[impl]'")
        why = hfcompat.refusal() or hfcompat.probe()
        if why is not None:
            raise InputError(f"--model: {why}")
    if certificates is not None:
        if not certificates.strip():
            raise InputError("--certificates: an empty path; name a directory")
        d = Path(certificates)
        if d.exists() and not d.is_dir():
            raise InputError(f"--certificates {certificates}: exists and is not a directory")
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(f"--certificates {certificates}: cannot create it ({e.strerror})") from None


@click.command("head", epilog="Exit codes: 0 HOLDS; 1 FAILS (witness printed); 2 bad input; 3 INCONCLUSIVE.")
@click.option("--model", "model_spec", required=True,
              help="hf:gpt2|llama|mistral|qwen2 (a tiny random model built locally), hf-dir:PATH (a local checkpoint "
                   "of those families; never a download) or trained:ws24-rpe|ws24-ape (ws24:falsifier's two-layer "
                   "model at its defaults, seed --seed: read from the lab cache or trained, ~15 s)")
@click.option("--layer", type=click.IntRange(0, 1000), required=True, help="layer, 0-indexed")
@click.option("--head", "head_index", type=click.IntRange(0, 10000), required=True, help="head, 0-indexed")
@click.option("--pattern", type=click.Choice(["prev", "induction"]), default="prev",
              help="prev: query i -> key i - 1; induction: query i -> the key after the last earlier occurrence of x_i")
@click.option("--prompts", "prompts_file", default=None,
              help=f"JSON file [[token, ...], ...] (1..{MAX_PROMPTS} prompts of 2..{MAX_LENGTH} tokens); default: drawn")
@click.option("--n-prompts", type=click.IntRange(1, MAX_PROMPTS), default=4, help="prompts drawn under --seed")
@click.option("--length", type=click.IntRange(0, MAX_LENGTH), default=64,
              help="tokens per drawn prompt (trained:ws24-*: 0 = the model's T, 256)")
@click.option("--rows", "rows_text", default=None, help="A:B, only the query positions A..B (0-indexed)")
@click.option("--criterion", type=click.Choice(["mass", "argmax"]), default="mass",
              help="mass: mass on the target >= --threshold; argmax: the target is the strict argmax")
@click.option("--threshold", "threshold_text", default="1/2", help="TAU in (0, 1] for --criterion mass (default 1/2)")
@click.option("--fraction", "fraction_text", default="1", help="F in (0, 1]: the share of rows that must succeed")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=0,
              help="draws the tiny model, the trained seed and the prompts")
@click.option("--certificates", default=None, help="write the bound as a certificate here (verify recheck DIR)")
@click.option("--kernel", is_flag=True,
              help="also check every decided row's softmax step in Coq: a theorem for every score vector within the "
                   "row's enclosures (kernel/theories/HeadSoftmax.v), compiled by coqc (needs Coq; ~1 s per head)")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def head_cmd(model_spec: str, layer: int, head_index: int, pattern: str, prompts_file: str | None, n_prompts: int,
             length: int, rows_text: str | None, criterion: str, threshold_text: str, fraction_text: str, seed: int,
             certificates: str | None, kernel: bool, fmt: str) -> None:
    """Certify what one attention head attends to, with rigorous (arb ball) bounds on its attention mass."""
    kind, name = _model(model_spec)
    tau = _rational(threshold_text, "threshold")
    frac = _rational(fraction_text, "fraction")
    rows = _rows(rows_text)
    prompts = _prompts(prompts_file)
    if kind != "trained" and length < 2 and prompts is None:
        raise InputError(f"--length {length}: a drawn prompt needs at least 2 tokens")
    longest = max(len(p) for p in prompts) if prompts is not None else (length or 256)
    if rows is not None and rows[0] >= longest:
        raise InputError(f"--rows {rows_text}: the prompts have positions 0..{longest - 1}")
    pairs = sum(len(p) ** 2 for p in prompts) if prompts is not None else n_prompts * (length or 256) ** 2
    if pairs > MAX_PAIRS:
        raise InputError(f"{pairs} query-key pairs (prompts x positions^2) exceed the budget of {MAX_PAIRS} "
                         "(about a minute of ball arithmetic per layer): fewer or shorter prompts")
    _preflight(kind, certificates)
    report = run_head(model_spec, kind, layer, head_index, pattern, prompts, n=n_prompts, length=length, rows=rows,
                      criterion=criterion, tau=tau, fraction=frac, seed=seed, certificates=certificates, kernel=kernel)
    if fmt == "json":
        click.echo(json.dumps(report, indent=2, sort_keys=True))
    else:
        click.echo(render(report))
    code = VERDICT_EXIT[report["verdict"]]
    if report.get("kernel", {}).get("status") in ("refuted", "error") and code != EXIT_INCONCLUSIVE:
        code = EXIT_INCONCLUSIVE  # the kernel did not confirm what arb decided: nothing is claimed beyond the balls
    raise click.exceptions.Exit(code)


def run_head(model_spec: str, kind: str, layer: int, head: int, pattern: str, prompts: list[list[int]] | None, *,
             n: int, length: int, rows: tuple[int, int] | None, criterion: str, tau: Fraction, fraction: Fraction,
             seed: int, certificates: str | None, kernel: bool = False) -> dict[str, Any]:
    """Take the head apart, cross-check it against the library, bound every row, and decide (the JSON report);
    ``kernel``: also check the decided rows' softmax step in Coq (:func:`kernel_rows`, :mod:`verify.kernel.head_replay`)."""
    from verify.numeric import head_bounds as hb
    from verify.numeric import heads

    try:
        ex = heads.extract(model_spec, layer, head, pattern, prompts, n=n, length=length, seed=seed, rows=rows)
    except heads.HeadInputError as e:
        raise InputError(str(e)) from None
    n_rows = sum(len(p.rows) for p in ex.prompts)
    if n_rows == 0:
        raise InputError(f"no query row has a {pattern} target in the given prompts and --rows"
                         + (f" inside the sliding window of {ex.program.window}" if ex.program.window else ""))
    cc = heads.cross_check(ex)
    base: dict[str, Any] = {
        "schema": SCHEMA, "model": ex.describe, "layer": layer, "head": head, "pattern": pattern,
        "criterion": criterion, "threshold": str(tau), "fraction": str(fraction), "seed": seed,
        "rows_filter": None if rows is None else list(rows),
        "inputs": ex.input_kind, "prompts": len(ex.prompts), "positions": [len(p.tokens) for p in ex.prompts],
        "statement": hb.statement(pattern, criterion, tau, fraction),
        "library_cross_check": {"tolerance": heads.CROSS_CHECK_TOL, "max_abs_diff_at_most": _decade(cc),
                                "within": cc <= heads.CROSS_CHECK_TOL}}
    if cc > heads.CROSS_CHECK_TOL:
        return {**base, "verdict": "INCONCLUSIVE", "reason": (
            f"the extracted head's attention differs from the library's forward pass by up to {cc:.3g} > "
            f"{heads.CROSS_CHECK_TOL:g}: this model's head is not taken apart correctly here, so nothing is certified")}
    from verify.kernel.head_replay import BITS

    bound = hb.bound_head(ex.program, ex.prompts, tau, enclose=BITS if kernel else None)
    verdict = bound.verdict(fraction, criterion)
    out = {**base, "verdict": verdict, "counts": bound.counts(), **_extremes(bound, criterion)}
    if verdict == "INCONCLUSIVE":
        c = bound.counts()
        open_rows = c["undecided"] if criterion == "mass" else c["rows"] - c["argmax_yes"] - c["argmax_no"]
        out["reason"] = (f"{open_rows} rows are not decided at {hb.PRECISION} bits (their enclosure straddles the "
                         "threshold, or two scores tie within it)")
    checked = None
    if kernel:
        path = None if certificates is None else _cert_path(base, criterion, tau, fraction, certificates)
        out["kernel"], checked = kernel_check(
            kernel_rows(bound, criterion), bound, tau, fraction, criterion,
            f"head {base['model']['model']} layer {layer} head {head}: {base['statement']}",
            None if path is None else path.with_suffix(".v"))
    if certificates is not None:
        out["certificate"] = _write(ex, bound, tau, fraction, criterion, certificates, base, checked)
    return out


def kernel_rows(bound: Any, criterion: str) -> list[Any]:
    """The claims of every decided row for the kernel: mass >= tau ('ge') or < tau ('lt'); for ``argmax``, the
    target the strict argmax or certainly not."""
    from verify.kernel.head_replay import KernelRow
    from verify.numeric.head_bounds import kernel_claim

    out = []
    for r in bound.rows:
        claim = kernel_claim(r, criterion)
        if claim is not None and r.scores is not None:
            out.append(KernelRow(r.prompt, r.row, r.target, claim, r.scores.target, r.scores.keys, r.scores.others))
    return out


def kernel_check(krows: list[Any], bound: Any, tau: Fraction, fraction: Fraction, criterion: str, header: str,
                 keep: Path | None = None) -> tuple[dict[str, Any], list[Any] | None]:
    """Hand the decided rows to Coq; the result, with the verdict the kernel-checked rows alone decide, and the rows
    Coq accepted (None when it accepted none: skipped, refused or failed)."""
    import time

    from verify.kernel.driver import KernelUnavailable
    from verify.kernel.head_replay import check, choose, trust

    t0 = time.perf_counter()
    tb, stated, missed = choose(krows, tau)
    try:
        res = check(tb, stated, tau, header, keep=keep)
    except KernelUnavailable as e:
        return {"status": "skipped", "message": str(e)}, None
    out: dict[str, Any] = {"status": res.status, "message": res.message, "coq_version": res.coq_version,
                           "rows_checked": len(stated), "rows_not_checked": len(missed),
                           "table_step": f"2^-{tb['G']}", "seconds": round(time.perf_counter() - t0, 2)}
    if missed:
        out["not_checked"] = [{"prompt": r.prompt, "query": r.row, "target": r.target, "claim": r.claim}
                              for r in missed[:5]]
    if res.first_refused is not None:
        out["first_refused"] = res.first_refused
    if res.status == "checked":
        t = trust(res.coq_version or "")
        out["theory"] = {"coqchk": t["coqchk"], "assumptions": sorted({a for v in t["assumptions"].values() for a in v})}
        from verify.numeric.head_bounds import decide

        n = len(bound.rows)
        yes = sum(r.claim in ("ge", "argmax") for r, _ in stated)
        no = sum(r.claim in ("lt", "argmax_no") for r, _ in stated)
        verdict = decide(n, yes, no, fraction)
        out["verdict"] = None if verdict == "INCONCLUSIVE" else verdict
        out["counts"] = {"success": yes, "failure": no, "rows": n}
        return out, [r for r, _ in stated]
    return out, None


def _decade(x: float) -> str:
    """The smallest of 1e-12, 1e-9, 1e-6, 1e-4, 1e-2, 1 not below x (a CPU-independent statement of a rounding-level
    difference)."""
    for b in ("1e-12", "1e-9", "1e-6", "1e-4", "1e-2"):
        if x <= float(b):
            return b
    return "1"


def _extremes(bound: Any, criterion: str) -> dict[str, Any]:
    """The weakest row (smallest certified mass) and, when some row fails, the witness (the row with the smallest
    mass upper bound among the failing ones); masses rounded outward to 6 significant digits."""
    from verify.numeric.head_bounds import fmt_directed

    def row(r: Any) -> dict[str, Any]:
        return {"prompt": r.prompt, "query": r.row, "target": r.target, "argmax": r.argmax,
                "mass": [fmt_directed(r.mass_lo, True, 6), fmt_directed(r.mass_hi, False, 6)]}

    weakest = min(bound.rows, key=lambda r: r.mass_lo)
    fail = [r for r in bound.rows if (r.status == "lt" if criterion == "mass" else r.argmax == "no")]
    out: dict[str, Any] = {"weakest_row": row(weakest)}
    if fail:
        out["witness"] = row(min(fail, key=lambda r: r.mass_hi))
    return out


def _rid(base: dict[str, Any], criterion: str, tau: Fraction, fraction: Fraction) -> str:
    return f"head {base['model']['model']} L{base['layer']} H{base['head']} {base['pattern']} {criterion} {tau} {fraction}"


def _cert_path(base: dict[str, Any], criterion: str, tau: Fraction, fraction: Fraction, directory: str) -> Path:
    from verify.reports.certificates import _stem

    return Path(directory) / f"{_stem(_rid(base, criterion, tau, fraction))}.json"


def _write(ex: Any, bound: Any, tau: Fraction, fraction: Fraction, criterion: str, directory: str,
           base: dict[str, Any], krows: list[Any] | None = None) -> str:
    """The certificate; ``krows``: the rows Coq accepted, written as its kernel section (verify recheck --kernel
    hands them to Coq again and requires every one accepted)."""
    from verify.core.inputs import atomic_write_text
    from verify.numeric import head_bounds as hb
    from verify.reports.certificates import write_manifest

    meta = {"model": base["model"], "layer": base["layer"], "head": base["head"], "pattern": base["pattern"],
            "seed": base["seed"], "inputs": base["inputs"], "statement": base["statement"],
            "rows_filter": base["rows_filter"]}
    doc = hb.certificate(ex.program, ex.prompts, bound, tau=tau, fraction=fraction, criterion=criterion, meta=meta)
    if krows is not None:
        from verify.kernel.head_replay import BITS

        doc["kernel"] = {"bits": BITS, "rows": [r.to_json() for r in krows]}
    rid = _rid(base, criterion, tau, fraction)
    path = _cert_path(base, criterion, tau, fraction, directory)
    d = path.parent  # created by _preflight before any work
    atomic_write_text(path, json.dumps(doc, indent=1, sort_keys=True), "--certificates")
    write_manifest(d, [(path, rid)])
    return str(path)


def render(r: dict[str, Any]) -> str:
    m = r["model"]
    lines = [f"verify head: {m['model']} layer {r['layer']} head {r['head']}, pattern {r['pattern']}",
             f"  statement: {r['statement']}",
             f"  prompts: {r['prompts']} ({', '.join(map(str, r['positions'][:8]))}"
             f"{', ...' if len(r['positions']) > 8 else ''} positions); inputs {r['inputs']}",
             f"  cross-check with the library's float64 attention: max |difference| <= "
             f"{r['library_cross_check']['max_abs_diff_at_most']} (tolerance {r['library_cross_check']['tolerance']:g})"]
    if "counts" in r:
        c = r["counts"]
        lines += [f"  arb balls (128 bits): mass >= {r['threshold']} on the target certified at {c['ge']}/{c['rows']} "
                  f"rows, below at {c['lt']}, undecided {c['undecided']}; the target the strict argmax at "
                  f"{c['argmax_yes']}/{c['rows']} (certainly not at {c['argmax_no']})"]
        w = r["weakest_row"]
        lines.append(f"  weakest row: prompt {w['prompt']}, query {w['query']} -> key {w['target']}: mass in "
                     f"[{w['mass'][0]}, {w['mass'][1]}]")
    if r["verdict"] == "FAILS" and "witness" in r:
        w = r["witness"]
        lines.append(f"  FAILS: {r['statement']}; witness prompt {w['prompt']}, query {w['query']} -> key "
                     f"{w['target']}: mass in [{w['mass'][0]}, {w['mass'][1]}], argmax {w['argmax']}")
    elif r["verdict"] == "INCONCLUSIVE":
        lines.append(f"  INCONCLUSIVE: {r.get('reason', 'some rows are undecided at 128 bits')}")
    else:
        lines.append(f"  {r['verdict']}: {r['statement']}")
    if "kernel" in r:
        lines.append(render_kernel(r["kernel"], r["verdict"]))
    if "certificate" in r:
        lines.append(f"  certificate: {r['certificate']} (verify recheck {os.path.dirname(r['certificate']) or '.'})")
    return "\n".join(lines)


def render_kernel(k: dict[str, Any], verdict: str) -> str:
    if k["status"] == "skipped":
        return f"  kernel: skipped ({k['message']})"
    if k["status"] != "checked":
        return f"  kernel: {k['status'].upper()}: {k['message']} ({k['seconds']} s)"
    c = k["counts"]
    confirm = (f"the {k['verdict']} verdict is kernel-checked" if k.get("verdict") == verdict
               else "the kernel-checked rows alone do not decide the verdict")
    missed = (f"; {k['rows_not_checked']} rows decided in arb are not decided at the tables' resolution"
              if k["rows_not_checked"] else "")
    return (f"  kernel ({k['message']}; exp tables at step {k['table_step']}): for every score within the "
            f"enclosures, {c['success']} rows succeed and {c['failure']} fail; {confirm}{missed} ({k['seconds']} s)")
