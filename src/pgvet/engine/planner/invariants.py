"""The invariants a target is held to, that no rule states alone: a fix must never stop a server or starve a
host. The first one broken pins a setting (Pin), and the target is worked out again without changing it."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from pgvet.engine.derived import expand
from pgvet.engine.ir import Value
from pgvet.engine.pack import RulePack
from pgvet.engine.planner.stages import asks_pinned
from pgvet.engine.planner.target import Pin, Setting, Target, fix_settings, label
from pgvet.engine.planner.world import World, booted_values
from pgvet.engine.render import format_sizes
from pgvet.engine.runtime import Env, EvalError
from pgvet.findings import Finding, quote_sql
from pgvet.inputs.postgresql_conf import quote_setting
from pgvet.pgparams import HOT_STANDBY_MINIMUMS
from pgvet.snapshot.facts import FactValue, HostFacts
from pgvet.snapshot.pgfacts import is_auto_conf

if TYPE_CHECKING:
    from pgvet.engine.planner.planner import Planner



def verify_invariants(planner: Planner, baseline: World, target_world: World, current: list[Finding],
                      final: list[Finding], excluded: frozenset[tuple[str, str | None]], pinned: Mapping[Setting, str],
                      target: Target, restored: Mapping[Setting, str]) -> None:
    """Raise Pin for the first invariant the target breaks: the setting to keep as it is, and why. ``baseline``
    and ``current``: the host rebooted with its own settings (the running values written back where they would
    starve it, ``restored``: running_overcommit, which nothing is blamed on) and its findings, what the target is
    held against (a reboot alone would bring what differs from the host as measured)."""
    changed = {change.setting for change in target.changes if restored.get(change.setting) != change.target}
    # a running value written back that a rule took back to what the files declare is no change to write (the
    # files hold it) but is the target's doing all the same
    changed |= {setting for setting, value in restored.items() if not target_world.holds(setting, value)}
    if not changed:
        return
    host, world = baseline.host, target_world.host
    before = Values(planner.pack, host, baseline.derived)
    after = Values(planner.pack, world, target_world.derived)
    for change in target.changes:
        setting = change.setting
        # a standby with less than its primary does not start: a fix never lowers them, whatever a rule says
        if setting.kind == "postgresql" and setting.name in HOT_STANDBY_MINIMUMS:
            old, new = _number(before.fact(setting.fact)), _number(after.fact(setting.fact))
            if old is not None and new is not None and new < old:
                raise Pin(setting, f"lowering it to {change.target} would stop a hot standby whose primary has "
                                   "more (a standby needs at least its primary's value), and refuse clients "
                                   "beyond it on a primary: lower it by hand, primaries first, if you mean to")
    _verify_commit_limit(planner, before, after, changed)
    _verify_pool(planner, before, after, changed)
    _verify_work_mem(planner, host, before, target_world, target)
    # a finding the target cannot judge (Target.unjudged) is not one it brings: unknown blames no change
    _verify_new_findings(planner, current, final, excluded | frozenset(target.unjudged), pinned, changed)
    _verify_fixpoint(planner, world, final, excluded, pinned, {setting.fact for setting in changed} | baseline.changed)


def verify_written_where_it_takes_effect(host: HostFacts, values: Mapping[Setting, str]) -> None:
    """A parameter ALTER SYSTEM sets, or that the server takes from its command line (``postgres -c``, a container's
    command, a service unit) or environment, is no change of the target: the fix writes postgresql.conf, which they
    override, and the rest of the target, worked out with the new value, would be written without it (a pool sized
    for a lower shared_buffers, with huge_pages = on: PostgreSQL would not start). Checked as each stage decides its
    values, before the rest of the target is built on them."""
    for setting in sorted(values):
        if setting.kind != "postgresql":
            continue
        # what is decided with it goes with it (huge_pages = on with its pool): the target leaves it out too, and
        # PostgreSQL restarted with the value alone may not start
        others = ", ".join(f"{other} = {value}" for other, value in sorted(values.items()) if other != setting)
        shown = host.set_outside_files.get(setting.name)
        if shown is not None:
            raise Pin(setting, f"the server takes it from its command line or environment ({shown}), which overrides "
                               f"postgresql.conf and ALTER SYSTEM: change it where the server is started (its "
                               f"service unit, container command or pg_ctl -o options) to "
                               f"{quote_setting(values[setting])}"
                               + (f", once what was decided with it is applied ({others}: left out with it)"
                                  if others else "")
                               + "; then pgvet fix again (the rest of the target is worked out with the value it has)")
        where = host.set_where_not_copied.get(setting.name)
        if where is not None:
            raise Pin(setting, f"the server takes it from {where}, a file the snapshot does not hold (an include "
                               f"outside its configuration directory, not copied), which overrides the copied line "
                               f"a fix would write: set it to {quote_setting(values[setting])} there"
                               + (f" with what was decided with it ({others})" if others else "")
                               + "; then pgvet fix again")
        fact = host.facts.get(setting.declared_fact) or host.facts.get(setting.fact)
        if fact is not None and is_auto_conf(fact.source.path):
            raise Pin(setting, f"ALTER SYSTEM sets it ({fact.source}), which overrides postgresql.conf: on the server, "
                               f"ALTER SYSTEM SET {setting.name} = {quote_sql(values[setting])}; then pgvet fix "
                               + (f"again before PostgreSQL restarts, and apply its changes first (decided with it: "
                                  f"{others})" if others else
                                  "again (the rest of the target is worked out with the value it has)"))


def _latest(planner: Planner, candidates: Iterable[Setting], changed: set[Setting]) -> Setting | None:
    """Of the changed settings among ``candidates``, the one decided last (the first to give up)."""
    among = [setting for setting in candidates if setting in changed]
    return max(among, key=lambda setting: (planner.rank[setting], setting)) if among else None


def _implicated(planner: Planner, names: Iterable[str], changed: set[Setting]) -> Setting | None:
    """The changed setting decided last among those ``names`` read (through derived formulas and
    predictions), else the one decided last of all."""
    read = planner.settings_read(expand(list(names), planner.pack.derived_by_name))
    return _latest(planner, read, changed) or _latest(planner, changed, changed)


def _verify_commit_limit(planner: Planner, before: Values, after: Values, changed: set[Setting]) -> None:
    limit = _number(after.derived("commit_limit"))
    if after.fact("sysctl.vm.overcommit_memory") != 2 or limit is None:
        return
    # what PostgreSQL restarted with the target commits is in the world's Committed_AS (committed_as_after_restart)
    floor = _number(after.derived("commit_limit_floor"))
    if floor is None or limit >= floor:
        return
    old_committed, new_committed = _number(before.fact("meminfo.committed_as")), _number(
        after.fact("meminfo.committed_as"))
    growth = new_committed - old_committed if old_committed is not None and new_committed is not None else 0
    if growth > 0:
        names = ["derived.commit_limit", "sysctl.vm.overcommit_memory", "derived.shared_memory_outside_huge_pages"]
        old_size, new_size = _number(before.derived("shared_memory_size")), _number(after.derived("shared_memory_size"))
        if old_size is not None and new_size is not None and new_size > old_size:
            # shared memory made larger is the growth's cause, not the huge pages it no longer fits in: blaming
            # huge_pages (decided later) kept off the huge pages that hold the shared memory PostgreSQL has now
            names = ["derived.shared_memory_size"]
        growth_text, limit_text, floor_text = format_sizes([growth, limit, floor])
        reason = (f"with it PostgreSQL would commit {growth_text} more shared memory when it restarts (outside "
                  f"huge pages, a shared mapping is committed whole), and CommitLimit, {limit_text}, would be below "
                  f"the {floor_text} that what is committed then needs (Committed_AS and a margin): PostgreSQL "
                  "would not start (\"could not map anonymous shared memory\")")
    else:
        old_limit = (_number(before.derived("commit_limit")) if before.fact("sysctl.vm.overcommit_memory") == 2
                     else None)
        if old_limit is not None and limit >= old_limit:
            return  # already below: the target does not make it worse
        names = ["derived.commit_limit", "sysctl.vm.overcommit_memory"]
        limit_text, floor_text = format_sizes([limit, floor])
        reason = (f"with it CommitLimit would be {limit_text}, below the {floor_text} that what is already "
                  "committed needs (Committed_AS and a margin): new allocations would fail; lower what is committed "
                  "first")
    culprit = _implicated(planner, names, changed)
    if culprit is not None:
        raise Pin(culprit, reason)


def running_overcommit(planner: Planner, running: HostFacts, booted: World,
                       brings_findings: Callable[[World], bool],
                       derived: Mapping[str, Value] | None = None) -> dict[Setting, str]:
    """The running values to write back where the host's own files would boot it, in strict overcommit, into a
    CommitLimit below what is already committed and lower than it runs with (a vm.overcommit_kbytes line too
    small, strict overcommit declared where the host runs another mode, a larger pool): the fix applies the files
    with `sysctl --system`, so it corrects them, as commit-limit-mismatch (PGV102) says to before they are
    applied. The running mode, else the key of the ratio/kbytes pair in force (it zeroes the other), then the
    running pool (none where the host runs none; never less than the pages PostgreSQL needs with huge_pages = on,
    without which it does not start) where the files declare a larger one, each unless it lowers CommitLimit
    (the running ratio below the files', beside the files' pool) and while CommitLimit still
    starves the host or what is written back brings a warning the host has neither as it runs nor as its files
    boot it (``brings_findings``: the running CommitLimit beside the files' larger pool leaves the OS too little,
    commit-limit-too-high, PGV103). ``derived``: the derived values the running host's evaluation computed (read,
    not added to: the reports read them)."""
    replaced = {name.removeprefix("sysctl.") for name in booted_values(running)}
    before = Values(planner.pack, running, None if derived is None else dict(derived))
    running_limit = (_number(before.derived("commit_limit")) if before.fact("sysctl.vm.overcommit_memory") == 2
                     else math.inf)

    def limit_of(world: World) -> float | None:
        after = Values(planner.pack, world.host, world.derived)
        return _number(after.derived("commit_limit")) if after.fact("sysctl.vm.overcommit_memory") == 2 else math.inf

    def starves(world: World) -> bool:
        limit, floor = limit_of(world), _number(Values(planner.pack, world.host, world.derived).derived(
            "commit_limit_floor"))
        return (limit is not None and floor is not None and limit < floor and running_limit is not None
                and limit < running_limit)

    if not starves(booted):
        return {}
    steps: list[tuple[str, FactValue | None]] = []
    if "vm.overcommit_memory" in replaced:
        steps.append(("vm.overcommit_memory", before.fact("sysctl.vm.overcommit_memory")))
    elif replaced & {"vm.overcommit_ratio", "vm.overcommit_kbytes"}:
        key = "vm.overcommit_kbytes" if before.fact("sysctl.vm.overcommit_kbytes") else "vm.overcommit_ratio"
        steps.append((key, before.fact(f"sysctl.{key}")))
    pool, booted_pool = _number(before.fact("sysctl.vm.nr_hugepages")), _number(World(booted.host).value(
        Setting("sysctl", "vm.nr_hugepages")))
    if pool is not None and before.fact("pg.huge_pages") == "on" and (
            before.derived("hugepage_size") == before.derived("default_hugepage_size")):
        pool = max(pool, _number(before.derived("hugepages_suggested")) or 0)
    if "vm.nr_hugepages" in replaced and pool is not None and booted_pool is not None and booted_pool > pool:
        steps.append(("vm.nr_hugepages", int(pool)))
    values: dict[Setting, str] = {}
    limit = limit_of(booted)
    for key, value in steps:
        trial = {**values, Setting("sysctl", key): str(value)}
        restored = booted.with_values(trial, planner)
        written_back = limit_of(restored)
        if limit is not None and written_back is not None and written_back < limit:
            continue  # it would lower CommitLimit (a running ratio below the files', beside their pool)
        values, limit = trial, written_back
        if not starves(restored) and not brings_findings(restored):
            break
    return values


def _verify_pool(planner: Planner, before: Values, after: Values, changed: set[Setting]) -> None:
    nr = Setting("sysctl", "vm.nr_hugepages")
    if nr in changed:
        old_nr, new_nr = _number(before.fact(nr.fact)), _number(after.fact(nr.fact))
        if after.derived("hugepage_size") != after.derived("default_hugepage_size"):
            raise Pin(nr, "PostgreSQL uses huge pages of another size than the kernel's default "
                          "(huge_page_size): their pool is reserved at boot, by hand (hugepagesz= and "
                          "hugepages= on the kernel command line)")
        if new_nr == 0 and old_nr:
            raise Pin(nr, "a fix does not remove a huge page pool (something else may use it): lower it by hand")
        pool, ram = _number(after.derived("hugetlb_pool")), _number(after.derived("kernel_mem_total"))
        floor, old_pool = _number(after.derived("os_memory_floor")), _number(before.derived("hugetlb_pool"))
        if pool is not None and ram is not None and floor is not None and pool > (old_pool or 0) and (
                ram - pool < floor):
            pool_text, left_text, ram_text, floor_text = format_sizes([pool, ram - pool, ram, floor])
            raise Pin(nr, f"a pool of {pool_text} would leave the OS {left_text} of {ram_text} "
                          f"(at least {floor_text} is kept for it): lower shared_buffers first")
    available, needed = _number(after.derived("hugepages_available")), _number(after.derived("hugepages_needed"))
    if after.fact("pg.huge_pages") != "on":
        return
    huge_pages = Setting("postgresql", "huge_pages")
    if available is None or needed is None:
        if huge_pages in changed:  # turned on where the pool cannot be known: it might not start
            raise Pin(huge_pages, "the huge page pool is not known here (no HugePages lines in meminfo.txt, no "
                                  "vm.nr_hugepages): with huge_pages = on and too small a pool PostgreSQL would "
                                  "not start; reserve the pool first, then turn it on")
        return
    if available < needed:
        old_available, old_needed = _number(before.derived("hugepages_available")), _number(
            before.derived("hugepages_needed"))
        if (before.fact("pg.huge_pages") == "on" and old_available is not None and old_needed is not None
                and needed - available <= old_needed - old_available):
            return  # too small already on the host as it is (PGV110 says so): the target does not make it worse
        culprit = (_latest(planner, [huge_pages], changed)
                   or _implicated(planner, ["derived.hugepages_needed", "derived.hugepages_available"], changed))
        if culprit is not None:
            raise Pin(culprit, f"with it PostgreSQL would need {needed} huge pages where the target has "
                               f"{available}, and with huge_pages = on it would not start")


def _verify_work_mem(planner: Planner, host: HostFacts, before: Values, target_world: World, target: Target) -> None:
    """work_mem is lowered only when the target's budget needs it."""
    world = target_world.host
    work_mem = Setting("postgresql", "work_mem")
    old = _number(before.fact(work_mem.fact))
    new = _number(World(world).value(work_mem))
    if target.change(work_mem) is None or old is None or new is None or new >= old:
        return
    facts = dict(world.facts)
    for name in (work_mem.fact, work_mem.declared_fact):
        if name in host.facts:
            facts[name] = host.facts[name]
    kept = Values(planner.pack, HostFacts(world.name, world.root, facts, world.items),
                  {name: value for name, value in target_world.derived.items() if name in planner.captured})
    peak, limit = _number(kept.derived("pg_memory_peak")), _number(kept.derived("memory_limit"))
    if peak is not None and limit is not None and peak <= limit:
        raise Pin(work_mem, "the target's memory budget fits with the current work_mem")


