"""Evaluating a pack on a host: findings, evidence, locations, fingerprints, not-evaluated records, formats."""

from __future__ import annotations

import dataclasses
import pickle
import textwrap
from pathlib import Path

import pytest

from pgvet.engine.compiler import CompileContext, compile_expression, compile_template
from pgvet.engine.evaluate import evaluate_host, fingerprint, make_finding
from pgvet.engine.loader import load_pack
from pgvet.engine.pack import FixTemplates, Rule, RulePack
from pgvet.engine.render import (
    FORMATS,
    format_duration,
    format_size,
    format_sizes,
    format_value,
    render,
    render_setting,
)
from pgvet.engine.runtime import Env, EvalError
from pgvet.errors import UsageError
from pgvet.findings import Evidence, Fix, HostResult
from pgvet.provenance import Source
from pgvet.snapshot.facts import Fact, FactValue, HostFacts, Item

GB = 1024**3
SYSCTL = Source("hosts/db1/sysctl.txt", 12)
MEMINFO = Source("hosts/db1/meminfo.txt", 1)

PACK_TEXT = """\
rules:
  - id: ACME1
    name: commit-limit-high
    title: CommitLimit high
    severity: warning
    tags: [memory]
    applies: sysctl.vm.overcommit_memory = 2
    when: derived.commit_limit > params.max_ratio * host.ram
    params: {max_ratio: {default: 0.8}}
    values: {limit: derived.commit_limit, ratio: "round(derived.commit_limit_ratio, 3)"}
    message: "CommitLimit {derived.commit_limit|size} is {derived.commit_limit_ratio|pct} of {host.ram|size}"
    fix:
      sysctl: {vm.overcommit_ratio: "{derived.suggested_overcommit_ratio}"}
      postgresql: {huge_pages: on}
      text: "Lower the ratio to {derived.suggested_overcommit_ratio}."
    why: Because.
    references: [Somewhere]
  - id: ACME2
    name: noatime
    title: no noatime
    severity: info
    scope: mount
    subject: "{mount.point}"
    applies: mount.holds_pgdata
    when: NOT has_option(mount.options, 'noatime')
    message: "{mount.point} is mounted without noatime ({mount.options})"
  - id: ACME3
    name: text-arith
    title: runtime error
    severity: info
    when: sysctl.kernel.foo + 1 > 0
    message: boom
  - id: ACME5
    name: fix-needs-a-fact
    title: a fix whose value needs a fact
    severity: info
    when: host.ram > 0
    message: "{host.ram|size}"
    fix:
      sysctl: {vm.nr_hugepages: "{ceil(host.ram / meminfo.hugepagesize / 2)}", vm.swappiness: "10"}
      postgresql: {work_mem: "{sysctl.kernel.absent}kB"}
  - id: ACME4
    name: located
    title: located elsewhere
    severity: info
    when: host.ram > 0
    location: sysctl.vm.swappiness
    message: "{host.ram|size}"
"""


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> RulePack:
    directory = tmp_path_factory.mktemp("pack")
    (directory / "rules.yaml").write_text(PACK_TEXT)
    mp = pytest.MonkeyPatch()
    mp.setenv("PGVET_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    try:
        return load_pack([directory])
    finally:
        mp.undo()


def make_host(**overrides: object) -> HostFacts:
    host = HostFacts(name="db1", root="hosts/db1")
    facts: dict[str, tuple[object, Source]] = {
        "sysctl.vm.overcommit_memory": (2, SYSCTL),
        "sysctl.vm.overcommit_ratio": (85, Source("hosts/db1/sysctl.txt", 13)),
        "sysctl.vm.swappiness": (10, Source("hosts/db1/sysctl.txt", 40)),
        "meminfo.mem_total": (16 * GB, MEMINFO),
        "meminfo.swap_total": (0, Source("hosts/db1/meminfo.txt", 15)),
        "host.ram": (16 * GB, MEMINFO),
        "sysctl.kernel.foo": ("text", Source("hosts/db1/sysctl.txt", 2)),
    }
    for name, value in overrides.items():
        facts[name.replace("__", ".")] = (value, SYSCTL)
    for name, (value, source) in facts.items():
        if value is not None:
            host.add(Fact(name, value, source))  # type: ignore[arg-type]
    host.items["mount"] = [
        Item((("mount.point", "/srv/pg"), ("mount.options", "rw,relatime")), Source("hosts/db1/mounts.txt", 3)),
        Item((("mount.point", "/"), ("mount.options", "rw")), Source("hosts/db1/mounts.txt", 1)),
        Item((("mount.point", "/wal"), ("mount.options", "rw,noatime")), Source("hosts/db1/mounts.txt", 4)),
    ]
    for item, holds_pgdata in zip(host.items["mount"], (True, False, True), strict=True):
        item.put("mount.holds_pgdata", holds_pgdata, Source("<derived>"))
    return host


def test_finding_carries_message_values_fix_evidence_and_location(pack: RulePack) -> None:
    result = evaluate_host(pack, make_host())
    finding = next(item for item in result.findings if item.rule_id == "ACME1")
    limit = (16 * GB // 4096 * 85 // 100) * 4096
    assert finding.message == "CommitLimit 13.6 GiB is 85.0 % of 16.0 GiB"
    assert finding.values == {"limit": limit, "ratio": 0.85}
    assert finding.fix.sysctl == {"vm.overcommit_ratio": "80"}
    assert finding.fix.postgresql == {"huge_pages": "on"}
    assert finding.fix.text == "Lower the ratio to 80."
    assert (finding.path, finding.line) == ("hosts/db1/meminfo.txt", 15)  # swap: the first file fact when reads
    assert finding.fingerprint == fingerprint("ACME1", "db1", "hosts/db1/meminfo.txt", None)
    assert finding.help == "Because." and finding.references == ["Somewhere"] and finding.tags == ("memory",)
    evidence = {item.fact: item for item in finding.evidence}
    assert evidence["derived.commit_limit"] == Evidence("derived.commit_limit", limit, Source("<derived>"))
    assert evidence["sysctl.vm.overcommit_ratio"].source == Source("hosts/db1/sysctl.txt", 13)
    assert evidence["sysctl.vm.overcommit_memory"].value == 2
    assert "derived.suggested_overcommit_ratio" in evidence
    assert "sysctl.vm.overcommit_kbytes" not in evidence


def test_a_findings_help_is_the_rules_why_stripped_once_and_kept_by_the_pack_cache(pack: RulePack) -> None:
    rule = pack.rule("ACME1")
    assert rule is not None
    rule = dataclasses.replace(rule, why="\n  Because.\n")  # as a YAML block gives it
    cached = pickle.loads(pickle.dumps(RulePack([rule], pack.derived, pack.version)))
    assert [finding.help for finding in evaluate_host(cached, make_host()).findings] == ["Because."]


def test_fingerprint_ignores_lines_and_values(pack: RulePack) -> None:
    first = next(item for item in evaluate_host(pack, make_host()).findings if item.rule_id == "ACME1")
    other = make_host(sysctl__vm__overcommit_ratio=95)
    second = next(item for item in evaluate_host(pack, other).findings if item.rule_id == "ACME1")
    assert second.values != first.values
    assert second.fingerprint == first.fingerprint
    assert fingerprint("ACME1", "db2", "hosts/db1/meminfo.txt", None) != first.fingerprint
    assert len(first.fingerprint) == 16


def test_scoped_rule_runs_per_item_with_subject(pack: RulePack) -> None:
    findings = [item for item in evaluate_host(pack, make_host()).findings if item.rule_id == "ACME2"]
    assert [(item.subject, item.message, item.path, item.line) for item in findings] == [
        ("/srv/pg", "/srv/pg is mounted without noatime (rw,relatime)", "hosts/db1/mounts.txt", 3)]


def test_runtime_error_is_not_evaluated_with_reason(pack: RulePack) -> None:
    records = {item.rule_id: item for item in evaluate_host(pack, make_host()).not_evaluated}
    assert records["ACME3"].missing == ()
    assert records["ACME3"].reason == "sysctl.kernel.foo is 'text', not a number"


def test_missing_inputs_are_listed(pack: RulePack) -> None:
    result = evaluate_host(pack, make_host(meminfo__swap_total=None))
    record = next(item for item in result.not_evaluated if item.rule_id == "ACME1")
    assert "meminfo.swap_total" in record.missing and "host.swap" in record.missing
    assert record.reason is None
    assert not any(item.rule_id == "ACME1" for item in result.findings)


def test_applies_false_or_null_skips(pack: RulePack) -> None:
    for mode in (0, None):
        result = evaluate_host(pack, make_host(sysctl__vm__overcommit_memory=mode))
        assert not any(item.rule_id == "ACME1" for item in [*result.findings, *result.not_evaluated])


def test_params_and_selection(pack: RulePack) -> None:
    relaxed = evaluate_host(pack, make_host(), params={"commit-limit-high": {"max_ratio": 0.9}})
    assert not any(item.rule_id == "ACME1" for item in relaxed.findings)
    by_id = evaluate_host(pack, make_host(), params={"ACME1": {"max_ratio": "0.9"}})  # text is converted
    assert not any(item.rule_id == "ACME1" for item in by_id.findings)
    with pytest.raises(UsageError, match=r"params\.commit-limit-high\.max_ratio: expected a number, not 'lots'"):
        evaluate_host(pack, make_host(), params={"ACME1": {"max_ratio": "lots"}})
    with pytest.raises(UsageError, match="ACME1 has no parameter max_ration"):
        evaluate_host(pack, make_host(), params={"ACME1": {"max_ration": 1}})
    only = evaluate_host(pack, make_host(), selected=lambda meta: meta.id == "ACME2")
    assert {item.rule_id for item in [*only.findings, *only.not_evaluated]} == {"ACME2"}


def test_explicit_location_and_pseudo_sources(pack: RulePack) -> None:
    finding = next(item for item in evaluate_host(pack, make_host()).findings if item.rule_id == "ACME4")
    assert (finding.path, finding.line) == ("hosts/db1/sysctl.txt", 40)
    host = make_host(sysctl__vm__swappiness=None)
    host.facts["host.ram"] = Fact("host.ram", 16 * GB, Source("<declared>"))
    finding = next(item for item in evaluate_host(pack, host).findings if item.rule_id == "ACME4")
    assert (finding.path, finding.line) == (None, None)


def test_builtin_rules_on_a_host_from_the_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path))
    host = HostFacts(name="srv-psql-02", root=".")
    for name, value in {"sysctl.vm.overcommit_memory": 2, "sysctl.vm.overcommit_ratio": 85,
                        "meminfo.mem_total": 16473548 * 1024, "host.ram": 16473548 * 1024,
                        "meminfo.swap_total": 1740796 * 1024, "meminfo.hugetlb": 0,
                        "meminfo.commit_limit": 15743308 * 1024, "meminfo.committed_as": 6436004 * 1024}.items():
        host.add(Fact(name, value, MEMINFO))
    result = evaluate_host(load_pack(), host)
    assert sorted(item.rule_id for item in result.findings) == ["PGV103"]
    assert result.findings[0].fix.sysctl == {"vm.overcommit_ratio": "69"}


