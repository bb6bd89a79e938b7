"""The text report on hand-built results: layout, values, offending lines, fixes, summary, colour."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgvet.findings import Evidence
from pgvet.provenance import Source
from pgvet.report import FORMATS, ReportOptions, use_color, visible
from pgvet.report.text import HostFiles, summary_line, value_text
from report_samples import CONFIG_REPO_CONF, Samples, write_samples


@pytest.fixture
def samples(tmp_path: Path) -> Samples:
    return write_samples(tmp_path)


def text(samples: Samples, tmp_path: Path, width: int = 80, verbose: bool = False) -> str:
    return FORMATS["text"](samples.fleet(), ReportOptions(color=False, width=width, verbose=verbose,
                                                          repo_root=tmp_path))


def block(output: str, first: str) -> list[str]:
    """The lines of one finding: from its head line to the blank line after it."""
    lines = output.splitlines()
    start = lines.index(first)
    end = lines.index("", start)
    return lines[start:end]


def test_a_finding_shows_message_place_offending_line_values_and_fix(samples: Samples, tmp_path: Path) -> None:
    assert block(text(samples, tmp_path, width=100), "ERROR    PGV110 huge-pages-on-pool-too-small") == [
        "ERROR    PGV110 huge-pages-on-pool-too-small",
        "         huge_pages = on: PostgreSQL 17 needs 72250 huge pages of 2.0 MiB for 141 GiB of shared",
        "         memory, but the kernel has 52000: the server will not start.",
        "  at     big-server/postgresql.conf:3   huge_pages = on # was try: pages must be used, not silently…",
        "  from   big-server/meminfo.txt:4   HugePages_Total: 52000",
        "  from   big-server/sysctl.txt:1   vm.nr_hugepages = 60000",
        "  values needed = 72250",
        "         available = 52000",
        "         shared_memory_size = 151517146003 (141.1 GiB)",
        "         hugepage_size = 2097152 (2.0 MiB)",
        "         suggested = 73695",
        "  fix    sysctl: vm.nr_hugepages = 73695",
        "         postgresql.conf: huge_pages = on",
        "         or in SQL: ALTER SYSTEM SET huge_pages = 'on';",
        "         Reserve the pages at boot so that fragmentation cannot prevent their allocation.",
    ]


def test_the_startup_error_shows_line_12_of_the_config_repository(samples: Samples, tmp_path: Path) -> None:
    lines = block(text(samples, tmp_path), "ERROR    PGV401 unknown-parameter  [effective_io_concurency]")
    assert "  at     config-repo/postgresql.conf:12   effective_io_concurency = 200" in lines


def test_hosts_in_order_findings_by_severity_quiet_ones_last(samples: Samples, tmp_path: Path) -> None:
    output = text(samples, tmp_path, width=120)
    hosts = output.split("\nFleet: ")[0]  # the fleet summary's tables follow the hosts
    heads = [line for line in hosts.splitlines() if line[:1].isupper() and "PGV" in line]
    assert heads == [
        "WARNING  PGV101 overcommit-not-strict", "WARNING  PGV139 transparent-huge-pages-always",
        "INFO     PGV605 checkpoint-timeout-default",
        "ERROR    PGV110 huge-pages-on-pool-too-small", "WARNING  PGV104 commit-limit-too-low",
        "ERROR    PGV401 unknown-parameter  [effective_io_concurency]", "INFO     PGV605 checkpoint-timeout-default",
    ]
    assert "warning  PGV130 swappiness-too-high (suppressed: a 1 GiB swap on a VM that is rebuilt nightly)" in output
    assert "warning  PGV536 too-many-connections (in the baseline)" in output
    # the file from where the run is, as findings show theirs (not `meminfo.txt`: which host's?)
    assert output.splitlines()[0] == "error: broken-host: broken-host/meminfo.txt: permission denied"
    assert "notice: suppression for PGV999 in .pgvet.toml matched nothing" in output


def test_summary_counts_only_active_findings_and_mentions_what_was_skipped(samples: Samples,
                                                                          tmp_path: Path) -> None:
    assert text(samples, tmp_path).splitlines()[-3:] == [
        "2 errors, 3 warnings, 2 info on 3 hosts; 1 host could not be read",
        "not counted: 1 suppressed, 1 in the baseline",
        "1 rule was not evaluated (missing inputs; --verbose lists them)",
    ]
    one = samples.result(samples.config_repo)
    assert summary_line(one, verbose=False) == "1 error, 0 warnings, 1 info on 1 host"


def test_verbose_lists_rules_not_evaluated_with_the_missing_facts(samples: Samples, tmp_path: Path) -> None:
    quiet, verbose = text(samples, tmp_path), text(samples, tmp_path, verbose=True)
    listed = "  PGV142 sched-migration-cost-low: missing sysctl.kernel.sched_migration_cost_ns"
    assert listed not in quiet
    assert listed in verbose.splitlines()
    assert verbose.rstrip().endswith("1 rule was not evaluated (missing inputs; listed above)")


@pytest.mark.parametrize("width", [80, 120])
def test_no_line_is_wider_than_the_terminal_and_none_ends_in_blanks(samples: Samples, tmp_path: Path,
                                                                  width: int) -> None:
    lines = text(samples, tmp_path, width=width).splitlines()
    assert max(len(line) for line in lines) <= width
    assert all(line == line.rstrip() for line in lines)


def test_evidence_places_are_listed_once_and_at_most_three_without_verbose(samples: Samples,
                                                                          tmp_path: Path) -> None:
    finding = samples.big_server.findings[1]
    finding.evidence += [finding.evidence[1]] + [
        Evidence(f"sysctl.vm.key{number}", number, Source("sysctl.txt", 2)) for number in range(3)] + [
        Evidence("meminfo.mem_total", 1, Source("meminfo.txt", 1))]
    quiet = block(text(samples, tmp_path), "ERROR    PGV110 huge-pages-on-pool-too-small")
    assert [line for line in quiet if line.startswith("  from") or "more" in line] == [
        "  from   big-server/meminfo.txt:4   HugePages_Total: 52000",
        "  from   big-server/sysctl.txt:1   vm.nr_hugepages = 60000",
        "  from   big-server/sysctl.txt:2   vm.overcommit_memory = 2",
        "         and 1 more (--verbose lists them)",
    ]
    verbose = block(text(samples, tmp_path, verbose=True), "ERROR    PGV110 huge-pages-on-pool-too-small")
    assert "  from   big-server/meminfo.txt:1   MemTotal: 197568400 kB" in verbose


def test_values_that_do_not_fit_one_line_get_one_line_each(samples: Samples, tmp_path: Path) -> None:
    assert block(text(samples, tmp_path), "WARNING  PGV104 commit-limit-too-low")[4:9] == [
        "  values commit_limit = 88227287040 (82.2 GiB)",
        "         commit_limit_ratio = 0.436",
        "         suggested_ratio = 100",
        "         expected = 160000000000 (149.0 GiB)",
        "         actual = 88227287040 (82.2 GiB)",
    ]


def test_memory_sizes_are_shown_in_iec_units_counts_are_not() -> None:
    assert value_text("shared_memory_size", 151517146003.13538) == "151517146003 (141.1 GiB)"
    assert value_text("needed", 72250) == "72250"
    assert value_text("suggested_max_wal_size", 2147483648) == "2147483648 (2.0 GiB)"  # "suggested", yet a size
    assert value_text("hugepages_suggested", 5_000_000) == "5000000"
    assert value_text("hugepages_needed", 5_000_000) == "5000000"
    assert value_text("commit_limit_ratio", 0.43609939) == "0.436"
    assert value_text("enabled", True) == "true"
    assert value_text("expected", None) == "null"
    # transaction IDs and ages are no bytes, however large (a wraparound age was shown as 1.6 GiB)
    assert value_text("xid_age", 1_699_999_279) == "1699999279"
    assert value_text("autovacuum_freeze_max_age", 2_000_000_000) == "2000000000"
    assert value_text("left", 444_484_368) == "444484368"
    assert value_text("idle_seconds", 1_300_000) == "1300000"
    assert value_text("memory_left", 4_000_000) == "4000000 (3.8 MiB)"


def test_offending_line_reads_only_small_regular_files_inside_the_host(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "postgresql.conf").write_text("a = 1\nb = 2\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("password = hunter2\n")
    (host / "link.conf").symlink_to(secret)
    (host / "big.conf").write_text("x = 1\n" * 200_000)
    (host / "conf.d").mkdir()
    assert HostFiles(str(host)).line("postgresql.conf", 2) == "b = 2"
    assert HostFiles(str(host)).line("postgresql.conf", 3) is None
    assert HostFiles(str(host)).line("postgresql.conf", 0) is None
    assert HostFiles(str(host)).line("../secret.txt", 1) is None
    assert HostFiles(str(host)).line(str(secret), 1) is None
    assert HostFiles(str(host)).line("link.conf", 1) is None
    assert HostFiles(str(host)).line("big.conf", 1) is None
    assert HostFiles(str(host)).line("conf.d", 1) is None
    assert HostFiles(str(host)).line("<default>", 1) is None
    if hasattr(os, "mkfifo"):
        os.mkfifo(host / "pipe.conf")
        assert HostFiles(str(host)).line("pipe.conf", 1) is None  # would block forever if opened


def test_lines_are_counted_in_line_feeds_a_bare_carriage_return_is_inside_its_line(samples: Samples,
                                                                                   tmp_path: Path) -> None:
    """Line numbers count '\\n', as PostgreSQL's lexer, ``sed -n Np`` and ``grep -n`` do: a '\\r' alone (a comment
    pasted from an old Mac file) does not start a line, and a CRLF line is shown without its '\\r'."""
    conf = Path(samples.config_repo.host_facts.root) / "postgresql.conf"
    conf.write_bytes(CONFIG_REPO_CONF.replace("line 5\n", "line 5\rpasted\n").replace("\n", "\r\n").encode())
    lines = block(text(samples, tmp_path), "ERROR    PGV401 unknown-parameter  [effective_io_concurency]")
    assert "  at     config-repo/postgresql.conf:12   effective_io_concurency = 200" in lines
    assert HostFiles(str(conf.parent)).line("postgresql.conf", 5) == "# reporting database, line 5\rpasted"
    conf.write_bytes(b"a = 1\r\r\nb = 2\r")
    assert HostFiles(str(conf.parent)).line("postgresql.conf", 1) == "a = 1\r"  # one '\r' is the CRLF's
    assert HostFiles(str(conf.parent)).line("postgresql.conf", 2) == "b = 2"
    assert HostFiles(str(conf.parent)).line("postgresql.conf", 3) is None


def test_colour_follows_terminal_no_color_and_pre_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    assert use_color(ReportOptions(), is_terminal=True) is True
    assert use_color(ReportOptions(), is_terminal=False) is False
    assert use_color(ReportOptions(color=True), is_terminal=False) is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(ReportOptions(), is_terminal=True) is False
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("PRE_COMMIT", "1")
    assert use_color(ReportOptions(), is_terminal=True) is False


def test_plain_output_has_no_escape_codes_and_coloured_output_has(samples: Samples, tmp_path: Path) -> None:
    assert "\x1b[" not in text(samples, tmp_path)
    coloured = FORMATS["text"](samples.fleet(), ReportOptions(color=True, width=80, repo_root=tmp_path))
    assert "\x1b[1;31mERROR" in coloured


def test_a_word_longer_than_the_line_is_folded_not_cut() -> None:
    """A mount's options are one long word: the grid the message was printed in cut it with an ellipsis
    (the end of the options and the words after it were lost)."""
    from rich.console import Console
    from rich.text import Text

    from pgvet.report.text import LABEL_WIDTH, print_rows

    console = Console(file=io.StringIO(), width=LABEL_WIDTH + 20, color_system=None)
    print_rows(console, [("", Text("on rw,relatime,rsize=1048576,hard and holds PGDATA")), ("  at", Text("x:1"))])
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    # the report drops the blanks that end a line (rich pads cells with them; the plain writer does not)
    assert [line.rstrip() for line in printed.splitlines()] == [
        "         on", "         rw,relatime,rsize=10", "         48576,hard and holds", "         PGDATA",
        "  at     x:1"]


def test_a_report_reads_a_shown_file_once_and_the_next_report_reads_it_again(tmp_path: Path) -> None:
    # one HostFiles serves every finding of a host in one report; a file changed since is read by the next one
    (tmp_path / "postgresql.conf").write_text("a = 1\n")
    files = HostFiles(str(tmp_path))
    assert files.line("postgresql.conf", 1) == "a = 1"
    (tmp_path / "postgresql.conf").write_text("a = 22\n")
    assert files.line("postgresql.conf", 1) == "a = 1"
    assert HostFiles(str(tmp_path)).line("postgresql.conf", 1) == "a = 22"


# Text without colours is written as text rather than rendered by rich (a fifth of the cost): it must be what
# rich prints. Words of every kind the wrapping meets: short and long, wide characters (two cells), tabs,
# line breaks, control codes, blanks in runs. A report escapes control codes (report.visible) before it wraps a
# text, so the wrapping meets their escapes, never the codes (rich's wrapping and its cell_len do not measure an
# ESC alike).
_WORDS = st.sampled_from(["a", "on", "shared_buffers", "=", "128MB,", "rw,relatime,rsize=1048576,hard", "漢字",
                          "défaut", "x" * 70, "\t", "\n", "\x07", "  ", "(53;", "80", "…", "\x1b[1m"])
# Texts of one-cell characters only, which the report wraps itself: blanks at either end and in runs, words
# longer than the line (folded, with the blanks after them), characters outside ASCII.
_ONE_CELL_WORDS = st.sampled_from(["a", "on", "=", "", "  ", "x" * 7, "rw,relatime,rsize=1048576,hard", "x" * 70,
                                   "—", "×", "…", "(53;"])
_ONE_CELL_TEXTS = st.lists(_ONE_CELL_WORDS, max_size=30).map(" ".join)


def _texts(min_size: int = 0) -> st.SearchStrategy[str]:
    return st.one_of(st.lists(_WORDS, min_size=min_size, max_size=40).map(" ".join),
                     _ONE_CELL_TEXTS.filter(lambda text: len(text) >= min_size))


@settings(max_examples=500)
@given(plain=_texts().map(visible), width=st.integers(min_value=1, max_value=40), cut=st.booleans())
def test_texts_are_wrapped_as_rich_wraps_them(plain: str, width: int, cut: bool) -> None:
    """Line by line, the blanks that end lines too (the report drops them, which would hide a difference)."""
    from rich.console import Console
    from rich.text import Text

    from pgvet.report.text import _plain_lines

    console = Console(file=io.StringIO(), width=80, color_system=None)
    text = Text(plain, no_wrap=True, overflow="ellipsis") if cut else Text(plain)
    wrapped = text.wrap(console, width, justify="default", overflow="ellipsis" if cut else "fold", no_wrap=cut)
    assert _plain_lines(text, console, width) == [line.plain for line in wrapped]


def test_a_text_is_wrapped_once_a_run_and_a_long_one_not_kept() -> None:
    """A fleet's hosts repeat their messages: the second host's are the first's lines; a text longer than
    MAX_KEPT_WRAPPED is wrapped each time (the lines kept stay small)."""
    from rich.console import Console
    from rich.text import Text

    from pgvet.report.text import MAX_KEPT_WRAPPED, _plain_lines, _plain_wrapped

    console = Console(file=io.StringIO(), width=80, color_system=None)
    _plain_wrapped.cache_clear()
    message = "a message that one width cannot hold " * 3
    lines = _plain_lines(Text(message), console, 30)
    assert _plain_lines(Text(message), console, 30) == lines
    assert _plain_wrapped.cache_info().hits == 1
    assert _plain_lines(Text(message), console, 40) != lines
    _plain_lines(Text("word " * MAX_KEPT_WRAPPED), console, 30)
    assert _plain_wrapped.cache_info().currsize == 2


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=_texts(1), subject=st.one_of(st.none(), _texts()), fix_text=st.one_of(st.none(), _texts()),
       value=_texts(), width=st.integers(min_value=1, max_value=200), verbose=st.booleans(),
       ram=st.integers(min_value=1, max_value=2**50))
def test_text_without_colours_is_what_rich_prints(samples: Samples, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   message: str, subject: str | None, fix_text: str | None,
                                                   value: str, width: int, verbose: bool, ram: int) -> None:
    import copy
    import dataclasses

    from pgvet.report import text as text_report

    result = copy.deepcopy(samples.fleet())  # the examples share the fixture's results
    host = result.hosts[1]
    facts = host.host_facts.facts
    facts["host.ram"] = facts["host.ram"]._replace(value=ram)  # the memory picture's scale
    first = host.findings[0]
    host.findings[0] = dataclasses.replace(first, message=message, subject=subject,
                                           values={"text": value, **first.values},
                                           fix=dataclasses.replace(first.fix, text=fix_text))
    options = ReportOptions(color=False, width=width, verbose=verbose, repo_root=tmp_path)
    written = FORMATS["text"](result, options)
    with monkeypatch.context() as patched:
        patched.setattr(text_report, "_plain", lambda console: False)  # every line through rich
        printed = FORMATS["text"](result, options)
    assert written == printed


def test_a_line_break_a_value_brought_into_a_message_is_shown_not_folded() -> None:
    """Folded into a blank, the line break of a database named 'new<LF>line' made the SQL of the message and fix
    name another database ("new line"); written \\n it names the one there is."""
    from pgvet.report import prose

    said = prose('ALTER DATABASE "new\nline"  RESET\tenable_seqscan;\n')
    assert said == 'ALTER DATABASE "new\\nline" RESET enable_seqscan;'
    assert prose("a \x1b[31m red") == "a \\x1b[31m red"
