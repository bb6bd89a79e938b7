"""The PostgreSQL setting rules (PGV5xx, PGV7xx) audited against the catalogue and PostgreSQL itself: the numbers
they report, the values their fixes suggest (in the parameter's unit, inside its range, never lowering what is
already higher), and "not evaluated" rather than silence when a fact they need is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgvet.engine.evaluate import evaluate_host
from pgvet.engine.loader import load_pack
from pgvet.findings import Finding, HostResult
from pgvet.pgparams import load_param_table
from pgvet.pgparams.units import parse_value
from pgvet.snapshot.load import load_host

KIB = 1024
MIB = 1024**2
GIB = 1024**3
PACK = load_pack()


def host_dir(tmp_path: Path, conf: str, **declared: object) -> Path:
    """A snapshot directory: postgresql.conf and a host.yaml with the declared keys (ram, cpus, storage…)."""
    (tmp_path / "postgresql.conf").write_text(conf)
    lines = [f"{key}: {value}" for key, value in declared.items() if key != "raid"]
    if "raid" in declared:
        lines.append(f"raid: {declared['raid']}")
    (tmp_path / "host.yaml").write_text("\n".join(lines) + "\n")
    return tmp_path


def evaluate(path: Path, rule_id: str) -> HostResult:
    host = load_host(path, None)
    return evaluate_host(PACK, host, selected=lambda meta: meta.id == rule_id, record_passes=True)


def finding(path: Path, rule_id: str) -> Finding:
    result = evaluate(path, rule_id)
    assert [found.rule_id for found in result.findings] == [rule_id], result
    return result.findings[0]


def outcome(path: Path, rule_id: str) -> str:
    """fire, pass, skip (not evaluated) or silent (the rule did not apply)."""
    result = evaluate(path, rule_id)
    if result.findings:
        return "fire"
    if result.not_evaluated:
        return "skip"
    return "pass" if result.passed else "silent"


def setting_bytes(major: int, name: str, text: str) -> int | float:
    """What PostgreSQL ``major`` reads from ``name = text``, in pgvet's canonical units (bytes, seconds)."""
    value = parse_value(load_param_table(major).params[name], text).canonical
    assert isinstance(value, int | float)
    return value


# --- PGV532 work-mem-default-on-large-host --------------------------------------------------------------------


def test_pgv532_suggests_pgtune_in_kb_exactly(tmp_path: Path) -> None:
    # 16 GB, 4 GB of shared_buffers, 100 connections, 8 workers: 12 GiB / 324 = 38836 kB (pgtune writes kB)
    path = host_dir(tmp_path, "shared_buffers = 4GB\nmax_connections = 100\n", pg_version=17, ram="16GB")
    found = finding(path, "PGV532")
    assert found.values["suggested"] == 38836 * KIB
    assert found.fix.postgresql == {"work_mem": "38836kB"}
    assert setting_bytes(17, "work_mem", found.fix.postgresql["work_mem"]) == found.values["suggested"]


def test_pgv532_fix_is_not_truncated_to_whole_megabytes(tmp_path: Path) -> None:
    # 16 GB, 12 GB of shared_buffers, 100 connections: 4 GiB / (3 × 108) = 12945 kB — "12MB" would lose 5 %
    path = host_dir(tmp_path, "shared_buffers = 12GB\nmax_connections = 100\n", pg_version=17, ram="16GB")
    found = finding(path, "PGV532")
    assert found.fix.postgresql == {"work_mem": "12945kB"}
    assert "pgtune writes 12945kB for this host" in found.message


def test_pgv532_is_silent_where_pgtunes_value_is_hardly_more_than_the_default(tmp_path: Path) -> None:
    # 16 GB, 12 GB of shared_buffers, 200 connections: pgtune writes 6721 kB, under the 8 MB worth the advice; a
    # host a little larger or smaller than the RAM pgtune was told flipped this rule at pgtune's 4 MB floor
    path = host_dir(tmp_path, "shared_buffers = 12GB\nmax_connections = 200\n", pg_version=17, ram="16GB")
    assert outcome(path, "PGV532") == "pass"


