"""Every example of every rule in rules/ behaves as it says; a wrong example is caught."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pgvet.engine.examples import run_example, run_examples, unexpected_values
from pgvet.engine.loader import builtin_rules_dir, load_pack
from pgvet.engine.pack import Example, Rule

PACK = load_pack()  # in the session's cache (conftest.py)
CASES = [(rule, number, example) for rule in PACK.rules for number, example in enumerate(rule.examples, 1)]


def test_every_rule_has_firing_and_passing_examples() -> None:
    for rule in PACK.rules:
        expected = {example.expect for example in rule.examples}
        assert {"fire", "pass"} <= expected, rule.id


@pytest.mark.parametrize(("rule", "number", "example"), CASES,
                         ids=[f"{rule.id}-ex{number}" for rule, number, _ in CASES])
def test_example(rule: Rule, number: int, example: Example) -> None:
    outcome, result = run_example(PACK, rule, example)
    assert outcome == example.expect, (result.findings, result.not_evaluated)
    if outcome == "fire":
        assert unexpected_values(example, result.findings[0]) == []


def test_a_wrong_example_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "wrong.yaml").write_text(textwrap.dedent("""\
        rules:
          - id: ACME1
            name: small-ram
            title: Small RAM
            severity: info
            when: host.ram < '4GB'
            values: {ram: host.ram}
            message: "RAM {host.ram|size}"
            examples:
              - facts: {host.ram: 8GB}
                expect: fire
              - facts: {host.ram: 2GB}
                expect: fire
                values: {ram: 3GB}
              - facts: {host.ram: 2GB}
                expect: skip
    """))
    failures = run_examples(load_pack([tmp_path / "p"], builtin=False))
    assert [(failure.example_id, failure.line, failure.message) for failure in failures] == [
        ("ACME1-ex1", 10, "expected fire, got pass"),
        ("ACME1-ex2", 12, "value ram is 2147483648, expected 3221225472"),
        ("ACME1-ex3", 15, "expected skip, got fire"),
    ]
    assert str(failures[0]) == f"{tmp_path / 'p' / 'wrong.yaml'}:10: ACME1-ex1: expected fire, got pass"


def test_builtin_examples_all_pass() -> None:
    assert builtin_rules_dir().is_dir()
    assert run_examples(PACK) == []


def test_no_message_says_a_before_a_vowel() -> None:
    """"jit = on for a oltp workload" (issue #30): a hole's value after "a" is written with its own article. Every
    message and fix text of the firing examples is read; "a u…" stays (a unit, a user, a udev rule)."""
    import re

    wrong = []
    for rule, number, example in CASES:
        if example.expect != "fire":
            continue
        for finding in run_example(PACK, rule, example)[1].findings:
            text = f"{finding.message} {finding.fix.text or ''}"
            wrong += [f"{rule.id}-ex{number}: {match}" for match in re.findall(r"\b[Aa] [aeioAEIO]\w*", text)]
    assert wrong == []


@pytest.mark.parametrize(("rule_id", "field", "seconds", "shown"), [
    ("PGV962", "prepared.age", 86400.123456, "has waited 1d for"),
    ("PGV963", "session.idle", 312.456789, "for 312s, in a transaction open for 3700s"),
])
def test_measured_ages_are_whole_seconds(rule_id: str, field: str, seconds: float, shown: str) -> None:
    """An age the server measures (now() - prepared) has microseconds: the message shows whole seconds, not
    86400123456us."""
    [rule] = [rule for rule in PACK.rules if rule.id == rule_id]
    example = next(example for example in rule.examples if example.expect == "fire")
    _, result = run_example(PACK, rule, example._replace(item={**(example.item or {}), field: seconds}))
    assert shown in result.findings[0].message
