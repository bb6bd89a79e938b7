"""Numbers no double holds (issue #25, item 9; pgvet/numbers.py): refused where they enter, at their file and
line, and a formula that computes one is not evaluated — so that no report holds NaN or Infinity (which no
JSON reader takes) and Python never has to write an integer of more than 4 300 digits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from pgvet.engine.build import build_pack
from pgvet.engine.evaluate import rule_params
from pgvet.engine.pack import PackSource
from pgvet.errors import ParseError, RulePackError, UsageError
from pgvet.report import FORMATS, ReportOptions
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions

RULE = """rules:
  - id: NUM1
    name: numbers
    title: t
    severity: warning
    when: {when}
    message: "{message}"
    values: {{v: {value}}}
    params:
      big: {{default: 0x{big}}}
    why: w
"""


def pack_text(when: str = "TRUE", message: str = "m", value: str = "1", big: str = "1") -> str:
    return RULE.format(when=when, message=message, value=value, big=big)


@pytest.mark.parametrize(("literal", "says"), [
    ("9" * 5000, "99999999999999999999…(5000 characters): beyond what a double holds"),
    ("9" * 400, "…(400 characters): a number of 1329 bits, beyond what a double holds"),
    ("1e400", "1e400: not a finite number (inf)"),
], ids=["5000 digits", "400 digits", "1e400"])
def test_a_literal_no_double_holds_is_refused_at_its_line(literal: str, says: str) -> None:
    with pytest.raises(RulePackError) as raised:
        build_pack([PackSource("pack.yaml", pack_text(when=f"sysctl.vm.swappiness < {literal}"))])
    assert says in raised.value.message and raised.value.message.startswith("NUM1.when:")
    assert raised.value.source is not None and raised.value.source.line == 6


def _lint_with(pack: str, tmp_path: Path) -> tuple[object, Path]:
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "numbers.yaml").write_text(pack)
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "small-vm", host)
    return lint([host], LintOptions(rules=[tmp_path / "pack"], select=["NUM1"])), host


def _strict_json(text: str) -> object:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in a JSON report")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(("pack", "reason"), [
    (pack_text(value="1e300 * 1e300"), "NUM1.values.v is out of range: not a finite number (inf)"),
    (pack_text(value="1e300 * 1e300 - 1e300 * 1e300"), "NUM1.values.v is out of range: not a finite number (nan)"),
    (pack_text(value="params.big * params.big", big="f" * 250), "NUM1.values.v is out of range: a number of 2000 bits"),
    (pack_text(when="derived.huge > 0") + "derived:\n  - {name: huge, unit: number, description: d, "
                                         "formula: 1e200 * 1e200}\n", "derived.huge is out of range"),
    # a message hole of 17 000 bits: more than the 4300 digits Python writes
    (pack_text(message="{" + " * ".join(["params.big"] * 17) + "}", big="f" * 250), "a number of 17000 bits"),
], ids=["infinite value", "NaN value", "value beyond doubles", "infinite derived value", "huge message hole"])
def test_a_formula_out_of_range_is_not_evaluated_and_every_report_stays_valid(pack: str, reason: str,
                                                                              tmp_path: Path) -> None:
    result, _ = _lint_with(pack, tmp_path)
    assert not result.errors, result.errors  # type: ignore[attr-defined]
    [host] = result.hosts  # type: ignore[attr-defined]
    assert not host.findings
    [record] = [record for record in host.not_evaluated if record.rule_id == "NUM1"]
    assert reason in (record.reason or ""), record.reason
    for fmt in FORMATS:
        text = FORMATS[fmt](result, ReportOptions(color=False))  # type: ignore[arg-type]
        if fmt in ("json", "sarif", "gitlab"):
            _strict_json(text)
        elif fmt == "jsonl":
            for line in text.splitlines():
                _strict_json(line)
        assert "Infinity" not in text and "NaN" not in text


def test_facts_leave_out_a_derived_value_out_of_range(tmp_path: Path) -> None:
    from pgvet.engine.derived import derived_values
    from pgvet.engine.loader import load_pack
    from pgvet.report.facts import render_facts
    from pgvet.snapshot.load import load_host

    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "numbers.yaml").write_text(
        "derived:\n  - {name: huge, unit: number, description: d, formula: 1e200 * 1e200}\n")
    host = load_host(FIXTURES / "small-vm")
    host.facts.update(derived_values(load_pack([tmp_path / "pack"]), host))
    assert "derived.huge" not in host.facts
    _strict_json(render_facts(host, "json"))


@pytest.mark.parametrize("override", [float("inf"), float("nan"), 2**1100])
def test_a_configured_parameter_out_of_range_is_a_usage_error(override: float) -> None:
    [rule] = build_pack([PackSource("pack.yaml", pack_text())]).rules
    with pytest.raises(UsageError, match=r"params\.numbers\.big: .*(not a finite number|beyond what a double)"):
        rule_params(rule, {"numbers": {"big": override}})


PG_SETTINGS = """{{"format": 1, "server": {{"server_version_num": 160002}}, "databases": [], "unavailable": [],
 "settings": [{{"name": "random_page_cost", "setting": "{setting}", "vartype": "real"}}],
 "statistics": {{
   "connections": {statistic}}}}}
"""


@pytest.mark.parametrize(("statistic", "says"), [
    ("NaN", "NaN is not a number pgvet reads (it is not JSON)"),
    ("Infinity", "Infinity is not a number pgvet reads"),
    ("-Infinity", "-Infinity is not a number pgvet reads"),
    ("1e400", "1e400: not a finite number (inf)"),
    ("9" * 500, "…(500 characters): beyond what a double holds"),
], ids=["NaN", "Infinity", "-Infinity", "1e400", "500 digits"])
def test_pg_settings_json_numbers_out_of_range_are_refused_at_their_line(statistic: str, says: str) -> None:
    from pgvet.inputs.pg_settings import parse_pg_settings_json

    with pytest.raises(ParseError) as raised:
        parse_pg_settings_json(PG_SETTINGS.format(setting="4", statistic=statistic), "pg_settings.json")
    assert says in raised.value.message
    assert raised.value.source is not None and raised.value.source.line == 4


@pytest.mark.parametrize("setting", ["inf", "-inf", "nan", "1e400"])
def test_a_real_setting_no_double_holds_stays_a_text(setting: str) -> None:
    from pgvet.inputs.pg_settings import live_facts, parse_pg_settings_json

    server = parse_pg_settings_json(PG_SETTINGS.format(setting=setting, statistic="1"), "pg_settings.json")
    assert live_facts(server)["pg.random_page_cost"].value == setting  # a number rule then says it is no number