def test_pgv532_never_raises_beyond_what_the_budget_holds(tmp_path: Path) -> None:
    # strict overcommit, CommitLimit 8 GB of 16 GB: pgtune's 38836 kB would put the peak beyond it
    path = host_dir(tmp_path, "shared_buffers = 4GB\nmax_connections = 100\n", pg_version=17, ram="16GB")
    (path / "sysctl.conf").write_text("vm.overcommit_memory = 2\nvm.overcommit_ratio = 50\n")
    (path / "host.yaml").write_text((path / "host.yaml").read_text() + "swap: 0\n")
    found = finding(path, "PGV532")
    fits = found.values["suggested"]
    assert isinstance(fits, int) and fits < found.values["pgtune"] == 38836 * KIB
    assert found.fix.postgresql == {"work_mem": f"{fits // KIB}kB"}
    assert "is the most that fits (PGV530)" in found.message


@pytest.mark.parametrize(("conf", "begins"), [
    ("shared_buffers = 2GB\nwork_mem = 256MB\n", "Other ways: lower max_connections"),
    ("shared_buffers = 12GB\nmaintenance_work_mem = 4GB\nmax_connections = 50\n", "No work_mem fits: lower"),
])
def test_pgv530s_text_fix_stands_alone_when_no_work_mem_fits(tmp_path: Path, conf: str, begins: str) -> None:
    # with nothing that fits there is no work_mem line, and the text began "Or lower max_connections…"
    found = finding(host_dir(tmp_path, conf, pg_version=17, ram="16GB"), "PGV530")
    assert (found.fix.text or "").startswith(begins), found.fix
    assert ("work_mem" in found.fix.postgresql) == begins.startswith("Other")


@pytest.mark.parametrize("conf", [
    "shared_buffers = 12GB\nmax_connections = 1000\n",  # 4 GiB / 3024 = 1387 kB, below the default
    "shared_buffers = 4GB\nmax_connections = 2000\n",  # 12 GiB / 6024 = 2088 kB
])
def test_pgv532_never_suggests_less_than_the_default(tmp_path: Path, conf: str) -> None:
    # The rule once told a 16 GB host with 1000 connections to "raise" work_mem to 1MB.
    assert outcome(host_dir(tmp_path, conf, pg_version=17, ram="16GB"), "PGV532") == "pass"


def test_pgv532_shared_buffers_taking_the_ram_is_a_pass(tmp_path: Path) -> None:
    path = host_dir(tmp_path, "shared_buffers = 16GB\n", pg_version=17, ram="16GB")
    assert outcome(path, "PGV532") == "pass"


def test_pgv532_unknown_ram_is_not_evaluated(tmp_path: Path) -> None:
    path = host_dir(tmp_path, "shared_buffers = 4GB\n", pg_version=17)
    result = evaluate(path, "PGV532")
    assert not result.findings
    assert [(record.rule_id, "host.ram" in record.missing) for record in result.not_evaluated] == [("PGV532", True)]


def test_pgv532_small_host_does_not_apply(tmp_path: Path) -> None:
    assert outcome(host_dir(tmp_path, "shared_buffers = 1GB\n", pg_version=17, ram="4GB"), "PGV532") == "silent"


# --- PGV521 shared-buffers-above-8gb ----------------------------------------------------------------------------


@pytest.mark.parametrize(("shared_buffers", "expected"), [
    ("8GB", "fire"),  # the catalogue's F6: max_wal_size at the 1 GB default with shared_buffers ≥ 8 GB
    ("8388600kB", "pass"),  # one 8 kB page less
    ("16GB", "fire"),
])
def test_pgv521_threshold_is_8_gb_inclusive(tmp_path: Path, shared_buffers: str, expected: str) -> None:
    path = host_dir(tmp_path, f"shared_buffers = {shared_buffers}\n", pg_version=17, ram="64GB")
    assert outcome(path, "PGV521") == expected


