"""`pgvet rules` (text, json, markdown reference) and `pgvet explain`.

Their texts hold what rule packs and hosts say, control characters escaped (pgvet.report.visible) as the lint
report has them: a rule's title or a host's value may hold an escape sequence meant for the terminal."""

from __future__ import annotations

import json
from difflib import get_close_matches
from typing import TYPE_CHECKING, Any

from pgvet.engine.derived import DERIVED_SOURCE, derived_inputs, derived_values
from pgvet.engine.evaluate import configure, rule_on_host
from pgvet.engine.factnames import static_type
from pgvet.engine.quantities import with_units
from pgvet.engine.render import format_duration, format_size
from pgvet.errors import UsageError
from pgvet.findings import Evidence
from pgvet.report import visible

if TYPE_CHECKING:
    from pgvet.engine.evaluate import ParamOverrides
    from pgvet.engine.loader import RulePack
    from pgvet.engine.pack import DerivedFormula, Rule
    from pgvet.snapshot.facts import HostFacts


def _rule_json(rule: Any) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": rule.name,
        "title": rule.title,
        "severity": rule.severity,
        "tags": list(rule.tags),
        "scope": rule.scope,
        "applies": rule.applies,
        "when": rule.when,
        "params": {name: {"default": param.default, "description": param.description}
                   for name, param in rule.params.items()},
        "references": list(rule.references),
    }


def render_rules(pack: RulePack, output_format: str) -> str:
    rules = sorted(pack.rules, key=lambda rule: rule.id)
    if output_format == "json":
        return json.dumps([_rule_json(rule) for rule in rules], indent=2, ensure_ascii=False) + "\n"
    if output_format == "markdown":
        return visible(_markdown_reference(pack))
    width = max((len(rule.name) for rule in rules), default=10)
    lines = [f"{rule.id:<8} {rule.severity:<8} {rule.name:<{width}}  {rule.title}" for rule in rules]
    lines.append(f"{len(rules)} rules, pack {pack.version}")
    return visible("\n".join(lines) + "\n")


def _fix_lines(rule: Any) -> list[str]:
    lines: list[str] = []
    fix = rule.fix
    if fix is None:
        return lines
    for key, value in (fix.sysctl or {}).items():
        lines.append(f"sysctl: {key} = {value}")
    for key, value in (fix.postgresql or {}).items():
        lines.append(f"postgresql.conf: {key} = {value}")
    if fix.text:
        lines.append(fix.text.strip())
    return lines


def _example_facts(example: Any) -> str:
    facts = dict(example.facts)
    facts.update(getattr(example, "item", None) or {})
    return ", ".join(f"{name} = {value}" for name, value in facts.items())


def _formulas(rule: Any, pack: RulePack | None) -> list[str]:
    """The derived facts the rule reads, directly or through one another: with ``pack`` (explain) their
    formulas, else links to them in the reference's last part."""
    names = [name.removeprefix("derived.") for name in rule.evidence_names if name.startswith("derived.")]
    if not names:
        return []
    if pack is None:
        links = ", ".join(f"[derived.{name}](#derived{name})" for name in names)
        return ["", f"Derived facts: {links}"]
    out = ["", "### Formulas", ""]
    for name in names:
        derived = pack.derived_by_name.get(name)
        if derived is not None:
            out += [f"derived.{name} ({derived.unit}) =", "", "```sql", derived.formula.strip(), "```", ""]
            out += _derived_params(derived)
    return out[:-1]


def _derived_params(derived: DerivedFormula) -> list[str]:
    """What the planner does with a derived formula (docs/planner.md), then its parameters with the values in
    force (the configuration's, else the defaults)."""
    out = ([f"Predicts {derived.predicts} on the host a fix makes (docs/planner.md).", ""] if derived.predicts
           else ["Kept as computed on the host as captured, in the host a fix makes (docs/planner.md).", ""]
           if derived.as_captured else [])
    if not derived.params:
        return out
    out += [f"Parameters (override in `[tool.pgvet.params.derived.{derived.name}]`):", ""]
    for name, param in derived.params.items():
        value = derived.param_values.get(name)
        configured = "" if value == with_units(param.default) else f" (configured; default {param.default})"
        out.append(f"- `{name}` = {param.default if not configured else value}{configured} — {param.description}")
    return [*out, ""]


def _rule_page(rule: Any, pack: RulePack | None = None) -> list[str]:
    out = [f"## {rule.id} `{rule.name}`", "", f"**{rule.title}**", ""]
    out.append(f"Severity: **{rule.severity}** · tags: {', '.join(rule.tags) or '—'} · scope: {rule.scope}")
    out += ["", "### What it checks", ""]
    if rule.applies:
        out.append(f"Applies when: `{rule.applies}`  ")
    out.append(f"Fires when: `{rule.when}`")
    if rule.params:
        out += ["", "Parameters (override in `[tool.pgvet.params." + rule.name + "]`):", ""]
        out += [f"- `{name}` = {param.default} — {param.description}" for name, param in rule.params.items()]
    out += ["", "### Message", "", " ".join(rule.message.split())]
    if rule.values:
        out += ["", "Values (in `values` of the JSON report):", ""]
        out += [f"- `{name}` = `{expression}`" for name, expression in rule.values.items()]
    out += _formulas(rule, pack)
    if rule.why:
        out += ["", "### Why it matters", "", rule.why.strip()]
    fixes = _fix_lines(rule)
    if fixes:
        out += ["", "### Fix", "", "```", *fixes, "```"]
    if rule.examples:
        out += ["", "### Examples", ""]
        for example in rule.examples:
            out.append(f"- {example.expect}: {_example_facts(example)}")
    if rule.references:
        out += ["", "### References", ""]
        out += [f"- {reference}" for reference in rule.references]
    return [*out, ""]


