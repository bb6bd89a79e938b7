"""A host's snapshot after a fix is applied, as Linux and `sysctl --system` would make it, then a reboot.

Written for the tests apart from pgvet's own code, and reviewed against the kernel and procps:

- Order: procps' `sysctl --system` (applying the fix now) writes the files of the sysctl.d directories by file
  name, then /etc/sysctl.conf last; in a snapshot, ``sysctl.d/*.conf`` by name, then ``sysctl.conf``. The boot's
  systemd-sysctl reads no /etc/sysctl.conf (sysctl.d(5)) but through the sysctl.d/99-sysctl.conf link Debian,
  Ubuntu and the RHEL family ship: ``sysctl.conf`` where that name sorts (a snapshot without the entry is taken
  to have it), before a later name such as ``hugepages.conf``. Lines are written in file order; ``#`` and ``;``
  start comments, a leading ``-`` ignores a failure.
- The ratio/bytes handlers (mm/page-writeback.c, mm/util.c): writing vm.dirty_background_ratio zeroes
  vm.dirty_background_bytes and the other way round, always; vm.dirty_ratio and vm.dirty_bytes zero each other
  only when their own value changes; vm.overcommit_ratio zeroes vm.overcommit_kbytes and the other way round,
  always. A refused value (vm.dirty_bytes below two pages, a *_bytes of 0, a ratio above 100) changes nothing.
- The reboot (mm/hugetlb.c): the persistent pool is vm.nr_hugepages pages of the default size, all allocated
  (no fragmentation at boot) up to what the RAM holds (the kernel takes what it finds); no surplus page is taken
  yet; pages of other sizes (kernel command line) stay.
- CommitLimit (mm/util.c, vm_commit_limit), in 4 kB pages with integer division:
  overcommit_kbytes ? kbytes >> 2 : (totalram_pages - hugetlb_total_pages) * overcommit_ratio / 100; + swap pages.
- Committed_AS once PostgreSQL runs again: as measured, plus what its restart adds (``commit``): a shared
  anonymous mapping, its shared memory outside huge pages, is committed whole when it is mapped (mm/shmem.c,
  shmem_acct_size); huge pages are not (hugetlb has its own reservations).
"""

from __future__ import annotations

import re
from pathlib import Path

PAGE_KB = 4
_ZEROES_ALWAYS = {"vm.dirty_background_ratio": "vm.dirty_background_bytes",
                  "vm.dirty_background_bytes": "vm.dirty_background_ratio",
                  "vm.overcommit_ratio": "vm.overcommit_kbytes", "vm.overcommit_kbytes": "vm.overcommit_ratio"}
_ZEROES_ON_CHANGE = {"vm.dirty_ratio": "vm.dirty_bytes", "vm.dirty_bytes": "vm.dirty_ratio"}


def declared_lines(host: Path, *, boot: bool = False) -> list[tuple[str, str]]:
    """(key, value) of every sysctl line of the host, in the order `sysctl --system` writes them (``boot``: the
    order systemd-sysctl writes them at boot)."""
    directory = host / "sysctl.d"
    files = sorted(directory.glob("*.conf"), key=lambda path: path.name) if directory.is_dir() else []
    if (host / "sysctl.conf").is_file() and not (boot and (directory / "99-sysctl.conf").exists()):
        files.append(host / "sysctl.conf")
    if boot:
        files.sort(key=lambda path: "99-sysctl.conf" if path == host / "sysctl.conf" else path.name)
    lines: list[tuple[str, str]] = []
    for path in files:
        for raw in path.read_text(encoding="utf-8", errors="surrogateescape").splitlines():
            text = raw.strip()
            if not text or text[0] in "#;" or "=" not in text:
                continue
            key, _, value = text.lstrip("-").partition("=")
            lines.append((key.strip().replace("/", "."), value.strip()))
    return lines


def _accepted(key: str, value: str) -> bool:
    if not re.fullmatch(r"-?\d+", value):
        return True  # not one of the checked numeric keys: taken as it is
    number = int(value)
    if key == "vm.dirty_bytes":
        return number >= 2 * PAGE_KB * 1024
    if key == "vm.dirty_background_bytes":
        return number >= 1
    if (key.endswith("_ratio") and key.startswith("vm.dirty")) or key == "vm.overcommit_ratio":
        return 0 <= number <= (100 if key.startswith("vm.dirty") else 2**31)
    return True


