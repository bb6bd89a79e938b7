"""The order in which a target's settings are decided (stages), and what a stage's findings propose."""

from __future__ import annotations

from collections.abc import Mapping

from pgvet.engine.pack import Rule
from pgvet.engine.planner.target import Change, HandStep, Proposal, Setting, fix_settings, label
from pgvet.engine.planner.world import postgresql_param
from pgvet.findings import Finding, HostResult
from pgvet.inputs.sysctl import PAIR_PARTNERS
from pgvet.pgparams.units import shown_canonical, shown_value
from pgvet.snapshot.facts import DEFAULT_SOURCE_PATH, Fact, HostFacts


def proposed_settings(rule: Rule) -> list[Setting]:
    templates = rule.fix_templates
    if templates is None:
        return []
    return ([Setting("sysctl", key) for key, _ in templates.sysctl]
            + [Setting("postgresql", key) for key, _ in templates.postgresql])


def stages_of(order: Mapping[Setting, int], proposes: Mapping[str, list[Setting]],
              reads: Mapping[str, set[Setting]]) -> list[frozenset[Setting]]:
    """The proposed settings grouped in stages, dependencies first: a setting read by a rule that proposes
    another is decided before it; settings that read each other share a stage (strongly connected components,
    Tarjan), ties broken by the pack's order."""
    edges: dict[Setting, set[Setting]] = {setting: set() for setting in order}
    for rule_id, proposed in proposes.items():
        for read in reads[rule_id]:
            if read in edges:
                edges[read].update(setting for setting in proposed if setting != read)
        for setting in proposed:  # a fix's settings go together (strict overcommit and its ratio): one stage
            edges[setting].update(other for other in proposed if other != setting)
    index: dict[Setting, int] = {}
    low: dict[Setting, int] = {}
    stack: list[Setting] = []
    on_stack: set[Setting] = set()
    components: list[frozenset[Setting]] = []

    def connect(node: Setting) -> None:  # recursion depth: the number of proposed settings, a few dozen
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(edges[node], key=order.__getitem__):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component: set[Setting] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            components.append(frozenset(component))

    for node in sorted(order, key=order.__getitem__):
        if node not in index:
            connect(node)
    # Tarjan yields components dependents first; Kahn's order over them, earliest in the pack first
    of = {setting: component for component in components for setting in component}
    needs: dict[frozenset[Setting], set[frozenset[Setting]]] = {component: set() for component in components}
    for node, successors in edges.items():
        for successor in successors:
            if of[successor] is not of[node]:
                needs[of[successor]].add(of[node])
    ordered: list[frozenset[Setting]] = []
    while needs:
        ready = [component for component, required in needs.items() if not required]
        first = min(ready, key=lambda component: min(order[setting] for setting in component))
        ordered.append(first)
        del needs[first]
        for required in needs.values():
            required.discard(first)
    return ordered


def asked_settings(result: HostResult, excluded: frozenset[tuple[str, str | None]],
           ) -> dict[Setting, list[tuple[str, Finding]]]:
    """What a result's findings ask for, by setting: each value with its finding, the most severe first."""
    asked: dict[Setting, list[tuple[str, Finding]]] = {}
    for finding in sorted(result.findings, key=lambda finding: -finding.rank):
        if (finding.rule_id, finding.subject) not in excluded:
            for setting, value in fix_settings(finding):
                asked.setdefault(setting, []).append((value, finding))
    return asked


def proposals_for(asked: Mapping[Setting, list[tuple[str, Finding]]], stage: frozenset[Setting],
                  pinned: Mapping[Setting, str]) -> dict[Setting, Proposal]:
    """What the findings ask for the stage's settings, the most severe finding's value winning; of a kernel
    ratio/bytes pair asked for together the bytes win (writing one zeroes the other)."""
    proposals: dict[Setting, Proposal] = {}
    for setting in stage:
        for value, finding in asked.get(setting, ()):
            if asks_pinned(finding, pinned):
                continue
            proposal = proposals.get(setting)
            if proposal is None:
                proposals[setting] = Proposal(value, [label(finding)], finding.title)
            elif proposal.value == value:
                proposal.rules.append(label(finding))
    for setting in list(proposals):
        partner = PAIR_PARTNERS.get(setting.name) if setting.kind == "sysctl" else None
        if partner is not None and setting.name.endswith("_ratio") and Setting("sysctl", partner) in proposals:
            del proposals[setting]
    return proposals


def asks_pinned(finding: Finding, pinned: Mapping[Setting, str]) -> bool:
    """Whether a finding's fix sets a pinned setting: its settings go together (strict overcommit with its
    ratio, huge_pages = on with its pool), so none of them is taken."""
    return bool(pinned) and any(setting in pinned for setting, _ in fix_settings(finding))


def record_change(changes: dict[Setting, Change], host: HostFacts, setting: Setting, proposal: Proposal) -> None:
    change = changes.get(setting)
    if change is None:
        changes[setting] = Change(setting, _raw(host, setting), proposal.value, list(proposal.rules), proposal.why)
        return
    change.target = proposal.value
    change.rules.extend(rule for rule in proposal.rules if rule not in change.rules)


def _raw(host: HostFacts, setting: Setting) -> str | None:
    """A setting's value as the host has it, as written where it is set (``138GB``; a quoted value unquoted); a
    parameter set nowhere, and a live server's value, as SHOW writes it (``4GB``, not 524288 pages of 8 kB nor
    4294967296 bytes); a kernel key as pgvet holds it."""
    fact = host.facts.get(setting.declared_fact) or host.facts.get(setting.fact)
    return None if fact is None else shown_fact(host, setting, fact)


def shown_fact(host: HostFacts, setting: Setting, fact: Fact) -> str:
    """A fact of a setting as _raw shows it."""
    raw = fact.raw if fact.raw is not None else str(fact.value)
    if setting.kind == "postgresql" and (fact.raw is None or fact.source.path == DEFAULT_SOURCE_PATH):
        # a live server's value (no text as written) or a default: as SHOW writes it
        _, param = postgresql_param(host, setting)
        if param is None:
            return raw
        return shown_canonical(param, fact.value) if fact.raw is None else shown_value(param, raw)
    if setting.kind == "postgresql" and len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    return raw


def text_steps(current: HostResult, excluded: frozenset[tuple[str, str | None]],
               firing: frozenset[tuple[str, str | None]],
               texts: Mapping[tuple[str, str | None], str | None] | None = None) -> list[HandStep]:
    """The text fixes of the host's findings that still fire on the target, each once (the by-hand list);
    ``texts``: a finding's text fix by (rule id, subject), where it is not the one the finding holds."""
    steps: dict[str, HandStep] = {}
    for finding in sorted(current.findings, key=lambda finding: -finding.rank):
        key = (finding.rule_id, finding.subject)
        given = finding.fix.text if texts is None else texts.get(key, finding.fix.text)
        if key in excluded or key not in firing or not given:
            continue
        text = " ".join(given.split())
        rules = steps.setdefault(text, HandStep(text)).rules
        if label(finding) not in rules:  # one rule on several items (two lines of a setting): named once
            rules.append(label(finding))
    return list(steps.values())
