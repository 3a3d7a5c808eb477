"""Cases a new user meets when trying the README as written."""

from __future__ import annotations

from verify.core import registry
from verify.core.model import run_claim
from verify.evidence import Context


def _run(claim_id: str, layers=("symbolic", "solver", "numeric"), **raw):
    c = registry.get(claim_id)
    return run_claim(c, c.parse_params({k: str(v) for k, v in raw.items()}), Context(seed=0), layers)


def test_theorem2_without_alibi_at_m_0_fails_with_an_explained_witness():
    """At m = 0 the missing ALiBi distance changes nothing (IH's bias is 0 too), so the witness is explained
    by the boundary terms and the claim FAILS (not an unexplained-witness error, INCONCLUSIVE)."""
    r = _run("kvshift24:theorem2", layers=("symbolic",), alibi="no", m=0)
    assert (r.verdict, r.layer("symbolic").status) == ("FAILS", "refuted")
    r = _run("kvshift24:theorem2", layers=("symbolic",), alibi="no", m="1/2")  # m > 0: still refuted
    assert r.layer("symbolic").status == "refuted"


def test_a_given_sequence_keeps_the_general_proof_for_the_paper_placement():
    """With the paper's placement (no RoPE) the general proof decides the symbolic layer, and the given
    input's exact result is reported beside it (a holding variant does not turn INCONCLUSIVE)."""
    r = _run("kvshift24:theorem2", fix="mask+scale", sequence="A B C A")
    sym = r.layer("symbolic")
    assert r.parts[0].verdict == "HOLDS" and sym.status == "proved"  # the masked layer's part
    assert any("the given input A B C A" in d for d in sym.details)
    # a RoPE placement has no general proof here: the input alone cannot prove it
    r = _run("kvshift24:theorem2", layers=("symbolic",), fix="mask+scale", sequence="A B A C", rope="after-shift")
    assert r.layer("symbolic").status in ("refuted", "inconclusive")


def test_an_unknown_short_name_suggests_full_ids(capsys):
    from verify.frontends.cli import main

    assert main(["theorm2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "did you mean ws24:theorem2 or kvshift24:theorem2" in err
    assert "characters)" not in err  # the list of known claims is not cut


def test_printed_sums_and_expressions_read_as_written():
    """Two leftovers of the README trial: a negative coefficient printed as '+ -0.25 B', and a parsed
    target printed with the parser's own product ('i - 1*2')."""
    from verify.constructions.features import expression_task, parse_expressions, shown
    from verify.constructions.kvshift24 import fmt_vector, join_signed

    assert fmt_vector({"A": 0.5, "B": -0.25, "C": 1}) == "0.5000 A - 0.2500 B + C"
    assert join_signed(["-0.1 A", "-0.2 B", "0.3 C"]) == "-0.1 A - 0.2 B + 0.3 C" and join_signed([]) == "0"
    assert expression_task("i - 2").description.startswith("t(i) = i - 2 ")
    assert [shown(e) for e in parse_expressions("1, i/2 - 3, 2*i**2", ("i",), "--pe-features")] == \
        ["1", "i/2 - 3", "2*i**2"]


def test_showing_a_hostile_expression_never_computes_it():
    """Display folds only small numeric leftovers: a refusal message quoting '9**9**9' must not compute
    9**387420489 (sympy's doit() did, and hung the refusal)."""
    import subprocess
    import sys

    code = ("from verify.constructions.features import parse_expressions, shown\n"
            "for t in ('9**9**9', '2*9**9**9 + 3*i', '(9**9**9)*(1/2)'):\n"
            "    (e,) = parse_expressions(t, ('i',), '--pe-features')\n"
            "    print(shown(e))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.split("\n")[0] == "9**387420489", r.stdout + r.stderr


def test_show_takes_the_run_ids_verify_all_prints(capsys):
    from verify.frontends.cli import main

    assert main(["show", "kvshift24:decode[raw-key,correct,correct]"]) == 0
    assert capsys.readouterr().out.startswith("kvshift24:decode: ")
    assert main(["show", "ws24:theorem2[nope]"]) == 2
    assert "has no variant 'nope'" in capsys.readouterr().err


def test_junit_without_timings_is_reproducible(tmp_path):
    """--no-timings: the JUnit prose carries no wall times either (they made the file differ run to run)."""
    import re

    from verify.frontends.cli import main

    paths = [tmp_path / f"j{k}.xml" for k in range(2)]
    for p in paths:
        assert main(["ws24:prop4", "--quiet", "--no-timings", "--junit", str(p)]) == 0
    a, b = (p.read_text() for p in paths)
    assert a == b and not re.search(r"\d\.\d\d s ", a)


def test_the_text_header_is_the_run_id_with_its_sizes(capsys):
    from verify.frontends.cli import main

    main(["ws24:theorem2[transposed,d=64]", "--layers", "symbolic", "--quiet", "--brief"])
    assert capsys.readouterr().out.startswith("ws24:theorem2[transposed,d=64]: ")


def test_a_claim_command_given_several_specs_says_it_checks_one(capsys):
    from verify.frontends.cli import main

    assert main(["ws24:theorem2[transposed],ws24:eq14"]) == 2
    assert "'verify CLAIM' checks one" in capsys.readouterr().err


def test_refusals_name_the_mistake(capsys):
    """Nits from a new user's trial: an empty output path is a mistake, not the current directory
    (it read ': is a directory', and '--certificates ""' wrote into the working directory); a timeout is
    echoed as typed ('got 0', not 'got 0.0'); a long unknown name gives its own length (it counted the
    quotes of its repr: 5002 for 5000)."""
    from verify.frontends.cli import main

    cases = [(["ws24:eq14", "--junit", ""], "--junit needs a file name, got an empty one"),
             (["ws24:eq14", "--junit", "  "], "--junit needs a file name, got an empty one"),
             (["all", "--certificates", ""], "--certificates needs a directory name, got an empty one"),
             (["ws24:eq14", "--plots", ""], "--plots needs a directory name, got an empty one"),
             (["ws24:eq14", "--timeout", "0"], "--timeout must be between 0.01 and 86400 seconds, got 0"),
             (["a" * 5000], "(5000 characters); known claims:")]
    for argv, want in cases:
        assert main(argv) == 2, argv[:3]
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and want in err, (argv[:3], err[:200])
