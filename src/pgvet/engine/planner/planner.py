"""The Planner: what every host of a run shares (its rules in stages), and each host's target worked out."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple

from pgvet.engine.evaluate import Plan, evaluate_hosts, name_uncomputed, render_fix
from pgvet.engine.ir import Value
from pgvet.engine.pack import Rule, RulePack
from pgvet.engine.planner.invariants import (
    running_overcommit,
    verify_invariants,
    verify_written_where_it_takes_effect,
)
from pgvet.engine.planner.stages import (
    asked_settings,
    proposals_for,
    proposed_settings,
    record_change,
    shown_fact,
    stages_of,
    text_steps,
)
from pgvet.engine.planner.target import Change, HandStep, Pin, Proposal, Setting, Target, label, setting_of
from pgvet.engine.planner.world import World, booted_values
from pgvet.engine.runtime import Env, EvalError
from pgvet.findings import Finding, Fix, HostResult
from pgvet.inputs.documents import running_steps
from pgvet.snapshot.facts import HostFacts

# Rounds of a stage, and targets worked out again after a pin, before pgvet gives up on the host's target.
MAX_ROUNDS = 8
MAX_ATTEMPTS = 12


class Planner:
    """What every host of a run shares: the rules that propose settings, in stages (dependency order)."""

    def __init__(self, pack: RulePack, rules: Plan) -> None:
        self.pack = pack
        self.rules = list(rules)
        self.rule_entries = {rule.id: (rule, params) for rule, params in self.rules}
        self.predictions = [formula for formula in pack.derived if formula.predicts is not None]
        self.predicted_inputs = {formula.predicts: formula.inputs for formula in self.predictions}
        self._settings_by_fact: dict[str, frozenset[Setting]] = {}
        self.captured = [formula.name for formula in pack.derived if formula.as_captured]
        self.derived_readers: dict[str, list[str]] = {}  # by fact: the derived formulas that read it
        for formula in pack.derived:
            for name in formula.inputs:
                if not formula.as_captured:  # kept as computed on the host as captured, whatever changes
                    self.derived_readers.setdefault(name, []).append(formula.name)
        self.reads: dict[str, set[Setting]] = {}  # by rule id, every rule of the run
        # by rule id: the settings its condition (`applies`, `when`) names itself, not through a derived value
        self.decides: dict[str, set[Setting]] = {}
        self.proposes: dict[str, list[Setting]] = {}  # by rule id: the settings its fix writes, if any
        order: dict[Setting, int] = {}
        for rule, _ in self.rules:
            self.reads[rule.id] = self.settings_read(rule.evidence_names)
            self.decides[rule.id] = self.settings_read(
                [*rule.when_expr.facts, *(rule.applies_expr.facts if rule.applies_expr is not None else ())])
            proposed = proposed_settings(rule)
            if proposed:
                self.proposes[rule.id] = proposed
                for setting in proposed:
                    order.setdefault(setting, len(order))
        self.stages = stages_of(order, self.proposes, self.reads)
        self.rank = {setting: index for index, stage in enumerate(self.stages) for setting in stage}
        stage_rules: list[list[tuple[Rule, Mapping[str, Value]]]] = [[] for _ in self.stages]
        for rule, params in self.rules:  # each stage's rules, in the run's order
            for index in sorted({self.rank[setting] for setting in self.proposes.get(rule.id, ())}):
                stage_rules[index].append((rule, params))
        self.stage_rules: list[Plan] = list(stage_rules)
        # every fact a rule, or a stage's rules, read (derived formulas expanded): while none has changed, they
        # give on the world what they give on the host as it is
        self.rule_facts = {rule.id: frozenset(rule.evidence_names) for rule, _ in self.rules}
        self.rule_readers: dict[str, list[int]] = {}  # by fact: the rules that read it, by their place in the run
        for index, (rule, _) in enumerate(self.rules):
            for name in self.rule_facts[rule.id]:
                self.rule_readers.setdefault(name, []).append(index)
        self.stage_facts = [frozenset().union(*(self.rule_facts[rule.id] for rule, _ in rules))
                            for rules in self.stage_rules]
        # the rules that read the running server's statistics and propose settings: the facts of those settings
        self.measured = {rule_id: frozenset(setting.fact for setting in settings)
                         for rule_id, settings in self.proposes.items()
                         if any(name.startswith("live.") for name in self.rule_facts[rule_id])}

    def settings_read(self, names: Iterable[str]) -> set[Setting]:
        """The settings facts read, directly or through the measured facts a change has predicted."""
        found: set[Setting] = set()
        for name in names:
            found |= self._settings_read_by(name)
        return found

    def _settings_read_by(self, fact: str) -> frozenset[Setting]:
        """The settings one fact reads (every rule's facts ask again: once each)."""
        known = self._settings_by_fact.get(fact)
        if known is not None:
            return known
        found: set[Setting] = set()
        pending, seen = [fact], set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            setting = setting_of(name)
            if setting is not None:
                found.add(setting)
            pending.extend(self.predicted_inputs.get(name, ()))
        known = self._settings_by_fact[fact] = frozenset(found)
        return known

    def derived_kept(self, derived: Mapping[str, Value], changed: Iterable[str]) -> dict[str, Value]:
        """Of derived values, those that read none of the ``changed`` facts (a derived value reads nothing but
        facts and other derived values): what they are once the facts change."""
        kept = dict(derived)
        for name in changed:
            for formula in self.derived_readers.get(name, ()):
                kept.pop(formula, None)
        return kept

    def captured_values(self, host: HostFacts, derived: Mapping[str, Value]) -> dict[str, Value]:
        """The ``as_captured`` derived values, computed on the host as captured (``derived``: those known already);
        one that cannot be computed there is left out, and computed where it is read."""
        env = Env(host.facts, None, {}, self.pack.derived_by_name, dict(derived))
        values: dict[str, Value] = {}
        for name in self.captured:
            with contextlib.suppress(EvalError, TypeError, ValueError, ArithmeticError):
                values[name] = env.derived_value(name)
        return values

    def applied(self, host: HostFacts, values: Mapping[Setting, str]) -> HostFacts:
        """The host once these settings are applied as a fix is (`sysctl --system`, a reboot, PostgreSQL
        restarted): what the kernel and PostgreSQL then show, as the planner sees it."""
        return World.rebooted(host, self).with_values(values, self).host

    # -- a host ----------------------------------------------------------------------------------------------

    def plan(self, host: HostFacts, current: HostResult, derived: dict[str, Value] | None = None,
             suppress: Callable[[HostResult], None] | None = None) -> Target:
        """The host's target. ``current``: every rule of the run evaluated on ``host``, suppressions applied
        (a suppressed finding's rule proposes nothing on this host); ``derived``: the host-wide derived values
        computed then (evaluate_hosts' host cache), which the worlds keep where the target leaves their inputs;
        ``suppress``: marks the findings of a result that the host's suppressions silence (judged again on the
        host as its files boot it, where a finding may fire that does not on the host as it runs)."""
        excluded = frozenset((finding.rule_id, finding.subject) for finding in current.findings
                             if finding.suppressed is not None)
        booted = booted_values(host)
        if not any((finding.fix.sysctl or finding.fix.postgresql) and finding.suppressed is None
                   for finding in current.findings) and not booted:
            return self._unchanged(current, excluded)
        # the host as its files boot it, and the running values written back where they would starve it: the same
        # for every attempt
        rebooted = World.rebooted(host, self, derived)
        silenced, brought = self._once_booted(rebooted, current, suppress) if booted else ([], [])
        excluded |= {(finding.rule_id, finding.subject) for finding in silenced}
        # a warning or error that neither the host as it runs nor as its files boot it has is the restore's doing
        known = {(finding.rule_id, finding.subject) for finding in [*current.findings, *silenced, *brought]}

        def brings_findings(world: World) -> bool:
            return any(finding.severity != "info" and (finding.rule_id, finding.subject) not in known
                       for finding in self._findings_on(world, current)[0])

        restored = running_overcommit(self, host, rebooted, brings_findings, derived)
        baseline = rebooted.with_values(restored, self) if restored else rebooted
        start = _Start(rebooted, baseline, self._findings_on(baseline, current)[0], restored)

        def attempt(pins: Mapping[Setting, str]) -> Target:
            return self._attempt(host, start, current, excluded, pins)

        pinned: dict[Setting, str] = {}
        target: Target | None = None
        for _ in range(MAX_ATTEMPTS):
            try:
                target = _with_needless_pins_lifted(attempt(pinned), attempt, pinned)
                break
            except Pin as pin:
                if pin.setting in pinned:  # pinned already: no target can be found
                    break
                pinned[pin.setting] = pin.reason
        if target is None:
            target = self._unchanged(current, excluded)
            reasons = "; ".join(f"{setting}: {reason}" for setting, reason in pinned.items())
            target.by_hand.insert(0, HandStep(f"pgvet found no safe target for this host and changes nothing: "
                                              f"{reasons}"))
        target.suppressed_once_booted = silenced
        for finding in brought:  # said with what the files change that the rule reads
            declared = [change for change in target.declared_not_applied
                        if change.setting in self.reads[finding.rule_id]]
            if declared:
                finding.message = f"After {_applying_text(declared)} — {finding.message}"
        target.found_once_booted = brought
        return target

    def _once_booted(self, world: World, current: HostResult, suppress: Callable[[HostResult], None] | None,
                     ) -> tuple[list[Finding], list[Finding]]:
        """The findings that fire on the host as its files boot it, and not as it runs: those its suppressions
        silence (a sysctl.d line under `# pgvet: ignore[…]`), whose rules propose nothing either; and the errors
        and warnings among the others — what the host's own files, applied, would break (a pending huge_pages = on
        without its pool: PostgreSQL would not start at the restart another finding advises) or risk (a pending
        max_connections = 500 on 4 CPUs), which the administrator about to restart needs to know before, not after.
        Not an info: worth knowing, its evidence mixed, it waits for the host to run the values."""
        running = {(finding.rule_id, finding.subject) for finding in current.findings}
        read = {index for name in world.changed for index in self.rule_readers.get(name, ())}
        # whole findings (where they point, which an inline suppression is judged by)
        found = self._evaluate(world, [self.rules[index] for index in sorted(read)], verdicts_only=False)
        booted = HostResult(world.host, [finding for finding in found.findings
                                         if (finding.rule_id, finding.subject) not in running])
        if not booted.findings:
            return [], []
        if suppress is not None:
            suppress(booted)
        return ([finding for finding in booted.findings if finding.suppressed is not None],
                [finding for finding in booted.findings if finding.suppressed is None and finding.severity != "info"])

    def _unchanged(self, current: HostResult, excluded: frozenset[tuple[str, str | None]]) -> Target:
        return Target(firing=frozenset((finding.rule_id, finding.subject) for finding in current.findings),
                      silenced=excluded)

    def _attempt(self, host: HostFacts, start: _Start, current: HostResult,
                 excluded: frozenset[tuple[str, str | None]], pinned: Mapping[Setting, str]) -> Target:
        """A target with ``pinned`` settings kept as they are; Pin when it breaks an invariant. ``start``: what every
        attempt starts from (the running values written back, which a pin keeps too)."""
        changes: dict[Setting, Change] = {}
        booted, baseline, restored = start.booted, start.baseline, start.restored
        world = baseline
        if restored:
            mismatch = [label(finding) for finding in current.findings if finding.rule_id == "PGV102"][:1]
            for setting, value in restored.items():
                record_change(changes, host, setting, Proposal(
                    value, list(mismatch), "The host's files would put CommitLimit below what is committed, or beside "
                                           "their pool leave the OS too little: the fix writes back what it runs"))
        asked_now = asked_settings(current, excluded)
        for stage, rules, facts in zip(self.stages, self.stage_rules, self.stage_facts, strict=True):
            history: list[dict[Setting, str]] = []
            for _ in range(MAX_ROUNDS):
                asked = asked_now if facts.isdisjoint(world.changed) else self._asked_on(
                    world, rules, current, excluded, booted.changed)
                proposals = proposals_for(asked, stage, pinned)
                new = {setting: proposal for setting, proposal in proposals.items()
                       if not world.holds(setting, proposal.value)}
                if not new:
                    break
                decided = {setting: proposal.value for setting, proposal in new.items()}
                verify_written_where_it_takes_effect(host, decided)
                history.append(decided)
                world = world.with_values(decided, self)
                for setting, proposal in new.items():
                    record_change(changes, host, setting, proposal)
            else:
                setting = min(history[-1])
                turns = ", ".join(dict.fromkeys(values[setting] for values in history if setting in values))
                raise Pin(setting, f"pgvet's rules do not agree on a value (they ask for {turns} in turn)")
        # a change a later one undid (a ratio zeroed by the bytes of its pair, written after it) is no change
        target = Target(changes=sorted((change for change in changes.values()
                                        if not booted.holds(change.setting, change.target)
                                        and world.holds(change.setting, change.target)),
                                       # a running value written back that no rule proposes comes first
                                       key=lambda change: (self.rank.get(change.setting, -1), change.setting)))
        target.declared_not_applied = []
        for name in sorted(booted.changed):
            declared = setting_of(name) if name.startswith("sysctl.") or name in host.pending_from_files else None
            if (declared is not None and name in host.facts and name in booted.host.facts
                    and host.facts[name].value != booted.host.facts[name].value):
                target.declared_not_applied.append(Change(
                    declared, shown_fact(host, declared, host.facts[name]),
                    shown_fact(host, declared, booted.host.facts[name]), [], ""))
        final, target.unjudged = self._findings_on(world, current)
        target.firing = frozenset((finding.rule_id, finding.subject) for finding in final)
        verify_invariants(self, baseline, world, start.baseline_findings, final, excluded, pinned, target, restored)
        target.by_hand = [HandStep(f"{setting} stays {_kept(setting, restored)}: {reason}", [], setting)
                          for setting, reason in pinned.items()]
        target.world = world
        target.silenced = excluded
        return target

    def _asked_on(self, world: World, rules: Plan, current: HostResult, excluded: frozenset[tuple[str, str | None]],
                  booted: frozenset[str]) -> dict[Setting, list[tuple[str, Finding]]]:
        """What a stage's rules ask for on a world. A rule that judges the running server's statistics (live.*:
        checkpoints counted, temporary files written) asks for a setting the world has already changed what it
        asked on the host as it runs: the statistics were counted with the old value and say nothing of the new
        one (the requested checkpoints, counted under 1 GB of max_wal_size, still asked for twice the target's
        2 GB, then twice that, round after round) — and nothing where the host's files (``booted``: the facts the
        host as its files boot it changes) already set another value than the one they were counted with: twice
        the running 1 GB would lower the 8 GB a pending reload brings."""
        measured = {rule.id for rule, _ in rules if not self.measured.get(rule.id, frozenset()).isdisjoint(
            world.changed)}
        judged = [entry for entry in rules if entry[0].id not in measured] if measured else rules
        asked = asked_settings(self._evaluate(world, judged), excluded) if judged else {}
        if measured:
            kept = HostResult(current.host_facts, [finding for finding in current.findings
                                                   if finding.rule_id in measured
                                                   and self.measured[finding.rule_id].isdisjoint(booted)])
            for setting, entries in asked_settings(kept, excluded).items():
                asked[setting] = sorted([*asked.get(setting, ()), *entries], key=lambda entry: -entry[1].rank)
        return asked

    def _breaking_once_restarted(self, target: Target) -> dict[str, tuple[Change, list[Finding]]]:
        """The parameters the files set and the server does not run yet that an error of the host as its files boot
        it reads, where the target leaves that error firing: by name, the pending value and the errors."""
        breaking: dict[str, tuple[Change, list[Finding]]] = {}
        for error in target.found_once_booted:
            if error.severity != "error" or (error.rule_id, error.subject) not in target.firing:
                continue
            for change in target.declared_not_applied:
                if change.setting.kind == "postgresql" and change.setting in self.reads.get(error.rule_id, ()):
                    breaking.setdefault(change.setting.name, (change, []))[1].append(error)
        return breaking

    def fix_findings(self, result: HostResult, target: Target) -> None:
        """Each finding's fix as the target has it: its rule's fix rendered on the host the target makes (a
        host-wide rule's; a scoped rule's as it was made), with the target's value of every setting it writes, a
        word on those the target keeps, and on what else the target changes that the rule reads (why its values
        are not those it computes on the host as it is). A suppressed finding's too: its rule proposed nothing,
        so its fix keeps what the target sets for other rules and names what the target leaves as it is, rather
        than a value the target contradicts. Then the steps by hand: the text fixes of the findings the target leaves
        firing, as rendered there, after its pins; then what the running system of a host a document declares needs
        for the changes to take effect (Patroni's DCS: `patronictl edit-config`), which each finding's fix says of
        its own values too. Lets go of the target's world."""
        world, target.world = target.world, None
        rendered: dict[tuple[str, str | None], str | None] = {}  # text fixes rendered on the target, before notes
        breaking = self._breaking_once_restarted(target)
        for finding in result.findings:
            entry = self.rule_entries.get(finding.rule_id)
            if entry is None:
                continue
            rule, params = entry
            fix, uncomputed = finding.fix, list[str]()
            if world is not None and rule.scope == "host":
                # where the target's world lacks what the fix needs, the finding's own, with the target's value of
                # each setting it writes (below)
                with contextlib.suppress(EvalError):
                    fix, uncomputed = render_fix(rule, Env(world.host.facts, None, params, self.pack.derived_by_name,
                                                           world.derived))
                rendered[(finding.rule_id, finding.subject)] = fix.text
            notes: list[str] = []
            declined: list[str] = []  # a suppressed finding's settings the target does not set to its value
            for setting in self.proposes.get(rule.id, ()):
                values = fix.sysctl if setting.kind == "sysctl" else fix.postgresql
                asked = values.pop(setting.name, None)
                change = target.change(setting)
                pin = target.pinned(setting)
                if change is not None:
                    values[setting.name] = change.target
                elif pin is not None:
                    notes.append(pin.text)
                    if setting.name in uncomputed:
                        uncomputed.remove(setting.name)
                elif finding.suppressed is not None and asked is not None and (
                        world is None or not world.holds(setting, asked)):
                    declined.append(setting.name)
            if declined:
                notes.append(f"Suppressed: the target leaves {', '.join(declined)} as "
                             f"{'it is' if len(declined) == 1 else 'they are'}.")
            # what else the target changes that the rule reads: why its values are the target's, not its own
            read = self.reads.get(finding.rule_id, set())
            upstream = [change for change in target.changes if change.setting in read
                        and change.setting.name not in fix.sysctl and change.setting.name not in fix.postgresql]
            booted = [change for change in target.declared_not_applied if change.setting in read
                      and change.setting.name not in (fix.sysctl if change.setting.kind == "sysctl" else fix.postgresql)
                      and target.change(change.setting) is None]
            resolved = (finding.rule_id, finding.subject) not in target.firing
            unjudged = target.unjudged.get((finding.rule_id, finding.subject))
            if unjudged is not None:  # never "resolved": not known
                changed = f", which changes {_changes_text(upstream)}" if upstream else ""
                note = (f"pgvet cannot judge this on the host as the target makes it{changed} ({unjudged}): it may "
                        "still hold once the target is applied.")
                notes.insert(0, note)
                if fix.text:  # its step by hand says so too: the target may already do what the text asks
                    rendered[(finding.rule_id, finding.subject)] = f"{fix.text} {note}"
            if upstream and (fix.sysctl or fix.postgresql):
                notes.append("Values of the target, which also changes " + _changes_text(upstream) + ".")
            elif upstream and resolved:
                # the changes its condition names, where there are any (not the pool that a derived value reads)
                deciding = [change for change in upstream if change.setting in self.decides[finding.rule_id]]
                notes.append("The target resolves this with " + _changes_text(deciding or upstream) + ".")
            # a finding only the files bring opens with what they change: "It still holds after" them would misread
            brought = any(finding is found for found in target.found_once_booted)
            if booted and (fix.sysctl or fix.postgresql or not brought):
                applied = _applying_text(booted)
                notes.append(f"Values worked out after {applied}." if fix.sysctl or fix.postgresql else
                             f"Resolved by {applied}." if resolved and not upstream else
                             f"It still holds after {applied} (its numbers are those of the host as it runs).")
            if "restart" in rule.tags and finding.subject in breaking:
                # a restart to apply a pending value the target cannot mend (ALTER SYSTEM set it) stops the server
                change, errors = breaking[finding.subject]
                notes.append(f"Not before {' and '.join(error.rule_id for error in errors)} is mended: with "
                             f"{change.setting} = {change.target}, "
                             + "; ".join(f"{error.title} ({error.rule_id})" for error in errors) + ".")
            notes += [step.text for step in running_steps(result.host_facts.facts, fix.postgresql)]
            if uncomputed:
                name_uncomputed(fix, uncomputed)
            if notes:
                fix.text = " ".join([*([fix.text] if fix.text else []), *notes])
            finding.fix = fix
        target.by_hand += text_steps(result, target.silenced, target.firing, rendered)
        changes = {change.setting.name: change for change in target.changes if change.setting.kind == "postgresql"}
        for step in running_steps(result.host_facts.facts, {name: change.target for name, change in changes.items()}):
            asking = dict.fromkeys(rule for name in step.parameters for rule in changes[name].rules)
            target.by_hand.append(HandStep(step.text, list(asking)))

    def _findings_on(self, world: World, current: HostResult,
                     ) -> tuple[list[Finding], dict[tuple[str, str | None], str]]:
        """The findings on a world: the rules that read what it changed evaluated there, the others' as they are on
        the host; and those of the host's findings that cannot be judged there (an evaluation error, a fact missing
        on that world), with why. Unknown is not resolved: such a finding stands as the host has it, without a fix
        (its rule asks nothing on that world, as _asked_on finds)."""
        read = {index for name in world.changed for index in self.rule_readers.get(name, ())}
        affected = [self.rules[index] for index in sorted(read)]
        ids = {rule.id for rule, _ in affected}
        evaluated = self._evaluate(world, affected) if affected else HostResult(world.host)
        findings = evaluated.findings
        fired = {(finding.rule_id, finding.subject) for finding in findings}
        unjudged: dict[tuple[str, str | None], str] = {}
        for finding in current.findings:
            key = (finding.rule_id, finding.subject)
            if finding.rule_id not in ids or key in fired:
                continue
            skipped = next((skipped for skipped in evaluated.not_evaluated if skipped.rule_id == finding.rule_id
                            and skipped.subject in (finding.subject, None)), None)
            if skipped is not None:
                unjudged[key] = skipped.reason or f"{', '.join(skipped.missing) or 'a value'} unknown there"
                findings.append(replace(finding, fix=Fix()))
        return [*findings, *(finding for finding in current.findings if finding.rule_id not in ids)], unjudged

    def _evaluate(self, world: World, rules: Plan, verdicts_only: bool = True) -> HostResult:
        outcome = evaluate_hosts(self.pack, [world.host], plan=rules, host_caches=[world.derived],
                                 verdicts_only=verdicts_only)[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


class _Start(NamedTuple):
    """What every attempt at a host's target starts from: the host as its files boot it (``booted``), with the
    running values written back where they would starve it (``restored``: running_overcommit) — the ``baseline``
    the target is held against — and the findings there."""

    booted: World
    baseline: World
    baseline_findings: list[Finding]
    restored: Mapping[Setting, str]


def _with_needless_pins_lifted(target: Target, attempt: Callable[[Mapping[Setting, str]], Target],
                               pinned: Mapping[Setting, str]) -> Target:
    """The target again without each pin but the last that it holds without: a pin is made when a change breaks
    an invariant, and a later pin may remove the cause (the pool for a larger shared_buffers, pinned before
    shared_buffers itself was: with shared_buffers kept, the pool it needs is safe)."""
    pins = dict(pinned)
    for setting in list(pins)[:-1]:
        fewer = {kept: reason for kept, reason in pins.items() if kept != setting}
        try:
            target = attempt(fewer)
        except Pin:
            continue
        pins = fewer
    return target


def _kept(setting: Setting, restored: Mapping[Setting, str]) -> str:
    """How a pinned setting stays: as it is, or at the running value written back over the files'."""
    return "as it is" if setting not in restored else f"at {restored[setting]}, as the host runs it"


def _applying_text(declared: Sequence[Change]) -> str:
    """Applying values the host's files declare and it does not run yet, and how they are applied."""
    kinds = {change.setting.kind for change in declared}
    how = ("the kernel values the host's files already declare (`sysctl --system` or a reboot)" if kinds == {"sysctl"}
           else "the values PostgreSQL's configuration files already set (a restart; a reload for those that allow "
                "it)" if kinds == {"postgresql"}
           else "the values the host's files already declare (`sysctl --system` or a reboot, and a restart of "
                "PostgreSQL)")
    return f"applying {how}: {_changes_text(declared)}"


def _changes_text(changes: Sequence[Change]) -> str:
    return ", ".join(f"{change.setting} ({change.current if change.current is not None else 'unset'} → "
                     f"{change.target})" for change in changes)
