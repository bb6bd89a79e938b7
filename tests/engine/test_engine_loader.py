"""Loading rule packs: errors with file:line, uniqueness across packs, the JSON Schema, the cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from pgvet.engine.loader import builtin_rules_dir, load_pack
from pgvet.engine.schema import json_schema
from pgvet.errors import RulePackError
from pgvet.provenance import Source

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("PGVET_CACHE_DIR", str(directory))
    return directory


RULE = """\
rules:
  - id: {id}
    name: {name}
    title: A test rule
    severity: warning
    when: {when}
    message: "RAM is {{host.ram|size}}"
"""


def write_pack(directory: Path, text: str, name: str = "rules.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load_error(directory: Path) -> RulePackError:
    with pytest.raises(RulePackError) as caught:
        load_pack([directory], builtin=False)
    return caught.value


def test_a_valid_pack_loads(tmp_path: Path) -> None:
    write_pack(tmp_path / "p", RULE.format(id="ACME1", name="acme-one", when="host.ram < '4GB'"))
    pack = load_pack([tmp_path / "p"], builtin=False)
    rule = pack.rule("acme-one")
    assert rule is not None and rule is pack.rule("acme1")
    assert rule.when == "host.ram < '4GB'"
    assert rule.file == str(tmp_path / "p" / "rules.yaml")
    assert rule.line == 2
    assert list(pack.meta()) == ["ACME1"]


@pytest.mark.parametrize(("when", "line", "reason"), [
    ("meminfo.mem_totl > 0", 6, "ACME1.when: unknown fact meminfo.mem_totl (did you mean meminfo.mem_total?)"),
    ("host.ram >", 6, "ACME1.when: invalid expression: syntax error at end of input"),
    ("sqrt(host.ram) > 0", 6, "ACME1.when: unknown function sqrt()"),
    ("host.name + 1 > 0", 6, "ACME1.when: '+' needs a number, not a text"),
    ("host.ram * 2", 6, "ACME1.when: expected a condition (boolean), not a number"),
])
def test_expression_errors_name_file_and_line(tmp_path: Path, when: str, line: int, reason: str) -> None:
    path = write_pack(tmp_path / "p", RULE.format(id="ACME1", name="acme-one", when=when))
    error = load_error(tmp_path / "p")
    assert error.source is not None
    assert (error.source.path, error.source.line) == (str(path), line)
    assert error.message.startswith(reason)


def test_message_template_error_points_at_message(tmp_path: Path) -> None:
    text = RULE.format(id="ACME1", name="acme-one", when="TRUE").replace("host.ram|size", "host.rma|size")
    write_pack(tmp_path / "p", text)
    error = load_error(tmp_path / "p")
    assert error.source is not None and error.source.line == 7
    assert "unknown fact host.rma (did you mean host.ram?)" in error.message


def test_bad_yaml_indent_gives_the_yaml_line(tmp_path: Path) -> None:
    write_pack(tmp_path / "p", "rules:\n  - id: ACME1\n    name: acme-one\n   title: bad indent\n")
    error = load_error(tmp_path / "p")
    assert error.source is not None and error.source.line == 4
    assert error.message.startswith("invalid YAML")


def test_schema_violation_gives_the_key_line(tmp_path: Path) -> None:
    text = RULE.format(id="ACME1", name="acme-one", when="TRUE").replace("severity: warning", "severity: fatal")
    write_pack(tmp_path / "p", text)
    error = load_error(tmp_path / "p")
    assert error.source is not None and error.source.line == 5
    assert error.message.startswith("rules.0.severity:")


def test_unknown_key_is_an_error(tmp_path: Path) -> None:
    write_pack(tmp_path / "p", RULE.format(id="ACME1", name="acme-one", when="TRUE") + "    severty: info\n")
    error = load_error(tmp_path / "p")
    assert error.source is not None and error.source.line == 8
    assert "severty" in error.message


def test_duplicate_id_across_packs_names_both_places(tmp_path: Path) -> None:
    first = write_pack(tmp_path / "a", RULE.format(id="ACME1", name="acme-one", when="TRUE"))
    second = write_pack(tmp_path / "b", RULE.format(id="ACME1", name="acme-two", when="TRUE"))
    with pytest.raises(RulePackError) as caught:
        load_pack([tmp_path / "a", tmp_path / "b"], builtin=False)
    assert caught.value.source is not None
    assert (caught.value.source.path, caught.value.source.line) == (str(second), 2)
    assert caught.value.message == f"duplicate rule id ACME1 (first defined at {first}:2)"


def test_duplicate_name_is_an_error(tmp_path: Path) -> None:
    write_pack(tmp_path / "a", RULE.format(id="ACME1", name="acme-one", when="TRUE")
               + RULE.format(id="ACME2", name="acme-one", when="TRUE").removeprefix("rules:\n"))
    assert load_error(tmp_path / "a").message.startswith("duplicate rule name acme-one")


def test_user_rules_cannot_take_pgv_ids(tmp_path: Path) -> None:
    write_pack(tmp_path / "p", RULE.format(id="PGV999", name="mine", when="TRUE"))
    assert "reserved" in load_error(tmp_path / "p").message


def test_derived_cycle_is_named(tmp_path: Path) -> None:
    path = write_pack(tmp_path / "p", """\
        derived:
          - {name: a, unit: number, formula: derived.b + 1}
          - {name: b, unit: number, formula: derived.c * 2}
          - {name: c, unit: number, formula: derived.a - host.ram}
    """)
    error = load_error(tmp_path / "p")
    assert error.message == "derived facts form a cycle: derived.a → derived.b → derived.c → derived.a"
    assert error.source is not None and (error.source.path, error.source.line) == (str(path), 2)


def test_derived_unknown_reference_and_duplicate(tmp_path: Path) -> None:
    write_pack(tmp_path / "p", "derived:\n  - {name: a, unit: number, formula: derived.zz + 1}\n")
    assert load_error(tmp_path / "p").message.startswith("derived.a: unknown fact derived.zz")
    write_pack(tmp_path / "q", "derived:\n  - {name: a, unit: number, formula: '1'}\n"
               "  - {name: a, unit: number, formula: '2'}\n")
    error = load_error(tmp_path / "q")
    assert error.message.startswith("derived fact a is also defined at")
    assert error.source is not None and error.source.line == 3


def test_derived_unit_must_match_formula(tmp_path: Path) -> None:
    write_pack(tmp_path / "p", "derived:\n  - {name: a, unit: bytes, formula: host.name}\n")
    assert load_error(tmp_path / "p").message == "derived.a: the formula gives a text but the unit is bytes"


def test_scoped_rule_needs_subject_and_item_facts_need_scope(tmp_path: Path) -> None:
    write_pack(tmp_path / "p", RULE.format(id="ACME1", name="acme-one", when="has_option(mount.options, 'x')"))
    assert "only rules with scope: mount read it" in load_error(tmp_path / "p").message
    text = RULE.format(id="ACME1", name="acme-one", when="has_option(mount.options, 'x')") + "    scope: mount\n"
    write_pack(tmp_path / "q", text)
    assert "need a subject" in load_error(tmp_path / "q").message


def test_example_with_unknown_fact_is_an_error(tmp_path: Path) -> None:
    text = RULE.format(id="ACME1", name="acme-one", when="TRUE") + textwrap.indent(textwrap.dedent("""\
        examples:
          - facts: {host.rma: 4GB}
            expect: fire
    """), "    ")
    write_pack(tmp_path / "p", text)
    error = load_error(tmp_path / "p")
    assert error.message == "ACME1 example 1: host.rma is not a known fact"
    assert error.source is not None and error.source.line == 9


def test_missing_directory_is_an_error(tmp_path: Path) -> None:
    assert load_error(tmp_path / "absent").message == "rule pack directory not found"


def test_builtin_pack_is_the_repository_rules() -> None:
    assert builtin_rules_dir() == PROJECT / "rules"
    pack = load_pack()
    assert {"PGV101", "PGV102", "PGV103", "PGV104", "PGV105", "PGV501", "PGV502"} <= set(pack.meta())
    assert "commit_limit" in pack.derived_by_name


def test_naming_the_builtin_pack_again_loads_it_once() -> None:
    assert [rule.id for rule in load_pack([PROJECT / "rules"]).rules] == [rule.id for rule in load_pack().rules]


def test_json_schema_is_current() -> None:
    published = json.loads((PROJECT / "docs" / "rule-schema.json").read_text(encoding="utf-8"))
    assert published == json_schema()


# -- cache ------------------------------------------------------------------------------------------------

def test_second_load_uses_the_cache_and_a_change_invalidates_it(tmp_path: Path, cache: Path) -> None:
    path = write_pack(tmp_path / "p", RULE.format(id="ACME1", name="acme-one", when="host.ram < '4GB'"))
    first = load_pack([tmp_path / "p"], builtin=False)
    files = list(cache.glob("rules-*.pickle"))
    assert len(files) == 1
    second = load_pack([tmp_path / "p"], builtin=False)
    assert second is not first and second.version == first.version
    # A cached pack is used as is: poison it and see the poison come back.
    import pickle

    poisoned = pickle.loads(files[0].read_bytes())
    poisoned.rules[0].title = "from the cache"
    files[0].write_bytes(pickle.dumps(poisoned))
    assert load_pack([tmp_path / "p"], builtin=False).rules[0].title == "from the cache"
    path.write_text(path.read_text().replace("'4GB'", "'8GB'"))
    changed = load_pack([tmp_path / "p"], builtin=False)
    assert changed.rules[0].title == "A test rule"
    assert changed.version != first.version
    # the pack of before is gone: the cache keeps what the current packs need (a 2.3 MB file a rule change grew)
    [kept] = cache.glob("rules-*.pickle")
    assert kept != files[0] and not files[0].exists()
    load_pack(builtin=True)  # other packs: a file of their own, beside it
    assert len(list(cache.glob("rules-*.pickle"))) == 2 and kept.exists()


def test_issue_30_the_cache_removes_what_no_current_pack_needs(tmp_path: Path, cache: Path) -> None:
    write_pack(tmp_path / "p", RULE.format(id="ACME1", name="acme-one", when="TRUE"))
    cache.mkdir(exist_ok=True)
    old_name = cache / ("pack-" + "0" * 32 + ".pickle")  # earlier versions' names: never read again
    old_name.write_bytes(b"old")
    month = time.time() - 31 * 86400
    forgotten = cache / ("rules-" + "1" * 16 + "-" + "2" * 32 + ".pickle")  # a removed environment's pack
    forgotten.write_bytes(b"x")
    os.utime(forgotten, (month, month))
    recent = cache / ("rules-" + "3" * 16 + "-" + "4" * 32 + ".pickle")  # another pack, used this week
    recent.write_bytes(b"x")
    foreign = cache / "notes.txt"  # not pgvet's: left alone, however old
    foreign.write_text("x")
    os.utime(foreign, (month, month))
    load_pack([tmp_path / "p"], builtin=False)
    assert not old_name.exists() and not forgotten.exists()
    assert recent.exists() and foreign.exists()
    # reading a pack marks it used: it is kept another month
    [own] = [path for path in cache.glob("rules-*.pickle") if path != recent]
    os.utime(own, (month, month))
    load_pack([tmp_path / "p"], builtin=False)
    assert own.stat().st_mtime > month + 86400


def test_unreadable_cache_is_ignored(tmp_path: Path, cache: Path) -> None:
    write_pack(tmp_path / "p", RULE.format(id="ACME1", name="acme-one", when="TRUE"))
    load_pack([tmp_path / "p"], builtin=False)
    for file in cache.glob("rules-*.pickle"):
        file.write_bytes(b"not a pickle")
    assert load_pack([tmp_path / "p"], builtin=False).rules[0].id == "ACME1"


def test_cache_directory_that_cannot_be_written_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("PGVET_CACHE_DIR", str(blocker / "sub"))
    write_pack(tmp_path / "p", RULE.format(id="ACME1", name="acme-one", when="TRUE"))
    assert load_pack([tmp_path / "p"], builtin=False).rules[0].id == "ACME1"


def test_warm_start_imports_neither_pydantic_nor_pglast_nor_ruamel(cache: Path) -> None:
    code = textwrap.dedent("""
        import sys
        from pgvet.engine.loader import load_pack
        from pgvet.engine.evaluate import evaluate_host
        load_pack()
        print(sorted(m for m in ("pydantic", "pglast", "ruamel") if m in sys.modules))
    """)
    env = {"PGVET_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"}
    run = [sys.executable, "-c", code]
    cold = subprocess.run(run, capture_output=True, text=True, env=env, check=True, cwd=PROJECT)
    warm = subprocess.run(run, capture_output=True, text=True, env=env, check=True, cwd=PROJECT)
    assert cold.stdout.strip() == "['pglast', 'pydantic', 'ruamel']"
    assert warm.stdout.strip() == "[]"


def test_a_huge_rule_file_is_refused_before_yaml_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by fuzzing: YAML took 8 s on a rule file of one 8 MB line. Over 1 MiB, the file is refused with a
    message naming it, without YAML reading it and without reading the file whole."""
    import pgvet.safeyaml
    from pgvet.engine.build import build_pack
    from pgvet.engine.pack import MAX_RULE_FILE_CHARS, PackSource

    real_load = pgvet.safeyaml.load_yaml

    def bounded_load(text: str, *args: Any, **kwargs: Any) -> Any:
        assert len(text) <= MAX_RULE_FILE_CHARS, "YAML read a file over the bound"
        return real_load(text, *args, **kwargs)

    monkeypatch.setattr(pgvet.safeyaml, "load_yaml", bounded_load)
    with pytest.raises(RulePackError, match="more than pgvet reads") as refused:
        build_pack([PackSource("big.yaml", "a" * 8_000_000)])
    assert refused.value.source == Source("big.yaml")
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "pack").mkdir()
    with (tmp_path / "pack" / "big.yaml").open("wb") as sparse:
        sparse.truncate(1024**3)  # a 1 GB file: read no further than the limit
    reads: list[int] = []
    real_read = os.read

    def counted_read(descriptor: int, size: int) -> bytes:
        data = real_read(descriptor, size)
        reads.append(len(data))
        return data

    monkeypatch.setattr(os, "read", counted_read)
    with pytest.raises(RulePackError, match="more than pgvet reads"):
        load_pack([tmp_path / "pack"])
    assert sum(reads) < 8 * 1024 * 1024  # the bound and a little, not the gigabyte


# 'é' * (2 MiB + 1) is 4 MiB + 2 bytes: the read of 4 MiB + 1 ends inside the last 'é'.
@pytest.mark.parametrize("content", ["é".encode() * (2 * 1024**2 + 1), b"\xff" * (4 * 1024**2 + 1)],
                         ids=["cut-in-a-character", "not-utf8"])
def test_a_huge_rule_file_is_refused_for_its_size_whatever_its_bytes(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "big.yaml").write_bytes(content)
    error = load_error(tmp_path / "pack")
    assert "more than pgvet reads" in error.message
    assert error.source == Source(str(tmp_path / "pack" / "big.yaml"))


def test_a_rule_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "latin1.yaml").write_bytes("rules: []  # café\n".encode("latin-1"))
    error = load_error(tmp_path / "pack")
    assert "cannot read rule file" in error.message and "utf-8" in error.message
    assert error.source == Source(str(tmp_path / "pack" / "latin1.yaml"))