def _verify_new_findings(planner: Planner, current: list[Finding], final: list[Finding],
                        excluded: frozenset[tuple[str, str | None]], pinned: Mapping[Setting, str],
                        changed: set[Setting]) -> None:
    """Nothing fires on the target that did not fire on the host, but an info that asks for a pinned setting: a
    suggestion the pin forgoes (its step by hand says why), no risk the target adds — blaming another change for it
    pinned settings that had nothing to do with it."""
    before = {(finding.rule_id, finding.subject) for finding in current}
    for finding in final:
        key = (finding.rule_id, finding.subject)
        if key in before or key in excluded or (finding.severity == "info" and asks_pinned(finding, pinned)):
            continue
        rule = planner.pack.rule(finding.rule_id)
        culprit = _implicated(planner, rule.evidence_names if rule is not None else (), changed)
        if culprit is not None:
            raise Pin(culprit, f"with it {label(finding)} would fire: {' '.join(finding.message.split())}")


def _verify_fixpoint(planner: Planner, world: HostFacts, final: list[Finding],
                    excluded: frozenset[tuple[str, str | None]], pinned: Mapping[Setting, str],
                    changed_facts: set[str]) -> None:
    """No rule asks for another value on the target: a second fix changes nothing. A rule judging the running
    server's statistics is not asked again about a setting the target, or the host's files, change
    (``changed_facts``): counted with the old value, they say nothing of the new one (its fix says to count
    again)."""
    target = World(world)
    for finding in final:
        if (finding.rule_id, finding.subject) in excluded or asks_pinned(finding, pinned):
            continue
        if not planner.measured.get(finding.rule_id, frozenset()).isdisjoint(changed_facts):
            continue
        for setting, value in fix_settings(finding):
            if setting not in pinned and not target.holds(setting, value):
                raise Pin(setting, f"{label(finding)} would still ask for {value} once the target is applied")


def _number(value: object) -> float | int | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


class Values:
    """Facts and derived values of one host, each computed once."""

    def __init__(self, pack: RulePack, host: HostFacts, derived: dict[str, Value] | None = None) -> None:
        self.host = host
        self.pack = pack
        self.env = Env(host.facts, None, {}, pack.derived_by_name, {} if derived is None else derived)
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
