"""Parameters of derived values: declared in derived.yaml, read by the formula as params.NAME, set in
configuration under [tool.pgvet.params.derived.NAME] — the work_mem budget's operations a query (catalogue E4)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from pgvet.cli import app
from pgvet.engine.evaluate import configure
from pgvet.engine.loader import load_pack
from pgvet.errors import RulePackError, UsageError
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions

GIB = 1024**3
MIB = 1024**2
THREE_A_QUERY = {"derived": {"work_mem_operations": {"nodes_per_query": 3}}}


def budget_finding(params: dict[str, dict[str, object]]) -> tuple[dict[str, object], str]:
    result = lint([FIXTURES / "big-server"], LintOptions(params=params))
    finding = next(finding for finding in result.hosts[0].findings if finding.rule_id == "PGV530")
    return finding.values, finding.message


def test_the_budget_counts_two_operations_a_query_by_default() -> None:
    values, message = budget_finding({})
    # big-server: 1000 connections, 8 parallel workers, work_mem 64 MB; 3 workers and one operation at 2 GB
    assert values["work_mem_budget"] == (1000 + 8) * 2 * 64 * MIB + 3 * 2 * GIB + 2 * GIB
    assert "(max_connections 1000 + parallel workers 8) × 2 operations a query × work_mem 64.0 MiB" in message


def test_configuration_sets_the_operations_a_query() -> None:
    values, message = budget_finding(THREE_A_QUERY)
    assert values["work_mem_budget"] == (1000 + 8) * 3 * 64 * MIB + 3 * 2 * GIB + 2 * GIB
    assert "× 3 operations a query ×" in message


def test_work_mem_that_fits_divides_by_the_same_operations() -> None:
    pack = load_pack()
    formula = pack.derived_by_name["work_mem_that_fits"].formula
    assert "derived.work_mem_operations" in formula and "* 2" not in formula


def test_a_configured_pack_leaves_the_loaded_one_as_it_was() -> None:
    pack = load_pack()
    configured = configure(pack, THREE_A_QUERY)
    assert configured.derived_by_name["work_mem_operations"].param_values == {"nodes_per_query": 3}
    assert pack.derived_by_name["work_mem_operations"].param_values == {"nodes_per_query": 2}
    assert configured.rules is pack.rules
    assert configure(pack, {}) is pack


@pytest.mark.parametrize(("params", "message"), [
    ({"derived": {"work_mem_budget": {"x": 1}}},
     "params.derived.work_mem_budget: no derived value of this name has parameters "
     "(those that do: os_memory_floor, commit_limit_floor, suggested_dirty_bytes, suggested_dirty_background_bytes, "
     "work_mem_operations, pod_memory_floor)"),
    ({"derived": {"work_mem_operations": {"nodes": 3}}},
     "params.derived.work_mem_operations.nodes: derived.work_mem_operations has no parameter nodes "
     "(it has: nodes_per_query)"),
    ({"derived": {"work_mem_operations": {"nodes_per_query": "many"}}},
     "params.derived.work_mem_operations.nodes_per_query: expected a number, not 'many'"),
    ({"derived": {"work_mem_operations": 3}},
     "params.derived.work_mem_operations: expected a table of parameters, not 3"),
    # a table naming no rule was ignored: a typo left the threshold at its default without a word
    ({"commit-limit-to-high": {"max_ratio": 0.9}},
     "params.commit-limit-to-high: no rule has this id or name (did you mean commit-limit-too-high?)"),
])
def test_wrong_parameters_are_usage_errors(params: dict[str, dict[str, object]], message: str) -> None:
    with pytest.raises(UsageError) as raised:
        configure(load_pack(), params)
    assert raised.value.message == message


def test_rule_ids_and_names_are_accepted_keys() -> None:
    pack = load_pack()
    assert configure(pack, {"PGV103": {"max_ratio": 0.9}, "commit-limit-too-high": {"max_ratio": 0.9}}) is pack


def _pack(tmp_path: Path, text: str) -> Path:
    directory = tmp_path / "pack"
    directory.mkdir()
    (directory / "rules.yaml").write_text(textwrap.dedent(text), encoding="utf-8")
    return directory


def test_a_formula_reads_only_the_parameters_it_declares(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path / "cache"))
    directory = _pack(tmp_path, """\
        derived:
          - name: spare
            unit: bytes
            formula: host.ram * params.share
        """)
    with pytest.raises(RulePackError) as raised:
        load_pack([directory], builtin=False)
    assert raised.value.message.startswith("derived.spare: params.share: derived.spare has no parameter share")


def test_a_users_derived_value_with_a_parameter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path / "cache"))
    directory = _pack(tmp_path, """\
        derived:
          - name: spare
            unit: bytes
            params:
              share: {default: 0.25, description: part of the RAM kept spare}
            formula: host.ram * params.share
        rules:
          - id: ACME1
            name: acme-spare
            title: Spare memory
            severity: info
            when: derived.spare > 0
            message: "{derived.spare|size} spare"
        """)
    host = tmp_path / "host"
    host.mkdir()
    (host / "host.yaml").write_text("ram: 16GB\n")

    def message(params: dict[str, dict[str, object]]) -> str:
        result = lint([host], LintOptions(rules=[directory], params=params, select=["ACME1"]))
        return result.hosts[0].findings[0].message

    assert message({}) == "4.0 GiB spare"
    assert message({"derived": {"spare": {"share": 0.5}}}) == "8.0 GiB spare"


def test_a_rule_may_not_be_named_derived(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path / "cache"))
    directory = _pack(tmp_path, """\
        rules:
          - id: ACME1
            name: derived
            title: A rule
            severity: info
            when: host.ram > 0
            message: x
        """)
    with pytest.raises(RulePackError, match="rule name 'derived' is reserved"):
        load_pack([directory], builtin=False)


def test_explain_and_lint_read_the_configuration(tmp_path: Path) -> None:
    config = tmp_path / "pgvet.toml"
    config.write_text("[params.derived.work_mem_operations]\nnodes_per_query = 3\n")
    runner = CliRunner()
    explained = runner.invoke(app, ["explain", "derived.work_mem_operations", "--config", str(config)])
    assert explained.exit_code == 0
    assert "- `nodes_per_query` = 3 (configured; default 2) — sorts or hashes" in explained.output
    default = runner.invoke(app, ["explain", "PGV530"])
    assert "- `nodes_per_query` = 2 — sorts or hashes" in default.output
    linted = runner.invoke(app, ["lint", str(FIXTURES / "big-server"), "--config", str(config), "--format", "concise"])
    assert linted.exit_code == 1 and "× 3 operations a query ×" in linted.output


def test_facts_shows_the_derived_values_lint_computes(tmp_path: Path) -> None:
    config = tmp_path / "pgvet.toml"
    config.write_text("[params.derived.work_mem_operations]\nnodes_per_query = 3\n")
    runner = CliRunner()
    shown = runner.invoke(app, ["facts", str(FIXTURES / "big-server"), "--format", "json", "--config", str(config)])
    assert shown.exit_code == 0
    assert '"derived.work_mem_operations"' in shown.output and "3024" in shown.output  # (1000 + 8) × 3
