"""One target configuration per host: every fix pgvet prints or writes is a part of it.

A rule's fix proposes values computed on the host it is evaluated on. On the host as it is, those proposals
contradict each other: a huge page pool sized for the shared_buffers another rule lowers, an overcommit
ratio computed for the pool being replaced. The planner works out one target instead — kernel and
PostgreSQL together, in dependency order:

- A setting is decided before the settings whose rules read it (shared_buffers before the huge page pool,
  the pool before vm.overcommit_ratio, that before work_mem): the order comes from the facts each rule reads
  (its conditions, fix and derived formulas), a setting's *stage*. Settings whose rules read each other are
  decided together, in rounds, until the proposals stop changing.
- Each stage is evaluated on a *world*: the host's facts with the target's values of the settings decided
  so far, and what the kernel and PostgreSQL then show — the measured facts (meminfo's CommitLimit and huge
  pages, a live server's shared_memory_size) replaced by the derived formulas that predict them
  (``predicts:`` in rules/), whenever a planned change reaches what they read.
- The target is then checked against invariants that no rule states alone (a fix must never stop a
  server or starve a host): CommitLimit above what is already committed, a pool that leaves the OS its
  memory, huge_pages = on only with a pool PostgreSQL fits in, no hot-standby minimum lowered, work_mem
  lowered only when the budget needs it, no finding a fix would bring, no proposal left that the target
  itself contradicts. A setting that breaks one is kept as it is — *pinned*, with the reason, for the
  by-hand list — and the target is worked out again.

docs/planner.md describes it for users; tests/plan/ applies targets as the kernel would and lints again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from pgvet.engine.derived import expand
from pgvet.engine.evaluate import Plan, evaluate_hosts, name_uncomputed, render_fix
from pgvet.engine.expr import Env, EvalError, Value
from pgvet.engine.pack import DerivedFormula, Rule, RulePack
from pgvet.facts import Fact, FactValue, HostFacts, Item
from pgvet.findings import Finding, HostResult
from pgvet.pgparams import NEWEST_MAJOR, load_catalog
from pgvet.pgparams.units import InvalidValue, parse_value
from pgvet.provenance import Source
from pgvet.sources.sysctl import PAIR_PARTNERS, sysctl_value

Kind = Literal["sysctl", "postgresql"]
# Where a planned value comes from, in the facts of a world (never a file: findings point at none of them).
PLANNED = Source("<target>")
# Rounds of a stage, and targets worked out again after a pin, before pgvet gives up on the host's target.
MAX_ROUNDS = 8
MAX_ATTEMPTS = 12
# PostgreSQL refuses to start a hot standby with less of these than its primary has (recovery stops with
# "insufficient parameter settings"): a fix never lowers them, whatever a rule says.
HOT_STANDBY_MINIMUMS = frozenset({"max_connections", "max_prepared_transactions", "max_locks_per_transaction",
                                  "max_wal_senders", "max_worker_processes"})
_PREFIXES: tuple[tuple[str, Kind], ...] = (("sysctl.", "sysctl"), ("sysctl_conf.", "sysctl"), ("pg.", "postgresql"),
                                           ("pg_conf.", "postgresql"))


class Setting(NamedTuple):
    """A value a fix writes: a kernel key (sysctl.d) or a PostgreSQL parameter (postgresql.conf). A named tuple:
    sets of them are intersected for every rule of every host."""

    kind: Kind
    name: str

    @property
    def fact(self) -> str:
        return f"{'sysctl' if self.kind == 'sysctl' else 'pg'}.{self.name}"

    @property
    def declared_fact(self) -> str:
        return f"{'sysctl_conf' if self.kind == 'sysctl' else 'pg_conf'}.{self.name}"

    def __str__(self) -> str:
        return self.name


def setting_of(fact: str) -> Setting | None:
    """The setting a fact name reads (``pg.work_mem``, ``sysctl_conf.vm.swappiness``), or None."""
    for prefix, kind in _PREFIXES:
        if fact.startswith(prefix):
            return Setting(kind, fact[len(prefix):])
    return None


@dataclass(slots=True)
class Change:
    """One setting of the target that differs from the host: what it is, what it becomes, and who asks."""

    setting: Setting
    current: str | None  # as the host has it (None: not set anywhere pgvet read)
    target: str  # as the fix writes it
    rules: list[str]  # "PGV110 huge-pages-on-pool-too-small", the most severe first
    why: str  # the first rule's title


@dataclass(slots=True)
class HandStep:
    """What the target leaves to a person: a setting pgvet will not change (pinned), or a rule's text fix."""

    text: str
    rules: list[str] = field(default_factory=list)
    setting: Setting | None = None


