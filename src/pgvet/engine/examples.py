"""Run the examples of every rule: each must fire, pass or be skipped (not evaluated) as it says."""

from __future__ import annotations

from typing import NamedTuple

from pgvet.engine.evaluate import evaluate_rule, rule_params
from pgvet.engine.ir import Value
from pgvet.engine.pack import Example, Rule, RulePack
from pgvet.engine.runtime import Env
from pgvet.findings import Finding, HostResult
from pgvet.provenance import Source
from pgvet.snapshot.facts import Fact, HostFacts, Item


class ExampleFailure(NamedTuple):
    rule_id: str
    number: int  # 1-based, as in the example id PGV101-ex1
    file: str
    line: int | None
    message: str

    @property
    def example_id(self) -> str:
        return f"{self.rule_id}-ex{self.number}"

    def __str__(self) -> str:
        return f"{Source(self.file, self.line)}: {self.example_id}: {self.message}"


def example_host(rule: Rule, example: Example) -> HostFacts:
    """A host holding exactly the example's facts (and its one item, for scoped rules)."""
    source = Source(rule.file, example.line)
    host = HostFacts(name=f"{rule.id}-example", root=rule.file)
    for name, value in example.facts.items():
        if value is not None:
            host.add(Fact(name, value, source))
    if rule.scope != "host":
        item = Item(((name, value) for name, value in (example.item or {}).items() if value is not None), source)
        host.items[rule.scope] = [item] if example.item is not None else []
    return host


def run_example(pack: RulePack, rule: Rule, example: Example) -> tuple[str, HostResult]:
    """The outcome (fire, pass or skip) and the result it came from."""
    host = example_host(rule, example)
    params = rule_params(rule, {rule.id: example.params} if example.params else None)
    result = HostResult(host_facts=host)
    items = host.items.get(rule.scope, []) if rule.scope != "host" else [None]
    host_cache: dict[str, Value] = {}
    for item in items:
        evaluate_rule(rule, Env(host.facts, item, params, pack.derived_by_name, host_cache, {}), host.name, result)
    if result.findings:
        return "fire", result
    return ("skip" if result.not_evaluated else "pass"), result


def _matches(expected: Value, actual: Value) -> bool:
    """Exact, except that a decimal written in the example matches the value rounded to as many decimals."""
    if isinstance(expected, float) and isinstance(actual, int | float) and not isinstance(actual, bool):
        decimals = len(repr(expected).partition(".")[2]) if "e" not in repr(expected) else 12
        return round(actual, decimals) == expected
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return expected == actual


def unexpected_values(example: Example, finding: Finding) -> list[str]:
    """What the finding carries that the example does not expect: its values, and the settings its fix writes."""
    problems: list[str] = []
    for name, expected in (example.values or {}).items():
        actual = finding.values.get(name)
        if not _matches(expected, actual):
            problems.append(f"value {name} is {actual!r}, expected {expected!r}")
    written = {**finding.fix.sysctl, **finding.fix.postgresql}
    for name, setting in (example.fix or {}).items():
        if written.get(name) != setting:
            problems.append(f"the fix writes {name} = {written.get(name)!r}, expected {setting!r}")
    return problems


def run_examples(pack: RulePack) -> list[ExampleFailure]:
    failures: list[ExampleFailure] = []
    for rule in pack.rules:
        for number, example in enumerate(rule.examples, 1):
            outcome, result = run_example(pack, rule, example)
            problems: list[str] = []
            if outcome != example.expect:
                detail = ""
                if result.not_evaluated:
                    record = result.not_evaluated[0]
                    detail = f" (missing: {', '.join(record.missing)})" if record.missing else f" ({record.reason})"
                problems.append(f"expected {example.expect}, got {outcome}{detail}")
            elif outcome == "fire":
                problems.extend(unexpected_values(example, result.findings[0]))
            failures.extend(ExampleFailure(rule.id, number, rule.file, example.line, problem) for problem in problems)
    return failures
