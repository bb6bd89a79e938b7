"""postgresql.conf parser: each grammar point with exact values and lines, the include loader,
safety limits, and a property test that nothing but ParseError ever escapes.

The differential tests against real servers are in test_pgconf_postgres.py.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgvet.errors import InputError, ParseError
from pgvet.findings import quote_sql
from pgvet.inputs import postgresql_conf
from pgvet.inputs.postgresql_conf import (
    ConfDirective,
    ConfProblem,
    ConfSetting,
    load_conf,
    parse_conf_text,
    quote_setting,
)
from pgvet.live import redact
from pgvet.provenance import Source


def one(text: str) -> ConfSetting:
    entries, problems = parse_conf_text(text, "pg.conf")
    assert problems == []
    assert len(entries) == 1 and isinstance(entries[0], ConfSetting)
    return entries[0]


def syntax_errors(text: str) -> list[tuple[int | None, str]]:
    return [(p.source.line, p.message) for p in parse_conf_text(text, "pg.conf")[1]]


# --- grammar ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name", "value", "raw", "quoted"),
    [
        ("shared_buffers = 128MB\n", "shared_buffers", "128MB", "128MB", False),
        ("shared_buffers 128MB\n", "shared_buffers", "128MB", "128MB", False),  # '=' is optional
        ("Work_Mem=4MB", "work_mem", "4MB", "4MB", False),  # names fold to lower case; no final newline
        ("\t port\t=\t5432\t# the port\n", "port", "5432", "5432", False),
        ("pg_stat_statements.max = 5000\n", "pg_stat_statements.max", "5000", "5000", False),
        ("lc_messages = en_US.UTF-8\n", "lc_messages", "en_US.UTF-8", "en_US.UTF-8", False),
        ("log_directory = pg_log/a:b-c\n", "log_directory", "pg_log/a:b-c", "pg_log/a:b-c", False),
        ("checkpoint_completion_target = 0.9\n", "checkpoint_completion_target", "0.9", "0.9", False),
        ("x.y = -.5e-3\n", "x.y", "-.5e-3", "-.5e-3", False),
        ("x.y = .\n", "x.y", ".", ".", False),  # REAL allows no digits at all
        ("x.y = 0x1Fkb\n", "x.y", "0x1Fkb", "0x1Fkb", False),
        ("x.y = 0xg\n", "x.y", "0xg", "0xg", False),  # 0 with unit letters "xg"
        ("wal_buffers = -1\n", "wal_buffers", "-1", "-1", False),
        ("x.y = +7\n", "x.y", "+7", "+7", False),
        ("search_path = '\"$user\", public'\n", "search_path", '"$user", public', "'\"$user\", public'", True),
        ("x.y = 'it''s'\n", "x.y", "it's", "'it''s'", True),
        ("x.y = ''\n", "x.y", "", "''", True),
        ("x.y = 'a\\tb\\nc\\rd\\be\\ff'\n", "x.y", "a\tb\nc\rd\be\ff", "'a\\tb\\nc\\rd\\be\\ff'", True),
        ("x.y = '\\101\\60x\\1011'\n", "x.y", "A0xA1", "'\\101\\60x\\1011'", True),  # at most 3 octal digits
        ("x.y = '\\303\\251'\n", "x.y", "é", "'\\303\\251'", True),  # octal bytes decoded as UTF-8
        ("x.y = '\\q\\\\\\''\n", "x.y", "q\\'", "'\\q\\\\\\''", True),  # backslash + other char: that char
        ("x.y = 'ab\\0cd'\n", "x.y", "ab", "'ab\\0cd'", True),  # byte 0 ends the C string
        ("x.y = 'q\\777'\n", "x.y", "q\\xff", "'q\\777'", True),  # low byte kept; not UTF-8 → \xff
        ("x.y='#not a comment'#a comment\n", "x.y", "#not a comment", "'#not a comment'", True),
        ("x.y'v'\n", "x.y", "v", "'v'", True),  # no blank needed between tokens
        ("café = 1\n", "café", "1", "1", False),  # bytes 0x80-0xFF are letters
        ("x.y = on\r\n", "x.y", "on", "on", False),
    ],
)
def test_setting_grammar(text: str, name: str, value: str, raw: str, quoted: bool) -> None:
    written = "Work_Mem" if name == "work_mem" else name  # the one line that writes its name in capitals
    assert one(text) == ConfSetting(name, value, raw, quoted, Source("pg.conf", 1), written)


def test_lines_count_blank_and_comment_lines() -> None:
    entries, problems = parse_conf_text("# head\n\n  \na = 1\n#x\nB = 'two'\n\nc 3", "f")
    assert problems == []
    assert [(e.name, e.value, e.source) for e in entries if isinstance(e, ConfSetting)] == [
        ("a", "1", Source("f", 4)), ("b", "two", Source("f", 6)), ("c", "3", Source("f", 8))]


@pytest.mark.parametrize(
    ("text", "errors"),
    [
        ("listen_addresses = *\n", [(1, 'syntax error in file "pg.conf" line 1, near token "*"')]),
        ("a = 1e5\n", [(1, 'syntax error in file "pg.conf" line 1, near token "5"')]),  # no dot: 1e then 5
        ("a = 5.5MB\n", [(1, 'syntax error in file "pg.conf" line 1, near token "MB"')]),
        ("a = 1\nfoo\n", [(2, 'syntax error in file "pg.conf" line 2, near end of line')]),
        # Without a final newline the end of line is counted on the line before, as PostgreSQL does.
        ("a = 1\nfoo", [(1, 'syntax error in file "pg.conf" line 1, near end of line')]),
        ("= 3\n", [(1, 'syntax error in file "pg.conf" line 1, near token "="')]),
        # "a.b" is a qualified name, and as long as the unquoted string: the earlier rule wins.
        ("lc_messages = en_US.UTF8\n", [(1, 'syntax error in file "pg.conf" line 1, near token "en_US.UTF8"')]),
        ("a.b.c = 1\n", [(1, 'syntax error in file "pg.conf" line 1, near token "a.b.c"')]),
        ("a = = 1\n", [(1, 'syntax error in file "pg.conf" line 1, near token "="')]),
        ("a = 'open\n", [(1, "syntax error in file \"pg.conf\" line 1, near token \"'\"")]),
        ("a = 'x' 'y'\n", [(1, "syntax error in file \"pg.conf\" line 1, near token \"'y'\"")]),
        ("a = /data\n", [(1, 'syntax error in file "pg.conf" line 1, near token "/"')]),
        ("a = -\n", [(1, 'syntax error in file "pg.conf" line 1, near token "-"')]),
        ("\n\nx = 1 2 3\ny = 2\n", [(3, 'syntax error in file "pg.conf" line 3, near token "2"')]),
    ],
)
def test_syntax_errors(text: str, errors: list[tuple[int, str]]) -> None:
    assert syntax_errors(text) == errors


def test_parsing_resumes_after_a_syntax_error() -> None:
    entries, problems = parse_conf_text("a = *\nb = 2\nc = /x\nd = 4\n", "f")
    assert [(e.name, e.source.line) for e in entries if isinstance(e, ConfSetting)] == [("b", 2), ("d", 4)]
    assert [p.source.line for p in problems] == [1, 3]
    assert all(p.kind == "syntax" and p.fatal for p in problems)


def test_file_abandoned_after_100_syntax_errors() -> None:
    entries, problems = parse_conf_text("x = *\n" * 150 + "y = 1\n", "f")
    assert entries == []
    assert [p.kind for p in problems] == ["syntax"] * 100 + ["too-many-errors"]
    assert problems[-1] == ConfProblem("too-many-errors", 'too many syntax errors found, abandoning file "f"',
                                       Source("f", 100), True)


def test_pg_file_settings_gives_up_at_first_error() -> None:
    entries, problems = parse_conf_text("x = *\ny = 1\n", "f", syntax_error_limit=1)
    assert entries == []
    assert [p.kind for p in problems] == ["syntax", "too-many-errors"]


@pytest.mark.parametrize(
    ("text", "kind", "target"),
    [
        ("include 'a.conf'\n", "include", "a.conf"),
        ("INCLUDE = 'a.conf'\n", "include", "a.conf"),
        ("include_if_exists sub/b.conf\n", "include_if_exists", "sub/b.conf"),
        ("Include_Dir 'conf.d'  # more\n", "include_dir", "conf.d"),
    ],
)
def test_include_directives(text: str, kind: str, target: str) -> None:
    entries, problems = parse_conf_text(text, "f")
    assert problems == []
    assert len(entries) == 1 and isinstance(entries[0], ConfDirective)
    assert (entries[0].kind, entries[0].target, entries[0].source) == (kind, target, Source("f", 1))


# --- loader -----------------------------------------------------------------------------------------


def write(base: Path, files: dict[str, str | bytes]) -> None:
    for relative, content in files.items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)


def load(base: Path, **kwargs: object) -> postgresql_conf.ConfResult:
    auto = base / "postgresql.auto.conf"
    return load_conf(base / "postgresql.conf", root=base, auto_conf=auto if auto.exists() else None,
                     display_base=base, **kwargs)  # type: ignore[arg-type]


def placed(result: postgresql_conf.ConfResult) -> list[tuple[str, str, str]]:
    return [(s.name, s.value, str(s.source)) for s in result.settings]


def test_includes_followed_in_order_and_later_wins(tmp_path: Path) -> None:
    write(tmp_path, {
        "postgresql.conf": "work_mem = 1MB\ninclude 'sub/a.conf'\ninclude_dir 'conf.d'\nwork_mem = 2MB\n"
                           "include_if_exists 'nope.conf'\n",
        "sub/a.conf": "work_mem = 3MB\ninclude '../b.conf'\n",
        "b.conf": "port = 1\n",
        "conf.d/10-x.conf": "port = 10\n",
        "conf.d/9-x.conf": "port = 9\n",  # byte order: "10-" sorts before "9-"
        "conf.d/B.conf": "port = 66\n",
        "conf.d/a.conf": "port = 97\n",
        "conf.d/.hidden.conf": "port = 0\n",
        "conf.d/x.conf.bak": "port = 0\n",
        "conf.d/.conf": "port = 0\n",
        "conf.d/dir.conf/inner.conf": "port = 0\n",
        "postgresql.auto.conf": "port = 5433\n",
    })
    result = load(tmp_path)
    assert placed(result) == [
        ("work_mem", "1MB", "postgresql.conf:1"),
        ("work_mem", "3MB", "sub/a.conf:1"),
        ("port", "1", "b.conf:1"),
        ("port", "10", "conf.d/10-x.conf:1"),
        ("port", "9", "conf.d/9-x.conf:1"),
        ("port", "66", "conf.d/B.conf:1"),
        ("port", "97", "conf.d/a.conf:1"),
        ("work_mem", "2MB", "postgresql.conf:4"),
        ("port", "5433", "postgresql.auto.conf:1"),
    ]
    assert result.files == ["postgresql.conf", "sub/a.conf", "b.conf", "conf.d/10-x.conf", "conf.d/9-x.conf",
                            "conf.d/B.conf", "conf.d/a.conf", "postgresql.auto.conf"]
    assert {k: str(v.source) for k, v in result.effective().items()} == {
        "work_mem": "postgresql.conf:4", "port": "postgresql.auto.conf:1"}
    assert result.problems == [ConfProblem("missing-include-if-exists",
                                           'skipping missing configuration file "nope.conf"',
                                           Source("postgresql.conf", 5), False)]


def test_applied_lines_are_the_last_of_each_spelling(tmp_path: Path) -> None:
    """PostgreSQL skips a line that a later line repeats under exactly the same name (strcmp, through includes
    and postgresql.auto.conf); a line spelt differently, or under an old alias, is applied in its turn."""
    write(tmp_path, {"postgresql.conf": "work_mem = 'bogus'\nWork_Mem = '1MB'\ninclude 'a.conf'\nsort_mem = 'x'\n",
                     "a.conf": "work_mem = '2MB'\n", "postgresql.auto.conf": "Work_Mem = '3MB'\nwork_mem = '4MB'\n"})
    result = load_conf(tmp_path / "postgresql.conf", root=tmp_path, auto_conf=tmp_path / "postgresql.auto.conf",
                       display_base=tmp_path)
    assert {name: str(setting.source) for name, setting in result.applied().items()} == {
        "work_mem": "postgresql.auto.conf:2", "Work_Mem": "postgresql.auto.conf:1", "sort_mem": "postgresql.conf:4"}
    assert str(result.effective()["work_mem"].source) == "postgresql.auto.conf:2"


def test_missing_include_and_dir_are_fatal(tmp_path: Path) -> None:
    write(tmp_path, {"postgresql.conf": "include 'gone.conf'\ninclude_dir 'gone.d'\ninclude_dir 'empty.d'\n"})
    (tmp_path / "empty.d").mkdir()
    result = load(tmp_path)
    assert [(p.kind, p.message, str(p.source), p.fatal) for p in result.problems] == [
        ("missing-include", 'could not open configuration file "gone.conf": No such file or directory',
         "postgresql.conf:1", True),
        ("missing-include-dir", 'could not open configuration directory "gone.d": No such file or directory',
         "postgresql.conf:2", True),
    ]


def test_errors_stop_auto_conf_and_the_rest_of_a_directory(tmp_path: Path) -> None:
    write(tmp_path, {
        "postgresql.conf": "include_dir 'conf.d'\nport = 1\n",
        "conf.d/a.conf": "port = 2\nport = *\n",
        "conf.d/b.conf": "port = 3\n",
        "postgresql.auto.conf": "port = 4\n",
    })
    result = load(tmp_path)
    assert placed(result) == [("port", "2", "conf.d/a.conf:1"), ("port", "1", "postgresql.conf:2")]
    assert [(p.kind, str(p.source), p.fatal) for p in result.problems] == [
        ("syntax", "conf.d/a.conf:2", True), ("not-read", "postgresql.auto.conf", False)]


def test_depth_limit_is_ten(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {"postgresql.conf": "include 'l1.conf'\n"}
    for level in range(1, 12):
        files[f"l{level}.conf"] = f"x.l{level} = {level}\ninclude 'l{level + 1}.conf'\n"
    write(tmp_path, files)
    result = load(tmp_path)
    assert [s.name for s in result.settings] == [f"x.l{level}" for level in range(1, 11)]
    assert result.problems[0] == ConfProblem(
        "depth", 'could not open configuration file "l11.conf": maximum nesting depth exceeded',
        Source("l10.conf", 2), True)


def test_self_include_is_recursion_and_longer_cycles_hit_the_depth_limit(tmp_path: Path) -> None:
    write(tmp_path, {"postgresql.conf": "include 'postgresql.conf'\n"})
    assert [(p.kind, p.message, str(p.source)) for p in load(tmp_path).problems] == [
        ("recursion", 'configuration file recursion in "postgresql.conf"', "postgresql.conf:1")]
    write(tmp_path, {"postgresql.conf": "x.a = 1\ninclude 'b.conf'\n", "b.conf": "include 'postgresql.conf'\n"})
    result = load(tmp_path)
    assert len(result.settings) == 6  # read at depths 0, 2, 4, 6, 8, 10 as PostgreSQL does
    assert [(p.kind, str(p.source)) for p in result.problems] == [
        ("cycle", "b.conf:1"), ("cycle", "postgresql.conf:2"), ("depth", "postgresql.conf:2")]


def test_directory_given_as_file(tmp_path: Path) -> None:
    write(tmp_path, {"postgresql.conf": "include_if_exists 'sub'\n", "sub/x.conf": "a = 1\n"})
    assert load(tmp_path).problems == [ConfProblem(
        "unreadable", 'input in flex scanner failed at file "sub" line 1', Source("sub", 1), True)]


def test_empty_include_names(tmp_path: Path) -> None:
    write(tmp_path, {"postgresql.conf": "include ''\ninclude_dir ' '\n"})
    assert [(p.kind, p.message, p.source.line) for p in load(tmp_path).problems] == [
        ("empty-include", 'empty configuration file name: ""', 1),
        ("empty-include-dir", 'empty configuration directory name: " "', 2)]


def test_include_outside_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.conf"
    outside.write_text("port = 1\n")
    snap = tmp_path / "snap"
    write(snap, {"postgresql.conf": f"include '{outside}'\ninclude 'link.conf'\ninclude_dir 'd'\n"})
    (snap / "link.conf").symlink_to(outside)
    (snap / "d").mkdir()
    (snap / "d" / "x.conf").symlink_to(outside)
    result = load(snap)
    assert result.settings == []
    assert [(p.kind, p.source.line, p.fatal) for p in result.problems] == [
        ("outside-root", 1, False), ("outside-root", 2, False), ("outside-root", 3, False)]
    # where the link leads is not said: resolved on the machine that lints, it would show what lies there
    assert result.problems[1].message == "include outside the snapshot: link.conf (a symbolic link leads out of it); " \
        "not read"
    assert str(outside) not in " ".join(problem.message for problem in result.problems[1:])


def test_symlink_loop_and_unreadable(tmp_path: Path) -> None:
    write(tmp_path, {"postgresql.conf": "include 'loop.conf'\ninclude_if_exists 'loop.conf'\n"})
    (tmp_path / "loop.conf").symlink_to(tmp_path / "loop.conf")
    result = load(tmp_path)
    assert [(p.kind, p.fatal) for p in result.problems] == [
        ("unreadable", True), ("missing-include-if-exists", False)]
    assert "Too many levels of symbolic links" in result.problems[0].message


def test_latin1_file_and_huge_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"postgresql.conf": b"a = 1\nx.y = 'caf\xe9'\n", "big.conf": b"a = 1\n" * 10})
    result = load(tmp_path)
    assert placed(result) == [("a", "1", "postgresql.conf:1"), ("x.y", "café", "postgresql.conf:2")]
    assert [(p.kind, str(p.source), p.fatal) for p in result.problems] == [("encoding", "postgresql.conf:2", False)]
    monkeypatch.setattr(postgresql_conf, "MAX_FILE_BYTES", 20)
    write(tmp_path, {"postgresql.conf": "include 'big.conf'\n"})
    with pytest.raises(InputError, match=r"big\.conf is larger than 20 bytes") as raised:
        load(tmp_path)
    assert str(raised.value.source) == "postgresql.conf:1"  # the include line


def test_main_file_missing_is_a_problem(tmp_path: Path) -> None:
    result = load_conf(tmp_path / "nope.conf", root=tmp_path)
    assert [(p.kind, p.fatal) for p in result.problems] == [("unreadable", True)]
    assert result.settings == [] and result.files == []


def test_paths_without_display_base_are_postgres_paths(tmp_path: Path) -> None:
    write(tmp_path, {"postgresql.conf": "include 'a/../b.conf'\n", "b.conf": "port = 1\n"})
    result = load_conf(tmp_path / "postgresql.conf", root=tmp_path)
    assert [str(s.source) for s in result.settings] == [f"{tmp_path}/b.conf:1"]


def test_file_budget_stops_exponential_include_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgresql_conf, "MAX_FILES", 50)
    files: dict[str, str | bytes] = {"postgresql.conf": "include_dir 'l1'\n"}
    for level in range(1, 10):  # each file of a level includes the whole next level: 5**8 files
        for name in "abcde":
            files[f"l{level}/{name}.conf"] = f"include_dir '../l{level + 1}'\n" if level < 9 else "x.y = 1\n"
    write(tmp_path, files)
    result = load(tmp_path)
    assert len(result.files) == 50
    assert [p.kind for p in result.problems] == ["too-many-files"]


# --- properties -------------------------------------------------------------------------------------

CONF_ALPHABET = st.sampled_from(list(" \t\r\n=#'\\\"abcxyzAB_019.-+:/*é\x00\x0b"))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(CONF_ALPHABET, max_size=200) | st.text(max_size=100))
def test_arbitrary_text_never_raises(text: str) -> None:
    lines = text.count("\n") + 1
    try:
        entries, problems = parse_conf_text(text, "f")
    except ParseError:
        return
    for item in [*entries, *problems]:
        assert item.source.path == "f"
        assert item.source.line is not None and 0 <= item.source.line <= lines


def test_character_classes_are_the_lexers_over_every_code_point() -> None:
    """The single negated classes of the lexer are PostgreSQL's: ASCII letters, digits and punctuation as
    flex has them, every non-ASCII character a letter (and the redaction's name character is [\\w.$-])."""
    every = "".join(map(chr, range(0x110000)))
    for written, meant in ((postgresql_conf.LETTER, r"[A-Za-z_]|[^\x00-\x7f]"),
                           (redact.NAME_CHAR, r"[\w.$-]|[^\x00-\x7f]"),
                           (postgresql_conf._ID_CHAR, r"[A-Za-z_0-9]|[^\x00-\x7f]"),
                           (postgresql_conf._UNQUOTED_CHAR, r"[A-Za-z_0-9\-._:/]|[^\x00-\x7f]")):
        assert re.sub(written, "", every) == re.sub(meant, "", every)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.binary(max_size=100))
