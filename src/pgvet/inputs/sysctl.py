"""Kernel parameters: ``sysctl -a`` output (running values) and sysctl.conf / sysctl.d syntax
(declared values), read as procps ``sysctl`` reads them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import NamedTuple

from pgvet.errors import ParseError
from pgvet.provenance import Located, Source

# `sysctl -a` on FreeBSD and macOS prints `key: value`; Linux prints `key = value`.
_BSD_LINE = re.compile(r"^[a-z][\w.%-]*: ")
_INTEGER = re.compile(r"^-?\d+$")
# `vm.nr_overcommit_hugepages = 4505 # 8192 / 2 * 1.10`: neither sysctl nor systemd-sysctl strips a comment
# after a value; they write the whole text, and a numeric key's kernel handler reads the leading numbers
# and ignores the rest (tried on Linux 6.18 with procps-ng 4.0.2 and systemd-sysctl).
_NUMBER = r"-?(?:0[xX][0-9a-fA-F]{1,38}|\d{1,40})"
_NUMBERS_THEN_COMMENT = re.compile(rf"^({_NUMBER}(?:[ \t]+{_NUMBER})*)[ \t]+([#;].*)$")
# A numeric sysctl's handler reads each number as C does with base 0 (proc_get_long in kernel/sysctl.c:
# strtoul_lenient(p, &p, 0, val)): 0x… is hexadecimal, 0… octal, anything else decimal. It refuses a token
# it cannot read to its end (08), and one of 21 characters or more (TMPBUFLEN).
_KERNEL_INTEGER = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_KERNEL_TOKEN_LIMIT = 20
# Sysctls whose handler is proc_dostring: their value is text (a hostname 010 is not 8). Numeric ones are
# far more numerous, so the string ones are listed; those a sysctl.d file can set.
STRING_SYSCTLS = frozenset({
    "kernel.core_pattern", "kernel.domainname", "kernel.hostname", "kernel.hotplug", "kernel.modprobe",
    "kernel.poweroff_cmd", "kernel.printk_devkmsg", "net.core.default_qdisc",
    "net.ipv4.tcp_allowed_congestion_control", "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_fastopen_key",
})


def sysctl_value(text: str) -> int | str:
    """An int when the whole value is one integer, else the text with blanks folded to one space."""
    if len(text) <= 40 and text.isascii() and text.isdigit():
        return int(text)  # the usual value, without folding and matching it
    folded = " ".join(text.split())
    # Longer digit strings are no kernel's integer (and int() refuses over 4300 digits).
    return int(folded) if len(folded) <= 40 and _INTEGER.match(folded) else folded


def kernel_integer(token: str) -> int | None:
    """The number a numeric sysctl's handler reads from one token (010 → 8, 0x10 → 16), None if it refuses it."""
    if len(token) > _KERNEL_TOKEN_LIMIT or not _KERNEL_INTEGER.fullmatch(token):
        return None
    digits = token.removeprefix("-")
    if digits[:2] in ("0x", "0X"):
        magnitude = int(digits[2:], 16)
    elif digits.startswith("0"):
        magnitude = int(digits, 8)
    else:
        magnitude = int(digits)
    if magnitude >= 2**64:  # strtoul_lenient: -ERANGE
        return None
    return -magnitude if token.startswith("-") else magnitude


def declared_sysctl_value(key: str, text: str) -> int | str:
    """A sysctl.conf / sysctl.d value as the kernel will hold it. Numbers written with a radix prefix (010,
    0x4000000) are read in base 0, as the kernel reads them (`sysctl -a` prints them in decimal); string
    sysctls, decimal values and values the kernel would refuse are read as `sysctl -a` output is."""
    tokens = text.split()
    prefixed = any(len(token.removeprefix("-")) > 1 and token.removeprefix("-")[0] == "0" for token in tokens)
    if key in STRING_SYSCTLS or not prefixed:
        return sysctl_value(text)
    numbers: list[int] = []
    for token in tokens:
        number = kernel_integer(token)
        if number is None:
            return sysctl_value(text)  # the kernel refuses the write: the running value will differ, as it should
        numbers.append(number)
    return numbers[0] if len(numbers) == 1 else " ".join(str(number) for number in numbers)


def normalise_key(key: str) -> str:
    """procps accepts ``vm/swappiness`` for ``vm.swappiness``."""
    key = key.strip()
    return key.replace("/", ".") if "/" in key else key


