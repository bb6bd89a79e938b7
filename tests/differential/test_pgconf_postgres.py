"""Differential tests: pgvet's postgresql.conf reader judged by real PostgreSQL 15–18.

Two oracles per major, one running server each (started once, reused by every example):
- ``pg_file_settings`` re-reads the files on each query: every occurrence with file and line,
  and the errors PostgreSQL records (in that view PostgreSQL gives up on a file at its first
  syntax error, hence ``syntax_error_limit=1`` on pgvet's side);
- ``postgres -C`` reads them as the postmaster does at start and logs every problem with its
  message: compared word for word with pgvet's messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import corpus_dir
from pgconf_support.oracle import Oracle, pgvet_rows, shared_oracle

pytestmark = pytest.mark.postgres


@pytest.fixture
def oracle(pg_major: int) -> Oracle:
    return shared_oracle(pg_major)


def assert_same_reading(oracle: Oracle, files: dict[str, bytes]) -> None:
    oracle.install(files)
    expected_settings, expected_errors = oracle.file_settings()
    actual_settings, actual_errors = pgvet_rows(oracle.pgvet())
    assert actual_settings == expected_settings
    assert actual_errors == expected_errors
    assert oracle.pgvet_startup_messages() == oracle.startup_messages()


# --- generated configuration trees -------------------------------------------------------------------

NAMES = ["shared_buffers", "work_mem", "Work_Mem", "max_connections", "search_path", "log_line_prefix",
         "my.setting", "pg_stat_statements.max", "App.Key", "listen_addresses", "random_page_cost", "wal_level",
         "café", "x_1"]
VALUES = ["128MB", "1GB", "4096", "0.5", "-1", "on", "off", "'8GB'", "'it''s'", "'a\\tb'", "'\\101\\102'",
          "'x\\\\y'", "'#x'", "en_US.UTF-8", "'*'", ".", "0x1F", "+3", "'\"$user\", public'", "''", "replica",
          "10min", "'%m [%p] '", "a/b:c-d", "'\\q'", "'\\303\\251'", "-.5e3", "1.e2", "'tab\there'", "'a\\'b'"]
BAD_VALUES = ["*", "1e5", "5.5MB", "'open", "/abs", "-", "en_US.UTF8", "= 3", "'a' 'b'", "on off", "a.b.c", ""]
SEPARATORS = [" = ", "=", " ", "\t", "  =  ", "\t=", "= ", " =\t"]
BLANKS = ["", " ", "\t", "  \t", "\r"]
FREE_TEXT = st.text(st.sampled_from(list("abcXYZ019 _-.,:/$%#é\"\t")), max_size=12)
GARBAGE = st.text(st.sampled_from(list(" \t=#'\\abcAB_019.-+:/*")), min_size=1, max_size=15)

# Which include lines each file may hold: a DAG plus a few cycles PostgreSQL refuses quickly.
INCLUDES = {
    "postgresql.conf": ["include 'inc/a.conf'", "include_if_exists = 'inc/b.conf'", "include_dir 'conf.d'",
                        "include_if_exists 'missing.conf'", "INCLUDE 'missing.conf'", "include_dir 'nodir'",
                        "include 'postgresql.conf'", "include_dir ''", "include ' '", "include_dir = conf.d"],
    "inc/a.conf": ["include 'b.conf'", "include_if_exists 'nope.conf'", "include '../inc/./b.conf'"],
    "inc/b.conf": ["include 'b.conf'", "include_if_exists '../missing.conf'"],
    "conf.d/*": ["include '../inc/b.conf'", "include_dir '.'"],
    "postgresql.auto.conf": ["include_if_exists 'inc/b.conf'"],
}
CONFD_NAMES = ["01-a.conf", "10.conf", "9.conf", "B.conf", "a.conf", ".hidden.conf", "x.conf.bak", "ab.CONF"]


@st.composite
def conf_line(draw: st.DrawFn, includes: list[str]) -> str:
    kind = draw(st.sampled_from(["set"] * 12 + ["bad", "comment", "blank", "include", "garbage"]))
    lead, trail = draw(st.sampled_from(BLANKS)), draw(st.sampled_from(BLANKS))
    comment = draw(st.sampled_from(["", "", " # note", "#x='y'"]))
    if kind in ("set", "bad"):
        name = draw(st.sampled_from(NAMES))
        if kind == "bad":
            value = draw(st.sampled_from(BAD_VALUES))
        else:
            value = draw(st.sampled_from(VALUES) | FREE_TEXT.map(lambda text: "'" + text.replace("'", "''") + "'"))
        return f"{lead}{name}{draw(st.sampled_from(SEPARATORS))}{value}{trail}{comment}"
    if kind == "comment":
        return f"{lead}# {draw(FREE_TEXT)}"
    if kind == "include" and includes:
        return f"{lead}{draw(st.sampled_from(includes))}{trail}{comment}"
    if kind == "garbage":
        return draw(GARBAGE)
    return lead


@st.composite
def conf_file(draw: st.DrawFn, includes: list[str], max_lines: int = 8) -> bytes:
    lines = draw(st.lists(conf_line(includes), max_size=max_lines))
    text = "\n".join(lines) + draw(st.sampled_from(["\n", "\n", ""]))
    return text.encode()


@st.composite
def conf_tree(draw: st.DrawFn) -> dict[str, bytes]:
    files = {"postgresql.conf": draw(conf_file(INCLUDES["postgresql.conf"], 12))}
    for name in ("inc/a.conf", "inc/b.conf", "postgresql.auto.conf"):
        if draw(st.booleans()):
            files[name] = draw(conf_file(INCLUDES[name]))
    for name in draw(st.lists(st.sampled_from(CONFD_NAMES), max_size=4, unique=True)):
        files[f"conf.d/{name}"] = draw(conf_file(INCLUDES["conf.d/*"], 4))
    return files


@settings(max_examples=50, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tree=conf_tree())
def test_generated_trees_read_as_postgres_reads_them(oracle: Oracle, tree: dict[str, bytes]) -> None:
    assert_same_reading(oracle, tree)


# --- hand-picked cases the generator reaches rarely --------------------------------------------------

CASES: dict[str, dict[str, bytes]] = {
    "eof-without-newline": {"postgresql.conf": b"a.b = 1\nfoo"},
    "directory-as-file": {"postgresql.conf": b"include_if_exists 'sub'\nx.y = 1\n", "sub/a.conf": b"x.z=2\n"},
    "conf.d-stops-at-error": {"postgresql.conf": b"include_dir 'conf.d'\nx.y = 1\n",
                              "conf.d/a.conf": b"x.a=1\nbad bad bad\n", "conf.d/b.conf": b"x.b=2\n"},
    "indirect-cycle": {"postgresql.conf": b"x.a = 1\ninclude 'a/b.conf'\n",
                       "a/b.conf": b"x.b = 1\ninclude '../postgresql.conf'\n"},
    "depth-11": {"postgresql.conf": b"include 'l1.conf'\n",
                 **{f"l{n}.conf": f"x.l{n} = {n}\ninclude 'l{n + 1}.conf'\n".encode() for n in range(1, 12)}},
    "nul-and-octal": {"postgresql.conf": b"x.a = 'ab\\0cd'\nx.b = 'q\\777'\nx.c = '\\303\\251'\nx.d 'a\x00b'\n"},
    "hundred-and-five-errors": {"postgresql.conf": b"x = *\n" * 105 + b"x.a = 1\n"},
    "error-in-auto-conf": {"postgresql.conf": b"x.a = 1\n", "postgresql.auto.conf": b"x.b = 2\nx.c = *\nx.d=4\n"},
    "crlf": {"postgresql.conf": b"x.a = 1\r\nx.b = 'two'\r\n# c\r\nx.c=3"},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_edge_cases_read_as_postgres_reads_them(oracle: Oracle, case: str) -> None:
    assert_same_reading(oracle, CASES[case])


def test_latin1_file_keeps_postgres_bytes(oracle: Oracle) -> None:
    """PostgreSQL keeps the bytes; pgvet reads a non-UTF-8 file as Latin-1, which maps back to them."""
    oracle.install({"postgresql.conf": b"x.a = 'caf\xe9'\nx.b = \xe9t\xe9\n"})
    rows = oracle.connection.execute(
        "SELECT textsend(setting), sourceline FROM pg_file_settings WHERE name IS NOT NULL ORDER BY seqno").fetchall()
    result = oracle.pgvet()
    assert [(s.value.encode("latin-1"), s.source.line) for s in result.settings] == [
        (bytes(raw), line) for raw, line in rows] == [(b"caf\xe9", 1), (b"\xe9t\xe9", 2)]
    assert [p.kind for p in result.problems] == ["encoding", "missing-include-if-exists"]


# --- the real-world corpus ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus() -> Path:
    return corpus_dir("postgresql-conf")


def corpus_cases(corpus: Path) -> Iterator[tuple[Path, dict[str, bytes]]]:
    """Each corpus file as postgresql.conf; a file at the top of an include tree gets its whole tree
    beside it (hidden files included) so that its relative includes resolve."""
    for main in sorted(corpus.rglob("*")):
        if not main.is_file():
            continue
        parts = main.relative_to(corpus).parts
        if "include-trees" not in parts:
            yield main, {"postgresql.conf": main.read_bytes()}
            continue
        tree = corpus.joinpath(*parts[: parts.index("include-trees") + 2])
        if main.parent != tree:
            continue  # nested files are reached through the includes of the top ones
        files = {str(path.relative_to(tree)): path.read_bytes() for path in tree.rglob("*") if path.is_file()}
        files["postgresql.conf"] = main.read_bytes()
        yield main, files


def test_corpus_reads_as_postgres_reads_it(oracle: Oracle, corpus: Path) -> None:
    cases = list(corpus_cases(corpus))
    assert len(cases) > 50, "the corpus folder lost its files"
    for main, files in cases:
        try:
            assert_same_reading(oracle, files)
        except AssertionError as failure:
            raise AssertionError(f"{main.relative_to(corpus)}: {failure}") from None
