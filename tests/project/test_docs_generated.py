"""Generated documentation stays in step with the rule pack."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from conftest import PROJECT
from pgvet.cli import app
from pgvet.engine.loader import load_pack
from pgvet.report.rules import render_rules


def test_rule_reference_is_up_to_date() -> None:
    expected = render_rules(load_pack(), "markdown")
    current = (PROJECT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == expected, "docs/rules.md is stale: run `pgvet rules --format markdown > docs/rules.md`"


def test_every_rule_has_a_page_with_fix_or_text_and_references() -> None:
    pack = load_pack()
    for rule in pack.rules:
        assert rule.why.strip(), rule.id
        assert rule.references, rule.id
        assert rule.fix is not None and (rule.fix.sysctl or rule.fix.postgresql or rule.fix.text), rule.id
        expects = {example.expect for example in rule.examples}
        assert {"fire", "pass"} <= expects, f"{rule.id} needs firing and passing examples"


def test_readme_counts_the_rules() -> None:
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    assert f"{len(load_pack().rules)} rules in `rules/*.yaml`" in readme


def test_explain_shows_the_message_values_and_the_formulas_of_the_derived_facts() -> None:
    # what the SARIF help promises: "`pgvet explain ID` shows the condition, the formulas and the parameters"
    from pgvet.report.rules import explain_rule

    pack = load_pack()
    page = explain_rule(pack, "PGV104")
    assert "CommitLimit = {derived.commit_limit|size}" in page  # the message, with the values it shows
    assert "`commit_limit_ratio` = `round(derived.commit_limit_ratio, 3)`" in page
    for name in ("commit_limit", "commit_limit_ratio", "swap_size"):  # used directly, and through another
        derived = pack.derived_by_name[name]
        assert f"derived.{name}" in page and derived.formula.strip() in page, name


def test_the_rule_reference_links_each_rule_to_its_derived_facts() -> None:
    reference = render_rules(load_pack(), "markdown")
    page = reference.split("## PGV104 ", 1)[1].split("\n## ", 1)[0]
    assert "[derived.commit_limit](#derivedcommit_limit)" in page
    assert "## derived.commit_limit\n" in reference


def test_the_rule_authoring_example_is_a_rule_pack_that_loads_and_passes(tmp_path: Path) -> None:
    # docs/rule-authoring.md's example failed to load as written (a subject reading mount.point in a host rule)
    guide = (PROJECT / "docs" / "rule-authoring.md").read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(rules:\n.*?)```", guide, re.DOTALL)
    assert example is not None
    # a pack of one's own: PGV ids are pgvet's, and the name must not clash with pgvet's own rule
    text = example.group(1).replace("PGV103", "OPS103").replace("commit-limit-too-high", "ops-commit-limit")
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "ops.yaml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["rules", "test", str(tmp_path / "pack")])
    assert result.exit_code == 0 and result.output == "3 passed, 0 failed\n", result.output


def test_the_readme_host_yaml_example_is_valid_and_shows_every_key(tmp_path: Path) -> None:
    from pgvet.inputs.host_yaml import KNOWN_KEYS
    from pgvet.snapshot.load import load_host

    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(.*?)```", readme, re.DOTALL)
    assert example is not None
    (tmp_path / "host.yaml").write_text(example.group(1), encoding="utf-8")
    load_host(tmp_path)  # raises at the line of a key or value host.yaml does not accept
    written = {line.split(":")[0] for line in example.group(1).splitlines() if line[:1].isalpha()}
    assert written == set(KNOWN_KEYS)


def test_the_readme_quick_start_installs_in_a_virtual_environment_and_says_what_the_report_says() -> None:
    """Debian 12's and Ubuntu 24.04's own Python refuse `pip install .` outside a virtual environment (PEP 668): the
    quick start makes one first (.ci/run runs it as written in a clean clone). Its description of big-server gives
    the RAM as the report does (it said 192 GB where the report says 188.4 GiB)."""
    from pgvet.report import ReportOptions
    from pgvet.report.text import render as render_text
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quick start\n.*?```sh\n(.*?)```", readme, re.DOTALL)
    assert block is not None
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    assert commands[0].startswith("python3 -m venv ") and ". .venv/bin/activate" in commands[0]
    assert commands[1] == "pip install . && pgvet lint fixtures/big-server"
    report = render_text(lint([PROJECT / "fixtures" / "big-server"], LintOptions()), ReportOptions(color=False))
    ram = re.search(r"Where the RAM goes \(([^)]+)\)", report)
    assert ram is not None and f"a {ram.group(1)} database server" in readme


def test_the_inputs_table_of_the_facts_reference_is_the_registry() -> None:
    from pgvet.inputs.registry import inputs_markdown

    page = (PROJECT / "docs" / "facts.md").read_text(encoding="utf-8")
    table = page.split("<!-- inputs: generated from src/pgvet/inputs/registry.py (inputs_markdown) -->\n", 1)[1]
    assert table.split("<!-- end of inputs -->", 1)[0] == inputs_markdown(), (
        "docs/facts.md's inputs table is stale: paste pgvet.inputs.registry.inputs_markdown() between its markers")


def test_the_kinds_table_of_the_integrations_page_is_the_documents_package_and_each_kind_has_its_page() -> None:
    from pgvet.inputs.documents import document_kinds, kinds_markdown

    page = (PROJECT / "docs" / "integrations.md").read_text(encoding="utf-8")
    table = page.split("<!-- kinds: generated from src/pgvet/inputs/documents/ (kinds_markdown) -->\n", 1)[1]
    assert table.split("<!-- end of kinds -->", 1)[0] == kinds_markdown(), (
        "docs/integrations.md's kinds table is stale: paste pgvet.inputs.documents.kinds_markdown() between the "
        "markers")
    for kind in document_kinds():
        assert (PROJECT / "docs" / "integrations" / f"{kind.name}.md").is_file(), kind.name
