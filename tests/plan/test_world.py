"""A world (engine/planner/world.py): the derived values it keeps from the world it was made from."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from pgvet.engine.evaluate import evaluate_hosts
from pgvet.engine.ir import Value
from pgvet.engine.planner import Setting
from pgvet.engine.planner.invariants import running_overcommit
from pgvet.engine.planner.world import World
from pgvet.engine.runtime import Env, EvalError
from pgvet.findings import HostResult
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
    """The new world's facts and predictions are those made from the world without its derived values but those
    kept as captured; every host-wide derived value read through the kept ones is the one computed afresh on the
    new world (with the captured ones); and the values that read none of the changed facts were kept."""
    linter = LintRun([FIXTURES / "big-server"], LintOptions()).linter
    planner, formulas = linter.planner, linter.pack.derived_by_name
    host_wide = [name for name, formula in formulas.items() if formula.item_scope is None]
    world = World.rebooted(load_host(FIXTURES / "big-server", None, wanted=linter.wanted), planner)
    on_world = Env(world.host.facts, None, {}, formulas, world.derived)
    for name in host_wide:
        _value(on_world, name)
    after = world.with_values(values, planner)
    captured = {name: world.derived[name] for name in planner.captured}
    afresh = World(world.host, world.changed, dict(captured)).with_values(values, planner)
    assert after.host.facts == afresh.host.facts and after.changed == afresh.changed
    kept = set(after.derived) - set(captured)
    assert kept and kept < set(world.derived)
    touched = {setting.fact for setting in values}
    assert all(set(formulas[name].inputs).isdisjoint(touched) for name in kept)
    fresh = Env(after.host.facts, None, {}, formulas, dict(captured))
    through_kept = Env(after.host.facts, None, {}, formulas, after.derived)
    assert {name: _value(through_kept, name) for name in host_wide} == {name: _value(fresh, name)
                                                                         for name in host_wide}


@pytest.mark.parametrize("bundled", ["big-server", "small-vm", "well-tuned", "config-repo"])
def test_a_target_started_from_the_hosts_derived_values_is_the_target_worked_out_afresh(bundled: str) -> None:
    """The planner's worlds start from the derived values the host's evaluation computed (as a lint hands them):
    the same target and fixes as from none, and the host's own values left as they were (the reports read them)."""
    linter = LintRun([FIXTURES / bundled], LintOptions()).linter
    targets = []
    for seeded in (False, True):
        host = load_host(FIXTURES / bundled, None, wanted=linter.wanted)
        derived: dict[str, Value] = {}
        [result] = evaluate_hosts(linter.pack, [host], plan=linter.rules, host_caches=[derived])
        assert isinstance(result, HostResult) and derived
        before = dict(derived)
        target = linter.planner.plan(host, result, derived if seeded else None)
        linter.planner.fix_findings(result, target)
        assert derived == before
        targets.append((target, [(finding.rule_id, finding.subject, finding.fix) for finding in result.findings]))
    assert targets[0] == targets[1]


def test_the_running_hosts_commit_limit_is_not_computed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planner's look at the running host's CommitLimit (running_overcommit) starts from the derived values the
    host's evaluation computed, rather than computing them again, and leaves them as they were."""
    linter = LintRun([FIXTURES / "big-server"], LintOptions()).linter
    host = load_host(FIXTURES / "big-server", None, wanted=linter.wanted)
    derived: dict[str, Value] = {}
    evaluate_hosts(linter.pack, [host], plan=linter.rules, host_caches=[derived])
    assert "commit_limit" in derived and host.facts["sysctl.vm.overcommit_memory"].value == 2
    before = dict(derived)
    booted = World.rebooted(host, linter.planner, derived)
    computed: list[str] = []
    derived_value = Env.derived_value

    def recording(env: Env, name: str) -> Value:  # what is computed on the running host (not on a world)
        cache = env.item_cache if env.derived[name].item_scope else env.host_cache
        if env.host is host.facts and name not in cache:
            computed.append(name)
        return derived_value(env, name)

    monkeypatch.setattr(Env, "derived_value", recording)
    assert running_overcommit(linter.planner, host, booted, lambda world: False, derived) == {}
    assert not set(computed) & set(before)
    assert derived == before