@pytest.mark.parametrize(("value", "format_name", "text"), [
    (18 * GB, "size", "18.0 GiB"),
    (512 * 1024**2, "size", "512 MiB"),
    (1536, "size", "1.5 KiB"),
    (100, "size", "100 B"),
    (0.5632, "pct", "56.3 %"),
    (300, "duration", "5min"),
    (0.2, "duration", "200ms"),
    (3600, "duration", "1h"),
    (90, "duration", "90s"),
    (2.5, "number", "2.5"),
    (2.0, "number", "2"),
    (1 / 3, "number", "0.33"),
    (2.5, "int", "3"),
    (True, None, "true"),
    (None, "size", "unknown"),
    ("text", "size", "text"),
])
def test_formats(value: object, format_name: str | None, text: str) -> None:
    assert format_value(value, format_name) == text  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [7, -3, 18 * GB, 2.5, 2.0, True, False, "text"])
@pytest.mark.parametrize("format_name", [None, *FORMATS])
def test_a_hole_renders_as_format_value_formats(value: FactValue, format_name: str | None) -> None:
    """render's shortcuts for the commonest values (texts, NULLs, plain integers) give format_value's text."""
    hole = "sysctl.kernel.foo" + (f"|{format_name}" if format_name else "")
    template = compile_template("{" + hole + "}", CompileContext(derived={}))
    env = Env({"sysctl.kernel.foo": Fact("sysctl.kernel.foo", value, SYSCTL)}, None, {}, {}, {})
    assert render(template, env) == format_value(value, format_name)


