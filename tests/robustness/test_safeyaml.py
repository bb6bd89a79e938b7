"""Every YAML input (rule packs, host.yaml, ignore files) through pgvet.safeyaml: alias bombs, recursive
documents, numbers no double holds and lone surrogates refused at their line (docs/robustness.md)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from pgvet.engine.build import build_pack
from pgvet.engine.pack import PackSource
from pgvet.errors import PgvetError
from pgvet.inputs.host_yaml import parse_host_yaml
from pgvet.run.suppress import load_ignore_file
from pgvet.safeyaml import MAX_ALIAS_VALUES, MAX_DOCUMENTS, YamlError, load_yaml, load_yaml_documents


def alias_bomb(levels: int) -> str:
    """The billion laughs: each level a list of nine aliases of the level before (9^levels values)."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]" for level in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_the_issue_alias_bomb_is_refused_at_the_alias_that_crosses_the_budget() -> None:
    # 9 levels: 9^10 values (3.4 billion) if expanded; the count stops at level 4's aliases (9^5 > 10 000)
    text = alias_bomb(9)
    assert len(text) < 600
    with pytest.raises(YamlError, match=f"aliases expand to more than {MAX_ALIAS_VALUES} values") as raised:
        load_yaml(text)
    assert raised.value.line == 5


def test_aliases_within_the_budget_are_read() -> None:
    # a list that stands for 100 values (its 99 and itself), aliased 100 times: the budget exactly; once more is over
    shared = "s: &s [" + ", ".join(["1"] * 99) + "]\n"
    within = shared + "".join(f"k{index}: *s\n" for index in range(100))
    document = load_yaml(within)
    assert document["k99"] is document["s"]  # shared, never copied
    with pytest.raises(YamlError, match="aliases expand") as raised:
        load_yaml(within + "k100: *s\n")
    assert raised.value.line == 102


def test_a_recursive_document_is_refused() -> None:
    with pytest.raises(YamlError, match="an alias inside the node it names") as raised:
        load_yaml("a: 1\nb: &b\n  c: [1, *b]\n")
    assert raised.value.line == 3


def test_a_stream_of_more_documents_than_manifests_hold_is_refused() -> None:
    # each document costs the YAML reader its own start: a megabyte of --- lines took tens of seconds to read
    assert len(load_yaml_documents("---\n" * MAX_DOCUMENTS)) == MAX_DOCUMENTS
    with pytest.raises(YamlError, match=f"more than {MAX_DOCUMENTS} YAML documents in one file"):
        load_yaml_documents("---\n" * 250_000)


@pytest.mark.parametrize(("value", "says"), [
    (".inf", "not a finite number (inf)"),
    ("-.inf", "not a finite number (-inf)"),
    (".nan", "not a finite number (nan)"),
    ("1e400", "1e400: not a finite number (inf)"),
    ("0x" + "f" * 300, "a number of 1200 bits, beyond what a double holds"),
    ("9" * 400, "a number of 1329 bits, beyond what a double holds"),
    ("9" * 5000, "99999999999999999999…(5000 characters): beyond what a double holds"),  # int() refuses it
    ('"\\ud800"', "a lone surrogate"),
    ('"a\\udcffb"', "a lone surrogate"),
], ids=["inf", "-inf", "nan", "1e400", "hexadecimal", "400 digits", "5000 digits", "surrogate", "surrogate inside"])
def test_values_pgvet_cannot_hold_are_refused_at_their_line(value: str, says: str) -> None:
    with pytest.raises(YamlError, match=re.escape(says)) as raised:
        load_yaml(f"a: 1\nb:\n  - c: {value}\n")
    assert raised.value.line == 3
    if len(value) < 1000:  # a longer key is no implicit key in YAML
        with pytest.raises(YamlError, match=re.escape(says)):
            load_yaml(f"a: 1\n{value}: key\n")  # keys are held to it too


def test_numbers_a_double_holds_are_read() -> None:
    assert load_yaml("a: 1.7e308\nb: -0x" + "f" * 255 + "\nc: 0.0\nd: true\n") == {
        "a": 1.7e308, "b": -int("f" * 255, 16), "c": 0.0, "d": True}


def test_a_character_yaml_refuses_is_named_at_its_line() -> None:
    with pytest.raises(YamlError, match="unacceptable character #x001b") as raised:
        load_yaml("a: 1\nb: 2\nc: x\x1by\n")
    assert raised.value.line == 3