@dataclass(slots=True)
class Target:
    """A host's target configuration: the changes in the order they were decided, what is left by hand, and
    which findings still fire once it is applied (rule id, subject)."""

    changes: list[Change] = field(default_factory=list)
    by_hand: list[HandStep] = field(default_factory=list)
    firing: frozenset[tuple[str, str | None]] = frozenset()
    # the host as the target makes it, to render the findings' fixes on (Planner.fix_findings lets go of it)
    world: HostFacts | None = None

    def change(self, setting: Setting) -> Change | None:
        return next((change for change in self.changes if change.setting == setting), None)

    def pinned(self, setting: Setting) -> HandStep | None:
        return next((step for step in self.by_hand if step.setting == setting), None)


@dataclass(slots=True)
class _Proposal:
    value: str
    rules: list[str]
    why: str


class _Pin(Exception):
    """A setting the target must leave as it is, and why (raised while a target is worked out)."""

    def __init__(self, setting: Setting, reason: str) -> None:
        super().__init__(reason)
        self.setting = setting
        self.reason = reason


def _label(finding: Finding) -> str:
    return f"{finding.rule_id} {finding.rule_name}"


def _proposed(rule: Rule) -> list[Setting]:
    templates = rule.fix_templates
    if templates is None:
        return []
    return ([Setting("sysctl", key) for key, _ in templates.sysctl]
            + [Setting("postgresql", key) for key, _ in templates.postgresql])