def test_size_and_duration_edges() -> None:
    assert format_size(-2 * GB) == "-2.0 GiB"
    assert format_duration(0) == "0s"
    assert format_duration(86400 * 2) == "2d"


def test_sizes_compared_in_one_sentence_are_told_apart() -> None:
    """"3.1 GiB below 3.1 GiB": two sizes that differ get the decimals that tell them apart, else their bytes; equal
    sizes, and sizes that read apart already, are shown as ever."""
    assert format_sizes([3.14 * GB, 3.1 * GB]) == ["3.14 GiB", "3.10 GiB"]
    assert format_sizes([512.3 * 1024**2, 512.4 * 1024**2, 2 * GB]) == ["512.3 MiB", "512.4 MiB", "2.0 GiB"]
    assert format_sizes([GB, GB + 1]) == ["1073741824 B", "1073741825 B"]
    assert format_sizes([3.1 * GB, 3.1 * GB, 512]) == ["3.1 GiB", "3.1 GiB", "512 B"]
    assert format_sizes([3.14 * GB, 3.1 * GB, 7 * GB, 7.04 * GB]) == ["3.14 GiB", "3.10 GiB", "7.00 GiB",
                                                                      "7.04 GiB"]
    template = compile_template("{sysctl.kernel.a|size} below {sysctl.kernel.b|size} ({sysctl.kernel.a|size})",
                                CompileContext(derived={}))
    env = Env({"sysctl.kernel.a": Fact("sysctl.kernel.a", int(3.14 * GB), SYSCTL),
               "sysctl.kernel.b": Fact("sysctl.kernel.b", int(3.1 * GB), SYSCTL)}, None, {}, {}, {})
    assert render(template, env) == "3.14 GiB below 3.10 GiB (3.14 GiB)"