def test_pgv521_at_8_gb_suggests_4_gb_of_wal(tmp_path: Path) -> None:
    found = finding(host_dir(tmp_path, "shared_buffers = 8GB\n", pg_version=17, ram="64GB"), "PGV521")
    assert found.values == {"shared_buffers": 8 * GIB, "max_wal_size": 1 * GIB}
    assert found.fix.postgresql == {"max_wal_size": "4GB"}
    assert setting_bytes(17, "max_wal_size", "4GB") == 4 * GIB


def test_pgv521_on_dalibo_8_gb_huge_page_example() -> None:
    from conftest import FIXTURES

    result = evaluate(FIXTURES / "seeds" / "dalibo-huge-pages-8gb", "PGV521")
    assert [(found.rule_id, found.fix.postgresql) for found in result.findings] == [("PGV521", {"max_wal_size": "4GB"})]


# --- PGV703 effective-io-concurrency-low, PGV704 maintenance-io-below-effective-io ------------------------------


@pytest.mark.parametrize(("maintenance", "expected"), [
    (None, "200"),  # the default, 10: raised with effective_io_concurrency
    ("50", "200"),
    ("200", "200"),
    ("500", "500"),  # higher already: kept, never lowered to the suggestion
    ("1000", "1000"),
])
def test_pgv703_never_lowers_maintenance_io_concurrency(tmp_path: Path, maintenance: str | None, expected: str) -> None:
    conf = "effective_io_concurrency = 1\n" + (f"maintenance_io_concurrency = {maintenance}\n" if maintenance else "")
    found = finding(host_dir(tmp_path, conf, pg_version=17, storage="ssd"), "PGV703")
    assert found.values == {"effective_io_concurrency": 1, "suggested": 200}
    assert found.fix.postgresql == {"effective_io_concurrency": "200", "maintenance_io_concurrency": expected}
    current = int(maintenance) if maintenance else 10
    assert int(found.fix.postgresql["maintenance_io_concurrency"]) >= current


def test_pgv703_fix_leaves_pgv704_silent(tmp_path: Path) -> None:
    path = host_dir(tmp_path, "effective_io_concurrency = 1\n", pg_version=17, storage="nvme")
    fix = finding(path, "PGV703").fix.postgresql
    assert fix == {"effective_io_concurrency": "500", "maintenance_io_concurrency": "500"}
    conf = "".join(f"{name} = {value}\n" for name, value in fix.items())
    assert outcome(host_dir(tmp_path, conf, pg_version=17, storage="nvme"), "PGV704") == "pass"
    assert outcome(tmp_path, "PGV703") == "pass"


def test_pgv703_on_postgresql_12_suggests_no_maintenance_io_concurrency(tmp_path: Path) -> None:
    # maintenance_io_concurrency came with 13: a 12 refuses to start on "unrecognized configuration parameter"
    found = finding(host_dir(tmp_path, "effective_io_concurrency = 2\n", pg_version=12, storage="ssd"), "PGV703")
    assert found.values["suggested"] == 66  # a third of 200, as 12 counts it
    assert found.fix.postgresql == {"effective_io_concurrency": "66"}
    assert found.fix.text is not None and "no maintenance_io_concurrency" in found.fix.text
    assert "(a third of the value for PostgreSQL 13 and later" in found.message


def test_pgv704_does_not_apply_before_13(tmp_path: Path) -> None:
    path = host_dir(tmp_path, "effective_io_concurrency = 100\n", pg_version=12)
    assert outcome(path, "PGV704") == "silent"
    path = host_dir(tmp_path, "effective_io_concurrency = 100\n", pg_version=13)
    assert finding(path, "PGV704").fix.postgresql == {"maintenance_io_concurrency": "100"}


