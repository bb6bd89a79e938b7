"""A world (engine/planner/world.py): the derived values it keeps from the world it was made from."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from pgvet.engine.planner import Setting
from pgvet.engine.planner.world import World
from pgvet.engine.runtime import Env, EvalError
from pgvet.run.lint import LintRun
from pgvet.run.options import LintOptions
from pgvet.snapshot.load import load_host


def _value(env: Env, name: str) -> object:
    try:
        return env.derived_value(name)
    except (EvalError, TypeError, ValueError, ArithmeticError) as error:
        return type(error)


@pytest.mark.parametrize("values", [
    {Setting("postgresql", "shared_buffers"): "1GB"},
    {Setting("sysctl", "vm.nr_hugepages"): "9000", Setting("sysctl", "vm.overcommit_ratio"): "80"},
    {Setting("sysctl", "vm.overcommit_kbytes"): "1000000"},  # zeroes its partner, vm.overcommit_ratio
    {Setting("postgresql", "work_mem"): "8MB", Setting("postgresql", "max_connections"): "300"},
])
def test_a_world_keeps_only_the_derived_values_its_change_leaves_as_they_are(values: dict[Setting, str]) -> None:
    """Every host-wide derived value read through the kept cache is the one computed afresh on the new world,
    and the values that read none of the changed facts were kept."""
    linter = LintRun([FIXTURES / "big-server"], LintOptions()).linter
    planner, formulas = linter.planner, linter.pack.derived_by_name
    host_wide = [name for name, formula in formulas.items() if formula.item_scope is None]
    world = World.rebooted(load_host(FIXTURES / "big-server", None, wanted=linter.wanted), planner)
    on_world = Env(world.host.facts, None, {}, formulas, world.derived)
    for name in host_wide:
        _value(on_world, name)
    after = world.with_values(values, planner)
    kept = set(after.derived)
    assert kept and kept < set(world.derived)
    touched = {setting.fact for setting in values}
    assert all(planner.derived_inputs[name].isdisjoint(touched) for name in kept)
    fresh = Env(after.host.facts, None, {}, formulas, {})
    through_kept = Env(after.host.facts, None, {}, formulas, after.derived)
    assert {name: _value(through_kept, name) for name in host_wide} == {name: _value(fresh, name)
                                                                         for name in host_wide}
