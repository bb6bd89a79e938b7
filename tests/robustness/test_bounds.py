"""Bounds on time and memory for hostile inputs (issue #25, item 7; docs/robustness.md): each scan that was
quadratic or exponential is held to the pattern it replaces on random inputs, and run on an input large
enough that the old algorithm would take minutes (or gigabytes) — in a child process with a generous
deadline, or with its memory measured by tracemalloc — never by a fragile timing."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import pytest

from pgvet.errors import InputError
from pgvet.findings import Finding, HostResult
from pgvet.inputs import documents
from pgvet.inputs.documents import DeclaredHost, DocumentKind
from pgvet.provenance import Source
from pgvet.report import MAX_SHOWN_TEXT
from pgvet.report.text import HostFiles
from pgvet.run.suppress import IgnoreEntry
from pgvet.snapshot.facts import HostFacts


def finishes(code: str, seconds: float = 30) -> str:
    """Run ``code`` in a child Python; its standard output, or a failure when it is still running after
    ``seconds`` (a quadratic scan of these inputs runs for minutes to hours; the linear one, milliseconds)."""
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=seconds, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {seconds} s: not linear")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


# --- suppression comments -------------------------------------------------------------------------------

_OLD_SUPPRESSION = re.compile(r"#\s*pgvet:\s*ignore\[([^\]]*)\]\s*(.*)$")


def test_suppression_comment_reads_what_the_pattern_read() -> None:
    from pgvet.run.suppress import suppression_comment

    rng = random.Random(25)
    atoms = ["#", " ", "pgvet:", "pgvet", "ignore[", "ignore", "[", "]", "PGV101", ",", "reason", "\t", "\x0c"]
    for _ in range(50_000):
        line = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 10)))
        match = _OLD_SUPPRESSION.search(line)
        comment = suppression_comment(line)
        expected = (match.group(1), match.group(2).strip()) if match else None
        assert ((comment[0], comment[1].strip()) if comment else None) == expected, line


def test_suppression_scan_is_linear() -> None:
    # the line: 448 kB of comment starts without a ']' took 61 s; 4 MiB (the most pgvet scans) would
    # take more than an hour
    out = finishes("""
        from pgvet.run.suppress import MAX_SCANNED_BYTES, suppression_comment
        line = "#pgvet:ignore[" * (MAX_SCANNED_BYTES // 14)
        print(suppression_comment(line), suppression_comment(line + "] why"))
    """)
    assert out.startswith("None ('") and out.rstrip().endswith("', ' why')")


# --- mount lines and the mounts holding PGDATA and tablespaces ------------------------------------------

_OLD_LINUX = re.compile(r"^(?P<device>.+?) on (?P<point>.+) type (?P<fstype>\S+) \((?P<options>.*)\)(?: \[.*\])?$")
_OLD_MACOS = re.compile(r"^(?P<device>.+?) on (?P<point>.+) \((?P<fstype>[^,()]+)(?:, (?P<options>.*))?\)$")


def test_mount_lines_read_what_the_patterns_read() -> None:
    from pgvet.inputs.mounts import _linux_mount, _macos_mount

    rng = random.Random(7)
    atoms = [" on ", " type ", " (", ")", ") [", "]", ",", ", ", "a", "/x", " ", "\t", "(", "x y", "on", "\u2003"]

    def piece() -> str:
        return "".join(rng.choice(atoms) for _ in range(rng.randint(0, 4)))

    matched = 0
    for _ in range(40_000):
        if rng.random() < 0.5:
            line = (f"{piece()}d{piece()} on {piece()}/p{piece()} type {rng.choice(['ext4', '', 'a(b'])}{piece()}"
                    f" ({piece()}){rng.choice(['', ' [L]', ' [', piece()])}")
        else:
            line = (f"{piece()}d{piece()} on {piece()}/p{piece()} ({rng.choice(['apfs', '', 'a b'])}"
                    f"{rng.choice(['', ', local', ',x', ', '])}{piece()}){rng.choice(['', piece()])}")
        line = line.rstrip()
        for scan, pattern in ((_linux_mount, _OLD_LINUX), (_macos_mount, _OLD_MACOS)):
            match = pattern.match(line)
            expected = (match["device"], match["point"], match["fstype"], match["options"]) if match else None
            assert scan(line) == expected, line
            matched += match is not None
    assert matched > 10_000  # the generator reaches both kinds of lines, not only refusals


def test_mount_lines_are_read_in_linear_time() -> None:
    # the 160 kB line took 46 s; these are 1 MB and more
    out = finishes("""
        from pgvet.errors import ParseError
        from pgvet.inputs.mounts import parse_mounts
        for line in ("a" + " on a" * 200_000, "a on b" + " type x" * 200_000 + ")", "a on " + "b (" * 300_000 + ")",
                     "a on b" + " type x (" * 200_000 + ")", "a on b type x (" + ") [" * 300_000 + "]",
                     "a on " + "b (" * 300_000 + " (apfs, local)"):
            try:
                print(len(parse_mounts(line, "mounts.txt")))
            except ParseError:
                print("refused")
    """)
    assert out.split() == ["refused", "refused", "refused", "1", "1", "1"]


def test_mount_table_finds_what_trying_each_mount_found() -> None:
    from pgvet.inputs.mounts import Mount, MountTable
    from pgvet.provenance import Source

    rng = random.Random(3)
    names = ["a", "b", "ab", ".", ""]
    for _ in range(2_000):
        mounts = [Mount(f"/dev/{index}", "/" + "/".join(rng.choice(names) for _ in range(rng.randint(0, 3))), "ext4",
                        (), Source("mounts.txt", index)) for index in range(rng.randint(0, 6))]
        table = MountTable(mounts)
        for _ in range(5):
            path = "/" + "/".join(rng.choice(names) for _ in range(rng.randint(0, 4)))
            wanted = [part for part in path.split("/") if part not in ("", ".")]
            best, best_length = None, -1
            for mount in mounts:  # the longest point that is a prefix of the path, the later one on a tie
                point = [part for part in mount.point.split("/") if part not in ("", ".")]
                if len(point) >= best_length and wanted[:len(point)] == point:
                    best, best_length = mount, len(point)
            assert table.holding(path) is best, (path, mounts)


def test_tablespaces_times_mounts_is_linear(tmp_path: Path) -> None:
    # the 8 000 tablespaces on 8 000 mounts took 47 s, each tablespace trying each mount; 25 000 of each
    # would take ten minutes
    host = tmp_path / "host"
    host.mkdir()
    count = 25_000
    (host / "mounts.txt").write_text("".join(f"/dev/sd{index} /t{index} ext4 rw 0 0\n" for index in range(count)))
    (host / "host.yaml").write_text("data_directory: /t0/data\ntablespaces: ["
                                    + ", ".join(f"/t{index}" for index in range(count)) + "]\n")
    out = finishes(f"""
        from pathlib import Path
        from pgvet.snapshot.load import load_host
        host = load_host(Path({str(host)!r}))
        print(sum(1 for item in host.items["mount"] if item["mount.holds_tablespace"]))
    """, seconds=60)
    assert out.split() == [str(count)]


# --- postgresql.conf ------------------------------------------------------------------------------------

_OLD_STRING = re.compile(r"'(?:[^'\\\n]|\\.|'')*'")


def test_quoted_strings_end_where_the_pattern_ended() -> None:
    from pgvet.inputs.postgresql_conf import string_end

    rng = random.Random(11)
    for _ in range(100_000):
        text = "'" + "".join(rng.choice(["'", "\\", "\n", "a", "''", " ", "é"]) for _ in range(rng.randint(0, 12)))
        match = _OLD_STRING.match(text)
        assert string_end(text, 0) == (match.end() if match else 0), text


@pytest.mark.parametrize("value", ["x" * (15 << 20), "\\n" * (256 << 10), "''" * (256 << 10), "é\\n" * (128 << 10)],
                         ids=["plain", "escapes", "doubled quotes", "non-ASCII"])
def test_a_long_quoted_value_takes_memory_in_proportion(value: str) -> None:
    # the 15 MiB quoted value took 2.6 GB: a backtracking record of ~170 bytes for each of its characters
    from pgvet.inputs.postgresql_conf import ConfSetting, parse_conf_text

    text = f"application_name = '{value}'\n"
    tracemalloc.start()
    try:
        entries, problems = parse_conf_text(text, "postgresql.conf")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not problems and isinstance(entries[0], ConfSetting)
    assert peak < 10 * len(text)  # the token, its bytes and its value, each a copy at most


def _tree(root: Path, includes: int, each: str) -> Path:
    (root / "postgresql.conf").write_text("".join(f"include 'part{index}.conf'\n" for index in range(includes)))
    for index in range(includes):
        (root / f"part{index}.conf").write_text(each)
    return root / "postgresql.conf"


def test_includes_that_add_up_past_the_bytes_bound_refuse_the_host(tmp_path: Path) -> None:
    from pgvet.inputs.postgresql_conf import MAX_FILE_BYTES, MAX_TREE_BYTES, load_conf

    # each file well under the limit of one file: 1 MiB of one long comment
    each = "#" + "x" * (1 << 20) + "\n"
    assert len(each) < MAX_FILE_BYTES
    main = _tree(tmp_path, MAX_TREE_BYTES // len(each) + 2, each)
    with pytest.raises(InputError) as raised:
        load_conf(main, root=tmp_path, display_base=tmp_path)
    assert f"more than {MAX_TREE_BYTES} bytes" in raised.value.message
    crossed = MAX_TREE_BYTES // len(each) + 1  # the include whose file crossed the bound, named at its line
    assert raised.value.source is not None and raised.value.source.line == crossed


def test_includes_that_add_up_past_the_lines_bound_refuse_the_host(tmp_path: Path) -> None:
    from pgvet.inputs.postgresql_conf import MAX_TREE_LINES, load_conf

    main = _tree(tmp_path, 3, "work_mem = 4MB\n" * (MAX_TREE_LINES // 2))
    with pytest.raises(InputError) as raised:
        load_conf(main, root=tmp_path, display_base=tmp_path)
    assert f"more than {MAX_TREE_LINES} lines" in raised.value.message and "part1.conf" in raised.value.message
    assert raised.value.source is not None and (raised.value.source.path, raised.value.source.line) == (
        "postgresql.conf", 2)


def test_a_tree_within_the_bounds_is_read(tmp_path: Path) -> None:
    from pgvet.inputs.postgresql_conf import load_conf

    main = _tree(tmp_path, 40, "work_mem = 4MB\n" * 1000)
    result = load_conf(main, root=tmp_path, display_base=tmp_path)
    assert len(result.settings) == 40_000 and not result.problems


# --- LIKE -------------------------------------------------------------------------------------------------


def _old_like(pattern: str, case_insensitive: bool) -> re.Pattern[str]:
    parts: list[str] = []
    escaped = False
    for char in pattern:
        if escaped:
            parts.append(re.escape(char))
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            parts.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
    return re.compile("".join(parts), re.DOTALL | (re.IGNORECASE if case_insensitive else 0))


def test_like_matches_what_the_pattern_matched() -> None:
    from pgvet.engine.functions import LikePattern

    rng = random.Random(5)
    for _ in range(60_000):
        pattern = "".join(rng.choice("ab%_\\Aé\n") for _ in range(rng.randint(0, 7)))
        text = "".join(rng.choice("abAB\né%_\\") for _ in range(rng.randint(0, 9)))
        insensitive = rng.random() < 0.5
        expected = _old_like(pattern, insensitive).fullmatch(text) is not None
        assert LikePattern(pattern, insensitive).matches(text) == expected, (pattern, text, insensitive)


def test_like_is_not_exponential() -> None:
    # the '%a%a%a%a%b' on a 260-character host name took 8.4 s; on 100 000 characters, ages
    out = finishes("""
        from pgvet.engine.functions import like_pattern
        text = "a" * 100_000
        print(like_pattern("%a%a%a%a%b", False).matches(text), like_pattern("%a%a%a%a%a", False).matches(text),
              like_pattern("%" + "a%" * 50 + "b", True).matches(text + "B"))
    """)
    assert out.split() == ["False", "True", "True"]


def test_like_in_a_rule_pack_through_the_generated_code_too(tmp_path: Path) -> None:
    from pgvet.engine.build import build_pack
    from pgvet.engine.evaluate import evaluate_host
    from pgvet.engine.pack import PackSource
    from pgvet.provenance import Source
    from pgvet.snapshot.facts import HostFacts, make_fact

    pack = build_pack([PackSource("like.yaml", """rules:
  - id: LK1
    name: like-name
    title: t
    severity: warning
    when: host.name LIKE '%a%a%a%a%b' OR host.name NOT ILIKE 'A%'
    message: m
    why: w
""")])
    host = HostFacts(name="a" * 300, root=str(tmp_path))
    host.facts["host.name"] = make_fact(("host.name", "a" * 300, Source("host.yaml", 1), (), None))
    assert evaluate_host(pack, host).findings == []


# --- ignore files ---------------------------------------------------------------------------------------


def _ignore_case(rng: random.Random, entries: int, findings: int) -> tuple[HostResult, list[IgnoreEntry]]:
    rules = [("PGV1", "one"), ("PGV2", "two"), ("PGV3", "three")]
    host = HostResult(host_facts=HostFacts(name=rng.choice(["db1", "db2", "web"]), root="."))
    for index in range(findings):
        rule_id, rule_name = rng.choice(rules)
        host.findings.append(Finding(rule_id, rule_name, "warning", "t", "m", host.host_facts.name, str(index),
                                     subject=rng.choice([None, "a", "b"]),
                                     suppressed=rng.choice([None, None, None, "inline"])))
    keys = [key for pair in rules for key in pair]
    listed = [IgnoreEntry(rng.choice(["*", "db*", "db1", "web", "x"]), rng.choice(keys),
                          rng.choice([None, "a", "b", "c"]), f"reason {index}",
                          rng.choice([None, None, "2020-01-01", "2099-01-01"]), Source("ignore.yaml", index + 1))
              for index in range(entries)]
    return host, listed


def test_ignore_entries_suppress_what_trying_each_entry_did() -> None:
    from fnmatch import fnmatch

    from pgvet.run.suppress import IgnoreFiles

    rng = random.Random(9)
    today = "2026-01-01"
    for _ in range(3_000):
        host, entries = _ignore_case(rng, rng.randint(0, 8), rng.randint(0, 8))
        expected = []
        for finding in host.findings:  # the first entry that is not expired and names the host, rule and subject
            suppressed = finding.suppressed
            if suppressed is None:
                suppressed = next((entry.reason for entry in entries if fnmatch(host.host_facts.name, entry.host)
                                   and entry.rule in (finding.rule_id, finding.rule_name)
                                   and entry.subject in (None, finding.subject)
                                   and not (entry.expires is not None and entry.expires < today)), None)
            expected.append(suppressed)
        IgnoreFiles(None, today, {}).apply(host, entries)
        assert [finding.suppressed for finding in host.findings] == expected
        assert {entry.reason for entry in entries if entry.used} == set(expected) - {None, "inline"}


def test_ignore_entries_against_findings_is_linear() -> None:
    # a host's own ignore file (4 MiB: ~100 000 entries) against as many findings tried each entry for each finding
    out = finishes("""
        from pgvet.snapshot.facts import HostFacts
        from pgvet.findings import Finding, HostResult
        from pgvet.provenance import Source
        from pgvet.run.suppress import IgnoreEntry, IgnoreFiles
        count = 100_000
        host = HostResult(host_facts=HostFacts(name="db1", root="."))
        host.findings = [Finding("PGV401", "unknown-parameter", "error", "t", "m", "db1", str(index),
                                 subject=f"p{index}") for index in range(count)]
        entries = [IgnoreEntry("db*", "PGV401", f"q{index}", "why", None, Source("ignore.yaml", index + 1))
                   for index in range(count)] + [IgnoreEntry("db*", "PGV401", None, "all", None, Source("i", 0))]
        IgnoreFiles(None, "2026-01-01", {}).apply(host, entries)
        print(sum(finding.suppressed == "all" for finding in host.findings))
    """)
    assert out.split() == ["100000"]


def test_wrapping_a_text_of_blanks_is_linear() -> None:
    out = finishes("""
        import io
        from rich.console import Console
        from rich.text import Text
        from pgvet.report.text import _plain_lines
        console = Console(file=io.StringIO(), width=80, color_system=None)
        print(len(_plain_lines(Text(" " * 1_000_000), console, 80)),
              len(_plain_lines(Text(" " * 1_000 + "word " * 100_000), console, 80)))
    """)
    assert out.split()[0] == "1"


# --- what a host's inputs hold together --------------------------------------------------------------------


def test_inputs_whose_lines_become_items_are_bounded(tmp_path: Path) -> None:
    from pgvet.snapshot.builder import MAX_ITEM_LINES
    from pgvet.snapshot.load import load_host

    host = tmp_path / "host"
    (host / "sysctl.d").mkdir(parents=True)
    (host / "mounts.txt").write_text("/dev/sda1 /srv ext4 rw 0 0\n" * MAX_ITEM_LINES)  # as many as are judged
    load_host(host)
    (host / "mounts.txt").write_text("/dev/sda1 /srv ext4 rw 0 0\n" * (MAX_ITEM_LINES + 1))
    with pytest.raises(InputError, match=f"more than {MAX_ITEM_LINES} lines of mounts") as raised:
        load_host(host)
    assert raised.value.source is not None and raised.value.source.path == "mounts.txt"
    (host / "mounts.txt").unlink()
    for name in ("10-a.conf", "20-b.conf"):  # the files of sysctl.d count together
        lines = range(MAX_ITEM_LINES // 2 + 1)
        (host / "sysctl.d" / name).write_text("".join(f"net.x.k{index} = 1\n" for index in lines))
    with pytest.raises(InputError, match=r"lines of sysctl\.conf and sysctl\.d") as raised:
        load_host(host)
    assert raised.value.source is not None and raised.value.source.path == "sysctl.d/20-b.conf"


def test_a_host_inputs_together_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pgvet.snapshot import builder, load

    monkeypatch.setattr(builder, "MAX_HOST_BYTES", 100_000)  # a small bound: the same code as 64 MiB
    host = tmp_path / "host"
    (host / "sysctl.d").mkdir(parents=True)
    for index in range(3):  # any number of files, each under the bound of one input
        (host / "sysctl.d" / f"{index}.conf").write_text("#" + "x" * 40_000 + "\n")
    with pytest.raises(InputError, match="the host's inputs hold more than 100000 bytes") as raised:
        load.load_host(host)
    assert raised.value.source is not None and raised.value.source.path == "sysctl.d/2.conf"


def test_a_directory_of_documents_is_bounded_before_they_are_parsed(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # the documents' bytes were counted once all were parsed: a directory of a thousand 1 MiB YAML files was
    # parsed whole (slowly) before it was refused
    from pgvet.snapshot import declared_hosts, load

    monkeypatch.setattr(declared_hosts, "MAX_HOST_BYTES", 100_000)
    parsed: list[str] = []

    def recognise(name: str, text: str) -> DocumentKind | None:
        kind = documents.recognise(name, text)
        if kind is None:
            return None

        def parse(text: str, path: str) -> list[DeclaredHost]:
            parsed.append(path)
            return kind.parse(text, path)

        return kind._replace(parse=parse)

    monkeypatch.setattr(declared_hosts, "recognise", recognise)
    host = tmp_path / "host"
    host.mkdir()
    for index in range(5):
        (host / f"member{index}.yml").write_text(f"scope: s\nname: m{index}\npostgresql:\n  parameters:\n"
                                                 f"    shared_buffers: 1GB\n#{'x' * 40_000}\n")
    with pytest.raises(InputError, match="the directory's documents hold more than 100000 bytes") as raised:
        load.load_hosts(host)
    assert raised.value.source is not None and raised.value.source.path == "member2.yml"
    assert parsed == ["member0.yml", "member1.yml"]


def test_files_given_in_many_directories_read_the_documents_above_once_and_within_bounds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pre-commit run --all-files passes a postgresql.conf of every directory: each one searched the directories above
    # for a compose service that mounts it, reading and parsing every document there again (3 MiB of compose
    # services, 33 s a directory: 40 directories, over 20 minutes), and without a bound on what it read in all
    from pgvet.run import paths
    from pgvet.snapshot import discovery

    compose = "services:\n  db:\n    image: postgres:16\n    command: postgres -c config_file=/etc/pg.conf\n"
    for index in range(3):
        (tmp_path / f"compose{index}.yaml").write_text(compose)
    for index in range(20):
        (tmp_path / f"d{index}").mkdir()
        (tmp_path / f"d{index}" / "postgresql.conf").write_text("shared_buffers = '1GB'\n")
    read: list[str] = []
    document_text = discovery._document_text

    def counted(path: Path, shown: str, root: Path) -> str | None:
        read.append(shown)
        return document_text(path, shown, root)

    monkeypatch.setattr(discovery, "_document_text", counted)
    files = [tmp_path / f"d{index}" / "postgresql.conf" for index in range(20)]
    given = paths.host_directories(files, stop=tmp_path)
    assert len(given.hosts) == 20 and not given.notices
    assert sorted(read) == ["compose0.yaml", "compose1.yaml", "compose2.yaml"]
    monkeypatch.setattr(discovery, "MAX_SEARCH_BYTES", len(compose) * 2)  # the third document crosses it
    read.clear()
    given = paths.host_directories(files, stop=tmp_path)
    assert len(given.hosts) == 20 and read == ["compose0.yaml", "compose1.yaml"]
    assert given.notices == [
        f"{tmp_path}: the search for the compose services that mount a postgresql.conf given stopped after reading "
        f"{len(compose) * 2} bytes of files that may be configuration documents, at {tmp_path / 'compose2.yaml'}: a "
        "postgresql.conf given below it is linted as its directory; give the service's directory"]


def test_a_search_for_hosts_that_stops_short_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the search of a repository stopped at its bounds in silence: the hosts past them were not linted, unsaid;
    # and it read as many files as it met (1 MiB of YAML takes seconds to parse)
    from pgvet.run import paths
    from pgvet.snapshot import discovery

    member = "scope: s\nname: m\npostgresql:\n  parameters:\n    shared_buffers: 1GB\n"
    deep = tmp_path / "repo" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "patroni.yml").write_text(member)
    (tmp_path / "repo" / "a" / "patroni.yml").write_text(member)
    monkeypatch.setattr(discovery, "MAX_SEARCH_DEPTH", 2)
    given = paths.host_directories([tmp_path / "repo"], stop=tmp_path)
    assert given.hosts == [tmp_path / "repo" / "a"]
    assert given.notices == [f"{tmp_path / 'repo'}: directories deeper than 2 levels were not searched for hosts "
                             f"(such as {tmp_path / 'repo' / 'a' / 'b' / 'c'}): give them"]
    monkeypatch.setattr(discovery, "MAX_SEARCH_DEPTH", 8)
    for index in range(5):
        (tmp_path / "repo" / f"notes{index}.txt").write_text("")
    monkeypatch.setattr(discovery, "MAX_SEARCH_ENTRIES", 4)
    given = paths.host_directories([tmp_path / "repo"], stop=tmp_path)
    assert given.notices == [f"{tmp_path / 'repo'}: the search for hosts stopped after 4 files and directories, at "
                             f"{tmp_path / 'repo'}: give the directories of the hosts"]
    monkeypatch.setattr(discovery, "MAX_SEARCH_ENTRIES", 100)
    given = paths.host_directories([tmp_path / "repo"], stop=tmp_path)
    assert given.hosts == [tmp_path / "repo" / "a", deep] and not given.notices
    monkeypatch.setattr(discovery, "MAX_SEARCH_BYTES", len(member) * 3 // 2)  # the second document read crosses it
    given = paths.host_directories([tmp_path / "repo"], stop=tmp_path)
    assert given.hosts == [tmp_path / "repo" / "a"]
    assert given.notices == [f"{tmp_path / 'repo'}: the search for hosts stopped after reading {len(member) * 3 // 2} "
                             "bytes of files that may be configuration documents, at "
                             f"{deep / 'patroni.yml'}: give the directories of the hosts"]


def test_pg_settings_json_lines_are_counted_once() -> None:
    # a line number for each value counted the '\n's from the start: 150 000 settings on one line took ten minutes
    out = finishes("""
        import json
        from pgvet.inputs.pg_settings import parse_pg_settings_json
        rows = [{"name": f"x{index}", "setting": "1", "vartype": "integer"} for index in range(150_000)]
        text = json.dumps({"format": 1, "server": {"server_version_num": 160002}, "settings": rows, "databases": [],
                           "unavailable": [], "statistics": {}})
        print(len(parse_pg_settings_json(text, "pg_settings.json").settings))
    """, seconds=60)
    assert out.split() == ["150000"]


def test_alter_statements_are_read_in_linear_time() -> None:
    # each statement's tokens were picked from all the file's, its line counted from the start: 8 000 took 23 s
    out = finishes("""
        from pgvet.inputs.alter_sql import parse_alter_sql
        text = ("ALTER SYSTEM SET work_mem = 1;\\n" * 30_000
                + "ALTER SYSTEM RESET work_mem;\\nALTER SYSTEM SET a.b = 2;\\n")
        settings = parse_alter_sql(text, "migration.sql")
        print(len(settings), settings[0].source.line)
    """, seconds=60)
    assert out.split() == ["1", "30002"]


# --- a collection's redaction of the server's configuration files ----------------------------------------


def test_redacting_a_configuration_line_reads_what_the_pattern_read() -> None:
    from pgvet.live.redact import _NAME, _SETTING_LINE

    old = re.compile(rf"(?P<head>\s*(?:#\s*(?P<commented>{_NAME})\s*=|(?P<name>{_NAME})\s*=?)\s*)"
                     r"(?P<value>'(?:[^'\\\n]|''|\\.)*'|'[^\n]*|[^\s#'][^\s#]*)(?P<tail>.*)", re.DOTALL)
    rng = random.Random(43)
    atoms = [" ", "\t", "=", "#", "'", "''", "\\", "a", "archive_command", "x.y", "1", "\r", "\f"]
    for _ in range(50_000):
        line = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 9)))
        before, after = old.fullmatch(line), _SETTING_LINE.fullmatch(line)
        assert (before.groupdict() if before else None) == (after.groupdict() if after else None), repr(line)


def test_redacting_a_configuration_line_is_linear() -> None:
    # a name, then blanks and no value: `\s*=?\s*` split the blanks in every way, 0.5 s for 8 000 of them and hours
    # for the 1 MiB line a server's superuser may write into a file pgvet collect copies
    out = finishes("""
        from pgvet.live.redact import redact_conf_text
        line = "archive_command" + " " * 1_000_000 + "#"
        print(redact_conf_text(line) == line, redact_conf_text("# x" + " " * 1_000_000 + "= 'y'") != "")
    """)
    assert out.split() == ["True", "True"]


# --- templates and placeholders in configuration documents (Helm, Jinja, envsubst, Compose) ----------------

_OLD_STATEMENT = re.compile(r"\{%.*?%\}|\{#.*?#\}")
_OLD_EXPRESSION = re.compile(r"\{\{.*?\}\}")
_OLD_VARIABLE = re.compile(r"\$\{[^}\n]*\}")
_OLD_PATRONI_PLACEHOLDER = re.compile(r"\$\{[^}]*\}")
_OLD_COMPOSE_PLACEHOLDER = re.compile(r"(?<!\$)\$(?:\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)")


def test_delimited_stretches_are_what_the_patterns_found() -> None:
    from pgvet.inputs.delimited import replaced, spans
    from pgvet.inputs.documents._postgres_options import placeholder as _placeholder

    rng = random.Random(46)
    atoms = ["{", "}", "{{", "}}", "{%", "%}", "{#", "#}", "%", "#", "$", "${", "$$", "a", " ", "\n", "x_1"]
    cases = [(_OLD_STATEMENT, (("{%", "%}"), ("{#", "#}")), False), (_OLD_EXPRESSION, (("{{", "}}"),), False),
             (_OLD_VARIABLE, (("${", "}"),), False), (_OLD_PATRONI_PLACEHOLDER, (("${", "}"),), True)]
    for _ in range(30_000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 14)))
        for old, pairs, across_lines in cases:
            assert list(spans(text, pairs, across_lines)) == [match.span() for match in old.finditer(text)], text
            assert replaced(text, pairs, "@", across_lines) == old.sub("@", text), text
        assert _placeholder(text) == (_OLD_COMPOSE_PLACEHOLDER.search(text) is not None), text


def test_sizes_read_what_the_patterns_read() -> None:
    from pgvet.engine.functions import _PG_SIZE
    from pgvet.inputs.host_yaml import _SIZE

    old_pg = re.compile(r"\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*")
    old_host = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(kB|[KMGT]i?B|[kKMGT]|B)?\s*$")
    rng = random.Random(47)
    atoms = [" ", "\t", "\n", "\x0b", "\x1c", "\u3000", "1", "25", ".", "5", "e", "+", "-", "kB", "GiB", "B", "x"]
    for _ in range(50_000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 7)))
        for old, new in ((old_pg.fullmatch(text), _PG_SIZE.fullmatch(text.strip())),
                         (old_host.match(text), _SIZE.fullmatch(text.strip()))):
            assert (old.groups() if old else None) == (new.groups() if new else None), repr(text)


def test_templates_and_placeholders_are_found_in_linear_time() -> None:
    # a line of 64 kB of '{{' took a Patroni file's lint 7 minutes, and 1 MiB (a document's bound) would take hours:
    # each opener scanned the rest of the line for a closer; '${' the rest of the text
    out = finishes("""
        from pgvet.engine.functions import _pg_size_bytes
        from pgvet.inputs.conf_templates import without_template_lines
        from pgvet.inputs.documents import _kubernetes, _postgres_options, patroni
        from pgvet.inputs.host_yaml import parse_size
        n = 500_000
        for line in ("x = " + "'" * n + "#", "<% " + " do" * n + " %>", "'${'" * n, "{% if x %}" * n):
            without_template_lines(line + "\\nwork_mem = 1MB\\n" * 1000)
        patroni._without_templates("# " + "{% if version %}" * 100_000 + "\\n" + "a: 1\\n" * 100_000)
        for opener in ("{{", "{%", "{#", "${"):
            text = "# " + opener * n + "\\nx: 1\\n"
            assert len(patroni._without_templates(text)) >= 2 * n, opener
            assert not patroni._placeholder(text), opener
            assert _kubernetes.without_templates(text) == text
            assert _kubernetes.without_variables(text) == text
            _kubernetes.template_lines(text)
            assert not _postgres_options.placeholder(opener * n)
        assert not patroni._placeholder("}" + "${" * n)
        assert patroni._integer(1)("1" + " " * 1_000_000 + "!") is False
        assert parse_size("1" + " " * 1_000_000 + "!") is None
        try:
            _pg_size_bytes("1" + " " * 1_000_000 + "!")
        except Exception:
            print("refused")
    """)
    assert out.split() == ["refused"]


def test_a_patroni_file_with_a_line_of_template_openers_is_linted_in_time(tmp_path: Path) -> None:
    host = tmp_path / "patroni"
    host.mkdir()
    (host / "patroni.yml").write_text("scope: x\nrestapi:\n  listen: 0.0.0.0:8008\npostgresql:\n  parameters:\n"
                                      "    work_mem: 4MB\n# " + "{{" * 400_000 + "\n")
    try:  # killed at the deadline, as finishes' child
        done = subprocess.run([sys.executable, "-m", "pgvet", "lint", str(host)], capture_output=True, text=True,
                              timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("still running after 60 s: not linear")
    assert "internal error" not in done.stderr, done.stderr


def test_a_compose_command_of_words_the_file_spells_otherwise_is_located_in_linear_time(tmp_path: Path) -> None:
    # each word ('a'b is ab) was looked for from the start of every line to the end of the file: 8 000 of them took
    # 24 s, the 12 000 of a command of 64 kB (the most pgvet splits) a minute; distinct words on one line were searched
    # for from its start
    host = tmp_path / "compose"
    host.mkdir()
    (host / "compose.yaml").write_text("services:\n  db:\n    image: postgres:16\n    command: postgres -c "
                                       "work_mem=4MB " + " ".join(["'a'b"] * 11_000)
                                       + "".join(f" w{number}" for number in range(1_000)) + "\n")
    out = finishes(f"""
        import pgvet.inputs.documents.compose as compose
        from pathlib import Path
        text = Path({str(host / "compose.yaml")!r}).read_text()
        words = compose._command_string(None, "command", text.split("command: ", 1)[1].rstrip("\\n"),
                                        "compose.yaml", 4, text.split("\\n"))
        print(len(words), {{source.line for _, source in words}})
    """, seconds=10)  # a fraction of a second now
    assert out.split(" ", 1) == ["12003", "{4}\n"]  # postgres, -c, work_mem=4MB and the 12 000


def test_a_long_line_that_many_findings_point_at_is_quoted_once_and_cut(tmp_path: Path) -> None:
    # 1 500 findings on one line of 10 kB took the text report 6 s: the line was searched for secrets, split and
    # escaped for each of them (quadratic, and the HTML report wrote it whole each time: 100 MB for 300 kB)
    host = tmp_path / "compose"
    host.mkdir()
    (host / "compose.yaml").write_text("services:\n  db:\n    image: postgres:16\n    command: postgres -c "
                                       "work_mem=" + "-c " * 20_000 + "\n")
    shown = HostFiles(str(host)).line("compose.yaml", 4)
    assert shown is not None and len(shown) == MAX_SHOWN_TEXT + 1 and shown.endswith("…")
    for form in ("text", "html"):
        try:
            done = subprocess.run([sys.executable, "-m", "pgvet", "lint", str(host), "--format", form],
                                  capture_output=True, text=True, timeout=60, check=False)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{form}: still running after 60 s: not linear")
        assert "compose-command" in done.stdout and len(done.stdout) < 40 * 1024 * 1024, form  # was 600 MB


def test_a_shell_line_longer_than_pgvet_splits_is_refused_or_not_read(tmp_path: Path) -> None:
    # shlex adds each word a character at a time: a compose command of one 800 kB word took 18 s, 1 MiB 30 s, a
    # repository of such documents hours; an Ansible sysctl task's free-form arguments are split the same way
    from pgvet.inputs.documents import MAX_SHELL_LINE
    from pgvet.inputs.documents.ansible import parse_ansible
    from pgvet.inputs.documents.compose import parse_compose

    word = "x." * (MAX_SHELL_LINE // 2 + 1)
    compose = f"services:\n  db:\n    image: postgres:16\n    command: postgres -c {word}\n"
    with pytest.raises(documents.ParseError) as refused:
        parse_compose(compose, "compose.yaml")
    assert "more than pgvet reads of a command" in refused.value.message and refused.value.source.line == 4
    playbook = f"- hosts: databases\n  tasks:\n    - sysctl: name=vm.swappiness value={word}\n"
    [host] = parse_ansible(playbook, "site.yml")
    assert not host.sysctl and any("more than pgvet splits" in note for note in host.notes)
    out = finishes("""
        from pgvet.inputs.documents.compose import parse_compose
        try:
            parse_compose("services:\\n  db:\\n    image: postgres:16\\n    command: postgres -c " + "x." * 500_000,
                          "compose.yaml")
        except Exception as error:
            print(type(error).__name__)
    """)
    assert out.split() == ["ParseError"]


def test_a_value_of_tabs_is_shown_in_memory_in_proportion(tmp_path: Path) -> None:
    # rich expands each tab to 8 cells and folds a cell a character at a time: a postgresql.conf value of 2 MB of
    # tabs took the text report 800 MB and pgvet facts 2.3 GB (a 16 MiB file, which pgvet reads, many times that)
    host = tmp_path / "db"
    host.mkdir()
    (host / "postgresql.conf").write_text("work_mem = '" + "\t" * 2_000_000 + "x'\n")
    for command in ("lint", "facts"):
        out = finishes(f"""
            from typer.testing import CliRunner
            from pgvet.cli import app
            CliRunner().invoke(app, [{command!r}, {str(host)!r}])
            print(int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) // 1024)
        """, seconds=60)
        assert int(out) < 300, (command, f"{out.strip()} MB")