@pytest.mark.parametrize(("declared", "words"), [
    ({"storage": "ssd"}, "while an SSD allows about 200."),
    ({"storage": "nvme"}, "while NVMe storage allows about 500."),
    ({"storage": "san"}, "while a SAN allows about 300."),
    ({"storage": "hdd"}, "while a single spinning disk allows about 2."),
    ({"storage": "hdd", "raid": "{level: 10, disks: 8}"},
     "while a RAID 10 of spinning disks (one request per mirrored pair) allows about 4."),
    ({"storage": "hdd", "raid": "{level: 5, disks: 6}"},
     "while a RAID 5 of spinning disks (one request per disk but one) allows about 5."),
])
def test_pgv703_message_names_the_storage_without_unknowns(tmp_path: Path, declared: dict[str, str],
                                                           words: str) -> None:
    # it used to say "the storage (ssd, RAID level unknown, unknown disks)"
    found = finding(host_dir(tmp_path, "effective_io_concurrency = 0\n", pg_version=17, **declared), "PGV703")
    assert found.message == f"effective_io_concurrency = 0 {words}"
    assert "unknown" not in found.message


# --- PGV533 effective-cache-size-above-ram, PGV534 effective-cache-size-below-shared-buffers --------------------


def test_pgv534_message_gives_the_fix_value_not_a_smaller_two_thirds(tmp_path: Path) -> None:
    # big-server's case: 138 GB of shared_buffers on 192 GB; 2/3 of RAM (128 GB) is still below shared_buffers. The
    # message used to advise "about 2/3 of RAM (128 GiB)" while the fix said 141312MB.
    path = host_dir(tmp_path, "shared_buffers = 138GB\neffective_cache_size = 4GB\n", pg_version=17, ram="192GB")
    found = finding(path, "PGV534")
    assert found.values == {"effective_cache_size": 4 * GIB, "shared_buffers": 138 * GIB}
    assert found.fix.postgresql == {"effective_cache_size": "141312MB"}
    assert "shared_buffers itself where that is more" in found.message
    assert "128 GiB" not in found.message


def test_pgv534_two_thirds_of_ram_when_above_shared_buffers(tmp_path: Path) -> None:
    path = host_dir(tmp_path, "shared_buffers = 8GB\neffective_cache_size = 4GB\n", pg_version=17, ram="32GB")
    found = finding(path, "PGV534")
    assert found.fix.postgresql == {"effective_cache_size": "21845MB"}
    assert found.message.endswith("The fix sets about 2/3 of RAM, the usual value, or shared_buffers itself where "
                                  "that is more.")


def test_pgv534_without_ram_suggests_shared_buffers_and_says_why(tmp_path: Path) -> None:
    found = finding(host_dir(tmp_path, "shared_buffers = 8GB\neffective_cache_size = 4GB\n", pg_version=17), "PGV534")
    assert found.fix.postgresql == {"effective_cache_size": "8192MB"}
    assert "unknown" not in found.message and "the RAM is not known" in found.message


@pytest.mark.parametrize(("shared_buffers", "suggested_mib"), [
    ("8GB", 21845),  # 2/3 of 32 GB
    ("24GB", 24576),  # shared_buffers: 2/3 of RAM is below it, and PGV534 would fire after the fix
    ("40GB", 32768),  # shared_buffers above the RAM (PGV501's matter): at most the RAM
])
def test_pgv533_fix_stays_between_shared_buffers_and_ram(tmp_path: Path, shared_buffers: str,
                                                         suggested_mib: int) -> None:
    path = host_dir(tmp_path, f"shared_buffers = {shared_buffers}\neffective_cache_size = 64GB\n",
                    pg_version=17, ram="32GB")
    found = finding(path, "PGV533")
    assert found.fix.postgresql == {"effective_cache_size": f"{suggested_mib}MB"}
    if shared_buffers != "40GB":
        fixed = host_dir(tmp_path, f"shared_buffers = {shared_buffers}\neffective_cache_size = {suggested_mib}MB\n",
                         pg_version=17, ram="32GB")
        assert outcome(fixed, "PGV533") == "pass" and outcome(fixed, "PGV534") == "pass"


