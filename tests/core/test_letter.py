"""The referee's letter (``verify audit PAPER --report LETTER --appendix APPENDIX``): short, every claim present,
the paper's words only as stored excerpts, hazards apart, the full evidence in the appendix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from verify.frontends.cli import main
from verify.reports.letter import CLAIM_LINES, LETTER_LINES, PAGE_ONE_LINES, stored_quotes

FAST = ("--layers", "symbolic,solver", "--quiet")


def _quotes_in(letter: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r'^> "(.*)"$', letter, re.M)]


def _unmatched(letter: str, paper: str) -> list[str]:
    stored = {q["text"] for qs in stored_quotes(paper).values() for q in qs}
    return [q for q in _quotes_in(letter) if q not in stored]


def _stale(letter: str, paper: str) -> list[str]:
    """What the stored data holds and a generated letter lacks: every stored quote and every by-hand line must
    appear in it (a letter written before they changed is stale)."""
    from verify.reports.letter import by_hand

    want = [q["text"] for qs in stored_quotes(paper).values() for q in qs]
    want += [line for lines in by_hand(paper).values() for line in lines]
    return [w for w in want if w not in letter]


def _sections(letter: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    name = "page one"
    for line in letter.splitlines():
        if line.startswith("## "):
            name = line[3:]
        out.setdefault(name, []).append(line)
    return out


@pytest.fixture(scope="module")
def kv(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    d = tmp_path_factory.mktemp("letter")
    letter, appendix = d / "kv.md", d / "kv-appendix.md"
    assert main(["audit", "kvshift24", "--report", str(letter), "--appendix", str(appendix), *FAST]) == 0
    return letter.read_text(), appendix.read_text()


def test_letter_is_short_complete_and_quotes_only_stored_excerpts(kv: tuple[str, str]) -> None:
    from verify.core import registry

    letter, appendix = kv
    sections = _sections(letter)
    assert len(letter.splitlines()) <= LETTER_LINES and len(sections["page one"]) <= PAGE_ONE_LINES
    claims = [c.id for c in registry.paper_claims("kvshift24")]
    assert [s for s in sections if s.startswith("kvshift24:")] == claims  # every claim, the heavy one included
    assert all(len(sections[c]) <= CLAIM_LINES for c in claims)
    assert "Hazards for implementers (not claims of the paper)" in sections
    assert "kvshift24:decode[mixed-key,correct,correct]" in "\n".join(sections["Hazards for implementers (not claims "
                                                                          "of the paper)"])
    assert _quotes_in(letter) and _unmatched(letter, "kvshift24") == []
    # the appendix holds what the letter leaves out, behind the letter's links
    for c in ("kvshift24:theorem2", "kvshift24:theorem1", "kvshift24:decode"):  # theorem3 has no check in FAST
        slug = c.replace(":", "-")
        assert f"kv-appendix.md#{slug}" in letter and f'<a id="{slug}"></a>' in appendix
    assert len(appendix.splitlines()) > 5 * len(letter.splitlines())
    assert "- not checked: no check in the layers this run asked for" in "\n".join(sections["kvshift24:theorem3"])


def test_a_stale_example_letter_is_caught() -> None:
    """Injected fault: a by-hand line changed after the letter was generated (the letter keeps the old one)."""
    root = Path(__file__).resolve().parents[2] / "docs" / "letters"
    letter = (root / "kvshift24.md").read_text()
    from verify.reports.letter import by_hand

    line = by_hand("kvshift24")["kvshift24:theorem2"][0]
    assert _stale(letter, "kvshift24") == []
    assert _stale(letter.replace(line, line.replace("IH(x) = x_2", "IH(x) = x_3")), "kvshift24") == [line]


def test_an_altered_quote_is_caught(kv: tuple[str, str]) -> None:
    letter, _ = kv
    bad = letter.replace("such that\"", "such that IH = KVSA\"", 1)
    assert _unmatched(bad, "kvshift24") == ["Theorem 2 There exists a one-layer single-head KV shifting attention "
                                            "KVSA, with D = d, such that IH = KVSA"]


def test_a_claim_without_the_papers_words_says_it_is_our_reading(tmp_path: Path) -> None:
    letter = tmp_path / "ws24.md"
    assert main(["audit", "ws24", "--report", str(letter), *FAST]) == 0
    text = letter.read_text()
    assert "*The paper's words for this claim are not reachable here; our reading (ours, not a quote):*" in text
    assert _unmatched(text, "ws24") == []


def test_bad_letter_outputs_are_refused_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    same = str(tmp_path / "a.md")
    assert main(["audit", "ws24", "--report", same, "--appendix", same]) == 2
    assert "name the same path" in capsys.readouterr().err
    assert main(["audit", "ws24", "--appendix", str(tmp_path)]) == 2
    bad = tmp_path / "stored"
    bad.mkdir()
    (bad / "x.json").write_text("{not json")
    assert main(["audit", "ws24", "--stored", str(bad), "--report", str(tmp_path / "l.md")]) == 2
    assert "is not a stored verify result" in capsys.readouterr().err
    assert not (tmp_path / "l.md").exists()


def test_by_hand_lines_name_real_claims_and_stay_short() -> None:
    """The arithmetic a reader can redo by hand: at most three lines per claim, each for a registered claim."""
    from verify.core import registry
    from verify.reports.letter import BY_HAND_LINES, by_hand

    for paper in ("kvshift24", "ws24", "pr26", "bietti23", "fp26"):
        hand = by_hand(paper)
        ids = {c.id for c in registry.paper_claims(paper)}
        assert set(hand) == ids, ids ^ set(hand)  # every claim of the paper has its arithmetic
        assert all(1 <= len(lines) <= BY_HAND_LINES for lines in hand.values())


@pytest.mark.parametrize("paper", ["ws24", "kvshift24", "pr26", "bietti23", "fp26"])
def test_the_example_letters_in_docs_keep_the_limits(paper: str) -> None:
    """docs/letters/PAPER.md (generated by `verify audit PAPER --report ... --appendix ...`): <= 300 lines, page one
    <= 60, every claim of the paper present (heavy ones from their stored confirmatory result), every quote a stored
    excerpt, and the appendix beside it."""
    from verify.core import registry

    root = Path(__file__).resolve().parents[2] / "docs" / "letters"
    letter = (root / f"{paper}.md").read_text()
    sections = _sections(letter)
    assert len(letter.splitlines()) <= LETTER_LINES and len(sections["page one"]) <= PAGE_ONE_LINES
    assert [s for s in sections if s.startswith(f"{paper}:")] == [c.id for c in registry.paper_claims(paper)]
    assert all(len(v) <= CLAIM_LINES for k, v in sections.items() if k.startswith(f"{paper}:"))
    assert _unmatched(letter, paper) == []
    assert (root / f"{paper}-appendix.md").exists()
    assert _stale(letter, paper) == [], "regenerate: verify audit PAPER --report docs/letters/PAPER.md --appendix ..."
    assert "not run here" not in "\n".join(sections["page one"]) or paper in ("ws24", "kvshift24")  # heavy, no store


def test_a_letter_named_html_is_written_as_html(tmp_path: Path) -> None:
    """--report x.html --appendix y.html: one HTML page each (CommonMark with tables, by markdown-it-py); the table of
    page one is a table, the quotes are block quotes, and the letter links the HTML appendix's anchors.  Injected
    fault: the same letter named .md stays Markdown (no tag in it)."""
    letter, appendix = tmp_path / "kv.html", tmp_path / "kv-appendix.html"
    assert main(["audit", "kvshift24", "--report", str(letter), "--appendix", str(appendix), *FAST]) == 0
    page, app = letter.read_text(), appendix.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page and "<blockquote>" in page
    assert 'href="kv-appendix.html#kvshift24-theorem2"' in page and 'id="kvshift24-theorem2"' in app
    assert app.startswith("<!DOCTYPE html>")
    md = tmp_path / "kv.md"
    assert main(["audit", "kvshift24", "--report", str(md), *FAST]) == 0
    assert "<table>" not in md.read_text() and "| claim | verdicts |" in md.read_text()
