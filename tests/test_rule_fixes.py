"""A rule's fix is one a user can apply: every postgresql.conf value it suggests is valid for PostgreSQL, no
value is left unknown, and applying the fix to the rule's firing examples makes them pass."""

from __future__ import annotations

import dataclasses

import pytest

from pgvet.catalog import NEWEST_MAJOR, load_catalog
from pgvet.catalog.units import InvalidValue, parse_value
from pgvet.engine.examples import run_example
from pgvet.engine.loader import load_pack
from pgvet.engine.pack import Example, Rule
from pgvet.facts import FactValue
from pgvet.findings import Finding
from pgvet.sources.sysctl import PAIR_PARTNERS

PACK = load_pack()
CATALOG = load_catalog(NEWEST_MAJOR)
FIRING = [(rule, number, example) for rule in PACK.rules for number, example in enumerate(rule.examples, 1)
          if example.expect == "fire"]

# Rules whose fix cannot make them pass at once, and why.
STILL_FIRING_AFTER_FIX = {
    "PGV951": "counts temporary files written since the statistics were reset: the fix helps the next ones",
    "PGV953": "counts checkpoints since the statistics were reset: the fix helps the next ones",
    "PGV963": "the session is a fact of the moment: the timeout ends it at the reload (and any later one), so the "
              "next check no longer sees it",
}


def _fix_facts(finding: Finding, before: dict[str, FactValue]) -> dict[str, FactValue]:
    """The facts a host would have once the fix is applied, in pgvet's canonical units. Writing one key of a
    ratio/bytes pair sets the other to 0, as the kernel does (vm.dirty_ratio and vm.dirty_bytes only when their
    value changes): a fix writing vm.overcommit_ratio where vm.overcommit_kbytes sets CommitLimit works so."""
    facts: dict[str, FactValue] = {}
    for name, text in finding.fix.postgresql.items():
        facts[f"pg.{name}"] = parse_value(CATALOG.params[name], text).canonical
    for key, text in finding.fix.sysctl.items():
        value = int(text) if text.lstrip("-").isdigit() else text
        facts[f"sysctl.{key}"] = value
        partner = PAIR_PARTNERS.get(key)
        if partner is not None and partner not in finding.fix.sysctl and (
                key not in ("vm.dirty_ratio", "vm.dirty_bytes") or before.get(f"sysctl.{key}") != value):
            facts[f"sysctl.{partner}"] = 0
    return facts


@pytest.mark.parametrize(("rule", "number", "example"), FIRING,
                         ids=[f"{rule.id}-ex{number}" for rule, number, _ in FIRING])
def test_the_fix_is_valid_and_fixes(rule: Rule, number: int, example: Example) -> None:
    _, result = run_example(PACK, rule, example)
    finding = result.findings[0]
    for name, text in {**finding.fix.postgresql, **finding.fix.sysctl}.items():
        assert "unknown" not in text, f"{rule.id}: {name} = {text}"
    for name, text in finding.fix.postgresql.items():
        assert name in CATALOG.params, f"{rule.id}: {name} is no PostgreSQL {NEWEST_MAJOR} parameter"
        try:
            parse_value(CATALOG.params[name], text)
        except InvalidValue as invalid:
            pytest.fail(f"{rule.id}: {name} = {text} would not start PostgreSQL: {invalid.message}")
    if not (finding.fix.postgresql or finding.fix.sysctl) or rule.id in STILL_FIRING_AFTER_FIX:
        return
    fixed = dataclasses.replace(example, facts={**example.facts, **_fix_facts(finding, dict(example.facts))})
    outcome, after = run_example(PACK, rule, fixed)
    assert outcome != "fire", f"{rule.id} still fires after its fix {finding.fix}: {after.findings[0].message}"