def test_duplicate_anchors_are_read_without_a_warning(recwarn: pytest.WarningsRecorder) -> None:
    assert load_yaml("a: &x 1\nb: &x 2\nc: *x\n") == {"a": 1, "b": 2, "c": 2}
    assert not recwarn.list


def _rule_pack(text: str, path: Path) -> object:
    return build_pack([PackSource(str(path), text)])


def _host_yaml(text: str, path: Path) -> object:
    return parse_host_yaml(text, str(path))


def _ignore_file(text: str, path: Path) -> object:
    path.write_text(text, encoding="utf-8")
    return load_ignore_file(path)


@pytest.mark.parametrize("read", [_rule_pack, _host_yaml, _ignore_file], ids=["rule pack", "host.yaml", "ignore file"])
@pytest.mark.parametrize(("text", "line", "says"), [
    (alias_bomb(11), 5, "aliases expand to more than"),
    ("x: 1\ny: &y [*y]\n", 2, "an alias inside the node it names"),
    ("x: 1\ny: .inf\n", 2, "not a finite number"),
    ('x: 1\ny: "\\ud800"\n', 2, "a lone surrogate"),
])
def test_every_yaml_input_is_held_to_the_bounds(read: Callable[[str, Path], object], text: str, line: int, says: str,
                                                 tmp_path: Path) -> None:
    path = tmp_path / "input.yaml"
    with pytest.raises(PgvetError) as raised:
        read(text, path)
    assert says in raised.value.message and "invalid YAML" in raised.value.message
    assert raised.value.source is not None and raised.value.source.line == line


def test_a_rule_pack_may_share_blocks_with_anchors() -> None:
    text = """rules:
  - id: ANC1
    name: anchored
    title: t
    severity: warning
    when: sysctl.vm.swappiness > params.limit
    params:
      limit: &limit {default: 10, description: the limit}
    message: "m"
    why: w
    examples:
      - facts: &high {sysctl.vm.swappiness: 60}
        expect: fire
  - id: ANC2
    name: anchored-too
    title: t
    severity: info
    when: sysctl.vm.swappiness > params.limit
    params: {limit: *limit}
    message: "m"
    why: w
    examples:
      - facts: *high
        expect: fire
"""
    pack = build_pack([PackSource("anchors.yaml", text)])
    assert [rule.params["limit"].default for rule in pack.rules] == [10, 10]


# Plain scalars whose type YAML 1.1 and YAML 1.2 tell apart (and some they agree on), written afresh
_YAML_1_1_SCALARS = [
    "2:05", "-3:20:10", "+1:00", "4:07.25", "12:00:00:00", "1:75", "0:45", "09:30", "3_600", "0b1_1", "0x2a", "0o644",
    "0644", "08", "0_7", "yes", "No", "ON", "oFF", "y", "N", "Y", "n", "2e4", "6.5e-1", "1.5E3", "1.0e3", ".5e3",
    ".5e-3", "+.5", "1.e-2", "0.", "3:10.5", "1_5.25", "~", "Null", "", "2024-01-31", "'2:05'", '"yes"']


def _kind_and_value(value: object) -> tuple[str, object]:
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, int):
        return "int", int(value)
    if isinstance(value, float):
        return "float", repr(float(value))
    return type(value).__name__ if value is not None else "null", None if value is None else str(value)


@pytest.mark.parametrize("scalar", _YAML_1_1_SCALARS)
def test_pyyaml_documents_read_scalars_as_pyyaml_does(scalar: str) -> None:
    """Patroni and Ansible read their files with PyYAML (YAML 1.1: 2:05 is 125, yes a boolean, 0644 octal, y a
    text, 2e4 a text for want of a dot, 1.5E3 for want of a sign): pgvet reads them so, compared with PyYAML itself
    where it is installed."""
    yaml = pytest.importorskip("yaml")
    text = f"k: {scalar}\n"
    expected = _kind_and_value(yaml.load(text, Loader=yaml.SafeLoader)["k"])
    assert _kind_and_value(load_yaml(text, pyyaml=True)["k"]) == expected


def test_a_yaml_1_2_directive_does_not_change_how_pyyaml_documents_are_read() -> None:
    # PyYAML reads a %YAML 1.2 document by its own (1.1) rules all the same
    assert load_yaml("%YAML 1.2\n---\nk: 1:30\n", pyyaml=True)["k"] == 90
    assert load_yaml("k: 1:30\n")["k"] == "1:30"  # YAML 1.2 (Kubernetes, Compose): a text