@pytest.mark.parametrize(("text", "rendered"), [("{sysctl.kernel.absent}kB {sysctl.kernel.foo + 1}", "unknownkB 2"),
                                                ("{sysctl.kernel.foo + 1} {sysctl.kernel.absent}kB", "2 unknownkB")])
def test_a_hole_that_fails_wins_over_a_null_hole_in_either_order(text: str, rendered: str) -> None:
    """A fix value that cannot be evaluated leaves the rule not evaluated, wherever a NULL hole stands."""
    template = compile_template(text, CompileContext(derived={}))
    env = Env({"sysctl.kernel.foo": Fact("sysctl.kernel.foo", "text", SYSCTL)}, None, {}, {}, {})
    with pytest.raises(EvalError, match="not a number"):
        render_setting(template, env)
    with pytest.raises(EvalError, match="not a number"):
        render(template, env)
    with_number = Env({"sysctl.kernel.foo": Fact("sysctl.kernel.foo", 1, SYSCTL)}, None, {}, {}, {})
    assert render_setting(template, with_number) is None
    assert render(template, with_number) == rendered


def test_template_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pgvet.errors import RulePackError

    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path / "cache"))
    for message, reason in (("{host.ram|sise}", "unknown format 'sise'"), ("{host.ram", "unclosed '{'"),
                            ("{}", "empty '{}'")):
        (tmp_path / "p").mkdir(exist_ok=True)
        (tmp_path / "p" / "r.yaml").write_text(textwrap.dedent(f"""\
            rules:
              - {{id: ACME1, name: a, title: t, severity: info, when: 'TRUE', message: "{message}"}}
        """))
        with pytest.raises(RulePackError, match=reason):
            load_pack([tmp_path / "p"], builtin=False)


