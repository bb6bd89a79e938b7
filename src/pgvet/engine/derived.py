"""Derived facts: named formulas (``derived:`` in any pack file), checked for cycles, evaluated lazily.

Values are memoised per host (per item for formulas that read item facts) by :class:`Env`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import TYPE_CHECKING

from pgvet.engine.ir import Value
from pgvet.engine.runtime import Env, EvalError
from pgvet.findings import Evidence
from pgvet.provenance import Source
from pgvet.snapshot.facts import Fact, HostFacts

if TYPE_CHECKING:
    from pgvet.engine.pack import DerivedFormula, RulePack

DERIVED_SOURCE = Source("<derived>")


def dependencies(formula: DerivedFormula) -> list[str]:
    return [name[8:] for name in formula.compiled.facts if name.startswith("derived.")]


def find_cycle(formulas: Mapping[str, DerivedFormula]) -> list[str] | None:
    """A dependency cycle as ``[a, b, a]``, or None."""
    state: dict[str, int] = {}  # 1 visiting, 2 done
    path: list[str] = []

    def visit(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for dependency in dependencies(formulas[name]):
            if state.get(dependency) == 1:
                return [*path[path.index(dependency):], dependency]
            if dependency not in state and (cycle := visit(dependency)) is not None:
                return cycle
        path.pop()
        state[name] = 2
        return None

    for name in formulas:
        if name not in state and (cycle := visit(name)) is not None:
            return cycle
    return None


def expand(names: Sequence[str], formulas: Mapping[str, DerivedFormula], *, keep_derived: bool = True) -> list[str]:
    """Fact names with each derived fact followed by its own inputs (recursively), without repeats."""
    out: dict[str, None] = {}
    # a stack, not a recursive nested function: that would be a reference cycle (it refers to itself), keeping
    # ``out`` until the cycle collector ran, which a lint runs seldom (run.workers.BATCH_GC_THRESHOLD)
    pending = list(reversed(names))
    while pending:
        name = pending.pop()
        if name in out:
            continue
        if name.startswith("derived."):
            if keep_derived:
                out[name] = None
            pending.extend(reversed(formulas[name[8:]].compiled.facts))
        else:
            out[name] = None
    return list(out)


def lookup(env: Env, name: str) -> tuple[Value, Source | None]:
    """A fact's value and source as a rule sees it (derived facts are evaluated; errors count as NULL)."""
    if name.startswith("derived."):
        try:
            return env.derived_value(name[8:]), DERIVED_SOURCE
        except (EvalError, TypeError, ValueError, ArithmeticError):
            return None, DERIVED_SOURCE
    if name.startswith("params."):
        return env.params.get(name[7:]), None
    item = env.item
    if item is not None and name in item:
        return item[name], item.source_of(name)
    fact = env.host.get(name)
    return (None, None) if fact is None else (fact.value, fact.source)


_FACT, _DERIVED, _PARAM = 0, 1, 2


@lru_cache(maxsize=1024)
def _kinds(names: tuple[str, ...]) -> tuple[tuple[str, int, str], ...]:
    """Each name with what it names and the key to look it up by: a rule's evidence names, split once."""
    return tuple((name, _DERIVED, name[8:]) if name.startswith("derived.") else
                 (name, _PARAM, name[7:]) if name.startswith("params.") else (name, _FACT, name) for name in names)


def evidence(env: Env, names: Sequence[str]) -> list[Evidence]:
    """The facts among ``names`` that have a value (absent facts and NULL derived values are left out);
    ``lookup`` for each name, inlined, and derived values read from the caches without Env.derived_value's
    frame when computed already: a finding has tens of names. The entries of host-wide facts and derived
    values are made once a host (``env.host_evidence``) and shared by its findings: a host's findings
    name 240 facts, of which 110 distinct, and a report then writes each shared entry once
    (report/jsonl.py)."""
    out: list[Evidence] = []
    append, new = out.append, tuple.__new__  # Evidence(...) runs the named tuple's __new__ in Python
    item, host, shared = env.item, env.host, env.host_evidence
    for name, kind, key in _kinds(tuple(names)):
        value: Value
        if kind == _FACT:
            if item is not None and (value := item.get(name)) is not None:
                append(new(Evidence, (name, value, item.source_of(name))))
                continue
            entry = shared.get(name)
            if entry is None:
                fact = host.get(name)
                if fact is None or fact.value is None:
                    continue
                entry = shared[name] = new(Evidence, (name, fact.value, fact.source))
            append(entry)
        elif kind == _DERIVED:
            item_scope = env.derived[key].item_scope
            entry = None if item_scope else shared.get(name)
            if entry is None:
                cache = env.item_cache if item_scope else env.host_cache
                if key in cache:
                    value = cache[key]
                else:
                    try:
                        value = env.derived_value(key)
                    except (EvalError, TypeError, ValueError, ArithmeticError):
                        continue
                if value is None:
                    continue
                entry = new(Evidence, (name, value, DERIVED_SOURCE))
                if not item_scope:
                    shared[name] = entry
            append(entry)
        else:
            value = env.params.get(key)
            if value is not None:
                append(new(Evidence, (name, value, None)))
    return out


def derived_values(pack: RulePack, host: HostFacts, names: AbstractSet[str] | None = None,
                   cache: dict[str, Value] | None = None) -> dict[str, Fact]:
    """Every host-level derived fact that is not NULL, as facts with source ``<derived>`` (``pgvet facts``).

    ``names``: only these (``derived.NAME``); ``cache``: values already computed on this host (evaluate_host's).
    """
    env = Env(host.facts, None, {}, pack.derived_by_name, {} if cache is None else cache)
    out: dict[str, Fact] = {}
    for formula in pack.derived:
        if formula.item_scope is not None or (names is not None and f"derived.{formula.name}" not in names):
            continue
        value, _ = lookup(env, f"derived.{formula.name}")
        if value is not None:
            out[f"derived.{formula.name}"] = Fact(f"derived.{formula.name}", value, DERIVED_SOURCE)
    return out


def derived_inputs(pack: RulePack, host: HostFacts, name: str) -> list[Evidence]:
    """What one derived value was computed from (``pgvet explain derived.NAME`` on a host)."""
    env = Env(host.facts, None, {}, pack.derived_by_name, {})
    formula = pack.derived_by_name[name.removeprefix("derived.")]
    return evidence(env, expand(formula.compiled.facts, pack.derived_by_name))


def missing_facts(env: Env, names: Sequence[str]) -> tuple[str, ...]:
    """The facts that made an expression NULL: absent facts, looked for through NULL derived values."""
    out: dict[str, None] = {}
    _add_missing(env, names, out)
    return tuple(out)


def _add_missing(env: Env, names: Sequence[str], out: dict[str, None]) -> None:
    """missing_facts' walk. A module function: a nested one that calls itself is a reference cycle, which kept
    the host's facts (through ``env``) until the cycle collector ran — a host's not-evaluated rules made
    eight such cycles, the most of what the collector had to find in a batch of hosts."""
    for name in names:
        if name in out:
            continue
        value, _ = lookup(env, name)
        if value is not None:
            continue
        if name.startswith("derived."):
            _add_missing(env, env.derived[name[8:]].compiled.facts, out)
        else:
            out[name] = None
