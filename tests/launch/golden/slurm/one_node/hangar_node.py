"""Hangar's in-job helper, run with the engine's interpreter on the compute nodes.

  ip [--iface SPEC] [--peer IP]       this node's IPv4 address, printed
  endpoint --out F --host H --port P --node N --job-id J
                                      write endpoint.json atomically (tmp file + rename)
  object-store --cap BYTES            Ray object store size for this node, printed
  ray-wait --address A --nodes N --gpus G --timeout S [--expect-ip IP] [--watch-pid PID]
                                      poll Ray until N nodes and G GPUs are registered

Standard library only (plus ``ray`` for ray-wait), Python 3.8+. Every failure is one
line starting with "hangar:" on stderr and a non-zero exit.
"""

import argparse
import fcntl
import json
import os
import socket
import struct
import sys
import time

SIOCGIFADDR = 0x8915  # linux/sockios.h
# Ray refuses an object store under 75 MiB (ray_constants.OBJECT_STORE_MINIMUM_MEMORY_BYTES).
RAY_MIN_OBJECT_STORE = 75 * 1024 * 1024
# Ray's own default share of memory (RAY_DEFAULT_OBJECT_STORE_MEMORY_PROPORTION,
# ray/_private/utils.py:595-650 in 2.60.0) and its /dev/shm margin (0.95 of free shm).
MEMORY_SHARE = 0.3
SHM_SHARE = 0.95


def fail(message):
    sys.stderr.write("hangar: " + message + "\n")
    sys.exit(1)


def wanted_interfaces(spec):
    """NCCL_SOCKET_IFNAME syntax: comma list, '^' excludes, a name matches as a prefix."""
    names = [name for _, name in socket.if_nameindex()]
    wanted = []
    for entry in [e for e in (spec or "").split(",") if e and not e.startswith("^")]:
        exact = entry.lstrip("=")
        if exact in names:
            wanted.append(exact)
        elif not entry.startswith("="):
            wanted.extend(n for n in names if n.startswith(entry))
    return wanted


def interface_ipv4(name):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            packed = fcntl.ioctl(s.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
        except OSError:
            return None  # no IPv4 address on that interface
    return socket.inet_ntoa(packed[20:24])


def route_source(peer):
    """The source address the kernel picks to reach ``peer`` (a UDP connect sends nothing);
    the same method Ray uses for a worker's node IP (multinode.md §1.4)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((peer, 9))
        except OSError:
            return None
        return s.getsockname()[0]


def resolved_names():
    """This node's names resolved by the resolver, loopback excluded (Debian maps the
    hostname to 127.0.1.1, multinode.md §4.5)."""
    found = []
    for name in (os.environ.get("SLURMD_NODENAME"), socket.gethostname()):
        if not name:
            continue
        try:
            infos = socket.getaddrinfo(name, None, socket.AF_INET)
        except OSError:
            continue
        found.extend(i[4][0] for i in infos if not i[4][0].startswith("127."))
    local = set(local_addresses())
    return [a for a in found if a in local]


def local_addresses():
    return [a for a in (interface_ipv4(n) for _, n in socket.if_nameindex()) if a]


def node_ip(iface, peer):
    names = wanted_interfaces(iface)
    for name in names:
        address = interface_ipv4(name)
        if address:
            return address
    if any(e and not e.startswith("^") for e in (iface or "").split(",")):
        fail(
            "no interface matching %r with an IPv4 address on %s (it has: %s): fix "
            "target.slurm.network_interface"
            % (iface, socket.gethostname(), ", ".join(n for _, n in socket.if_nameindex()))
        )
    if peer:
        address = route_source(peer)
        if address and not address.startswith("127."):
            return address
    resolved = resolved_names()
    if resolved:
        return resolved[0]
    address = route_source("8.8.8.8")  # the default route, as Ray and vLLM's get_ip() do
    if address and not address.startswith("127."):
        return address
    fail(
        "cannot tell this node's IP on %s (iface %r, peer %r): set target.slurm."
        "network_interface to the interface the nodes share" % (socket.gethostname(), iface, peer)
    )


def write_endpoint(out, host, port, node, job_id):
    data = {"host": host, "port": int(port), "node": node, "job_id": job_id}
    tmp = "%s.%d.tmp" % (out, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out)


def meminfo_available():
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def cgroup_limit():
    """The memory limit of this process's own cgroup (v2, then v1), if any."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            candidate = "/sys/fs/cgroup" + path + "/memory.max"
        elif "memory" in controllers.split(","):
            candidate = "/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes"
        else:
            continue
        try:
            with open(candidate, encoding="ascii") as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            return int(text)
    return None