# --- A fact a precondition needs is missing: "not evaluated", as for the rules without a precondition ------------
# `applies` false or NULL skips a rule silently (the engine's contract); these rules' preconditions now let a
# missing fact through to `when`, which reads it, so that --verbose and pgvet check name what is missing.


@pytest.mark.parametrize(("rule_id", "conf", "declared", "missing"), [
    ("PGV502", "shared_buffers = 128MB\n", {}, "host.ram"),
    ("PGV532", "shared_buffers = 1GB\n", {}, "host.ram"),
    ("PGV535", "maintenance_work_mem = 64MB\n", {}, "host.ram"),
    ("PGV701", "random_page_cost = 4\n", {}, "host.storage"),
    ("PGV702", "random_page_cost = 1.1\n", {}, "host.storage"),
    ("PGV708", "jit = on\n", {}, "host.workload"),
    ("PGV714", "max_parallel_workers = 8\n", {}, "host.cpus"),
])
def test_missing_precondition_fact_is_not_evaluated(tmp_path: Path, rule_id: str, conf: str,
                                                   declared: dict[str, str], missing: str) -> None:
    result = evaluate(host_dir(tmp_path, conf, pg_version=17, **declared), rule_id)
    assert not result.findings
    assert [record.rule_id for record in result.not_evaluated] == [rule_id]
    assert missing in result.not_evaluated[0].missing


@pytest.mark.parametrize(("rule_id", "conf", "declared"), [
    ("PGV502", "shared_buffers = 128MB\n", {"ram": "2GB"}),  # small hosts are left alone
    ("PGV532", "shared_buffers = 1GB\n", {"ram": "4GB"}),
    ("PGV535", "maintenance_work_mem = 64MB\n", {"ram": "4GB"}),
    ("PGV701", "random_page_cost = 4\n", {"storage": "hdd"}),
    ("PGV702", "random_page_cost = 1.1\n", {"storage": "ssd"}),
    ("PGV708", "jit = on\n", {"workload": "olap"}),
    ("PGV714", "max_parallel_workers = 8\n", {"cpus": 8}),
])
def test_known_false_precondition_still_does_not_apply(tmp_path: Path, rule_id: str, conf: str,
                                                       declared: dict[str, object]) -> None:
    assert outcome(host_dir(tmp_path, conf, pg_version=17, **declared), rule_id) == "silent"


@pytest.mark.parametrize(("rule_id", "conf", "declared"), [
    ("PGV502", "shared_buffers = 128MB\n", {"ram": "16GB"}),
    ("PGV532", "shared_buffers = 1GB\n", {"ram": "16GB"}),
    ("PGV535", "maintenance_work_mem = 64MB\n", {"ram": "16GB"}),
    ("PGV701", "random_page_cost = 4\n", {"storage": "nvme"}),
    ("PGV702", "random_page_cost = 1.1\n", {"storage": "hdd"}),
    ("PGV708", "jit = on\n", {"workload": "web"}),
    ("PGV714", "max_parallel_workers = 8\n", {"cpus": 32}),
])
def test_known_true_precondition_fires(tmp_path: Path, rule_id: str, conf: str, declared: dict[str, object]) -> None:
    assert outcome(host_dir(tmp_path, conf, pg_version=17, **declared), rule_id) == "fire"


def test_flash_data_disk_without_declared_storage_leaves_pgv702_silent(tmp_path: Path) -> None:
    # PGV702 judges the declaration only; a disk that says it does not rotate is no HDD, so no "missing storage"
    (tmp_path / "mounts.txt").write_text("/dev/sda2 / ext4 rw,relatime 0 0\n/dev/sdb1 /srv/pg ext4 rw,noatime 0 0\n")
    (tmp_path / "sysfs.txt").write_text("/sys/block/sda/queue/rotational:1\n/sys/block/sdb/queue/rotational:0\n")
    path = host_dir(tmp_path, "random_page_cost = 1.1\ndata_directory = '/srv/pg/17/main'\n", pg_version=17)
    assert load_host(path, None).facts["host.data_disk_rotational"].value is False
    assert outcome(path, "PGV702") == "silent"
    assert outcome(path, "PGV701") == "pass"