def parse_sysctl_output(text: str, path: str, keys: AbstractSet[str] | None = None) -> dict[str, Located[int | str]]:
    """The output of Linux ``sysctl -a``: ``key = value`` per line; error lines are skipped.

    ``keys``: only these keys are returned, and the text is accepted or refused as without ``keys``.
    """
    values: dict[str, Located[int | str]] = {}
    found = False
    bsd_lines = 0
    for number, line in enumerate(text.split("\n"), 1):
        key, separator, value = line.partition(" = ")
        if separator and keys is not None:
            if key in keys:  # a wanted key, written as it is normalised (the usual line)
                found = True
                values[key] = Located(sysctl_value(value), Source(path, number))
                continue
            if found and "/" not in key and not key[:1].isspace() and not key[-1:].isspace():
                continue  # its key is not wanted, and a valid line was seen: nothing to learn from it
        if not separator:
            if not line.strip() or line.startswith("sysctl:"):
                continue  # "sysctl: permission denied on key …", "sysctl: reading key …"
            if line.rstrip().endswith("="):
                key, value = line.rstrip().rstrip("=").rstrip(), ""
            elif _BSD_LINE.match(line):
                bsd_lines += 1
                continue
            else:
                continue  # a continuation of a multi-line value (e.g. fs.binfmt_misc) or noise
        elif line.startswith("sysctl:"):
            continue
        key = normalise_key(key)
        if not key or " " in key:
            continue
        found = True
        if keys is None or key in keys:
            values[key] = Located(sysctl_value(value), Source(path, number))
    if bsd_lines and keys is not None:
        # the test below counts distinct keys: rare enough (BSD-like lines) to read the text again in full
        parse_sysctl_output(text, path)
    elif bsd_lines > len(values):  # a few `a = b` lines inside BSD values do not make it Linux output
        raise ParseError(
            "this is not Linux `sysctl -a` output (it looks like FreeBSD or macOS: `key: value`); "
            "pgvet reads Linux kernels — run `sysctl -a` on the Linux database host",
            Source(path, 1),
        )
    if not found and text.strip():
        raise ParseError("no `key = value` line found: expected the output of `sysctl -a`", Source(path, 1))
    return values


class SysctlSetting(NamedTuple):
    """One ``key = value`` line of sysctl.conf or a sysctl.d file."""

    key: str
    value: int | str
    source: Source
    ignore_errors: bool = False  # a leading '-': sysctl --system ignores a failure to set it
    trailing: str | None = None  # `# …` after a numeric value: written to the kernel, which ignores it


def parse_sysctl_conf(text: str, path: str) -> list[SysctlSetting]:
    """sysctl.conf syntax: ``#`` and ``;`` comments, ``key = value``, a leading ``-`` to ignore errors."""
    settings: list[SysctlSetting] = []
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        key, separator, value = stripped.partition("=")
        if not separator:
            raise ParseError("missing '=' (expected `key = value`)", Source(path, number))
        key = key.strip()
        ignore_errors = key.startswith("-")
        key = normalise_key(key.removeprefix("-"))
        if not key:
            raise ParseError("missing key before '='", Source(path, number))
        numbers_then_comment = _NUMBERS_THEN_COMMENT.match(value.strip())
        if numbers_then_comment:
            numbers = declared_sysctl_value(key, numbers_then_comment.group(1))
            settings.append(SysctlSetting(key, numbers, Source(path, number), ignore_errors,
                                          numbers_then_comment.group(2)))
        else:
            settings.append(SysctlSetting(key, declared_sysctl_value(key, value), Source(path, number), ignore_errors))
    return settings


def boot_order(path: str) -> str | None:
    """Where the boot's systemd-sysctl reads a file of a snapshot: sysctl.d's by name, sysctl.conf where the
    sysctl.d/99-sysctl.conf link distributions ship to it sorts (sysctl.d(5): systemd-sysctl reads no
    /etc/sysctl.conf of its own), not last as `sysctl --system` reads it. None for another file (a tuned profile's
    settings, which its daemon applies)."""
    directory, name = os.path.split(path)
    if directory == "" and name == "sysctl.conf":
        return "99-sysctl.conf"
    return name if directory == "sysctl.d" else None


def sysctl_d_order(names: Iterable[str]) -> list[str]:
    """The order ``sysctl --system`` applies the files of a sysctl.d directory: ``*.conf``, by name.

    (Across directories, a file in /etc/sysctl.d hides one of the same name in /usr/lib/sysctl.d, and
    /etc/sysctl.conf comes last; a snapshot holds one sysctl.d, so only the name order matters here.)
    """
    return sorted(name for name in names if name.endswith(".conf") and not name.startswith("."))


