"""Evaluate a compiled pack on one host: findings with their numbers, evidence, fix and fingerprint."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Mapping, Sequence
from difflib import get_close_matches

from pgvet.engine.derived import evidence, lookup, missing_facts
from pgvet.engine.ir import Value
from pgvet.engine.pack import DerivedFormula, Rule, RulePack, Template
from pgvet.engine.quantities import with_units
from pgvet.engine.render import render, render_setting
from pgvet.engine.runtime import Env, EvalError
from pgvet.errors import UsageError
from pgvet.findings import Evidence, Finding, Fix, HostResult, NotEvaluated, Passed, RuleMeta
from pgvet.numbers import out_of_range
from pgvet.snapshot.facts import HostFacts

ParamOverrides = Mapping[str, Mapping[str, object]]


def fingerprint(rule_id: str, host: str, path: str | None, subject: str | None, occurrence: int = 1) -> str:
    """Stable across runs: rule, host, file and subject — not line numbers, not values. ``occurrence``: the
    second, third… finding of a host with the same four (see _distinct_fingerprints)."""
    key = "\x1f".join((rule_id, host, path or "", subject or ""))
    if occurrence > 1:
        key += f"\x1f{occurrence}"
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]  # file names may not be UTF-8


def _distinct_fingerprints(findings: list[Finding]) -> None:
    """A rule may fire on several lines of a file for one subject (two missing includes, a parameter set
    twice): the later ones get their occurrence in the key, as GitHub numbers equal line hashes, so that
    they are not one ticket, one code scanning alert, or hidden by a baseline that holds the first."""
    seen: dict[str, int] = {}
    for finding in findings:
        occurrence = seen[finding.fingerprint] = seen.get(finding.fingerprint, 0) + 1
        if occurrence > 1:
            finding.fingerprint = fingerprint(finding.rule_id, finding.host, finding.path, finding.subject,
                                              occurrence)


def rule_params(rule: Rule, overrides: ParamOverrides | None) -> Mapping[str, Value]:
    """The rule's parameters: defaults, overridden by configuration under the rule's name or id."""
    if not overrides:
        return rule.param_defaults
    given = {**overrides.get(rule.id, {}), **overrides.get(rule.name, {})}
    if not given:
        return rule.param_defaults
    merged: dict[str, Value] = dict(rule.param_defaults)
    for name, value in given.items():
        if name not in merged:
            raise UsageError(f"params.{rule.name}.{name}: {rule.id} has no parameter {name} "
                             f"(it has: {', '.join(merged) or 'none'})")
        merged[name] = _param_override(f"params.{rule.name}.{name}", merged[name], value)
    return merged


def configure(pack: RulePack, overrides: ParamOverrides | None) -> RulePack:
    """The pack with the configuration's parameters of derived values (``[tool.pgvet.params.derived.NAME]``);
    UsageError for a table that names no rule nor derived value, which would otherwise be ignored (a typo)."""
    if not overrides:
        return pack
    derived_values: dict[str, dict[str, Value]] = {}
    for key, given in overrides.items():
        if key != "derived":
            if key not in pack.by_key:
                close = get_close_matches(key, [rule.name for rule in pack.rules], n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise UsageError(f"params.{key}: no rule has this id or name{hint}")
            continue
        for name, values in given.items():
            formula = pack.derived_by_name.get(name)
            if formula is None or not formula.params:
                with_params = ", ".join(formula.name for formula in pack.derived if formula.params) or "none"
                raise UsageError(f"params.derived.{name}: no derived value of this name has parameters "
                                 f"(those that do: {with_params})")
            if not isinstance(values, Mapping):
                raise UsageError(f"params.derived.{name}: expected a table of parameters, not {values!r}")
            for param, value in values.items():
                if param not in formula.param_values:
                    raise UsageError(f"params.derived.{name}.{param}: derived.{name} has no parameter {param} "
                                     f"(it has: {', '.join(formula.param_values)})")
                derived_values.setdefault(name, {})[param] = _param_override(
                    f"params.derived.{name}.{param}", formula.param_values[param], value)
    return pack.with_derived_params(derived_values)


def _param_override(label: str, default: Value, value: object) -> Value:
    """A configured value of the default's type; numbers may be given as text ('0.5', '4GB')."""
    converted = with_units(value) if isinstance(value, int | float | str | bool) else value
    wants_number = isinstance(default, int | float) and not isinstance(default, bool)
    if wants_number and isinstance(converted, str):
        with contextlib.suppress(ValueError):
            converted = float(converted)
    if isinstance(default, bool):
        expected, accepted = "a boolean", isinstance(converted, bool)
    elif wants_number:
        expected, accepted = "a number", isinstance(converted, int | float) and not isinstance(converted, bool)
    else:
        expected, accepted = "a text", isinstance(converted, str)
    if not accepted:
        raise UsageError(f"{label}: expected {expected}, not {value!r}")
    refused = out_of_range(converted)
    if refused is not None:  # TOML has inf and nan
        raise UsageError(f"{label}: {refused}")
    return converted  # type: ignore[return-value]