# --- PGV705 planner-method-disabled ----------------------------------------------------------------------------


def test_pgv705_every_spelling_of_off(tmp_path: Path) -> None:
    # PostgreSQL's parse_bool takes unique prefixes and any case: all of these turn the method off. The rule
    # compared the text with ('off', 'false', 'no', '0') and missed four of them.
    conf = ("enable_seqscan = f\nenable_hashjoin = 'of'\nenable_nestloop = FALSE\nenable_sort = n\n"
            "enable_material = 0\nenable_memoize = on\nenable_partitionwise_join = off\n")
    result = evaluate(host_dir(tmp_path, conf, pg_version=17), "PGV705")
    assert sorted(found.subject for found in result.findings if found.subject) == [
        "enable_hashjoin", "enable_material", "enable_nestloop", "enable_seqscan", "enable_sort"]


# --- PGV537 no-superuser-reserved-connections, PGV832 listening-everywhere-without-ssl ---------------------------


@pytest.mark.parametrize(("conf", "major", "expected"), [
    ("max_connections = 100\n", 17, "3"),  # the default
    ("max_connections = 3\n", 15, "2"),  # 3 would stop the server: superuser_reserved_connections < max_connections
    ("max_connections = 5\nreserved_connections = 2\n", 17, "2"),  # 16+: both together below max_connections
])
def test_pgv537_fix_never_stops_the_server(tmp_path: Path, conf: str, major: int, expected: str) -> None:
    path = host_dir(tmp_path, "superuser_reserved_connections = 0\n" + conf, pg_version=major)
    found = finding(path, "PGV537")
    assert found.fix.postgresql == {"superuser_reserved_connections": expected}
    fixed = host_dir(tmp_path, f"superuser_reserved_connections = {expected}\n" + conf, pg_version=major)
    assert outcome(fixed, "PGV414") == "pass" and outcome(fixed, "PGV537") == "pass"


def test_pgv537_no_room_at_all_suggests_nothing(tmp_path: Path) -> None:
    found = finding(host_dir(tmp_path, "superuser_reserved_connections = 0\nmax_connections = 1\n", pg_version=17),
                    "PGV537")
    assert found.fix.postgresql == {}
    assert found.fix.text is not None and "superuser_reserved_connections" in found.fix.text


@pytest.mark.parametrize(("addresses", "expected"), [
    ("*", "fire"), ("localhost, *", "fire"), ("0.0.0.0,::1", "fire"), ("::", "fire"),
    ("localhost", "pass"), ("10.0.0.5, localhost", "pass"),
])
def test_pgv832_reads_listen_addresses_as_a_list(tmp_path: Path, addresses: str, expected: str) -> None:
    path = host_dir(tmp_path, f"ssl = off\nlisten_addresses = '{addresses}'\n", pg_version=17)
    assert outcome(path, "PGV832") == expected


# --- PGV501, PGV502 shared_buffers; PGV531 work-mem-large ------------------------------------------------------


@pytest.mark.parametrize(("rule_id", "shared_buffers"), [("PGV501", "150GB"), ("PGV502", "128MB")])
def test_shared_buffers_value_is_what_the_fix_writes(tmp_path: Path, rule_id: str, shared_buffers: str) -> None:
    # a RAM that is no whole number of MB (188 GiB less a little, as big-server's MemTotal): the value used to be
    # rounded to 8 kB pages while the fix was rounded to MB
    (tmp_path / "meminfo.txt").write_text("MemTotal:       197474892 kB\n")
    path = host_dir(tmp_path, f"shared_buffers = {shared_buffers}\n", pg_version=17)
    found = finding(path, rule_id)
    fixed = setting_bytes(17, "shared_buffers", found.fix.postgresql["shared_buffers"])
    assert fixed == 48211 * MIB  # a quarter of 197474892 kB, in MB


