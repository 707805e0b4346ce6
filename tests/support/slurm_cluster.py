"""A real two-node Slurm cluster on one machine, for tests (recipes: shared/research/feasibility.md §2).

Debian's slurm-wlm 22.05 with munge, slurmdbd + MariaDB (so ``sacct`` works) and
slurmctld in the root network namespace on a bridge; each of the two slurmd runs
in its own network namespace (a veth on that bridge, its own IP), UTS namespace
(its own hostname) and mount namespace (its own ``/etc/hosts`` naming every node,
as a site's DNS would). GPUs are fake: GRES ``gpu:4`` per node whose device files
are symlinks to /dev/null (feasibility §2.2), so jobs get CUDA_VISIBLE_DEVICES.

Everything lives under a short scratch dir ``/tmp/hgXXXX`` (Unix socket paths of
munge and Ray must stay under 108 bytes) and every kernel object is named with the
same prefix ``hgXXXX`` (Linux interface names are at most 15 characters), so
teardown removes exactly this cluster: daemons by the PID this process started
(SIGTERM, then SIGKILL), job processes only when they live in this cluster's
network namespaces, then namespaces, veths, bridge and scratch. The state file
``cluster.json`` lets a later session remove a cluster whose owner died.

Usage::

    with SlurmCluster.start() as cluster:
        job = cluster.submit("#!/bin/bash\\nsrun hostname\\n", "-N2", "--gres=gpu:2")
        cluster.wait_job_gone(job, timeout=60)
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import ipaddress
import json
import os
import pwd
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from support.vllm_env import cache_root

if TYPE_CHECKING:
    from typing_extensions import Self

SETUP_COMMAND = "scripts/setup-test-host"
SKIP_ENV = "HANGAR_SKIP_SLURM"
SCRATCH_BASE = Path("/tmp")
PREFIX_RE = re.compile(r"^hg[0-9a-f]{4}$")
NETNS_DIR = Path("/run/netns")
STATE_NAME = "cluster.json"
CLUSTER_NAME = "hangar"
# Bump when the accounting DB set-up changes (user, accounts): the snapshot is rebuilt.
ACCT_SNAPSHOT_RECIPE = 1
REQUIRED_COMMANDS = (
    "munged",
    "mariadbd",
    "mariadb-install-db",
    "mariadb",
    "slurmdbd",
    "slurmctld",
    "slurmd",
    "sbatch",
    "sinfo",
    "sacct",
    "sacctmgr",
    "scancel",
    "squeue",
    "ip",
    "nsenter",
    "unshare",
)
# Ports in 20000-29999: outside Ray's default worker range (10002-19999) and the
# kernel's ephemeral range (32768-60999), so neither takes them between pick and bind.
_PORT_RANGE = (20000, 29999)
# A throwaway accounting DB: no fsync, no doublewrite, small redo log (halves the
# time of mariadb-install-db here, 5.2 s -> 2.7 s, and speeds slurmdbd's schema set-up).
_MARIADB_FAST = (
    "--innodb-flush-method=nosync",
    "--innodb-doublewrite=0",
    "--innodb-flush-log-at-trx-commit=0",
    "--innodb-log-file-size=8M",
    "--skip-log-bin",
)
_TERMINAL_STATES = (
    "COMPLETED",
    "CANCELLED",
    "FAILED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
)


class SlurmClusterError(RuntimeError):
    """The test cluster could not be started; the message ends with what to run."""


@dataclass(frozen=True)
class Node:
    """One Slurm node: its name (also its hostname), IP and network namespace."""

    index: int
    name: str
    ip: str
    netns: str

    @property
    def netns_path(self) -> Path:
        return NETNS_DIR / self.netns


@dataclass(frozen=True)
class JobProcess:
    """A process that belongs to a job of this cluster (found through /proc)."""

    pid: int
    node: str
    cmdline: str
    argv: tuple[str, ...] = ()  # the words of /proc/<pid>/cmdline, unjoined


@dataclass
class _Daemon:
    name: str
    proc: subprocess.Popen[bytes]
    start_time: int  # /proc/<pid>/stat field 22: tells a reused PID apart


def missing_commands() -> list[str]:
    """Programs the cluster needs that are not installed (scripts/setup-test-host installs them)."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [name for name in REQUIRED_COMMANDS if shutil.which(name, path=search) is None]


def check_prerequisites() -> None:
    """Raise SlurmClusterError naming what is missing and the command that installs it."""
    if os.geteuid() != 0:
        raise SlurmClusterError(
            "the Slurm test cluster needs root (network namespaces, munge user); "
            f"run the tests as root or set {SKIP_ENV}=1"
        )
    missing = missing_commands()
    if missing:
        raise SlurmClusterError(
            f"the Slurm test cluster needs {', '.join(missing)}: run {SETUP_COMMAND} "
            f"(or set {SKIP_ENV}=1 to skip the Slurm tests)"
        )


# Node-local storage inside each node (a per-node directory bound there); give it to
# deployments as target.slurm.tmp_root.
NODE_LOCAL_TMP = "/var/tmp"