# The kernel's counterpart pairs: a successful write of one sets the other to 0, so that only one is in force
# (mm/page-writeback.c dirty_ratio_handler, dirty_bytes_handler, dirty_background_ratio_handler,
# dirty_background_bytes_handler; mm/util.c overcommit_ratio_handler, overcommit_kbytes_handler; vm.rst: "the
# other appears as 0 when read"). Of a pair written in sysctl.d, the last accepted write wins. Two handlers
# zero the counterpart only when the value changes (vm.dirty_ratio, vm.dirty_bytes: `dirty_bytes = X` then
# `dirty_ratio = 0` keeps X); the others always do (`dirty_background_bytes = X` then
# `dirty_background_ratio = 0` leaves both at 0). A write the kernel refuses (EINVAL: vm.dirty_bytes below two
# pages, a bytes value of 0, a ratio above 100) changes nothing.
class _PairRule(NamedTuple):
    partner: str
    minimum: int
    maximum: int
    only_on_change: bool  # the handler zeroes the partner only when the value changes


# x86-64's base page, for a host whose page size is neither declared nor inferred (derived.base_page_size
# takes the same default)
DEFAULT_PAGE_SIZE = 4096
_UINT_MAX = 2**32 - 1


@lru_cache(maxsize=8)
def _pairs(page_size: int) -> dict[str, _PairRule]:
    """The pairs on a kernel of this base page size: vm.dirty_bytes takes at least two pages (dirty_bytes_min),
    the bytes keys at most 2^32 − 1 pages."""
    return {
        "vm.dirty_ratio": _PairRule("vm.dirty_bytes", 0, 100, True),
        "vm.dirty_bytes": _PairRule("vm.dirty_ratio", 2 * page_size, _UINT_MAX * page_size, True),
        "vm.dirty_background_ratio": _PairRule("vm.dirty_background_bytes", 0, 100, False),
        "vm.dirty_background_bytes": _PairRule("vm.dirty_background_ratio", 1, _UINT_MAX * page_size, False),
        "vm.overcommit_ratio": _PairRule("vm.overcommit_kbytes", -2**31, 2**31 - 1, False),  # proc_dointvec
        "vm.overcommit_kbytes": _PairRule("vm.overcommit_ratio", 0, 2**64 - 1, False),  # proc_doulongvec_minmax
    }


# What the kernel holds at boot, before sysctl --system applies the files.
_BOOT_VALUES = {"vm.dirty_ratio": 20, "vm.dirty_bytes": 0, "vm.dirty_background_ratio": 10,
                "vm.dirty_background_bytes": 0, "vm.overcommit_ratio": 50, "vm.overcommit_kbytes": 0}
PAIRED_SYSCTLS = frozenset(_pairs(DEFAULT_PAGE_SIZE))
# each key of a pair: its counterpart
PAIR_PARTNERS = {key: rule.partner for key, rule in _pairs(DEFAULT_PAGE_SIZE).items()}


class PairedValue(NamedTuple):
    """A key of a ratio/bytes pair as the kernel holds it once the declared files are applied in order."""

    key: str
    value: int
    setting: SysctlSetting  # the line that gave the value: its own last accepted write, or the partner's
    zeroed_by: SysctlSetting | None = None  # the partner's write that set it to 0, after the key's own lines
    refused: SysctlSetting | None = None  # the key's last line, when the kernel refuses it (nothing changes)


def paired_values(settings: Sequence[SysctlSetting], page_size: int = DEFAULT_PAGE_SIZE,
                  running: Mapping[str, int] | None = None) -> dict[str, PairedValue]:
    """The kernel's ratio/bytes pairs after ``settings`` (in the order sysctl --system applies them) are
    written over the ``running`` values (those known; the boot values for the others), on a kernel of this base
    page size: each key of a pair that a line writes or zeroes. A key no line of which is accepted keeps what it
    held, unless a write of its partner that changed the partner zeroed it first."""
    pairs = _pairs(page_size)
    state = {**_BOOT_VALUES, **{key: value for key, value in (running or {}).items() if key in _BOOT_VALUES}}
    outcome: dict[str, PairedValue] = {}
    for setting in settings:
        rule = pairs.get(setting.key)
        if rule is None:
            continue
        value = setting.value
        if isinstance(value, bool) or not isinstance(value, int) or not rule.minimum <= value <= rule.maximum:
            before = outcome.get(setting.key)
            if before is None:  # never accepted: the kernel keeps what it holds, the line shows where
                outcome[setting.key] = PairedValue(setting.key, state[setting.key], setting, refused=setting)
            else:
                outcome[setting.key] = PairedValue(setting.key, before.value, before.setting, before.zeroed_by,
                                                   setting)
            continue
        old = state[setting.key]
        state[setting.key] = value
        outcome[setting.key] = PairedValue(setting.key, value, setting)
        if not rule.only_on_change or value != old:
            state[rule.partner] = 0
            outcome[rule.partner] = PairedValue(rule.partner, 0, setting, zeroed_by=setting)
    return outcome