def shm_free():
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def object_store_bytes(cap, memory, shm):
    """min(cap, 30% of the memory this job may use, 95% of free /dev/shm), at least Ray's
    minimum; below the minimum Ray falls back to the temp dir (a warning only, <= 10 GB)."""
    size = cap
    if memory:
        size = min(size, int(memory * MEMORY_SHARE))
    if shm:
        size = min(size, int(shm * SHM_SHARE))
    return max(size, RAY_MIN_OBJECT_STORE)


def job_memory():
    limits = [m for m in (meminfo_available(), cgroup_limit()) if m]
    per_node = os.environ.get("SLURM_MEM_PER_NODE", "")
    if per_node.isdigit():
        limits.append(int(per_node) * 1024 * 1024)  # sbatch exports it in MiB
    return min(limits) if limits else None


def process_gone(pid):
    """Exited (or a zombie no one has reaped yet): the Ray head died."""
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def gcs_reachable(address):
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:  # refused or unreachable: the head is not listening yet
        return False
    return True


def cluster_view(ray):
    alive = [n for n in ray.nodes() if n.get("Alive")]
    gpus = sum(n.get("Resources", {}).get("GPU", 0) for n in alive)
    per_node = ", ".join(
        "%s (%g GPU)" % (n.get("NodeManagerAddress"), n.get("Resources", {}).get("GPU", 0))
        for n in alive
    )
    return alive, gpus, per_node


def ray_wait(args):
    deadline = time.monotonic() + args.timeout
    while not gcs_reachable(args.address):
        check_alive(args)
        if time.monotonic() > deadline:
            fail("the Ray head's GCS at %s never answered within %gs" % (args.address, args.timeout))
        time.sleep(0.5)  # poll interval, bounded by the deadline above
    import ray  # the engine's Ray, only once its GCS listens

    ray.init(address=args.address, logging_level="ERROR", log_to_driver=False)
    while True:
        alive, gpus, per_node = cluster_view(ray)
        if len(alive) >= args.nodes and gpus >= args.gpus:
            break
        check_alive(args)
        if time.monotonic() > deadline:
            fail(
                "Ray cluster not ready after %gs: %d of %d nodes alive, %g of %d GPUs "
                "(registered: %s); missing: %d node(s), %g GPU(s); see node-*.log of the "
                "nodes not listed"
                % (args.timeout, len(alive), args.nodes, gpus, args.gpus, per_node or "none",
                   max(args.nodes - len(alive), 0), max(args.gpus - gpus, 0))
            )
        time.sleep(1.0)  # poll interval, bounded by the deadline above
    addresses = [n.get("NodeManagerAddress") for n in alive]
    if args.expect_ip and args.expect_ip not in addresses:
        fail(
            "the head registered with Ray under %s, not VLLM_HOST_IP=%s: vLLM's placement "
            "group would never fit (multinode.md §5 #1)" % (", ".join(addresses), args.expect_ip)
        )
    print("hangar: Ray ready: %d nodes, %g GPUs: %s" % (len(alive), gpus, per_node), flush=True)


def check_alive(args):
    if args.watch_pid and process_gone(args.watch_pid):
        fail("the Ray head process (pid %d) exited before the cluster was ready" % args.watch_pid)


def parser():
    p = argparse.ArgumentParser(prog="hangar_node.py")
    sub = p.add_subparsers(dest="command", required=True)
    ip = sub.add_parser("ip")
    ip.add_argument("--iface", default="")
    ip.add_argument("--peer", default="")
    ep = sub.add_parser("endpoint")
    for name in ("--out", "--host", "--port", "--node", "--job-id"):
        ep.add_argument(name, required=True)
    osm = sub.add_parser("object-store")
    osm.add_argument("--cap", type=int, required=True)
    rw = sub.add_parser("ray-wait")
    rw.add_argument("--address", required=True)
    rw.add_argument("--nodes", type=int, required=True)
    rw.add_argument("--gpus", type=int, required=True)
    rw.add_argument("--timeout", type=float, required=True)
    rw.add_argument("--expect-ip", default="")
    rw.add_argument("--watch-pid", type=int, default=0)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    if args.command == "ip":
        print(node_ip(args.iface, args.peer))
    elif args.command == "endpoint":
        write_endpoint(args.out, args.host, args.port, args.node, args.job_id)
    elif args.command == "object-store":
        print(object_store_bytes(args.cap, job_memory(), shm_free()))
    else:
        ray_wait(args)


if __name__ == "__main__":
    main()