def test_pgv531_message_follows_its_parameter(tmp_path: Path) -> None:
    from pgvet.engine.evaluate import evaluate_host as run

    path = host_dir(tmp_path, "work_mem = 300MB\n", pg_version=17, workload="oltp")
    found = finding(path, "PGV531")
    assert "beyond 100 MiB" in found.message
    result = run(PACK, load_host(path, None), params={"work-mem-large": {"max_work_mem": "256MB"}},
                 selected=lambda meta: meta.id == "PGV531")
    assert "beyond 256 MiB" in result.findings[0].message


# --- PGV841 version-end-of-life --------------------------------------------------------------------------------


@pytest.mark.parametrize(("major", "today", "expected"), [
    (13, "2025-10-31", None),
    (13, "2025-11-01", "PostgreSQL 13's support ends in November 2025 (five years after its release): that month's "
                       "release is its last; then it gets no more fixes, security ones included."),
    (13, "2025-12-01", "PostgreSQL 13's support ended in November 2025 (five years after its release): it gets no "
                       "more fixes, security ones included."),
    (14, "2026-10-31", None),
    (14, "2026-11-22", "PostgreSQL 14's support ends in November 2026 (five years after its release): that month's "
                       "release is its last; then it gets no more fixes, security ones included."),
    (9, "2022-01-10", "PostgreSQL 9.x's support ended in November 2021 at the latest (with 9.6, the last 9.x; the "
                      "others before it): it gets no more fixes, security ones included."),  # was "… in 0-0"
    (18, "2030-10-31", None),
    (19, "2031-11-15", "PostgreSQL 19's support ends in November 2031 (five years after its release): that month's "
                       "release is its last; then it gets no more fixes, security ones included."),  # past the table
])
def test_pgv841_end_of_life_by_month(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, major: int, today: str,
                                     expected: str | None) -> None:
    monkeypatch.setenv("PGVET_TODAY", today)
    result = evaluate(host_dir(tmp_path, "port = 5432\n", pg_version=major), "PGV841")
    assert not result.not_evaluated
    assert [found.message for found in result.findings] == ([expected] if expected else [])
    if expected:
        year = 2021 if major == 9 else 2012 + major
        assert result.findings[0].values == {"version": major, "end_of_life": year * 100 + 11}


