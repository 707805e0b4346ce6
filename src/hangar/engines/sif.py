"""Read the vLLM inside an Apptainer/Singularity image file (SIF) without running it.

A SIF file is a global header, a table of data-object descriptors and the objects; the
container's root filesystem is the descriptor of type ``DataPartition`` whose partition
type is ``PartPrimSys`` and whose filesystem is ``FsSquash`` (sylabs/sif v2.24.1,
commit 4c44215254607b7da19b034b60556f75d725dc27: pkg/sif/sif.go ``header`` and the
constants, pkg/sif/descriptor.go ``rawDescriptor`` and ``partition``; written with
``binary.Write(..., binary.LittleEndian, ...)``, i.e. packed, no padding). squashfs-tools
then lists that partition (``unsquashfs -o OFFSET -lc``) and extracts only the files the
static reader opens (``-ef LIST``); nothing in the image is executed. A plain squashfs
image (``.sqsh``, which apptainer also runs) is read at offset 0.

The cache key is the SHA-256 of the header and the descriptor table: they hold the image's
UUID, its creation/modification times and every object's offset and size, so a rebuilt
or modified image gets a new key without hashing gigabytes.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hangar import proc
from hangar.engines.errors import InspectFailed
from hangar.errors import CommandFailed

# pkg/sif/sif.go: LaunchScript[32] Magic[10] Version[3] Arch[3] ID[16], then eight int64
# (CreatedAt ModifiedAt DescriptorsFree DescriptorsTotal DescriptorsOffset DescriptorsSize
# DataOffset DataSize).
HEADER = struct.Struct("<32s10s3s3s16s8q")
SIF_MAGIC = b"SIF_MAGIC\x00"
# pkg/sif/descriptor.go rawDescriptor: DataType int32, Used bool, ID GroupID LinkedID
# uint32, Offset Size SizeWithPadding CreatedAt ModifiedAt UID GID int64, Name[128],
# Extra[384] (for a partition: Fstype int32, Parttype int32, Arch[3]).
DESCRIPTOR = struct.Struct("<iB3I7q128s384s")
PARTITION_EXTRA = struct.Struct("<ii3s")
DATA_PARTITION = 0x4004  # DataDeffile = 0x4001, DataEnvVar, DataLabels, DataPartition
FS_SQUASH = 1  # FsSquash = iota + 1
PART_PRIM_SYS = 2  # PartSystem = 1, PartPrimSys
SQUASHFS_MAGIC = b"hsqs"  # little-endian squashfs superblock magic
_TIMEOUT = 300.0


@dataclass(frozen=True)
class Partition:
    """Where the root filesystem lies in the file, and the image's identity."""

    offset: int
    size: int
    digest: str


def _fail(path: Path, why: str) -> InspectFailed:
    return InspectFailed(
        str(path),
        why,
        hint=f"check the file: apptainer sif list {path}   (on a host with apptainer)",
    )


def root_partition(path: Path) -> Partition:
    """The primary system squashfs partition of a SIF file (or a bare squashfs image)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(HEADER.size)
            if head[:4] == SQUASHFS_MAGIC:
                return Partition(0, path.stat().st_size, hashlib.sha256(head).hexdigest())
            if len(head) < HEADER.size or head[32:42] != SIF_MAGIC:
                raise _fail(path, "not a SIF file (no SIF_MAGIC at byte 32) nor a squashfs image")
            fields = HEADER.unpack(head)
            total, offset, size = fields[8], fields[9], fields[10]
            fh.seek(offset)
            table = fh.read(size)
    except OSError as exc:
        raise _fail(path, f"cannot read the image: {exc.strerror}") from exc
    digest = hashlib.sha256(head + table).hexdigest()
    for i in range(min(total, len(table) // DESCRIPTOR.size)):
        found = _partition(DESCRIPTOR.unpack_from(table, i * DESCRIPTOR.size))
        if found is not None:
            return Partition(found[0], found[1], digest)
    raise _fail(path, "the SIF file has no squashfs system partition")


def _partition(raw: tuple[object, ...]) -> tuple[int, int] | None:
    datatype, used, offset, size, extra = raw[0], raw[1], raw[5], raw[6], raw[13]
    if datatype != DATA_PARTITION or not used:
        return None
    assert isinstance(extra, bytes) and isinstance(offset, int) and isinstance(size, int)
    fstype, parttype, _ = PARTITION_EXTRA.unpack_from(extra)
    return (offset, size) if fstype == FS_SQUASH and parttype == PART_PRIM_SYS else None


def _unsquashfs(args: list[str]) -> str:
    if shutil.which("unsquashfs") is None:
        raise InspectFailed(
            "unsquashfs",
            "squashfs-tools is not installed (it reads the SIF's squashfs partition)",
            hint="apt-get install squashfs-tools   (or dnf install squashfs-tools)",
        )
    try:
        return proc.run(["unsquashfs", *args], timeout=_TIMEOUT).stdout
    except CommandFailed as exc:
        tail = (exc.stderr or exc.stdout).strip().splitlines()[-1:] or [exc.message]
        raise InspectFailed("unsquashfs", f"unsquashfs failed: {tail[0]}") from exc


def list_files(path: Path, part: Partition) -> list[str]:
    """Every regular file of the partition, as paths from its root (``unsquashfs -lc``)."""
    out = _unsquashfs(["-o", str(part.offset), "-lc", str(path)])
    files = []
    for line in out.splitlines():
        name = line.strip()
        if name.startswith("squashfs-root/"):
            files.append(name[len("squashfs-root/") :])
    return files


@contextmanager
def extracted(path: Path, wanted: list[str]) -> Iterator[Path]:
    """Only ``wanted`` (paths from the root) extracted into a private temp dir."""
    tmp = Path(tempfile.mkdtemp(prefix="hangar-sif-"))
    try:
        listing = tmp / "extract.list"
        listing.write_text("".join(f"/{name}\n" for name in wanted), encoding="utf-8")
        root = tmp / "root"
        part = root_partition(path)
        args = ["-o", str(part.offset), "-n", "-no-xattrs", "-d", str(root), "-ef", str(listing)]
        _unsquashfs([*args, str(path)])
        yield root
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
