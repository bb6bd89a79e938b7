"""A world: a host as a target makes it — its facts with the planned values, and what the kernel and
PostgreSQL then show, the measured facts replaced by the derived formulas that predict them."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from pgvet.engine.ir import Value
from pgvet.engine.pack import DerivedFormula
from pgvet.engine.planner.target import Pin, Setting
from pgvet.engine.runtime import Env, EvalError
from pgvet.inputs.sysctl import PAIR_PARTNERS, sysctl_value
from pgvet.pgparams import NEWEST_MAJOR, Param, load_param_table
from pgvet.pgparams.units import InvalidValue, parse_value
from pgvet.provenance import Source
from pgvet.snapshot.facts import Fact, FactValue, HostFacts, Item

if TYPE_CHECKING:
    from pgvet.engine.planner.planner import Planner

# Where a planned value comes from, in the facts of a world (never a file: findings point at none of them).
PLANNED = Source("<target>")


@dataclass(slots=True, eq=False, repr=False)
class World:
    """A host as the target makes it: its facts with planned values, the facts planned so far changed, and the
    host-wide derived values computed on it so far (kept by the next world for the formulas whose inputs it
    leaves as they are: a stage reads most of them, and most stages change few facts)."""

    host: HostFacts
    changed: frozenset[str] = frozenset()
    derived: dict[str, Value] = field(default_factory=dict)

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
        except Pin:
            return False
        if isinstance(current, float) or isinstance(wanted, float):
            return isinstance(current, int | float) and isinstance(wanted, int | float) and math.isclose(
                current, wanted, rel_tol=1e-9)
        return current == wanted

    @classmethod
    def rebooted(cls, host: HostFacts, planner: Planner, derived: dict[str, Value] | None = None) -> World:
        """The host once rebooted with its own settings: a fix is applied with `sysctl --system` and a reboot,
        which writes the declared kernel values (a ratio/bytes pair's zeroing included: CommitLimit as they make
        it, not as measured) and reserves the huge page pool whole (a pool the running kernel could not find all
        of included), and PostgreSQL restarted, which runs what its files set (a live server's pending changes).
        ``derived``: host-wide derived values computed on the host as it is (left as they are). The ``as_captured``
        ones are computed there and kept in this world and every world made from it (what others hold)."""
        declared = [name for name in host.facts if name.startswith("sysctl_conf.")]
        captured = planner.captured_values(host, {} if derived is None else derived)
        replaced = booted_values(host)
        changed = set(replaced)
        items = dict(host.items)
        if any(item.get("declared.running", item["declared.value"]) != item["declared.value"]
               for item in items.get("declared", ())):  # once applied, the kernel runs what the files declare
            items["declared"] = [item if "declared.running" not in item else
                                 Item({**item, "declared.running": item["declared.value"]}, item.source, item.sources)
                                 for item in items["declared"]]
            changed.add("declared.running")
        # the rest of the host kept (the files a suppression may stand in, where each kernel key is declared)
        host = replace(host, facts={**host.facts, **replaced}, items=items)
        kept = {**planner.derived_kept({} if derived is None else derived, changed), **captured}
        return cls(host, frozenset(changed), kept).with_values(
            {}, planner, also=("sysctl.vm.nr_hugepages", *declared, *changed))

    def with_values(self, values: Mapping[Setting, str], planner: Planner, also: Iterable[str] = ()) -> World:
        """The world with these settings, and what the kernel and PostgreSQL then show (``also``: facts to take as
        changed besides)."""
        facts = dict(self.host.facts)
        touched: set[str] = set()  # the facts this call writes, or drops
        items = dict(self.host.items)
        declared = {item["declared.key"]: item for item in items.get("declared", [])}
        for setting, text in values.items():
            value = _parsed(self.host, setting, text)
            _put(facts, touched, setting.fact, value, text)
            if setting.kind == "postgresql":
                if setting.declared_fact in facts:  # a live server: its files get the value too
                    _put(facts, touched, setting.declared_fact, value, text)
                continue
            _put(facts, touched, setting.declared_fact, value, text)
            fields: dict[str, FactValue] = {"declared.key": setting.name, "declared.value": str(value),
                                            "declared.written": str(value), "declared.running": str(value),
                                            "declared.ignore_errors": False}
            declared[setting.name] = Item(fields, PLANNED)
            partner = PAIR_PARTNERS.get(setting.name)
            if partner is not None and Setting("sysctl", partner) not in values:
                # writing one of a ratio/bytes pair zeroes the other; the fix comments out the other's lines
                for name in (f"sysctl.{partner}", f"sysctl_conf.{partner}"):
                    if name in facts:
                        _put(facts, touched, name, 0, "0")
                declared.pop(partner, None)
        if "declared" in items:
            items["declared"] = list(declared.values())
            touched.update(("declared.value", "declared.written", "declared.running", "declared.zeroed_by"))
        host = replace(self.host, facts=facts, items=items)
        # a prediction is computed again when a fact it reads has just changed; predictions read each other (and
        # themselves: the pool of other sizes is read from Hugetlb), so until none moves
        fresh = touched | set(also)
        kept = planner.derived_kept(self.derived, touched)
        for _ in range(len(planner.predictions) + 2):
            due = [formula for formula in planner.predictions if not fresh.isdisjoint(formula.inputs)]
            if not due:
                break
            # a round starts from the values none of its predictions can move (as computed afresh)
            moving = {predicted for formula in due if (predicted := formula.predicts) is not None}
            env = Env(host.facts, None, {}, planner.pack.derived_by_name, planner.derived_kept(kept, moving))
            fresh = {formula.predicts for formula in due if _predict(formula, env, facts, touched)}  # type: ignore[misc]
            kept = planner.derived_kept(kept, fresh)
        return World(host, self.changed | touched, kept)


def booted_values(host: HostFacts) -> dict[str, Fact]:
    """The running values the host's own files replace once applied (`sysctl --system` or a reboot, PostgreSQL
    restarted), by name, with the declared fact (its value and where it is declared)."""
    booted: dict[str, Fact] = dict(host.pending_from_files)
    for name, fact in host.facts.items():
        if name.startswith("sysctl_conf."):
            key = name.removeprefix("sysctl_conf.")
            running = host.facts.get(f"sysctl.{key}")
            if running is not None and running.value != fact.value:
                booted[running.name] = fact._replace(name=running.name)
                # the write changes the key, so its handler zeroes the other key of its pair (vm.dirty_ratio = 20
                # over bytes set at run time); a partner the files declare has its own outcome already
                partner = PAIR_PARTNERS.get(key)
                other = None if partner is None else host.facts.get(f"sysctl.{partner}")
                if other is not None and other.value != 0 and f"sysctl_conf.{partner}" not in host.facts:
                    booted[other.name] = Fact(other.name, 0, fact.source, fact.occurrences)
    return booted


def _predict(formula: DerivedFormula, env: Env, facts: dict[str, Fact], touched: set[str]) -> bool:
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
    touched.add(name)
    return True


def _put(facts: dict[str, Fact], touched: set[str], name: str, value: FactValue, text: str) -> None:
    facts[name] = Fact(name, value, PLANNED, (), text)
    touched.add(name)


def postgresql_param(host: HostFacts, setting: Setting) -> tuple[int, Param | None]:
    """The host's major version (the newest when unknown) and the setting's parameter in it (None: it has none)."""
    major_fact = host.facts.get("pg.catalog_version")
    major = major_fact.value if major_fact is not None and isinstance(major_fact.value, int) else NEWEST_MAJOR
    return major, load_param_table(major).get(setting.name)


def _parsed(host: HostFacts, setting: Setting, text: str) -> FactValue:
    """A fix's value as the host's facts hold it (canonical units); Pin when PostgreSQL would refuse it."""
    if setting.kind == "sysctl":
        return sysctl_value(text)
    major, param = postgresql_param(host, setting)
    if param is None:
        raise Pin(setting, f"PostgreSQL {major} has no parameter {setting.name}")
    try:
        return parse_value(param, text).canonical
    except InvalidValue as invalid:
        raise Pin(setting, f"PostgreSQL would refuse {text!r}: {invalid}") from None
