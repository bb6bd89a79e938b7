"""The storage a host's PostgreSQL lives on: mount.* items scoped to the mounts holding PGDATA, WAL and
tablespaces, and the disks under them."""

from __future__ import annotations

import os
import re

from pgvet.inputs.mounts import Mount, MountTable
from pgvet.snapshot.facts import Fact, HostFacts, Item

# Filesystems that never hold a database: kernel interfaces, not storage.
PSEUDO_FILESYSTEMS = frozenset({
    "proc", "sysfs", "devtmpfs", "devpts", "securityfs", "cgroup", "cgroup2", "pstore", "bpf", "debugfs",
    "tracefs", "configfs", "fusectl", "mqueue", "hugetlbfs", "autofs", "binfmt_misc", "rpc_pipefs", "nsfs",
    "efivarfs", "selinuxfs", "squashfs", "overlay", "fuse.gvfsd-fuse", "fuse.portal", "ramfs_sys", "iso9660",
})


def scope_storage(host: HostFacts, mounts: list[Mount]) -> None:
    """mount.* items, scoped to the mounts holding PGDATA / WAL / tablespaces when they are known."""
    facts = host.facts
    data_directory = _text_fact(facts.get("host.data_directory"))
    wal_directory = _text_fact(facts.get("host.wal_directory"))
    if wal_directory is None and data_directory is not None:
        wal_directory = data_directory.rstrip("/") + "/pg_wal"
    tablespaces = [part for part in (_text_fact(facts.get("host.tablespaces")) or "").split(",") if part]

    table = MountTable(mounts)
    data_mount = table.holding(data_directory) if data_directory else None
    wal_mount = table.holding(wal_directory) if wal_directory else None
    tablespace_mounts = {id(found) for found in map(table.holding, tablespaces) if found is not None}
    known = data_mount is not None
    if known:
        host.notes.append(
            f"storage rules scoped to the mounts holding PGDATA ({data_directory}), WAL and tablespaces"
        )
    else:
        host.notes.append(
            "data directory unknown (set data_directory in host.yaml): storage rules apply to every "
            "disk-backed or network mount"
        )
    items: list[Item] = []
    root_points = {os.path.normpath(path) for path in (data_directory, wal_directory, *tablespaces) if path}
    for mount in mounts:
        holds_pgdata = mount is data_mount
        holds_wal = mount is wal_mount
        holds_tablespace = id(mount) in tablespace_mounts
        if known and not (holds_pgdata or holds_wal or holds_tablespace):
            continue
        if not known and (mount.fstype in PSEUDO_FILESYSTEMS or mount.fstype in ("tmpfs", "ramfs")):
            continue
        items.append(Item((
            ("mount.device", mount.device), ("mount.point", mount.point), ("mount.fstype", mount.fstype),
            ("mount.options", ",".join(mount.options)), ("mount.holds_pgdata", holds_pgdata),
            ("mount.holds_wal", holds_wal), ("mount.holds_tablespace", holds_tablespace), ("mount.scoped", known),
            ("mount.is_root_of_data", os.path.normpath(mount.point) in root_points)), mount.source))
    host.items["mount"] = items
    if data_mount is not None:  # for host rules that depend on it (full_page_writes on ZFS)
        host.add(Fact("host.data_fstype", data_mount.fstype, data_mount.source))
    _mark_data_disks(host, data_mount.device if data_mount else None)


def _mark_data_disks(host: HostFacts, data_device: str | None) -> None:
    """disk.holds_pgdata: the disk under PGDATA's mount, when its device names one (sda1 → sda)."""
    disks = host.items.get("disk", [])
    if not disks:
        return
    disk_name = _disk_of_device(data_device) if data_device else None
    names = {str(item["disk.name"]) for item in disks}
    for item in disks:
        holds = disk_name == str(item["disk.name"]) if disk_name in names else None
        if holds is not None:
            item["disk.holds_pgdata"] = holds  # read where the disk's name was, the item's source
    if disk_name in names:
        host.items["disk"] = [item for item in disks if item["disk.name"] == disk_name]
        host.notes.append(f"disk rules scoped to {disk_name}, which holds PGDATA")
        rotational = host.items["disk"][0].fact("disk.rotational")
        if rotational is not None:  # for host rules (random_page_cost …) when host.yaml declares no storage
            host.add(Fact("host.data_disk_rotational", rotational.value, rotational.source))
    else:
        host.items["disk"] = [item for item in disks if item["disk.virtual"] is False]
        host.notes.append("disk rules apply to every non-virtual disk (the disk under PGDATA is not known)")


# Linux block device names (block/partitions/core.c): a disk whose name ends in a digit numbers its
# partitions after a "p" (nvme0n1p2, md0p1); one ending in a letter numbers them directly (sda1).
_DISK_OF_DEVICE_NAME = re.compile(
    r"(?P<disk>(?:nvme\d+n\d+|mmcblk\d+|loop\d+|md\d+|nbd\d+|rbd\d+|zd\d+))(?:p\d+)?"
    r"|(?P<mapped>dm-\d+)"  # device-mapper targets have no partitions of their own
    r"|(?P<lettered>(?:sd|vd|xvd|hd)[a-z]+)\d*"  # sda1, vdb, xvda1, hdc
)


def _disk_of_device(device: str) -> str | None:
    """The disk under a device path: /dev/sda1 → sda, /dev/nvme0n1p2 → nvme0n1, /dev/md0 → md0; another name
    (drbd0, pmem0, zram0, sr0) as it is — a whole device, or a partition the sysfs dump does not list, which
    leaves the disk not known; None for links and for what is not a device."""
    if not device.startswith("/dev/"):
        return None
    name = device.removeprefix("/dev/")
    # /dev/mapper/…, /dev/disk/by-uuid/…, /dev/md/NAME are links to a dm-N, sdX… that a snapshot does not record
    if "/" in name:
        return None
    match = _DISK_OF_DEVICE_NAME.fullmatch(name)
    if match is None:
        return name or None
    return match["disk"] or match["mapped"] or match["lettered"]


def _text_fact(fact: Fact | None) -> str | None:
    return str(fact.value) if fact is not None and fact.value not in ("", None) else None
