"""The tests' kernel (kernelsim) against what the kernel and procps are documented and measured to do."""

from __future__ import annotations

from pathlib import Path

import kernelsim


def test_commit_limit_is_the_kernels_to_the_kilobyte(tmp_path: Path) -> None:
    # Dalibo's lab VM: 3 735 244 kB, 1 048 572 kB of swap, ratio 60 — its kernel showed 3 289 716 kB
    meminfo = tmp_path / "meminfo.txt"
    meminfo.write_text("MemTotal:        3735244 kB\nSwapTotal:       1048572 kB\nCommitLimit:     1 kB\n"
                       "HugePages_Total:       0\nHugepagesize:       2048 kB\nHugetlb:               0 kB\n")
    kernelsim.reboot_meminfo(meminfo, {"vm.overcommit_ratio": "60", "vm.nr_hugepages": "0"})
    assert kernelsim.read_meminfo(meminfo)["CommitLimit"] == 3289716


def test_the_pool_is_taken_out_of_commit_limit_and_other_sizes_stay(tmp_path: Path) -> None:
    # 64 GiB, 2 GiB of swap, 2 GiB of 1 GB pages reserved on the command line; 4096 pages of 2 MB at boot
    meminfo = tmp_path / "meminfo.txt"
    meminfo.write_text("MemTotal:       67108864 kB\nSwapTotal:       2097152 kB\nCommitLimit:     1 kB\n"
                       "HugePages_Total:       0\nHugePages_Free:        0\nHugePages_Surp:        0\n"
                       "Hugepagesize:       2048 kB\nHugetlb:         2097152 kB\n")
    kernelsim.reboot_meminfo(meminfo, {"vm.overcommit_ratio": "80", "vm.nr_hugepages": "4096"})
    after = kernelsim.read_meminfo(meminfo)
    assert after["HugePages_Total"] == 4096 and after["Hugetlb"] == 4096 * 2048 + 2097152
    assert after["CommitLimit"] == ((67108864 - after["Hugetlb"]) // 4 * 80 // 100 + 2097152 // 4) * 4


def test_overcommit_kbytes_sets_commit_limit_in_pages(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo.txt"
    meminfo.write_text("MemTotal:       16777216 kB\nSwapTotal:       0 kB\nCommitLimit:     1 kB\n")
    kernelsim.reboot_meminfo(meminfo, {"vm.overcommit_kbytes": "1000003", "vm.overcommit_ratio": "0"})
    assert kernelsim.read_meminfo(meminfo)["CommitLimit"] == 1000000


def test_sysctl_system_order_is_the_files_by_name_then_sysctl_conf(tmp_path: Path) -> None:
    (tmp_path / "sysctl.d").mkdir()
    (tmp_path / "sysctl.conf").write_text("vm.swappiness = 1\n")
    (tmp_path / "sysctl.d" / "99-z.conf").write_text("vm.swappiness = 30\n; a comment\n-vm.other = 2\n")
    (tmp_path / "sysctl.d" / "10-a.conf").write_text("# a comment\nvm/swappiness=20\n")
    (tmp_path / "sysctl.d" / "50-b.conf.bak").write_text("vm.swappiness = 99\n")
    assert kernelsim.declared_lines(tmp_path) == [("vm.swappiness", "20"), ("vm.swappiness", "30"),
                                                  ("vm.other", "2"), ("vm.swappiness", "1")]


def test_ratio_and_bytes_zero_each_other_as_their_handlers_do() -> None:
    running = {"vm.dirty_ratio": "20", "vm.dirty_bytes": "0", "vm.dirty_background_ratio": "10",
               "vm.dirty_background_bytes": "0", "vm.overcommit_ratio": "50", "vm.overcommit_kbytes": "0"}
    after = kernelsim.apply_sysctl(running, [("vm.dirty_bytes", "536870912"), ("vm.dirty_background_bytes", "67108864"),
                                             ("vm.overcommit_kbytes", "1000")])
    assert after["vm.dirty_ratio"] == "0" and after["vm.dirty_background_ratio"] == "0"
    assert after["vm.overcommit_ratio"] == "0"
    # dirty_ratio zeroes dirty_bytes only when its own value changes (dirty_ratio_handler); the background and
    # overcommit pairs always zero their counterpart
    unchanged = kernelsim.apply_sysctl(after, [("vm.dirty_ratio", "0"), ("vm.dirty_background_ratio", "0")])
    assert unchanged["vm.dirty_bytes"] == "536870912" and unchanged["vm.dirty_background_bytes"] == "0"
    # refused values change nothing: dirty_bytes below two pages, a ratio above 100
    refused = kernelsim.apply_sysctl(after, [("vm.dirty_bytes", "4096"), ("vm.dirty_ratio", "101")])
    assert refused["vm.dirty_bytes"] == "536870912" and refused["vm.dirty_ratio"] == "0"


def test_what_is_committed_grows_and_nothing_else(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo.txt"
    meminfo.write_text("MemTotal:       16777216 kB\nCommitLimit:    13421772 kB\nCommitted_AS:   11408506 kB\n")
    kernelsim.commit(meminfo, 4_000_000)
    assert kernelsim.read_meminfo(meminfo) == {"MemTotal": 16777216, "CommitLimit": 13421772,
                                               "Committed_AS": 15408506}