Plan = Sequence[tuple[Rule, Mapping[str, Value]]]


def plan_rules(pack: RulePack, params: ParamOverrides | None = None,
               selected: Callable[[RuleMeta], bool] | None = None) -> Plan:
    """The rules to evaluate with their parameters, resolved once. UsageError for a wrong parameter of any rule,
    selected or not: a misspelt parameter is a typo whatever the selection of the day."""
    resolved = [(rule, rule_params(rule, params)) for rule in pack.rules]
    return [(rule, values) for rule, values in resolved if selected is None or selected(rule.meta())]


def evaluate_host(pack: RulePack, host: HostFacts, *, params: ParamOverrides | None = None,
                  selected: Callable[[RuleMeta], bool] | None = None, record_passes: bool = False,
                  plan: Plan | None = None, host_cache: dict[str, Value] | None = None) -> HostResult:
    """The pack's rules on one host. ``plan`` (plan_rules) spares a batch resolving the selection and the
    parameters per host; ``host_cache`` receives the derived values computed on the way."""
    outcome = evaluate_hosts(pack, [host], params=params, selected=selected, record_passes=record_passes,
                             plan=plan, host_caches=None if host_cache is None else [host_cache])[0]
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


class _HostState:
    """One host of evaluate_hosts: its result, and the environments its rules have run in so far."""

    __slots__ = ("failure", "host", "host_cache", "host_evidence", "item_envs", "result")

    def __init__(self, host: HostFacts, derived: Mapping[str, DerivedFormula], host_cache: dict[str, Value],
                 record_passes: bool) -> None:
        self.host = host
        self.result = HostResult(host_facts=host, passed=[] if record_passes else None)
        host_env = Env(host.facts, None, {}, derived, host_cache)
        self.host_cache = host_cache
        self.host_evidence = host_env.host_evidence  # shared: a host's findings show the same facts
        # one environment per item, kept across the rules of its scope (with its derived values); each rule
        # sets its parameters in it before it runs
        self.item_envs: dict[str, list[Env]] = {"host": [host_env]}
        self.failure: Exception | None = None


def evaluate_hosts(pack: RulePack, hosts: Sequence[HostFacts], *, params: ParamOverrides | None = None,
                   selected: Callable[[RuleMeta], bool] | None = None, record_passes: bool = False,
                   plan: Plan | None = None, host_caches: Sequence[dict[str, Value]] | None = None,
                   verdicts_only: bool = False) -> list[HostResult | Exception]:
    """The pack's rules on each host, rule by rule: a rule runs on every host before the next one, its code and
    data still in the CPU's caches, where host by host each rule would start cold. Each host's
    result is what evaluate_host gives it; a host met by an unexpected error (a bug) gets that error instead,
    and the others go on. ``host_caches``: one per host, receiving its derived values. ``verdicts_only``: findings
    without what only a report shows (see make_finding), for the planner's worlds."""
    derived = pack.derived_by_name
    caches = host_caches if host_caches is not None else [{} for _ in hosts]
    states = [_HostState(host, derived, cache, record_passes) for host, cache in zip(hosts, caches, strict=True)]
    if plan is None:
        plan = plan_rules(pack, params, selected)
    for rule, values in plan:
        # evaluate_rule's first steps, inlined: a host meets ~340 rule-and-item pairs, most of which do not
        # apply or do not fire
        applies = rule.applies_expr.closure() if rule.applies_expr is not None else None
        when = rule.when_expr.closure()
        scope = rule.scope
        for state in states:
            if state.failure is not None:
                continue
            host, result = state.host, state.result
            try:
                envs = state.item_envs.get(scope)
                if envs is None:
                    envs = state.item_envs[scope] = [
                        Env(host.facts, item, {}, derived, state.host_cache, {}, state.host_evidence)
                        for item in host.items.get(scope, [])]
                for env in envs:
                    env.params = values
                    try:
                        if applies is not None and applies(env) is not True:
                            continue
                        fired = when(env)
                    except (EvalError, TypeError, ValueError, ArithmeticError):
                        # again, to record the error with its expression
                        evaluate_rule(rule, env, host.name, result, verdicts_only)
                        continue
                    if fired is not False or record_passes:
                        _record(rule, env, fired, host.name, result, verdicts_only)
            except Exception as error:  # a bug met on one host: that host's, not the batch's
                state.failure = error
    outcomes: list[HostResult | Exception] = []
    for state in states:
        if state.failure is None and state.host.unread:
            _not_read(plan, state.host, state.result)
        if state.failure is None and len(state.result.findings) > 1 and not verdicts_only:
            _distinct_fingerprints(state.result.findings)
        outcomes.append(state.result if state.failure is None else state.failure)
    return outcomes