def test_a_fix_value_that_cannot_be_computed_is_left_out_and_named(pack: RulePack) -> None:
    """A setting is never suggested as 'unknown' (vm.nr_hugepages = unknown would be refused by sysctl)."""
    finding = next(item for item in evaluate_host(pack, make_host()).findings if item.rule_id == "ACME5")
    assert finding.fix.sysctl == {"vm.swappiness": "10"}
    assert finding.fix.postgresql == {}
    assert finding.fix.text == "No value can be computed here for vm.nr_hugepages, work_mem."
    with_facts = make_host(meminfo__hugepagesize=2 * 1024**2, sysctl__kernel__absent=64)
    finding = next(item for item in evaluate_host(pack, with_facts).findings if item.rule_id == "ACME5")
    assert finding.fix.sysctl == {"vm.nr_hugepages": "4096", "vm.swappiness": "10"}
    assert finding.fix.postgresql == {"work_mem": "64kB"} and finding.fix.text is None


def test_python_errors_in_applies_and_when_name_the_expression(tmp_path: Path) -> None:
    """An error Python raises (here an overflow) in the test or in the condition: the rule is not evaluated,
    with the expression that failed, wherever it is (the closures run straight, errors through the slow path)."""
    overflow = "round(host.ram * 1e308 * 10) > 0"
    (tmp_path / "pack.yaml").write_text(textwrap.dedent(f"""\
        rules:
          - {{id: ACME7, name: bad-applies, title: t, severity: info, applies: "{overflow}", when: "host.ram > 0",
              message: m}}
          - {{id: ACME8, name: bad-when, title: t, severity: info, applies: "host.ram > 0", when: "{overflow}",
              message: m}}
          - {{id: ACME9, name: fine, title: t, severity: info, applies: "host.ram > 0", when: "host.ram > 1",
              message: m}}
        """))
    result = evaluate_host(load_pack([tmp_path], builtin=False), make_host())
    reasons = {record.rule_id: record.reason for record in result.not_evaluated}
    assert reasons == {"ACME7": f"{overflow}: cannot convert float infinity to integer",
                       "ACME8": f"{overflow}: cannot convert float infinity to integer"}
    assert [finding.rule_id for finding in result.findings] == ["ACME9"]


def test_a_value_that_cannot_be_formatted_leaves_the_rule_not_evaluated(tmp_path: Path) -> None:
    """A number too large for |size (float conversion overflows) in a message or in a fix after a NULL hole:
    the rule is not evaluated, with the expression, and the lint goes on."""
    huge = " * ".join(["host.ram"] * 40)
    (tmp_path / "pack.yaml").write_text(textwrap.dedent(f"""\
        rules:
          - {{id: ACME10, name: huge-message, title: t, severity: info, when: "host.ram > 0",
              message: "{{{huge}|size}}"}}
          - {{id: ACME11, name: huge-fix, title: t, severity: info, when: "host.ram > 0", message: m,
              fix: {{sysctl: {{vm.x: "{{sysctl.vm.absent}}{{{huge}|size}}"}}}}}}
        """))
    result = evaluate_host(load_pack([tmp_path], builtin=False), make_host())
    reasons = {record.rule_id: record.reason for record in result.not_evaluated}
    assert reasons == {"ACME10": f"{huge}: int too large to convert to float",
                       "ACME11": f"{huge}: int too large to convert to float"}
    assert result.findings == []