def _markdown_reference(pack: RulePack) -> str:
    rules = sorted(pack.rules, key=lambda rule: rule.id)
    out = ["# Rule reference", "", "Generated by `pgvet rules --format markdown`; do not edit by hand.", "",
           "| id | name | severity | title |", "|---|---|---|---|"]
    out += [f"| [{rule.id}](#{rule.id.lower()}-{rule.name}) | `{rule.name}` | {rule.severity} | {rule.title} |"
            for rule in rules]
    out.append("")
    for rule in rules:
        out += _rule_page(rule)
    out += ["# Derived facts", ""]
    for derived in sorted(pack.derived, key=lambda item: item.name):
        out += [f"## derived.{derived.name}", "", derived.description.strip() if derived.description else "", "",
                "```sql", derived.formula.strip(), "```", "", *_derived_params(derived)]
    return "\n".join(out)


def explain_rule(pack: RulePack, key: str, host: HostFacts | None = None, params: ParamOverrides | None = None,
                 ) -> str:
    """A rule's page (or a derived fact's formula); with ``host``, what it gives there and every number it
    read, each with its source."""
    return visible(_explanation(pack, key, host, params))


def _explanation(pack: RulePack, key: str, host: HostFacts | None, params: ParamOverrides | None) -> str:
    if params:
        pack = configure(pack, params)
    if key.startswith("derived."):
        derived = pack.derived_by_name.get(key.removeprefix("derived."))
        if derived is None:
            raise UsageError(f"no derived fact named {key!r}")
        page = (f"derived.{derived.name} ({derived.unit})\n\n{(derived.description or '').strip()}\n\n"
                f"{derived.formula.strip()}\n" + "".join(f"\n{line}" for line in _derived_params(derived)))
        if host is None:
            return page
        if derived.item_scope is not None:
            value = [f"Computed for each {derived.item_scope} item: `pgvet explain` a rule of that scope on "
                     "this host shows it."]
        else:
            fact = derived_values(pack, host, {key}).get(key)
            shown = (_numbers([Evidence(key, fact.value, DERIVED_SOURCE)], pack) if fact is not None
                     else [f"- `{key}` is NULL here (a fact it needs is missing)"])
            value = [*shown, "", "From:", ""]
        return page + "\n".join(["", f"## On {host.name}", "", *value,
                                  *_numbers(derived_inputs(pack, host, key), pack), ""])
    rule = _find_rule(pack, key)
    page = "\n".join(_rule_page(rule, pack))
    return page if host is None else page + "\n".join(_on_host(pack, rule, host, params))


def _find_rule(pack: RulePack, key: str) -> Rule:
    for rule in pack.rules:
        if key in (rule.id, rule.name) or key.upper() == rule.id:
            return rule
    names = [rule.name for rule in pack.rules] + [rule.id for rule in pack.rules]
    close = get_close_matches(key, names, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise UsageError(f"no rule with id or name {key!r}{hint}")


def _on_host(pack: RulePack, rule: Rule, host: HostFacts, params: ParamOverrides | None) -> list[str]:
    out = ["", f"## On {host.name}", ""]
    outcomes = rule_on_host(pack, rule, host, params)
    if not outcomes:
        applies = f" (applies when: `{rule.applies}`)" if rule.applies else ""
        where = "this host" if rule.scope == "host" else f"any {rule.scope} item of this host"
        return [*out, f"Does not apply to {where}{applies}.", ""]
    passed_items: list[str] = []  # an item that passes is named only: a rule may meet tens of them
    for result, numbers in outcomes:
        if result.passed and rule.scope != "host":
            passed_items += [passed.subject or "?" for passed in result.passed]
            continue
        for finding in result.findings:
            place = f" — {finding.path}" + (f":{finding.line}" if finding.line is not None else "") \
                if finding.path else ""
            out += [f"**Fires** ({finding.severity}){_subject(finding.subject)}{place}:", "", finding.message, ""]
        for _ in result.passed or []:
            out += ["**Passes**.", ""]
        for record in result.not_evaluated:
            why = (f"these facts are missing: {', '.join(record.missing)}" if record.missing
                   else record.reason or "a value it needs is unknown")
            out += [f"**Not evaluated**{_subject(record.subject)}: {why}.", ""]
        out += ["The numbers it read:", "", *_numbers(numbers, pack), ""]
    if passed_items:
        out += [f"**Passes** for {len(passed_items)} {rule.scope} item(s): {', '.join(passed_items)}.", ""]
    return out


def _subject(subject: str | None) -> str:
    return f" for {subject}" if subject else ""


def _numbers(numbers: list[Evidence], pack: RulePack) -> list[str]:
    """One line per fact or derived value: the value (sizes and durations also in their units), and where it
    comes from (file:line, a PostgreSQL default) or the formula's unit."""
    lines: list[str] = []
    for name, value, source in numbers:
        derived = pack.derived_by_name.get(name.removeprefix("derived.")) if name.startswith("derived.") else None
        unit = derived.unit if derived is not None else static_type(name)
        shown = "true" if value is True else "false" if value is False else str(value)
        # a setting's negative value is a sentinel (wal_buffers = -1: automatic), not a size
        if isinstance(value, int | float) and not isinstance(value, bool) and (value >= 0 or derived is not None):
            if unit == "bytes":
                shown += f" ({format_size(value)})"
            elif unit == "seconds":
                shown += f" ({format_duration(value)})"
        origin = "derived" if derived is not None else str(source) if source is not None else "parameter"
        lines.append(f"- `{name}` = {shown} — {origin}")
    return lines or ["- (none with a value)"]
