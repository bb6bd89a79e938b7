"""A rule's fix is one a user can apply: every postgresql.conf value it suggests is valid for PostgreSQL, no
value is left unknown, and applying the fix to the rule's firing examples makes them pass."""

from __future__ import annotations

import pytest

from pgvet.engine.evaluate import plan_rules
from pgvet.engine.examples import example_host, run_example
from pgvet.engine.loader import load_pack
from pgvet.engine.pack import Example, Rule
from pgvet.engine.planner import Planner, Setting
from pgvet.pgparams import NEWEST_MAJOR, load_param_table
from pgvet.pgparams.units import InvalidValue, parse_value

PACK = load_pack()
PLANNER = Planner(PACK, plan_rules(PACK))
PARAM_TABLE = load_param_table(NEWEST_MAJOR)
FIRING = [(rule, number, example) for rule in PACK.rules for number, example in enumerate(rule.examples, 1)
          if example.expect == "fire"]

# Rules whose fix cannot make them pass at once, and why.
STILL_FIRING_AFTER_FIX = {
    "PGV953": "counts checkpoints since the statistics were reset: the fix helps the next ones",
    "PGV963": "the session is a fact of the moment: the timeout ends it at the reload (and any later one), so the "
              "next check no longer sees it",
}


@pytest.mark.parametrize(("rule", "number", "example"), FIRING,
                         ids=[f"{rule.id}-ex{number}" for rule, number, _ in FIRING])
def test_the_fix_is_valid_and_fixes(rule: Rule, number: int, example: Example) -> None:
    _, result = run_example(PACK, rule, example)
    finding = result.findings[0]
    for name, text in {**finding.fix.postgresql, **finding.fix.sysctl}.items():
        assert "unknown" not in text, f"{rule.id}: {name} = {text}"
    for name, text in finding.fix.postgresql.items():
        assert name in PARAM_TABLE.params, f"{rule.id}: {name} is no PostgreSQL {NEWEST_MAJOR} parameter"
        try:
            parse_value(PARAM_TABLE.params[name], text)
        except InvalidValue as invalid:
            pytest.fail(f"{rule.id}: {name} = {text} would not start PostgreSQL: {invalid.message}")
    if not (finding.fix.postgresql or finding.fix.sysctl) or rule.id in STILL_FIRING_AFTER_FIX:
        return
    # applied as pgvet fix applies it: the planner's own world (the kernel's pairs, predicted measured facts)
    host = PLANNER.applied(example_host(rule, example), {setting: value for setting, value in [
        *((Setting("sysctl", key), value) for key, value in finding.fix.sysctl.items()),
        *((Setting("postgresql", name), value) for name, value in finding.fix.postgresql.items())]})
    fixed = example._replace(facts={fact.name: fact.value for fact in host.facts.values()})
    outcome, after = run_example(PACK, rule, fixed)
    assert outcome != "fire", f"{rule.id} still fires after its fix {finding.fix}: {after.findings[0].message}"