def apply_sysctl(running: dict[str, str], lines: list[tuple[str, str]]) -> dict[str, str]:
    """The running values once ``lines`` are written in order, with the kernel's ratio/bytes handlers."""
    values = dict(running)
    for key, value in lines:
        if not _accepted(key, value):
            continue
        old = values.get(key)
        values[key] = value
        if key in _ZEROES_ALWAYS:
            values[_ZEROES_ALWAYS[key]] = "0"
        elif key in _ZEROES_ON_CHANGE and old != value:
            values[_ZEROES_ON_CHANGE[key]] = "0"
    return values


def read_sysctl_txt(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="surrogateescape").splitlines():
            key, equals, value = line.partition(" = ")
            if equals:
                values[key.strip()] = value.strip()
    return values


def write_sysctl_txt(path: Path, values: dict[str, str]) -> None:
    path.write_text("".join(f"{key} = {value}\n" for key, value in sorted(values.items())), encoding="utf-8")


def read_meminfo(path: Path) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, _, rest = line.partition(":")
        number = rest.split()[0] if rest.split() else ""
        if number.isdigit():
            values[name.strip()] = int(number)
    return values


def reboot_meminfo(path: Path, sysctl: dict[str, str]) -> None:
    """meminfo.txt after a reboot with these kernel values: the pool, Hugetlb and CommitLimit recomputed."""
    text = path.read_text(encoding="utf-8")
    meminfo = read_meminfo(path)
    size_kb = meminfo.get("Hugepagesize", 2048)
    pages = min(int(sysctl.get("vm.nr_hugepages", meminfo.get("HugePages_Total", 0))), meminfo["MemTotal"] // size_kb)
    other_sizes_kb = meminfo.get("Hugetlb", meminfo.get("HugePages_Total", 0) * size_kb) - (
        meminfo.get("HugePages_Total", 0) * size_kb)
    hugetlb_kb = pages * size_kb + max(0, other_sizes_kb)
    ratio = int(sysctl.get("vm.overcommit_ratio", "50"))
    kbytes = int(sysctl.get("vm.overcommit_kbytes", "0"))
    total_pages = meminfo["MemTotal"] // PAGE_KB
    allowed = kbytes // PAGE_KB if kbytes else (total_pages - hugetlb_kb // PAGE_KB) * ratio // 100
    allowed += meminfo.get("SwapTotal", 0) // PAGE_KB
    new = {"HugePages_Total": pages, "HugePages_Free": pages, "HugePages_Rsvd": 0, "HugePages_Surp": 0,
           "Hugetlb": hugetlb_kb, "CommitLimit": allowed * PAGE_KB}

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in new:
            return match.group(0)
        unit = " kB" if match.group(3) else ""
        return f"{name}:{match.group(2)}{new[name]}{unit}"

    text = re.sub(r"^([A-Za-z_()]+):(\s+)\d+( kB)?$", replace, text, flags=re.MULTILINE)
    path.write_text(text, encoding="utf-8")


def apply_and_reboot(host: Path) -> None:
    """Make ``host`` what it is once its sysctl files are applied and it is rebooted (pgvet fix --write first)."""
    sysctl_txt = host / "sysctl.txt"
    # `sysctl --system` now, then the boot's systemd-sysctl, over what runs (a key no file sets keeps its value)
    running = apply_sysctl(read_sysctl_txt(sysctl_txt), declared_lines(host))
    running = apply_sysctl(running, declared_lines(host, boot=True))
    if sysctl_txt.is_file():
        write_sysctl_txt(sysctl_txt, running)
    if (host / "meminfo.txt").is_file():
        reboot_meminfo(host / "meminfo.txt", running)


def commit(path: Path, growth_kb: int) -> None:
    """meminfo.txt once processes have committed ``growth_kb`` more (Committed_AS; left alone when absent)."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^(Committed_AS:\s+)(\d+)", lambda match: f"{match.group(1)}{int(match.group(2)) + growth_kb}",
                  text, flags=re.MULTILINE)
    path.write_text(text, encoding="utf-8")