class Planner:
    """What every host of a run shares: the rules that propose settings, in stages (dependency order)."""

    def __init__(self, pack: RulePack, rules: Plan) -> None:
        self.pack = pack
        self.rules = list(rules)
        self.predictions = [formula for formula in pack.derived if formula.predicts is not None]
        self.predicted_inputs = {formula.predicts: formula.inputs for formula in self.predictions}
        self.reads: dict[str, set[Setting]] = {}  # by rule id, every rule of the run
        proposes: dict[str, list[Setting]] = {}
        order: dict[Setting, int] = {}
        for rule, _ in self.rules:
            self.reads[rule.id] = self.settings_read(rule.evidence_names)
            proposed = _proposed(rule)
            if proposed:
                proposes[rule.id] = proposed
                for setting in proposed:
                    order.setdefault(setting, len(order))
        self.stages = _stages(order, proposes, self.reads)
        self.stage_rules = [[(rule, params) for rule, params in self.rules
                             if any(setting in stage for setting in proposes.get(rule.id, ()))]
                            for stage in self.stages]
        # every fact a rule, or a stage's rules, read (derived formulas expanded): while none has changed, they
        # give on the world what they give on the host as it is
        self.rule_facts = {rule.id: frozenset(rule.evidence_names) for rule, _ in self.rules}
        self.stage_facts = [frozenset().union(*(self.rule_facts[rule.id] for rule, _ in rules))
                            for rules in self.stage_rules]
        self.rank = {setting: index for index, stage in enumerate(self.stages) for setting in stage}

    def settings_read(self, names: Iterable[str]) -> set[Setting]:
        """The settings facts read, directly or through the measured facts a change has predicted."""
        found: set[Setting] = set()
        pending, seen = list(names), set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            setting = setting_of(name)
            if setting is not None:
                found.add(setting)
            pending.extend(self.predicted_inputs.get(name, ()))
        return found

    def applied(self, host: HostFacts, values: Mapping[Setting, str]) -> HostFacts:
        """The host once these settings are applied as a fix is (`sysctl --system`, a reboot, PostgreSQL
        restarted): what the kernel and PostgreSQL then show, as the planner sees it."""
        return _World.rebooted(host, self).with_values(values, self).host

    # -- a host ----------------------------------------------------------------------------------------------

    def plan(self, host: HostFacts, current: HostResult) -> Target:
        """The host's target. ``current``: every rule of the run evaluated on ``host``, suppressions applied
        (a suppressed finding's rule proposes nothing on this host)."""
        excluded = frozenset((finding.rule_id, finding.subject) for finding in current.findings
                             if finding.suppressed is not None)
        if not any((finding.fix.sysctl or finding.fix.postgresql) and finding.suppressed is None
                   for finding in current.findings):
            return self._unchanged(current, excluded)
        pinned: dict[Setting, str] = {}
        for _ in range(MAX_ATTEMPTS):
            try:
                return self._attempt(host, current, excluded, pinned)
            except _Pin as pin:
                if pin.setting in pinned:  # pinned already: no target can be found
                    break
                pinned[pin.setting] = pin.reason
        target = self._unchanged(current, excluded)
        target.by_hand.insert(0, HandStep("pgvet found no safe target for this host and changes nothing: "
                                          + "; ".join(f"{setting}: {reason}" for setting, reason in pinned.items())))
        return target

    def _unchanged(self, current: HostResult, excluded: frozenset[tuple[str, str | None]]) -> Target:
        target = Target(firing=frozenset((finding.rule_id, finding.subject) for finding in current.findings))
        target.by_hand = _text_steps(current, excluded, target.firing)
        return target

    def _attempt(self, host: HostFacts, current: HostResult, excluded: frozenset[tuple[str, str | None]],
                 pinned: Mapping[Setting, str]) -> Target:
        """A target with ``pinned`` settings kept as they are; _Pin when it breaks an invariant."""
        baseline = world = _World.rebooted(host, self)
        changes: dict[Setting, Change] = {}
        asked_now = _asked(current, excluded)
        for stage, rules, facts in zip(self.stages, self.stage_rules, self.stage_facts, strict=True):
            history: list[dict[Setting, str]] = []
            for _ in range(MAX_ROUNDS):
                asked = (asked_now if facts.isdisjoint(world.changed)
                         else _asked(self._evaluate(world.host, rules), excluded))
                proposals = _proposals(asked, stage, pinned)
                new = {setting: proposal for setting, proposal in proposals.items()
                       if not world.holds(setting, proposal.value)}
                if not new:
                    break
                history.append({setting: proposal.value for setting, proposal in new.items()})
                world = world.with_values({setting: proposal.value for setting, proposal in new.items()}, self)
                for setting, proposal in new.items():
                    _record(changes, host, setting, proposal)
            else:
                setting = min(history[-1])
                turns = ", ".join(dict.fromkeys(values[setting] for values in history if setting in values))
                raise _Pin(setting, f"pgvet's rules do not agree on a value (they ask for {turns} in turn)")
        unchanged = _World(host)
        target = Target(changes=sorted((change for change in changes.values()
                                        if not unchanged.holds(change.setting, change.target)),
                                       key=lambda change: (self.rank[change.setting], change.setting)))
        final = self._findings_on(world, current)
        target.firing = frozenset((finding.rule_id, finding.subject) for finding in final)
        before = final if world is baseline else self._findings_on(baseline, current)
        self._check(baseline.host, world.host, before, final, excluded, pinned, target)
        target.by_hand = [*(HandStep(f"{setting} stays as it is: {reason}", [], setting)
                            for setting, reason in pinned.items()),
                          *_text_steps(current, excluded, target.firing)]
        target.world = world.host
        return target

    def fix_findings(self, result: HostResult, target: Target) -> None:
        """Each finding's fix as the target has it: its rule's fix rendered on the host the target makes (a
        host-wide rule's; a scoped rule's as it was made), with the target's value of every setting it writes, a
        word on those the target keeps, and on what else the target changes that the rule reads (why its values
        are not those it computes on the host as it is). Lets go of the target's world."""
        world, target.world = target.world, None
        rules = {rule.id: (rule, params) for rule, params in self.rules}
        cache: dict[str, Value] = {}
        for finding in result.findings:
            entry = rules.get(finding.rule_id)
            if finding.suppressed is not None or entry is None:
                continue
            rule, params = entry
            fix, uncomputed = finding.fix, list[str]()
            if world is not None and rule.scope == "host":
                fix, uncomputed = render_fix(rule, Env(world.facts, None, params, self.pack.derived_by_name, cache))
            notes: list[str] = []
            for setting in _proposed(rule):
                values = fix.sysctl if setting.kind == "sysctl" else fix.postgresql
                values.pop(setting.name, None)
                change = target.change(setting)
                pin = target.pinned(setting)
                if change is not None:
                    values[setting.name] = change.target
                elif pin is not None:
                    notes.append(pin.text)
                    if setting.name in uncomputed:
                        uncomputed.remove(setting.name)
            # what else the target changes that the rule reads: why its values are the target's, not its own
            read = self.reads.get(finding.rule_id, set())
            upstream = [change for change in target.changes if change.setting in read
                        and change.setting.name not in fix.sysctl and change.setting.name not in fix.postgresql]
            if upstream and (fix.sysctl or fix.postgresql):
                notes.append("Values of the target, which also changes " + _changes_text(upstream) + ".")
            elif upstream and (finding.rule_id, finding.subject) not in target.firing:
                notes.append("The target resolves this with " + _changes_text(upstream) + ".")
            if uncomputed:
                name_uncomputed(fix, uncomputed)
            if notes:
                fix.text = " ".join([*([fix.text] if fix.text else []), *notes])
            finding.fix = fix

    def _findings_on(self, world: _World, current: HostResult) -> list[Finding]:
        """The findings on a world: the rules that read what it changed evaluated there, the others' as they are on
        the host."""
        affected = [(rule, params) for rule, params in self.rules
                    if not self.rule_facts[rule.id].isdisjoint(world.changed)]
        ids = {rule.id for rule, _ in affected}
        findings = self._evaluate(world.host, affected).findings if affected else []
        return [*findings, *(finding for finding in current.findings if finding.rule_id not in ids)]

    def _evaluate(self, host: HostFacts, rules: Plan) -> HostResult:
        outcome = evaluate_hosts(self.pack, [host], plan=rules)[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    # -- invariants ------------------------------------------------------------------------------------------

    def _check(self, host: HostFacts, world: HostFacts, current: list[Finding], final: list[Finding],
               excluded: frozenset[tuple[str, str | None]], pinned: Mapping[Setting, str], target: Target) -> None:
        """Raise _Pin for the first invariant the target breaks: the setting to keep as it is, and why. ``host`` and
        ``current``: the host rebooted with its own settings and its findings, what the target is held against (a
        reboot alone would bring what differs from the host as measured)."""
        changed = {change.setting for change in target.changes}
        if not changed:
            return
        before, after = _Values(self.pack, host), _Values(self.pack, world)
        for change in target.changes:
            setting = change.setting
            if setting.kind == "postgresql" and setting.name in HOT_STANDBY_MINIMUMS:
                old, new = _number(before.fact(setting.fact)), _number(after.fact(setting.fact))
                if old is not None and new is not None and new < old:
                    raise _Pin(setting, f"lowering it to {change.target} would stop a hot standby whose primary has "
                                        "more (a standby needs at least its primary's value), and refuse clients "
                                        "beyond it on a primary: lower it by hand, primaries first, if you mean to")
        self._check_commit_limit(before, after, changed)
        self._check_pool(before, after, changed)
        self._check_work_mem(host, before, world, target)
        self._check_new_findings(current, final, excluded, changed)
        self._check_fixpoint(world, final, excluded, pinned)

    def _latest(self, candidates: Iterable[Setting], changed: set[Setting]) -> Setting | None:
        """Of the changed settings among ``candidates``, the one decided last (the first to give up)."""
        among = [setting for setting in candidates if setting in changed]
        return max(among, key=lambda setting: (self.rank[setting], setting)) if among else None

    def _implicated(self, names: Iterable[str], changed: set[Setting]) -> Setting | None:
        """The changed setting decided last among those ``names`` read (through derived formulas and
        predictions), else the one decided last of all."""
        read = self.settings_read(expand(list(names), self.pack.derived_by_name))
        return self._latest(read, changed) or self._latest(changed, changed)

    def _check_commit_limit(self, before: _Values, after: _Values, changed: set[Setting]) -> None:
        floor, limit = _number(after.derived("commit_limit_floor")), _number(after.derived("commit_limit"))
        if after.fact("sysctl.vm.overcommit_memory") != 2 or floor is None or limit is None or limit >= floor:
            return
        old_limit = _number(before.derived("commit_limit")) if before.fact("sysctl.vm.overcommit_memory") == 2 else None
        if old_limit is not None and limit >= old_limit:
            return  # already below: the target does not make it worse
        culprit = self._implicated(["derived.commit_limit", "sysctl.vm.overcommit_memory"], changed)
        if culprit is not None:
            raise _Pin(culprit, f"with it CommitLimit would be {_size(limit)}, below the {_size(floor)} that what is "
                                "already committed needs (Committed_AS and a margin): new allocations would fail; "
                                "lower what is committed first")

    def _check_pool(self, before: _Values, after: _Values, changed: set[Setting]) -> None:
        nr = Setting("sysctl", "vm.nr_hugepages")
        if nr in changed:
            old_nr, new_nr = _number(before.fact(nr.fact)), _number(after.fact(nr.fact))
            if after.derived("hugepage_size") != after.derived("default_hugepage_size"):
                raise _Pin(nr, "PostgreSQL uses huge pages of another size than the kernel's default "
                               "(huge_page_size): their pool is reserved at boot, by hand (hugepagesz= and "
                               "hugepages= on the kernel command line)")
            if new_nr == 0 and old_nr:
                raise _Pin(nr, "a fix does not remove a huge page pool (something else may use it): lower it by hand")
            pool, ram = _number(after.derived("hugetlb_pool")), _number(after.derived("kernel_mem_total"))
            floor, old_pool = _number(after.derived("os_memory_floor")), _number(before.derived("hugetlb_pool"))
            if pool is not None and ram is not None and floor is not None and pool > (old_pool or 0) and (
                    ram - pool < floor):
                raise _Pin(nr, f"a pool of {_size(pool)} would leave the OS {_size(ram - pool)} of {_size(ram)} "
                               f"(at least {_size(floor)} is kept for it): lower shared_buffers first")
        available, needed = _number(after.derived("hugepages_available")), _number(after.derived("hugepages_needed"))
        if after.fact("pg.huge_pages") != "on":
            return
        huge_pages = Setting("postgresql", "huge_pages")
        if available is None or needed is None:
            if huge_pages in changed:  # turned on where the pool cannot be known: it might not start
                raise _Pin(huge_pages, "the huge page pool is not known here (no HugePages lines in meminfo.txt, no "
                                       "vm.nr_hugepages): with huge_pages = on and too small a pool PostgreSQL would "
                                       "not start; reserve the pool first, then turn it on")
            return
        if available < needed:
            culprit = (self._latest([huge_pages], changed)
                       or self._implicated(["derived.hugepages_needed", "derived.hugepages_available"], changed))
            if culprit is not None:
                raise _Pin(culprit, f"with it PostgreSQL would need {needed} huge pages where the target has "
                                    f"{available}, and with huge_pages = on it would not start")

    def _check_work_mem(self, host: HostFacts, before: _Values, world: HostFacts, target: Target) -> None:
        """work_mem is lowered only when the target's budget needs it."""
        work_mem = Setting("postgresql", "work_mem")
        old = _number(before.fact(work_mem.fact))
        new = _number(_World(world).value(work_mem))
        if target.change(work_mem) is None or old is None or new is None or new >= old:
            return
        facts = dict(world.facts)
        for name in (work_mem.fact, work_mem.declared_fact):
            if name in host.facts:
                facts[name] = host.facts[name]
        kept = _Values(self.pack, HostFacts(world.name, world.root, facts, world.items))
        peak, limit = _number(kept.derived("pg_memory_peak")), _number(kept.derived("memory_limit"))
        if peak is not None and limit is not None and peak <= limit:
            raise _Pin(work_mem, "the target's memory budget fits with the current work_mem")

    def _check_new_findings(self, current: list[Finding], final: list[Finding],
                            excluded: frozenset[tuple[str, str | None]], changed: set[Setting]) -> None:
        """Nothing fires on the target that did not fire on the host."""
        before = {(finding.rule_id, finding.subject) for finding in current}
        for finding in final:
            key = (finding.rule_id, finding.subject)
            if key in before or key in excluded:
                continue
            rule = self.pack.rule(finding.rule_id)
            culprit = self._implicated(rule.evidence_names if rule is not None else (), changed)
            if culprit is not None:
                raise _Pin(culprit, f"with it {_label(finding)} would fire: {' '.join(finding.message.split())}")

    def _check_fixpoint(self, world: HostFacts, final: list[Finding], excluded: frozenset[tuple[str, str | None]],
                        pinned: Mapping[Setting, str]) -> None:
        """No rule asks for another value on the target: a second fix changes nothing."""
        target = _World(world)
        for finding in final:
            if (finding.rule_id, finding.subject) in excluded or _asks_pinned(finding, pinned):
                continue
            for setting, value in _fix_settings(finding):
                if setting not in pinned and not target.holds(setting, value):
                    raise _Pin(setting, f"{_label(finding)} would still ask for {value} once the target is applied")


def _stages(order: Mapping[Setting, int], proposes: Mapping[str, list[Setting]],
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


def _asked(result: HostResult, excluded: frozenset[tuple[str, str | None]],
           ) -> dict[Setting, list[tuple[str, Finding]]]:
    """What a result's findings ask for, by setting: each value with its finding, the most severe first."""
    asked: dict[Setting, list[tuple[str, Finding]]] = {}
    for finding in sorted(result.findings, key=lambda finding: -finding.rank):
        if (finding.rule_id, finding.subject) not in excluded:
            for setting, value in _fix_settings(finding):
                asked.setdefault(setting, []).append((value, finding))
    return asked


def _proposals(asked: Mapping[Setting, list[tuple[str, Finding]]], stage: frozenset[Setting],
               pinned: Mapping[Setting, str]) -> dict[Setting, _Proposal]:
    """What the findings ask for the stage's settings, the most severe finding's value winning; of a kernel
    ratio/bytes pair asked for together the bytes win (writing one zeroes the other)."""
    proposals: dict[Setting, _Proposal] = {}
    for setting in stage:
        for value, finding in asked.get(setting, ()):
            if _asks_pinned(finding, pinned):
                continue
            proposal = proposals.get(setting)
            if proposal is None:
                proposals[setting] = _Proposal(value, [_label(finding)], finding.title)
            elif proposal.value == value:
                proposal.rules.append(_label(finding))
    for setting in list(proposals):
        partner = PAIR_PARTNERS.get(setting.name) if setting.kind == "sysctl" else None
        if partner is not None and setting.name.endswith("_ratio") and Setting("sysctl", partner) in proposals:
            del proposals[setting]
    return proposals


def _asks_pinned(finding: Finding, pinned: Mapping[Setting, str]) -> bool:
    """Whether a finding's fix sets a pinned setting: its settings go together (strict overcommit with its
    ratio, huge_pages = on with its pool), so none of them is taken."""
    return bool(pinned) and any(setting in pinned for setting, _ in _fix_settings(finding))


def _fix_settings(finding: Finding) -> Iterator[tuple[Setting, str]]:
    """The settings a finding's fix writes, with their values."""
    for name, value in finding.fix.sysctl.items():
        yield Setting("sysctl", name), value
    for name, value in finding.fix.postgresql.items():
        yield Setting("postgresql", name), value


def _record(changes: dict[Setting, Change], host: HostFacts, setting: Setting, proposal: _Proposal) -> None:
    change = changes.get(setting)
    if change is None:
        changes[setting] = Change(setting, _raw(host, setting), proposal.value, list(proposal.rules), proposal.why)
        return
    change.target = proposal.value
    change.rules.extend(rule for rule in proposal.rules if rule not in change.rules)


def _raw(host: HostFacts, setting: Setting) -> str | None:
    """A setting's value as the host has it, as written where it is set (``138GB``; a quoted value unquoted),
    else as pgvet holds it."""
    fact = host.facts.get(setting.declared_fact) or host.facts.get(setting.fact)
    if fact is None:
        return None
    raw = fact.raw if fact.raw is not None else str(fact.value)
    if setting.kind == "postgresql" and len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    return raw


def _text_steps(current: HostResult, excluded: frozenset[tuple[str, str | None]],
                firing: frozenset[tuple[str, str | None]]) -> list[HandStep]:
    """The text fixes of the host's findings that still fire on the target, each once (the by-hand list)."""
    steps: dict[str, HandStep] = {}
    for finding in sorted(current.findings, key=lambda finding: -finding.rank):
        key = (finding.rule_id, finding.subject)
        if key in excluded or key not in firing or not finding.fix.text:
            continue
        text = " ".join(finding.fix.text.split())
        steps.setdefault(text, HandStep(text)).rules.append(_label(finding))
    return list(steps.values())


def _number(value: object) -> float | int | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _size(value: object) -> str:
    number = _number(value)
    if number is None:
        return "unknown"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("kiB", 1 << 10)):
        if abs(number) >= scale:
            return f"{number / scale:.1f} {unit}"
    return f"{number:.0f} B"


class _Values:
    """Facts and derived values of one host, each computed once."""

    def __init__(self, pack: RulePack, host: HostFacts) -> None:
        self.host = host
        self.env = Env(host.facts, None, {}, pack.derived_by_name, {})
        self.known = pack.derived_by_name

    def fact(self, name: str) -> FactValue | None:
        fact = self.host.facts.get(name)
        return None if fact is None else fact.value

    def derived(self, name: str) -> Value:
        if name not in self.known:
            return None
        try:
            return self.env.derived_value(name)
        except (EvalError, TypeError, ValueError, ArithmeticError):
            return None


@dataclass(slots=True)
class _World:
    """A host as the target makes it: its facts with planned values, and the facts planned so far changed."""

    host: HostFacts
    changed: frozenset[str] = frozenset()

    def value(self, setting: Setting) -> FactValue | None:
        fact = self.host.facts.get(setting.fact)
        return None if fact is None else fact.value

    def holds(self, setting: Setting, text: str) -> bool:
        """Whether the world already has ``text`` as the setting's value (compared as PostgreSQL or the
        kernel reads it: 48234MB is 50577014784 bytes)."""
        current = self.value(setting)
        if current is None:
            return False
        try:
            wanted = _parsed(self.host, setting, text)
        except _Pin:
            return False
        if isinstance(current, float) or isinstance(wanted, float):
            return isinstance(current, int | float) and isinstance(wanted, int | float) and math.isclose(
                current, wanted, rel_tol=1e-9)
        return current == wanted

    @classmethod
    def rebooted(cls, host: HostFacts, planner: Planner) -> _World:
        """The host once rebooted with its own settings: a fix is applied with `sysctl --system` and a reboot,
        which reserves the huge page pool whole (a pool the running kernel could not find all of included)."""
        return cls(host).with_values({}, planner, also=("sysctl.vm.nr_hugepages",))

    def with_values(self, values: Mapping[Setting, str], planner: Planner, also: Iterable[str] = ()) -> _World:
        """The world with these settings, and what the kernel and PostgreSQL then show (``also``: facts to take as
        changed besides)."""
        facts = dict(self.host.facts)
        changed = set(self.changed)
        items = dict(self.host.items)
        declared = {item["declared.key"]: item for item in items.get("declared", [])}
        for setting, text in values.items():
            value = _parsed(self.host, setting, text)
            _put(facts, changed, setting.fact, value, text)
            if setting.kind == "postgresql":
                if setting.declared_fact in facts:  # a live server: its files get the value too
                    _put(facts, changed, setting.declared_fact, value, text)
                continue
            _put(facts, changed, setting.declared_fact, value, text)
            fields: dict[str, FactValue] = {"declared.key": setting.name, "declared.value": str(value),
                                            "declared.written": str(value), "declared.running": str(value),
                                            "declared.ignore_errors": False}
            declared[setting.name] = Item(fields, PLANNED)
            partner = PAIR_PARTNERS.get(setting.name)
            if partner is not None and Setting("sysctl", partner) not in values:
                # writing one of a ratio/bytes pair zeroes the other; the fix comments out the other's lines
                for name in (f"sysctl.{partner}", f"sysctl_conf.{partner}"):
                    if name in facts:
                        _put(facts, changed, name, 0, "0")
                declared.pop(partner, None)
        if "declared" in items:
            items["declared"] = list(declared.values())
            changed.update(("declared.value", "declared.written", "declared.running", "declared.zeroed_by"))
        host = HostFacts(self.host.name, self.host.root, facts, items, self.host.notes, self.host.warnings)
        # a prediction is computed again when a fact it reads has just changed; predictions read each other (and
        # themselves: the pool of other sizes is read from Hugetlb), so until none moves
        fresh = (changed - self.changed) | set(also)
        for _ in range(len(planner.predictions) + 2):
            due = [formula for formula in planner.predictions if not fresh.isdisjoint(formula.inputs)]
            if not due:
                break
            env = Env(host.facts, None, {}, planner.pack.derived_by_name, {})
            fresh = {formula.predicts for formula in due if _predict(formula, env, facts, changed)}  # type: ignore[misc]
        return _World(host, frozenset(changed))


def _predict(formula: DerivedFormula, env: Env, facts: dict[str, Fact], changed: set[str]) -> bool:
    """Put the formula's value in place of the fact it predicts (or drop the fact: NULL); whether it moved."""
    name = formula.predicts
    assert name is not None
    try:
        value = formula.compiled.evaluate(env)
    except EvalError:
        value = None
    old = facts.get(name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if (None if old is None else old.value) == value:
        return False
    if value is None:
        del facts[name]
    else:
        facts[name] = Fact(name, value, PLANNED)
    changed.add(name)
    return True


def _put(facts: dict[str, Fact], changed: set[str], name: str, value: FactValue, text: str) -> None:
    facts[name] = Fact(name, value, PLANNED, (), text)
    changed.add(name)


def _parsed(host: HostFacts, setting: Setting, text: str) -> FactValue:
    """A fix's value as the host's facts hold it (canonical units); _Pin when PostgreSQL would refuse it."""
    if setting.kind == "sysctl":
        return sysctl_value(text)
    major_fact = host.facts.get("pg.catalog_version")
    major = major_fact.value if major_fact is not None and isinstance(major_fact.value, int) else NEWEST_MAJOR
    param = load_catalog(major).get(setting.name)
    if param is None:
        raise _Pin(setting, f"PostgreSQL {major} has no parameter {setting.name}")
    try:
        return parse_value(param, text).canonical
    except InvalidValue as invalid:
        raise _Pin(setting, f"PostgreSQL would refuse {text!r}: {invalid}") from None


def _changes_text(changes: Sequence[Change]) -> str:
    return ", ".join(f"{change.setting} ({change.current if change.current is not None else 'unset'} → "
                     f"{change.target})" for change in changes)