def test_a_hosts_findings_share_the_evidence_entries_of_its_host_wide_facts(tmp_path: Path) -> None:
    """Each host-wide fact and derived value is one evidence entry for all the host's findings (the JSON Lines
    writer writes it once); an item's fact is its item's (findings on two lines show each line's own)."""
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    repeats = tmp_path / "repeats"
    repeats.mkdir()
    (repeats / "postgresql.conf").write_text("work_mem = 1MB\nwork_mem = 2MB\nport = 5432\nport = 5433\n")
    big_server, small_vm = lint([fixtures / "big-server", repeats], LintOptions()).hosts
    entries: dict[str, list[Evidence]] = {}
    for finding in big_server.findings:
        for entry in finding.evidence:
            entries.setdefault(entry.fact, []).append(entry)
    for name in ("host.ram", "pg.shared_buffers", "derived.shared_memory_size"):
        assert len(entries[name]) > 2 and len({id(entry) for entry in entries[name]}) == 1, name
    lines = [entry.value for finding in small_vm.findings for entry in finding.evidence if entry.fact == "setting.line"]
    assert len(lines) == len(set(lines)) > 1


def test_hosts_evaluated_together_get_what_each_gets_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """evaluate_hosts runs each rule on every host before the next rule (for the CPU's caches): each host's
    findings, not-evaluated records and passes are those evaluate_host gives it; a bug met on one host is that
    host's outcome, and the others are evaluated to the end."""
    from pgvet.engine import evaluate
    from pgvet.snapshot.load import load_host

    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    pack = load_pack([])
    names = ("big-server", "small-vm", "well-tuned", "config-repo")

    def described(result: object) -> list[object]:
        assert not isinstance(result, Exception)
        return [[(finding.rule_id, finding.subject, finding.message, finding.values, finding.evidence, finding.fix,
                  finding.fingerprint, finding.path, finding.line) for finding in result.findings],
                result.not_evaluated, [(passed.rule_id, passed.subject) for passed in result.passed or []]]

    alone = [described(evaluate_host(pack, load_host(fixtures / name), record_passes=True)) for name in names]
    together = evaluate.evaluate_hosts(pack, [load_host(fixtures / name) for name in names], record_passes=True)
    assert [described(result) for result in together] == alone
    assert sum(len(findings) for findings, _, _ in alone) > 40

    real_record = evaluate._record

    def buggy(rule: Rule, env: Env, fired: object, host_name: str, result: HostResult, verdicts_only: bool) -> None:
        if result.host_facts.root.endswith("small-vm"):
            raise KeyError("a bug")
        real_record(rule, env, fired, host_name, result, verdicts_only)  # type: ignore[arg-type]

    monkeypatch.setattr(evaluate, "_record", buggy)
    outcomes = evaluate.evaluate_hosts(pack, [load_host(fixtures / name) for name in names], record_passes=True)
    assert isinstance(outcomes[1], KeyError)
    assert [described(outcome) for index, outcome in enumerate(outcomes) if index != 1] == [
        described_alone for index, described_alone in enumerate(alone) if index != 1]
    with pytest.raises(KeyError):
        evaluate_host(pack, load_host(fixtures / "small-vm"))


