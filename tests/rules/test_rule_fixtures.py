"""Every kernel, storage, CPU and consistency rule (catalogue A, B, C, L) fires on a fixture host built for it.

fixtures/rules/<rule id>-<name>/ holds the fewest input files that make the rule's case; the README there
shows what pgvet says on each (scripts/rule_fixtures.py writes it). fixtures/well-tuned, where nothing
fires, is the passing example of all of them (tests/rules/test_rules_catalogue.py).
"""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from pgvet.engine.loader import load_pack
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions

RULE_FIXTURES = FIXTURES / "rules"
# Catalogue A (1xx), B (2xx), C (3xx) and L (90x; PGV903's host holds a live server's pg_settings.json,
# captured by `pgvet collect`).
SECTIONS = ("PGV1", "PGV2", "PGV3", "PGV90")

rule_fixtures = pytest.importorskip("rule_fixtures")  # scripts/ is on the path (tests/conftest.py)


def fixture_hosts() -> dict[str, str]:
    return {path.name.split("-", 1)[0]: path.name for path in sorted(RULE_FIXTURES.iterdir()) if path.is_dir()}


def test_every_machine_rule_has_its_fixture_host() -> None:
    rules = {rule.id: rule.name for rule in load_pack().rules if rule.id.startswith(SECTIONS)}
    hosts = fixture_hosts()
    assert sorted(set(rules) - set(hosts)) == []
    assert sorted(set(hosts) - set(rules)) == []
    # the directory is named after the rule, so a renamed rule renames its fixture
    assert {host: f"{rule_id}-{rules[rule_id]}" for rule_id, host in hosts.items()} == {
        host: host for host in hosts.values()
    }


def test_each_fixture_host_fires_the_rule_it_was_built_for() -> None:
    hosts = fixture_hosts()
    result = lint([RULE_FIXTURES / name for name in hosts.values()], LintOptions())
    assert result.errors == []
    fired = {host.host_facts.name: {finding.rule_id for finding in host.findings} for host in result.hosts}
    assert [name for rule_id, name in hosts.items() if rule_id not in fired[name]] == []
    # only the case shows: nothing else fires, but where the case itself is seen by other rules (the
    # Percona-sized host's shared_buffers is also a large share of RAM without huge pages; cfq in a VM
    # needs a VM; the huge pages sysctl.d asks for and the kernel could not allocate, or that the RAM cannot
    # hold, are also a declared value the running kernel does not hold)
    extra = {name: sorted(rules - {name.split("-", 1)[0]}) for name, rules in fired.items()}
    assert {name: rules for name, rules in extra.items() if rules} == {
        "PGV114-huge-pages-not-allocated": ["PGV901"],
        "PGV118-huge-page-pool-above-ram": ["PGV114", "PGV901"],
        "PGV120-page-tables-estimate-high": ["PGV501", "PGV520"],
        "PGV217-cfq-in-virtual-machine": ["PGV301"],
    }


@pytest.mark.parametrize("rule_id, values", [
    ("PGV103", {"commit_limit": 16121147392, "commit_limit_ratio": 0.956}),
    ("PGV104", {"commit_limit": 19327352832, "commit_limit_ratio": 0.563}),
    ("PGV110", {"needed": 4219, "available": 4096}),
    ("PGV114", {"requested": 4400, "allocated": 3900}),
    ("PGV121", {"page_tables": 25 * 1024**3}),
    ("PGV901", {"key": "vm.min_free_kbytes", "declared": "262144", "running": "67584"}),
    ("PGV904", {"key": "vm.dirty_bytes", "written": "536870912", "effective": "0", "zeroed_by": "vm.dirty_ratio = 10"}),
    ("PGV903", {"parameter": "work_mem", "in_files": "32MB", "running": "4MB"}),
])
def test_fixture_hosts_carry_the_computed_values(rule_id: str, values: dict[str, object]) -> None:
    [host] = lint([RULE_FIXTURES / fixture_hosts()[rule_id]], LintOptions()).hosts
    [finding] = [finding for finding in host.findings if finding.rule_id == rule_id]
    assert {name: finding.values[name] for name in values} == values


@pytest.mark.parametrize("rule_id, fix", [
    ("PGV103", {"vm.overcommit_ratio": "69"}),
    ("PGV104", {"vm.overcommit_ratio": "73"}),
    ("PGV110", {"vm.nr_hugepages": "4304"}),  # huge_pages is on already: no change
])
def test_fixture_hosts_carry_the_fix_of_their_target(rule_id: str, fix: dict[str, str]) -> None:
    [host] = lint([RULE_FIXTURES / fixture_hosts()[rule_id]], LintOptions()).hosts
    [finding] = [finding for finding in host.findings if finding.rule_id == rule_id]
    assert {**finding.fix.sysctl, **finding.fix.postgresql} == fix


def test_fixture_readme_shows_what_pgvet_says_today() -> None:
    current = (RULE_FIXTURES / "README.md").read_text(encoding="utf-8")
    assert current == rule_fixtures.readme(), (
        "fixtures/rules/README.md is stale: run `python scripts/rule_fixtures.py > fixtures/rules/README.md`"
    )