def _not_read(plan: Plan, host: HostFacts, result: HostResult) -> None:
    """Rules reading an input the host has but that could not be read say so, with why (``host.unread``): a
    rule over items of that input is not evaluated — it cannot pass, since it saw only some of them, or none
    — unless it found something in those it saw; a rule missing facts of such an input gives that reason."""
    unread = host.unread
    blind = {rule.id for rule, _ in plan if rule.scope != "host" and rule.scope in unread}
    blind -= {finding.rule_id for finding in result.findings}
    if blind:
        if result.passed is not None:
            result.passed = [passed for passed in result.passed if passed.rule_id not in blind]
        result.not_evaluated = [skipped for skipped in result.not_evaluated if skipped.rule_id not in blind]
        result.not_evaluated += [NotEvaluated(rule.id, rule.name, (), None, unread[rule.scope])
                                 for rule, _ in plan if rule.id in blind]
    for index, skipped in enumerate(result.not_evaluated):
        if skipped.reason is None:
            why = next((unread.get(name) or unread[name.partition(".")[0]] for name in skipped.missing
                        if name in unread or name.partition(".")[0] in unread), None)
            if why is not None:
                result.not_evaluated[index] = skipped._replace(reason=why)


def evaluate_rule(rule: Rule, env: Env, host_name: str, result: HostResult, verdicts_only: bool = False) -> None:
    """Append the rule's finding, pass (when recorded) or not-evaluated record to ``result``; nothing when
    the rule does not apply. The subject is rendered only for a record: most items meet no rule."""
    try:
        if rule.applies_expr is not None and rule.applies_expr.evaluate(env) is not True:
            return
        fired = rule.when_expr.evaluate(env)
    except EvalError as error:
        _not_evaluated(rule, env, result, str(error))
        return
    _record(rule, env, fired, host_name, result, verdicts_only)


def _record(rule: Rule, env: Env, fired: Value, host_name: str, result: HostResult, verdicts_only: bool) -> None:
    """What a rule that applies gave: a finding, a not-evaluated record (NULL), or a pass when recorded."""
    try:
        if fired is True:
            result.findings.append(make_finding(rule, env, host_name, _subject(rule, env), verdicts_only))
        elif fired is None:
            missing = missing_facts(env, rule.when_expr.facts)
            reason = None if missing else f"{rule.when.strip()} is NULL"
            result.not_evaluated.append(NotEvaluated(rule.id, rule.name, missing, _subject(rule, env), reason))
        elif result.passed is not None:
            result.passed.append(Passed(rule.id, rule.name, _subject(rule, env), _pass_values(rule, env)))
    except EvalError as error:
        _not_evaluated(rule, env, result, str(error))


def _not_evaluated(rule: Rule, env: Env, result: HostResult, reason: str) -> None:
    try:
        subject = _subject(rule, env)
    except EvalError:
        subject = None
    result.not_evaluated.append(NotEvaluated(rule.id, rule.name, (), subject, reason))


def _subject(rule: Rule, env: Env) -> str | None:
    return render(rule.subject_template, env) if rule.subject_template is not None else None


def _pass_values(rule: Rule, env: Env) -> dict[str, Value]:
    """The rule's values where they can be computed (some only make sense when it fires)."""
    values: dict[str, Value] = {}
    for name, compiled in rule.value_exprs:
        with contextlib.suppress(EvalError):
            value = compiled.evaluate(env)
            if out_of_range(value) is None:
                values[name] = value
    return values