def test_a_findings_holes_are_formatted_as_render_and_errors_name_the_hole() -> None:
    """Each hole kind (text, NULL, integer, bool, float, |size, |pct) in a finding's message, values and fix; a
    setting with a NULL hole is left out and named; a hole's error is raised naming the expression."""
    pack = load_pack([])
    rule = next(rule for rule in pack.rules if rule.fix_templates is not None and rule.fix_templates.sysctl)
    context = CompileContext(derived={}, params={}, scope="host")
    holes = [(compile_expression(text, context), format_name) for text, format_name in [
        ("'text'", None), ("NULL", None), ("3", None), ("TRUE", None), ("2.5", None), ("host.ram", "size"),
        ("1.0 / 8", "pct"), ("host.ram", None)]]
    message = tuple(part for hole in holes for part in (" | ", hole))
    fix = FixTemplates(sysctl=(("vm.a", ("x", holes[5])), ("vm.b", ("y", holes[1]))),
                       postgresql=(("w", (holes[2],)),), text=(" text ", holes[0], " "))
    variant = dataclasses.replace(rule, message_template=message, fix_templates=fix,
                                  value_exprs=(("ram", holes[5][0]), ("none", holes[1][0])))

    def env_with_ram(ram: int) -> Env:
        return Env({"host.ram": Fact("host.ram", ram, MEMINFO)}, None, variant.param_defaults,
                   pack.derived_by_name, {}, {})

    finding = make_finding(variant, env_with_ram(3 * GB), "h", None)
    assert finding.message == "| text | unknown | 3 | true | 2.5 | 3.0 GiB | 12.5 % | 3221225472"
    assert finding.values == {"ram": 3 * GB, "none": None}
    assert finding.fix == Fix({"vm.a": "x3.0 GiB"}, {"w": "3"}, "text text No value can be computed here for vm.b.")
    with pytest.raises(EvalError, match=r"^host\.ram: "):  # too large for |size: the hole, as written
        make_finding(variant, env_with_ram(10**400), "h", None)
    # a setting's holes are all formatted, one after a NULL too: the setting is then not just left out
    after_null = dataclasses.replace(rule, message_template=("m",), value_exprs=(),
                                     fix_templates=FixTemplates(sysctl=(("vm.c", (holes[1], holes[5])),)))
    with pytest.raises(EvalError, match=r"^host\.ram: "):
        make_finding(after_null, env_with_ram(10**400), "h", None)
    assert make_finding(after_null, env_with_ram(3 * GB), "h", None).fix == Fix(
        {}, {}, "No value can be computed here for vm.c.")


def test_verdicts_only_makes_the_same_findings_less_what_only_a_report_shows(tmp_path: Path) -> None:
    """The planner's worlds are evaluated with verdicts_only: the same rules fire, with the same subjects,
    messages, values and fixes, and the same ones are not evaluated — a message, value or fix that cannot be
    computed leaves the rule not evaluated in both modes — without the evidence, location and fingerprint."""
    from pgvet.engine.evaluate import evaluate_hosts
    from pgvet.snapshot.load import load_host

    huge = " * ".join(["host.ram"] * 40)
    (tmp_path / "pack.yaml").write_text(textwrap.dedent(f"""\
        rules:
          - {{id: ACME10, name: huge-message, title: t, severity: info, when: "host.ram > 0",
              message: "{{{huge}|size}}"}}
          - {{id: ACME11, name: huge-fix-text, title: t, severity: info, when: "host.ram > 0", message: m,
              fix: {{text: "{{{huge}|size}}"}}}}
          - {{id: ACME12, name: infinite-value, title: t, severity: info, when: "host.ram > 0", message: m,
              values: {{x: "host.ram * 1e308 * 10"}}}}
          - {{id: ACME13, name: fine, title: t, severity: info, when: "host.ram > 0",
              message: "{{host.ram|size}}", fix: {{sysctl: {{vm.x: "{{host.ram}}"}}}}}}
        """))
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    hosts = [make_host(), *(load_host(fixtures / name) for name in ("big-server", "small-vm", "well-tuned"))]
    for pack in (load_pack([tmp_path], builtin=False), load_pack([])):
        for host in hosts:
            [full] = evaluate_hosts(pack, [host])
            [verdicts] = evaluate_hosts(pack, [host], verdicts_only=True)
            assert isinstance(full, HostResult) and isinstance(verdicts, HostResult)
            assert verdicts.not_evaluated == full.not_evaluated
            assert [dataclasses.replace(finding, fingerprint="", path=None, line=None, evidence=[], help="",
                                        references=[]) for finding in full.findings] == verdicts.findings
    [verdicts] = evaluate_hosts(load_pack([tmp_path], builtin=False), [make_host()], verdicts_only=True)
    assert isinstance(verdicts, HostResult)
    assert {record.rule_id for record in verdicts.not_evaluated} == {"ACME10", "ACME11", "ACME12"}
    assert [finding.rule_id for finding in verdicts.findings] == ["ACME13"]