def test_pgv841_judges_a_pg_version_file_of_8_4(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # PG_VERSION "8.4" gives pg.version 8: the formula stopped at 9, and such a host was "not evaluated"
    monkeypatch.setenv("PGVET_TODAY", "2026-01-10")
    (tmp_path / "PG_VERSION").write_text("8.4\n")
    (tmp_path / "postgresql.conf").write_text("port = 5432\n")
    result = evaluate(tmp_path, "PGV841")
    assert [found.values for found in result.findings] == [{"version": 8, "end_of_life": 201407}]
    assert result.findings[0].message == (
        "PostgreSQL 8.x's support ended in July 2014 at the latest (with 8.4, the last 8.x; the others before it): "
        "it gets no more fixes, security ones included.")


# --- Every fix of the PostgreSQL setting rules, on a grid of hosts ----------------------------------------------

# Parameters newer than the oldest majors pgvet judges (with 15's parameter table): a fix must not name them there.
INTRODUCED = {"maintenance_io_concurrency": 13, "hash_mem_multiplier": 13, "wal_init_zero": 12, "wal_recycle": 12,
              "reserved_connections": 16, "io_combine_limit": 17}
# Rules whose point is to lower a setting: the memory budget (work_mem) and too-many-connections (max_connections).
LOWERING = {"PGV530", "PGV536"}
SETTING_RULES = sorted(rule.id for rule in PACK.rules if rule.id[:4] in ("PGV5", "PGV6", "PGV7")
                       and rule.scope == "host")
GRID = [
    (major, ram, connections, share, storage)
    for major in (12, 15, 17, 18)
    for ram in ("2GB", "8GB", "16GB", "192GB", "4TB")
    for connections in (3, 100, 5000)
    for share in (0.01, 0.25, 0.75, 1.5)
    for storage in ("hdd", "nvme")
]


def _grid_conf(ram: str, connections: int, share: float) -> str:
    shared_buffers = max(128, int(setting_bytes(17, "shared_buffers", ram) * share) // MIB)
    return (f"max_connections = {connections}\nshared_buffers = {shared_buffers}MB\neffective_cache_size = 1GB\n"
            "work_mem = 4MB\nmaintenance_work_mem = 64MB\neffective_io_concurrency = 1\n"
            "maintenance_io_concurrency = 300\nrandom_page_cost = 4\nsuperuser_reserved_connections = 0\n"
            "max_worker_processes = 4\nmax_parallel_workers = 8\ncheckpoint_completion_target = 0.5\n")


@pytest.mark.parametrize(("major", "ram", "connections", "share", "storage"), GRID,
                         ids=["-".join(map(str, case)) for case in GRID])
def test_setting_fixes_are_valid_never_lower_and_fix(tmp_path: Path, major: int, ram: str, connections: int,
                                                    share: float, storage: str) -> None:
    conf = _grid_conf(ram, connections, share)
    declared = {"pg_version": major, "ram": ram, "cpus": 64, "storage": storage, "workload": "oltp"}
    host = host_dir(tmp_path, conf, **declared)
    before = load_host(host, None).facts
    result = evaluate_host(PACK, load_host(host, None), selected=lambda meta: meta.id in SETTING_RULES)
    param_table = load_param_table(max(15, major))
    for found in result.findings:
        for name, text in found.fix.postgresql.items():
            where = f"{found.rule_id} on PostgreSQL {major}: {name} = {text}"
            assert name in param_table.params, where
            assert major >= INTRODUCED.get(name, 0), f"{where}: {name} came with PostgreSQL {INTRODUCED[name]}"
            value = parse_value(param_table.params[name], text).canonical  # raises when out of range or badly written
            current = before[f"pg.{name}"].value
            if name.endswith(("_io_concurrency", "work_mem", "_connections", "worker_processes", "max_wal_size")) and (
                    found.rule_id not in LOWERING):
                assert isinstance(value, int | float) and isinstance(current, int | float)
                assert value >= current, f"{where} lowers {current}"
        if not found.fix.postgresql:
            continue
        fixed = host_dir(tmp_path, conf + "".join(f"{k} = '{v}'\n" for k, v in found.fix.postgresql.items()),
                         **declared)
        assert outcome(fixed, found.rule_id) != "fire", f"{found.rule_id} still fires after {found.fix.postgresql}"
        host_dir(tmp_path, conf, **declared)


def test_random_page_cost_below_seq_page_cost_is_said_with_both_values(tmp_path: Path) -> None:
    """PostgreSQL's documentation: "it is not physically sensible" to set random_page_cost below seq_page_cost."""
    (tmp_path / "a").mkdir()
    found = finding(host_dir(tmp_path / "a", "random_page_cost = 0.5\nseq_page_cost = 1\n"), "PGV710")
    assert found.message.startswith("random_page_cost = 0.5 is below seq_page_cost = 1:")
    assert found.fix.postgresql == {"random_page_cost": "1"}
    (tmp_path / "b").mkdir()
    found = finding(host_dir(tmp_path / "b", "random_page_cost = 0.5\n", storage="ssd"), "PGV710")
    assert found.fix.postgresql == {"random_page_cost": "1.1"}  # flash: random-page-cost-high-on-ssd's value
    (tmp_path / "c").mkdir()
    assert outcome(host_dir(tmp_path / "c", "random_page_cost = 1\n"), "PGV710") == "pass"
