"""Generated documentation stays in step with the rule pack."""

from __future__ import annotations

from conftest import PROJECT
from pgvet.engine.loader import load_pack
from pgvet.report.rules import render_rules


def test_rule_reference_is_up_to_date() -> None:
    expected = render_rules(load_pack(), "markdown")
    current = (PROJECT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == expected, "docs/rules.md is stale: run `pgvet rules --format markdown > docs/rules.md`"


def test_every_rule_has_a_page_with_fix_or_text_and_references() -> None:
    pack = load_pack()
    for rule in pack.rules:
        assert rule.why.strip(), rule.id
        assert rule.references, rule.id
        assert rule.fix is not None and (rule.fix.sysctl or rule.fix.postgresql or rule.fix.text), rule.id
        expects = {example.expect for example in rule.examples}
        assert {"fire", "pass"} <= expects, f"{rule.id} needs firing and passing examples"


def test_readme_counts_the_rules() -> None:
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    assert f"{len(load_pack().rules)} rules in `rules/*.yaml`" in readme