@dataclass
class SlurmCluster:
    """A running cluster; build it with ``SlurmCluster.start()`` and use it as a context manager.

    ``env``: the environment for any subprocess that runs Slurm commands (SLURM_CONF,
    PATH; no SLURM_* inherited from an outer allocation). ``nodes``: two ``Node``s,
    ``nodes[0]`` is the first (``<prefix>n1``). ``run_on_node(i, argv)`` runs inside
    node i's namespaces, ``job_processes(job_id)`` lists what of a job is left.
    """

    prefix: str
    scratch: Path
    subnet: ipaddress.IPv4Network
    gres_type: str | None = None
    gpus_per_node: int = 4
    cpus_per_node: int = 2
    memory_mb: int = 10000
    accounting: bool = True
    partition: str = "debug"
    limited_partition: str = "short"
    limited_max_time_min: int = 5
    nodes: list[Node] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per start-up step
    _daemons: dict[str, _Daemon] = field(default_factory=dict)
    _db_password: str = field(default_factory=lambda: secrets.token_hex(12))
    _stopped: bool = False
    _owner_pid: int = field(default_factory=os.getpid)
    _restored: bool = False

    # ---- construction -------------------------------------------------------------

    @classmethod
    def start(
        cls,
        gres_type: str | None = None,
        gpus_per_node: int = 4,
        memory_mb: int = 10000,
        accounting: bool = True,
        ready_timeout: float = 90.0,
    ) -> SlurmCluster:
        """Start munged, MariaDB, slurmdbd, slurmctld and two slurmd; wait until usable.

        ``gres_type="h100"`` makes the GRES typed (``gpu:h100:4``), as sites with
        several GPU models configure it. ``accounting=False`` runs without slurmdbd and
        MariaDB (``sacct`` then says "Slurm accounting storage is disabled", as on sites
        without accounting) and starts in about half the time. Stale clusters of dead
        sessions are removed first.
        """
        check_prerequisites()
        remove_stale_clusters()
        prefix, scratch = _claim_scratch()
        cluster = cls(
            prefix=prefix,
            scratch=scratch,
            subnet=_free_subnet(),
            gres_type=gres_type,
            gpus_per_node=gpus_per_node,
            memory_mb=memory_mb,
            accounting=accounting,
        )
        _LIVE.append(cluster)
        _install_exit_handlers()
        try:
            cluster._bring_up(ready_timeout)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def controller_ip(self) -> str:
        return str(self.subnet.network_address + 1)

    @property
    def controller_host(self) -> str:
        return socket.gethostname().split(".")[0]

    @property
    def cluster_name(self) -> str:
        # The same for every cluster: each has its own slurmctld and accounting DB, and
        # the DB snapshot that makes start-up fast holds this cluster's registration.
        return CLUSTER_NAME

    @property
    def conf_dir(self) -> Path:
        return self.scratch / "etc"

    @property
    def log_dir(self) -> Path:
        return self.scratch / "log"

    @property
    def job_dir(self) -> Path:
        """Where ``submit`` writes scripts and where jobs may write (visible on every node)."""
        return self.scratch / "jobs"

    @property
    def gres(self) -> str:
        """The per-node GRES string as slurm.conf has it: ``gpu:4`` or ``gpu:h100:4``."""
        kind = f"gpu:{self.gres_type}" if self.gres_type else "gpu"
        return f"{kind}:{self.gpus_per_node}"

    @property
    def env(self) -> dict[str, str]:
        """Environment for Slurm client commands (and for whatever a job should inherit)."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))
        }
        env["SLURM_CONF"] = str(self.conf_dir / "slurm.conf")
        env["PATH"] = os.pathsep.join([env.get("PATH", "/usr/bin:/bin"), "/usr/sbin", "/sbin"])
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        return env

    def _bring_up(self, ready_timeout: float) -> None:
        deadline = time.monotonic() + ready_timeout
        self._make_dirs()
        self.ports = {name: _free_port(taken=set()) for name in ("mariadb",)}
        self.ports["slurmdbd"] = _free_port(taken=set(self.ports.values()))
        self.ports["slurmctld"] = _free_port(taken=set(self.ports.values()))
        self.nodes = [
            Node(
                i,
                f"{self.prefix}n{i + 1}",
                str(self.subnet.network_address + 11 + i),
                f"{self.prefix}n{i + 1}",
            )
            for i in range(2)
        ]
        self._save_state()
        accounting: list[tuple[str, Callable[[], object]]] = [
            ("mariadb", lambda: self._start_mariadb(deadline)),
            ("slurmdbd", lambda: self._start_slurmdbd(deadline)),
            ("accounts", lambda: self._register_accounts(deadline)),
        ]
        steps: list[tuple[str, Callable[[], object]]] = [
            ("network", self._make_network),
            ("configs", self._write_configs),
            ("munged", lambda: self._start_munged(deadline)),
            *(accounting if self.accounting else []),
            ("slurmctld", lambda: self._start_slurmctld(deadline)),
            ("slurmd", self._start_slurmds),
            ("nodes_idle", lambda: self._wait_nodes_idle(deadline)),
        ]
        if self.accounting:
            steps.append(("sacct", lambda: self._wait_sacct(deadline)))
        for name, step in steps:
            started = time.monotonic()
            step()
            self.timings[name] = round(time.monotonic() - started, 3)

    def _make_dirs(self) -> None:
        for sub in ("etc", "log", "run", "state", "dev", "jobs", "munge", "mysql"):
            (self.scratch / sub).mkdir(exist_ok=True)
        for node in ("n1", "n2"):
            (self.scratch / "spool" / f"{self.prefix}{node}").mkdir(parents=True, exist_ok=True)
        for i in range(self.gpus_per_node):
            link = self.scratch / "dev" / f"nvidia{i}"
            if not link.is_symlink():
                link.symlink_to("/dev/null")  # slurmd wants a char device; /dev/null is one
        (self.scratch / "jobs").chmod(0o1777)

    # ---- network --------------------------------------------------------------------

    def _make_network(self) -> None:
        bridge = f"{self.prefix}br"
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"{self.controller_ip}/{self.subnet.prefixlen}", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for node in self.nodes:
            veth = f"{self.prefix}v{node.index + 1}"
            _ip("netns", "add", node.netns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", node.netns)
            _ip("link", "set", veth, "master", bridge)
            _ip("link", "set", veth, "up")
            _ip(
                "-n", node.netns, "addr", "add", f"{node.ip}/{self.subnet.prefixlen}", "dev", "eth0"
            )
            _ip("-n", node.netns, "link", "set", "eth0", "up")
            _ip("-n", node.netns, "link", "set", "lo", "up")
        hosts = ["127.0.0.1 localhost", f"{self.controller_ip} {self.controller_host}"]
        hosts += [f"{node.ip} {node.name}" for node in self.nodes]
        (self.conf_dir / "hosts").write_text("\n".join(hosts) + "\n", encoding="utf-8")

    def node_argv(self, index: int, argv: Sequence[str]) -> list[str]:
        """argv that runs ``argv`` inside node ``index``'s network, UTS and mount namespaces."""
        slurmd = self._daemons.get(f"slurmd-{self.nodes[index].name}")
        if slurmd is not None and slurmd.proc.poll() is None:
            target = str(slurmd.proc.pid)
            return ["nsenter", "-t", target, "--net", "--uts", "--mount", "--", *argv]
        return ["nsenter", f"--net={self.nodes[index].netns_path}", "--", *argv]

    def run_on_node(
        self, index: int, argv: Sequence[str], **kwargs: Any
    ) -> subprocess.CompletedProcess[Any]:
        """``subprocess.run`` of argv inside node ``index`` (0 = first node); kwargs go to run."""
        kwargs.setdefault("env", self.env)
        kwargs.setdefault("timeout", 60)
        return subprocess.run(self.node_argv(index, argv), **kwargs)  # noqa: PLW1510

    # ---- configuration --------------------------------------------------------------

    def _write_configs(self) -> None:
        etc = self.conf_dir
        (etc / "plugstack.conf").write_text("", encoding="utf-8")  # not /etc/slurm's
        (etc / "slurm.conf").write_text(self._slurm_conf(), encoding="utf-8")
        (etc / "gres.conf").write_text(self._gres_conf(), encoding="utf-8")
        prolog = etc / "task_prolog.sh"
        prolog.write_text(self._task_prolog(), encoding="utf-8")
        prolog.chmod(0o755)
        dbd = etc / "slurmdbd.conf"
        dbd.write_text(self._slurmdbd_conf(), encoding="utf-8")
        dbd.chmod(0o600)  # slurmdbd refuses a readable file; it holds the DB password

    def _task_prolog(self) -> str:
        """Each "node" gets its own core for vLLM CPU's OpenMP threads, as real nodes have
        their own: both share this machine's cores, and vLLM CPU's automatic binding would
        pin every rank to core 0 (a TP=2 group across the nodes then crawls). Slurm applies
        the `export` lines a TaskProlog prints to the task (slurm.conf(5), TaskProlog); a
        deployment's own [env] still wins, it is exported later by the job script."""
        cases = "\n".join(
            f"  {n.name}) echo 'export VLLM_CPU_OMP_THREADS_BIND={n.index}' ;;" for n in self.nodes
        )
        return (
            "#!/bin/sh\n"
            f'case "$SLURMD_NODENAME" in\n{cases}\nesac\n'
            "echo 'export VLLM_CPU_NUM_OF_RESERVED_CPU=0'\n"
        )

    def _slurm_conf(self) -> str:
        s, auth = self.scratch, f"socket={self.scratch}/munge/munge.socket"
        nodes = [
            f"NodeName={n.name} NodeAddr={n.ip} NodeHostname={n.name} CPUs={self.cpus_per_node} "
            f"RealMemory={self.memory_mb} Gres={self.gres} State=UNKNOWN"
            for n in self.nodes
        ]
        return "\n".join(
            [
                f"ClusterName={self.cluster_name}",
                f"SlurmctldHost={self.controller_host}({self.controller_ip})",
                f"SlurmctldPort={self.ports['slurmctld']}",
                "SlurmdPort=6818",  # each slurmd has its own network namespace
                "SlurmUser=root",
                "SlurmdUser=root",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo={auth}",
                f"StateSaveLocation={s}/state",
                f"TaskProlog={self.conf_dir}/task_prolog.sh",
                f"SlurmdSpoolDir={s}/spool/%n",
                f"SlurmctldPidFile={s}/run/slurmctld.pid",
                f"SlurmdPidFile={s}/run/slurmd-%n.pid",
                f"SlurmctldLogFile={s}/log/slurmctld.log",
                f"SlurmdLogFile={s}/log/slurmd-%n.log",
                f"PlugStackConfig={s}/etc/plugstack.conf",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core_Memory",
                # Nodes share one machine: trust the configured CPUs/memory, never drain for them.
                "SlurmdParameters=config_overrides",
                "JobAcctGatherType=jobacct_gather/linux",
                "JobCompType=jobcomp/none",
                *self._accounting_conf(),
                "GresTypes=gpu",
                "MpiDefault=none",
                "ReturnToService=2",
                "SchedulerType=sched/backfill",
                # Without it a job takes the whole node's memory and jobs run one at a time.
                "DefMemPerCPU=1000",
                # scancel: SIGTERM, then SIGKILL after KillWait (default 30 s) -- short for tests.
                "KillWait=5",
                "InactiveLimit=0",
                "MinJobAge=300",
                "SlurmctldTimeout=30",
                "SlurmdTimeout=60",
                "MessageTimeout=10",
                *nodes,
                f"PartitionName={self.partition} Nodes=ALL Default=YES MaxTime=60 State=UP",
                (
                    f"PartitionName={self.limited_partition} Nodes=ALL "
                    f"MaxTime={self.limited_max_time_min} MaxNodes=1 State=UP"
                ),
                "",
            ]
        )

    def _accounting_conf(self) -> list[str]:
        if not self.accounting:
            return ["AccountingStorageType=accounting_storage/none"]
        tres = "gres/gpu" + (f",gres/gpu:{self.gres_type}" if self.gres_type else "")
        return [
            "AccountingStorageType=accounting_storage/slurmdbd",
            f"AccountingStorageHost={self.controller_ip}",
            f"AccountingStoragePort={self.ports['slurmdbd']}",
            # For slurmdbd connections with auth/munge this names the munge socket
            # (slurm.conf(5), AccountingStoragePass); AuthInfo covers only the rest.
            f"AccountingStoragePass={self.scratch}/munge/munge.socket",
            f"AccountingStorageTRES={tres}",
        ]

    def _gres_conf(self) -> str:
        typed = f" Type={self.gres_type}" if self.gres_type else ""
        last = self.gpus_per_node - 1
        files = f"{self.scratch}/dev/nvidia[0-{last}]" if last else f"{self.scratch}/dev/nvidia0"
        names = ",".join(n.name for n in self.nodes)
        return f"AutoDetect=off\nNodeName={names} Name=gpu{typed} File={files}\n"

    def _slurmdbd_conf(self) -> str:
        s = self.scratch
        return "\n".join(
            [
                "AuthType=auth/munge",
                f"AuthInfo=socket={s}/munge/munge.socket",
                f"DbdAddr={self.controller_ip}",
                f"DbdHost={self.controller_host}",
                f"DbdPort={self.ports['slurmdbd']}",
                "SlurmUser=root",
                f"LogFile={s}/log/slurmdbd.log",
                f"PidFile={s}/run/slurmdbd.pid",
                "StorageType=accounting_storage/mysql",
                # Not "localhost": that makes the client library use the default socket
                # /run/mysqld/mysqld.sock instead of TCP (feasibility §2.3).
                "StorageHost=127.0.0.1",
                f"StoragePort={self.ports['mariadb']}",
                "StorageLoc=slurm_acct_db",
                "StorageUser=slurm",
                f"StoragePass={self._db_password}",
                "",
            ]
        )

    # ---- daemons --------------------------------------------------------------------

    def _spawn(self, name: str, argv: Sequence[str], user: str | None = None) -> None:
        log = open(self.log_dir / f"{name}.stdout", "ab")  # noqa: SIM115 (child keeps it)
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                user=user,
                group=user,
                extra_groups=[] if user else None,
                cwd=self.scratch,
            )
        finally:
            log.close()
        self._daemons[name] = _Daemon(name, proc, _start_time(proc.pid) or 0)
        self._save_state()

    def _start_munged(self, deadline: float) -> None:
        d = self.scratch / "munge"
        key = d / "munge.key"
        key.write_bytes(secrets.token_bytes(128))
        key.chmod(0o400)
        shutil.chown(d, "munge", "munge")
        shutil.chown(key, "munge", "munge")
        d.chmod(0o755)  # munged: the socket dir must be executable by all
        self._spawn(
            "munged",
            [
                _sbin("munged"),
                "--foreground",
                f"--socket={d}/munge.socket",
                f"--key-file={key}",
                f"--pid-file={d}/munged.pid",
                f"--log-file={d}/munged.log",
                f"--seed-file={d}/seed",
                "--num-threads=4",
            ],
            user="munge",
        )
        self._wait_for("munged", lambda: (d / "munge.socket").exists(), deadline)

    @property
    def _mysql_socket(self) -> Path:
        return self.scratch / "mysql" / "mysqld.sock"

    def _start_mariadb(self, deadline: float) -> None:
        """MariaDB with the accounting DB: from the machine's snapshot when there is one."""
        data = self.scratch / "mysql" / "data"
        shutil.chown(self.scratch / "mysql", "mysql", "mysql")
        snapshot = _acct_snapshot_dir() / "data"
        self._restored = snapshot.is_dir()  # complete snapshots appear only by rename
        if self._restored:
            shutil.copytree(snapshot, data, symlinks=True)
            _chown_tree(data, "mysql")
        else:
            _check_run(
                [
                    "mariadb-install-db",
                    "--user=mysql",
                    f"--datadir={data}",
                    "--skip-test-db",
                    "--auth-root-authentication-method=socket",
                    "--skip-name-resolve",
                    *_MARIADB_FAST,
                ],
                log=self.log_dir / "mariadb-install.log",
                env=self.env,
            )
        self._spawn_mariadbd(deadline)
        pw = self._db_password  # random per cluster, also over a restored snapshot
        sql = (
            f"ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{pw}';"
            if self._restored
            else f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{pw}'; "
            "CREATE DATABASE slurm_acct_db; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
        )
        _check_run(
            ["mariadb", "--no-defaults", "-S", str(self._mysql_socket), "-u", "root"],
            input_text=sql,
            log=self.log_dir / "mariadb-setup.log",
            env=self.env,
        )

    def _spawn_mariadbd(self, deadline: float) -> None:
        self._spawn(
            "mariadbd",
            [
                _sbin("mariadbd"),
                "--no-defaults",
                "--user=mysql",
                f"--datadir={self.scratch}/mysql/data",
                f"--socket={self._mysql_socket}",
                f"--port={self.ports['mariadb']}",
                "--bind-address=127.0.0.1",
                f"--pid-file={self.scratch}/mysql/mariadbd.pid",
                f"--log-error={self.scratch}/mysql/mariadb.log",
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=64M",
                *_MARIADB_FAST,
            ],
        )
        self._wait_for("mariadbd", self._mysql_socket.exists, deadline)

    def _start_slurmdbd(self, deadline: float) -> None:
        self._spawn("slurmdbd", [_sbin("slurmdbd"), "-D"])
        self._wait_for(
            "slurmdbd", lambda: _port_open(self.controller_ip, self.ports["slurmdbd"]), deadline
        )

    def _register_accounts(self, deadline: float) -> None:
        """Cluster, account and user in one sacctmgr session (each process costs ~1 s here).

        A restored snapshot has them already. The first cluster on a machine saves its
        fresh accounting DB (schema, cluster, account, no jobs) as that snapshot: slurmdbd
        creating its schema and sacctmgr are most of the start-up time.
        """
        if self._restored:
            return
        name = self.cluster_name
        commands = (
            f"add cluster {name}\n"
            f"add account default Cluster={name}\n"
            f"add user root Account=default Cluster={name}\n"
        )
        self._retry(["sacctmgr", "-i"], deadline, input_text=commands)
        self._save_snapshot(deadline)

    def _save_snapshot(self, deadline: float) -> None:
        """Copy the DB while mariadbd is stopped cleanly, then start it and slurmdbd again."""
        for name in ("slurmdbd", "mariadbd"):
            daemon = self._daemons.pop(name)
            _terminate([daemon.proc.pid], grace=20.0)
            daemon.proc.wait(timeout=5)
        self._mysql_socket.unlink(missing_ok=True)
        snapshot = _acct_snapshot_dir()
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        build = Path(tempfile.mkdtemp(prefix=f".{snapshot.name}.", dir=snapshot.parent))
        try:
            shutil.copytree(self.scratch / "mysql" / "data", build / "data", symlinks=True)
            with contextlib.suppress(OSError):  # another session saved it first: keep theirs
                build.rename(snapshot)
        finally:
            shutil.rmtree(build, ignore_errors=True)
        self._spawn_mariadbd(deadline)
        self._start_slurmdbd(deadline)

    def _start_slurmctld(self, deadline: float) -> None:
        self._spawn("slurmctld", [_sbin("slurmctld"), "-D", "-i"])
        self._wait_for(
            "slurmctld", lambda: _port_open(self.controller_ip, self.ports["slurmctld"]), deadline
        )

    def _start_slurmds(self) -> None:
        for node in self.nodes:
            self._start_slurmd(node)

    def _start_slurmd(self, node: Node) -> None:
        # nsenter and unshare exec (no fork), sh execs slurmd: the PID we hold is slurmd's.
        # In the node's own mount namespace /etc/hosts names every node (as a site's DNS
        # does) and /etc/slurm is this cluster's config dir, so a job that drops the
        # environment (--export=NONE) still finds slurm.conf as on a real node. /var/tmp is
        # the node's own (NODE_LOCAL_TMP): jobs' private temp dirs go on node-local storage,
        # as on a real cluster, while /tmp (run dirs, job_dir) stays shared like a home.
        # /dev/shm is the node's own too: vLLM decides which ranks share a node by opening
        # each other's shared memory (parallel_state.in_the_same_node_as), so a shared
        # /dev/shm makes two nodes look like one and its message queue waits forever.
        local = self.scratch / "local" / node.name
        local.mkdir(parents=True, exist_ok=True)
        local.chmod(0o1777)
        boot = (
            'hostname "$1" && mount --bind "$2" /etc/hosts && mkdir -p /etc/slurm '
            '&& mount --bind "$3" /etc/slurm && mount --bind "$4" /var/tmp '
            "&& mount -t tmpfs -o size=4g,mode=1777 hangar-shm /dev/shm && shift 4 "
            '&& exec "$@"'
        )
        self._spawn(
            f"slurmd-{node.name}",
            [
                "nsenter",
                f"--net={node.netns_path}",
                "unshare",
                "--uts",
                "--mount",
                "--",
                "/bin/sh",
                "-c",
                boot,
                "sh",
                node.name,
                str(self.conf_dir / "hosts"),
                str(self.conf_dir),
                str(local),
                _sbin("slurmd"),
                "-D",
                "-N",
                node.name,
            ],
        )

    def _wait_nodes_idle(self, deadline: float) -> None:
        def idle() -> bool:
            out = self.slurm("sinfo", "-h", "-N", "-o", "%N %T").stdout.split()
            states = dict(zip(out[::2], out[1::2]))
            return all(states.get(n.name) == "idle" for n in self.nodes)

        self._wait_for("both nodes idle in sinfo", idle, deadline)

    def _wait_sacct(self, deadline: float) -> None:
        self._wait_for(
            "sacct", lambda: self.slurm("sacct", "-n", "-X", "-a").returncode == 0, deadline
        )

    def _retry(self, argv: list[str], deadline: float, input_text: str | None = None) -> None:
        last: subprocess.CompletedProcess[str] | None = None

        def ok() -> bool:
            nonlocal last
            last = subprocess.run(
                argv,
                input=input_text,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            return last.returncode == 0 and "error" not in (last.stdout + last.stderr).lower()

        try:
            self._wait_for(" ".join(argv), ok, deadline)
        except SlurmClusterError as exc:
            detail = f"\n{last.stdout}{last.stderr}" if last else ""
            raise SlurmClusterError(f"{exc}{detail}") from None

    def _wait_for(self, what: str, check: Any, deadline: float) -> None:
        delay = 0.05
        while not check():
            dead = [d.name for d in self._daemons.values() if d.proc.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"{', '.join(dead)} exited" if dead else "timed out"
                raise SlurmClusterError(
                    f"Slurm test cluster: waiting for {what}: {why}\n{self.logs()}\n"
                    f"Check the installation with {SETUP_COMMAND}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    # ---- using the cluster ----------------------------------------------------------

    def slurm(
        self, *argv: str, timeout: float = 30.0, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command (sbatch, squeue, ...) against this cluster."""
        return subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=timeout, check=check
        )

    def submit(self, script: str, *sbatch_args: str, name: str = "job") -> int:
        """Write ``script`` under ``job_dir`` and ``sbatch --parsable`` it; returns the job id."""
        path = self.job_dir / f"{name}-{secrets.token_hex(3)}.sbatch"
        path.write_text(script, encoding="utf-8")
        out = self.slurm(
            "sbatch",
            "--parsable",
            f"--chdir={self.job_dir}",
            f"--output={self.job_dir}/%x-%j.out",
            *sbatch_args,
            str(path),
        )
        if out.returncode != 0:
            raise subprocess.CalledProcessError(out.returncode, out.args, out.stdout, out.stderr)
        return int(out.stdout.strip().split(";")[0])

    def job_state(self, job_id: int) -> str:
        """State from squeue while the job is known to slurmctld, else from sacct ('' if unknown)."""
        out = self.slurm("squeue", "-h", "-j", str(job_id), "-o", "%T").stdout.strip()
        if out:
            return out
        return self.sacct_state(job_id)

    def sacct_state(self, job_id: int) -> str:
        """The job's state in accounting; without accounting, slurmctld's record of it
        (kept MinJobAge=300 s after the end)."""
        if not self.accounting:
            out = self.slurm("scontrol", "-o", "show", "job", str(job_id)).stdout
            found = re.search(r"\bJobState=(\S+)", out)
            return found.group(1) if found else ""
        out = self.slurm("sacct", "-n", "-X", "-P", "-j", str(job_id), "-o", "State").stdout
        return out.strip().splitlines()[0].strip() if out.strip() else ""

    def wait_job_gone(self, job_id: int, timeout: float = 60.0) -> str:
        """Wait until the job left the queue, no process of it is left, and sacct has its end.

        Returns the final sacct state (``COMPLETED``, ``CANCELLED by 0``, ...); raises
        TimeoutError with the daemons' logs otherwise.
        """
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            queued = self.slurm("squeue", "-h", "-j", str(job_id), "-o", "%T").stdout.strip()
            state = "" if queued else self.sacct_state(job_id)
            if not queued and state.startswith(_TERMINAL_STATES) and not self.job_processes(job_id):
                return state
            if time.monotonic() > deadline:
                left = self.job_processes(job_id)
                raise TimeoutError(
                    f"job {job_id} not gone after {timeout:.0f} s (squeue: {queued!r}, "
                    f"sacct: {state!r}, processes left: {left})\n{self.logs()}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def job_processes(self, job_id: int | None = None) -> list[JobProcess]:
        """Processes in this cluster's nodes whose environment has SLURM_JOB_ID=<job_id>.

        With ``job_id=None``: every process of any job (SLURM_JOB_ID set) on the nodes.
        Only this cluster's network namespaces are searched, so another cluster's job
        with the same id is never reported (or killed).
        """
        inodes = _netns_inodes(self.nodes)
        found = []
        for pid in _pids():
            node = inodes.get(_netns_inode(pid) or -1)
            if node is None:
                continue
            value = _environ(pid).get("SLURM_JOB_ID")
            if value is not None and (job_id is None or value == str(job_id)):
                found.append(JobProcess(pid, node, _cmdline(pid), _argv(pid)))
        return found

    def logs(self, tail: int = 40) -> str:
        """The last ``tail`` lines of every daemon log, for failure messages."""
        parts = []
        paths = [
            p
            for p in sorted(self.log_dir.glob("*"))
            if "-setup" not in p.name and "-install" not in p.name
        ]
        for path in paths + sorted(self.scratch.glob("m*/*.log")):
            with contextlib.suppress(OSError):
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-tail:]
                parts.append(f"==> {path} <==\n" + "\n".join(lines))
        return "\n".join(parts)

    # ---- teardown -------------------------------------------------------------------

    def stop(self) -> None:
        """Stop everything this cluster started and remove its kernel objects and scratch."""
        if self._stopped:
            return
        self._stopped = True
        if self in _LIVE:
            _LIVE.remove(self)
        # All at once (the order does not matter once everything goes): the daemons by
        # the PIDs started here, and whatever lives in this cluster's node namespaces.
        daemons = [d.proc.pid for d in self._daemons.values()]
        _terminate(daemons + _netns_members([n.netns for n in self.nodes]))
        for daemon in self._daemons.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                daemon.proc.wait(timeout=1)
        _remove_network(self.prefix)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _save_state(self) -> None:
        state = {
            "prefix": self.prefix,
            "owner": {"pid": os.getpid(), "start_time": _start_time(os.getpid())},
            "daemons": {
                d.name: {"pid": d.proc.pid, "start_time": d.start_time}
                for d in self._daemons.values()
            },
            "netns": [n.netns for n in self.nodes],
        }
        tmp = self.scratch / f".{STATE_NAME}.tmp"
        tmp.write_text(json.dumps(state), encoding="utf-8")
        tmp.replace(self.scratch / STATE_NAME)


# ---- process and network helpers (module level: used by the stale-cluster sweep too) ----

_LIVE: list[SlurmCluster] = []
_handlers_installed = False


def _install_exit_handlers() -> None:
    """atexit and SIGTERM/SIGHUP: an interrupted test session still tears its clusters down."""
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_stop_all)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _on_signal)


def _stop_all() -> None:
    # A forked child (multiprocessing) inherits _LIVE and atexit: only the owner stops.
    for cluster in [c for c in _LIVE if c._owner_pid == os.getpid()]:
        cluster.stop()


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    _stop_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def remove_stale_clusters() -> list[str]:
    """Remove clusters left by sessions that died (owner PID gone); returns their prefixes."""
    removed = []
    for state_file in SCRATCH_BASE.glob(f"hg????/{STATE_NAME}"):
        if not PREFIX_RE.match(state_file.parent.name):
            continue
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        owner = state.get("owner", {})
        if _alive(owner.get("pid"), owner.get("start_time")):
            continue
        _teardown_stale(state, state_file.parent)
        removed.append(state_file.parent.name)
    for prefix in _orphan_prefixes():
        _remove_network(prefix)
        removed.append(prefix)
    return removed


def _teardown_stale(state: dict[str, Any], scratch: Path) -> None:
    alive = {
        name: d["pid"]
        for name, d in state.get("daemons", {}).items()
        if _alive(d.get("pid"), d.get("start_time"))  # a reused PID is never signalled
    }
    _terminate(list(alive.values()) + _netns_members(state.get("netns", [])))
    _remove_network(state["prefix"])
    shutil.rmtree(scratch, ignore_errors=True)


def _orphan_prefixes() -> set[str]:
    """Prefixes of hg* bridges/netns whose scratch dir is gone (a teardown cut short)."""
    names = [p.name for p in NETNS_DIR.glob("hg*")] if NETNS_DIR.exists() else []
    names += [p.name for p in Path("/sys/class/net").glob("hg*")]
    prefixes = {name[:6] for name in names if PREFIX_RE.match(name[:6])}
    return {p for p in prefixes if not (SCRATCH_BASE / p).exists()}


def _remove_network(prefix: str) -> None:
    assert PREFIX_RE.match(prefix), prefix
    if NETNS_DIR.exists():
        for ns in NETNS_DIR.glob(f"{prefix}*"):
            _kill_netns_members([ns.name])
            subprocess.run(["ip", "netns", "del", ns.name], capture_output=True, check=False)
    for link in Path("/sys/class/net").glob(f"{prefix}*"):
        subprocess.run(["ip", "link", "del", link.name], capture_output=True, check=False)


def _kill_netns_members(netns_names: Sequence[str], grace: float = 3.0) -> None:
    """SIGTERM, then SIGKILL, every process inside these (our own) network namespaces."""
    _terminate(_netns_members(netns_names), grace=grace)


def _netns_members(netns_names: Sequence[str]) -> list[int]:
    inodes = set()
    for name in netns_names:
        with contextlib.suppress(OSError):
            inodes.add((NETNS_DIR / name).stat().st_ino)
    return [pid for pid in _pids() if _netns_inode(pid) in inodes] if inodes else []


def _terminate(pids: Sequence[int], grace: float = 5.0) -> None:
    """SIGTERM the PIDs, wait up to ``grace`` seconds, SIGKILL what is left."""
    started = {pid: _start_time(pid) for pid in pids}
    started = {pid: t for pid, t in started.items() if t is not None}
    for pid in started:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(p, t) for p, t in started.items()):
        _reap(started)
        time.sleep(0.05)
    for pid, t in started.items():
        if _alive(pid, t):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    _reap(started)


def _reap(pids: Mapping[int, object]) -> None:
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _alive(pid: object, start_time: object) -> bool:
    """Is this PID still the process it was (same start time), and not a zombie?"""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0] != "Z" and (start_time is None or int(fields[19]) == start_time)


def _start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _pids() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def _netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def _netns_inodes(nodes: Sequence[Node]) -> dict[int, str]:
    found = {}
    for node in nodes:
        with contextlib.suppress(OSError):
            found[node.netns_path.stat().st_ino] = node.name
    return found


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def _cmdline(pid: int) -> str:
    return " ".join(_argv(pid))


def _argv(pid: int) -> tuple[str, ...]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ()
    if not raw:
        return ()  # a zombie, or a kernel thread
    return tuple(word.decode(errors="replace") for word in raw.rstrip(b"\0").split(b"\0"))


def _claim_scratch() -> tuple[str, Path]:
    """A fresh ``/tmp/hgXXXX`` whose prefix no interface or namespace uses yet."""
    used = {p.name[:6] for p in Path("/sys/class/net").glob("hg*")}
    if NETNS_DIR.exists():
        used |= {p.name[:6] for p in NETNS_DIR.glob("hg*")}
    for _ in range(100):
        prefix = f"hg{secrets.token_hex(2)}"
        if prefix in used:
            continue
        scratch = SCRATCH_BASE / prefix
        try:
            scratch.mkdir(mode=0o755)
        except FileExistsError:
            continue
        scratch.chmod(0o755)  # munge and mysql users must traverse it
        return prefix, scratch
    raise SlurmClusterError(f"no free scratch name under {SCRATCH_BASE}/hgXXXX")


def _free_subnet() -> ipaddress.IPv4Network:
    """A 10.x.y.0/24 that no address or route of the host overlaps (default route aside)."""
    out = subprocess.run(
        ["ip", "-4", "-o", "route", "show", "table", "all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    out += subprocess.run(
        ["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=True
    ).stdout
    used: list[ipaddress.IPv4Network] = []
    for token in re.findall(r"\b(\d+\.\d+\.\d+\.\d+(?:/\d+)?)\b", out):
        net = ipaddress.IPv4Network(token, strict=False)
        if net.prefixlen > 0:
            used.append(net)
    rng = random.Random()
    for _ in range(500):
        candidate = ipaddress.IPv4Network(f"10.{rng.randint(200, 254)}.{rng.randint(0, 255)}.0/24")
        if not any(candidate.overlaps(net) for net in used):
            return candidate
    raise SlurmClusterError("no free 10.x.y.0/24 subnet for the Slurm test cluster")


def _free_port(taken: set[int]) -> int:
    rng = random.Random()
    for _ in range(200):
        port = rng.randint(*_PORT_RANGE)
        if port in taken:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("", port))
            except OSError:
                continue
        return port
    raise SlurmClusterError("no free TCP port for the Slurm test cluster")


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _ip(*argv: str) -> None:
    out = subprocess.run(["ip", *argv], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SlurmClusterError(f"ip {' '.join(argv)} failed: {out.stderr.strip()}")


def _sbin(name: str) -> str:
    found = shutil.which(
        name, path=os.pathsep.join(["/usr/sbin", "/sbin", os.environ.get("PATH", "")])
    )
    if found is None:
        raise SlurmClusterError(f"{name} is not installed: run {SETUP_COMMAND}")
    return found


def _acct_snapshot_dir() -> Path:
    """Where this machine keeps its fresh accounting DB, keyed by the package versions."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}\n", "mariadb-server", "slurmdbd"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    key = f"{ACCT_SNAPSHOT_RECIPE}|{CLUSTER_NAME}|{out}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_root() / f"slurm-acct-db-{digest}"


def _chown_tree(root: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    for path in [root, *root.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)


def _check_run(
    argv: list[str], log: Path, env: Mapping[str, str], input_text: str | None = None
) -> None:
    out = subprocess.run(
        argv,
        input=input_text,
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=120,
        check=False,
    )
    log.write_text(out.stdout + out.stderr, encoding="utf-8")
    if out.returncode != 0:
        raise SlurmClusterError(
            f"{' '.join(argv[:2])} failed (exit {out.returncode}):\n{out.stdout}{out.stderr}"
        )