def test_arbitrary_bytes_through_the_loader_never_raise(tmp_path: Path, main: bytes, other: bytes) -> None:
    (tmp_path / "postgresql.conf").write_bytes(main + b"\ninclude 'other.conf'\ninclude_dir '.'\n")
    (tmp_path / "other.conf").write_bytes(other)
    try:
        result = load(tmp_path)
    except ParseError:
        return
    for problem in result.problems:
        assert problem.source.path
        assert problem.message
    assert all(os.sep not in s.source.path or not s.source.path.startswith(os.sep) for s in result.settings)


def test_a_huge_line_after_a_syntax_error_is_skipped_at_once() -> None:
    """Found by fuzzing: a line of a million '=' after a name took seconds, skipped token by token."""
    import time

    text = "max_connections " + "=" * 1_000_000 + "\nport = 5432\n" + "x = 'a' " + "b " * 300_000
    started = time.perf_counter()
    entries, problems = parse_conf_text(text, "f")
    assert time.perf_counter() - started < 1
    assert [(entry.name, entry.value) for entry in entries] == [("port", "5432")]
    assert [problem.message for problem in problems] == ['syntax error in file "f" line 1, near token "="',
                                                         'syntax error in file "f" line 3, near token "b"']


@given(st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\n\r"), max_size=40))
def test_a_value_pgvet_writes_reads_back_as_itself(value: str) -> None:
    # a fix's value in postgresql.conf: a backslash is an escape in the file's strings ('C:\\new' read a line feed,
    # a final backslash left the string open), so it is doubled, as a quote is
    entries, problems = parse_conf_text(f"archive_command = {quote_setting(value)}\n", "postgresql.conf")
    assert problems == [] and [entry.value for entry in entries] == [value]  # type: ignore[union-attr]


def test_alter_system_is_given_a_backslash_as_an_escape_string() -> None:
    assert quote_sql("it's") == "'it''s'"
    assert quote_sql("C:\\new\\") == "E'C:\\\\new\\\\'"  # whatever standard_conforming_strings is


def test_an_include_outside_the_directory_is_never_looked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repository's include of a path outside it was resolved on the machine that lints it (os.path.realpath): an
    include of /net/HOST/… had an automounter mount from that host, and an include_dir through a link of the
    machine's into the repository listed its files where, without the link, it was outside. Outside is said as
    written, nothing there looked up; links inside the directory are still followed."""
    runner = tmp_path / "runner"
    runner.mkdir()
    root = tmp_path / "db"
    (root / "conf.d").mkdir(parents=True)
    (root / "conf.d" / "a.conf").write_text("work_mem = '64MB'\n")
    (root / "inside").symlink_to("conf.d")
    (root / "postgresql.conf").write_text(f"include '{runner}/probe/x.conf'\ninclude_dir '{runner}/in'\n"
                                          "include_dir 'inside'\n")
    looked_up: list[str] = []
    real_lstat = os.lstat

    def recorded(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if kwargs.get("dir_fd") is None:
            looked_up.append(os.fspath(path))
        return real_lstat(path, *args, **kwargs)

    results = []
    for linked in (False, True):
        if linked:
            (runner / "in").symlink_to(root / "conf.d")
        with monkeypatch.context() as patched:
            patched.setattr(os, "lstat", recorded)
            result = load_conf(root / "postgresql.conf", root=root, display_base=root)
        results.append(sorted((problem.kind, problem.message) for problem in result.problems))
        assert result.effective()["work_mem"].value == "64MB"  # through the link inside
    assert results[0] == results[1]
    assert [kind for kind, _ in results[0]] == ["outside-root", "outside-root"]
    assert not [path for path in looked_up if path.startswith(str(runner))], looked_up

