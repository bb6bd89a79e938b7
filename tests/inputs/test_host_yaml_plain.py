"""host.yaml's plain form is read without ruamel.yaml: the same document, types and lines, or ruamel.yaml's turn."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from conftest import FIXTURES
from pgvet.inputs import host_yaml as hostfacts
from pgvet.inputs.host_yaml import _line, _simple_yaml

KEYS = ["name", "pg_version", "workload", "storage", "dedicated", "ram", "cpus", "data_directory", "raid", "level",
        "disks", "True", "null", "on", "Name", "_x", "a1", "x y", "tablespaces"]
VALUES = ["17", "0", "017", "-1", "+3", "1_000", "0x1F", "0o17", "1e3", "3.5", ".5", "1.", "true", "false", "True",
          "FALSE", "yes", "No", "on", "off", "y", "null", "Null", "~", "64GB", "64 GB", "1.5GiB", "8k", "0B", "64B",
          "oltp", "hdd", "/srv/pgdata/17/main", "db-prod-03", "db prod 03", "db  prod", "a:b", "a: b", "a#b",
          "x # comment", "# only a comment", "'quoted'", '"double"', "[a, b]", "{a: 1}", "&anchor x", "*alias",
          "!!str 5", "2026-01-01", "12:30", "données", "@x", "a@b", "-x", "- x", "?", "|", ">", "%x", "`x`", ""]


def ruamel_load(text: str) -> Any:
    return YAML(typ="rt", pure=True).load(text)


def same(left: Any, right: Any) -> bool:
    """Equal values of the same types (True == 1 in Python; not here)."""
    if isinstance(left, dict) and isinstance(right, dict):
        return list(left) == list(right) and all(same(left[key], right[key]) for key in left)
    return type(left) is type(right) and left == right


def lines_of(document: Any) -> dict[str, Any]:
    return {key: (_line(document, key), lines_of(document[key]) if isinstance(document[key], dict) else None)
            for key in document}


def assert_same_as_ruamel(text: str) -> None:
    simple = _simple_yaml(text)
    if simple is None:
        return  # ruamel.yaml reads it
    loaded = ruamel_load(text)  # a document _simple_yaml accepts is one ruamel.yaml accepts
    if not simple:
        assert loaded is None
        return
    assert same(dict(simple), dict(loaded)), (text, simple, loaded)
    assert lines_of(simple) == lines_of(loaded), text


line = st.one_of(
    st.builds(lambda key, value, indent: f"{' ' * indent}{key}: {value}", st.sampled_from(KEYS),
              st.sampled_from(VALUES), st.sampled_from([0, 0, 0, 2, 4])),
    st.builds(lambda key, indent: f"{' ' * indent}{key}:", st.sampled_from(KEYS), st.sampled_from([0, 0, 2])),
    st.sampled_from(["", "# a comment", "  # indented comment", "   ", "key:value", "---", "- item", "\ttab: 1",
                     "name : x", "name:  x  ", "raid:  # the array"]),
)


@pytest.mark.filterwarnings("ignore::ruamel.yaml.error.ReusedAnchorWarning")  # YAML allows it; the CLI hides it
@settings(max_examples=1500, deadline=None)
@given(st.lists(line, max_size=12), st.booleans())
def test_simple_reading_agrees_with_ruamel(lines: list[str], newline: bool) -> None:
    try:
        ruamel_load("\n".join(lines) + ("\n" if newline else ""))
    except YAMLError:
        assert _simple_yaml("\n".join(lines) + ("\n" if newline else "")) is None
        return
    assert_same_as_ruamel("\n".join(lines) + ("\n" if newline else ""))


def test_the_fixtures_are_read_without_ruamel() -> None:
    for path in FIXTURES.glob("*/host.yaml"):
        text = path.read_text()
        assert _simple_yaml(text) is not None, path
        assert_same_as_ruamel(text)
        assert hostfacts.parse_host_yaml(text, "host.yaml")


def test_what_is_not_plain_goes_to_ruamel() -> None:
    for text in ("tablespaces: [/a, /b]\n", "name: 'db'\n", "pg_version: 17.0\n", "ram: 64GB\nram: 32GB\n",
                 "raid:\n  level: 10\n disks: 4\n", "dedicated: yes\n", "name: db\n  more: x\n", "raid:\nname: x\n"):
        assert _simple_yaml(text) is None, text