def _settings(templates: Sequence[tuple[str, Template]], env: Env, uncomputed: list[str]) -> dict[str, str]:
    """A fix's settings; those whose value has a NULL in it (a missing fact, nothing that fits) are left out,
    named in ``uncomputed``."""
    values: dict[str, str] = {}
    for key, template in templates:
        value = render_setting(template, env)
        if value is None:
            uncomputed.append(key)
        else:
            values[key] = value
    return values


def make_finding(rule: Rule, env: Env, host_name: str, subject: str | None, verdict_only: bool = False) -> Finding:
    """The rule's finding on ``env``; EvalError when its fix, message or values cannot be computed (the rule is
    then not evaluated). ``verdict_only``: without its location, evidence and fingerprint, which only a report
    shows and which cannot fail (lookup and evidence take an error as NULL), so that the same rules fire."""
    fix, message, values = _finding_parts(rule, env)
    for name, value in values.items():
        refused = out_of_range(value)
        if refused is not None:  # PostgreSQL's "value out of range": never a NaN or an infinity in a report
            raise EvalError(f"{rule.id}.values.{name} is out of range: {refused}")
    if verdict_only:
        return Finding(rule.id, rule.name, rule.severity, rule.title, message, host_name, "", rule.tags, subject,
                       values=values, fix=fix)
    path: str | None = None
    line: int | None = None
    for name in rule.location_names:
        _, source = lookup(env, name)
        if source is not None and not source.path.startswith("<"):
            path, line = source.path, source.line
            break
    # positional, in Finding's field order: a finding is made for every rule that fires on every host
    return Finding(rule.id, rule.name, rule.severity, rule.title, message, host_name,
                   fingerprint(rule.id, host_name, path, subject), rule.tags, subject, path, line,
                   values, evidence(env, rule.evidence_names), fix, rule.help, list(rule.references))


def _finding_parts(rule: Rule, env: Env) -> tuple[Fix, str, dict[str, Value]]:
    """A finding's fix, message and values, hole by hole (a hole's error raised as EvalError naming its
    expression)."""
    fix, uncomputed = render_fix(rule, env)
    if uncomputed:
        name_uncomputed(fix, uncomputed)
    message = render(rule.message_template, env).strip()
    values: dict[str, Value] = {}
    for name, compiled in rule.value_exprs:
        values[name] = compiled.evaluate(env)
    return fix, message, values


def render_fix(rule: Rule, env: Env) -> tuple[Fix, list[str]]:
    """The rule's fix on ``env``'s host, and the settings it cannot compute there (a NULL in their value)."""
    templates = rule.fix_templates
    uncomputed: list[str] = []
    if templates is None:
        return Fix(), uncomputed
    fix = Fix(_settings(templates.sysctl, env, uncomputed) if templates.sysctl else {},
              _settings(templates.postgresql, env, uncomputed) if templates.postgresql else {},
              # a text that renders empty (its CASE had nothing to say on this host) is no text
              (render(templates.text, env).strip() or None) if templates.text is not None else None)
    return fix, uncomputed


def name_uncomputed(fix: Fix, uncomputed: list[str]) -> None:
    missing = f"No value can be computed here for {', '.join(uncomputed)}."
    fix.text = f"{fix.text} {missing}" if fix.text else missing


def rule_on_host(pack: RulePack, rule: Rule, host: HostFacts, params: ParamOverrides | None = None,
                 ) -> list[tuple[HostResult, list[Evidence]]]:
    """``pgvet explain RULE HOST``: what the rule gave on the host, or on each item of its scope where it
    applies — a finding, a pass or a not-evaluated record — with every fact and derived value it read."""
    values, derived = rule_params(rule, params), pack.derived_by_name
    host_cache: dict[str, Value] = {}
    envs = ([Env(host.facts, None, values, derived, host_cache)] if rule.scope == "host" else
            [Env(host.facts, item, values, derived, host_cache, {}) for item in host.items.get(rule.scope, [])])
    outcomes: list[tuple[HostResult, list[Evidence]]] = []
    for env in envs:
        result = HostResult(host_facts=host, passed=[])
        evaluate_rule(rule, env, host.name, result)
        if result.findings or result.passed or result.not_evaluated:  # nothing: the rule does not apply
            outcomes.append((result, evidence(env, rule.evidence_names)))
    return outcomes
