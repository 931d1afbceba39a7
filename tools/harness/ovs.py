"""OVS-DPDK as a host: Debian's ovs-vswitchd-dpdk (openvswitch-switch-dpdk:
OVS 3.1 on DPDK 22.11), run directly, with an ovsdb-server, database, run
directory and EAL file prefix of its own, all in the caller's folder. The
PMD comes in through other_config:dpdk-extra (`-d`, `--vdev`) and serves
each device on a socket of its own (devarg vhost_socket): OVS has no vDPA
port type. Nothing of the system's Open vSwitch is used or started (its
service, database and alternatives stay as they are).

OVS builds EAL's arguments itself and adds `--socket-mem` and
`--in-memory`: EAL runs on hugepages (`--no-huge` is refused: "Option
--socket-mem cannot be specified together with --no-huge"), mapped without
a hugetlbfs mount, so the pages only need to be reserved (HUGEPAGES)."""
import os
import shutil
import subprocess

from .host import PMD_LOG, VHOST_LOG, Host, _started, served, with_socket
from .proc import Proc, unique
from .wait import until

VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
TOOLS = ("ovsdb-tool", "ovsdb-server", "ovs-vsctl")
SOCKET_MEM_MB = 512  # other_config:dpdk-socket-mem of each host
# 2 MiB pages for the two hosts of a migration (SOCKET_MEM_MB each), with
# room for what EAL maps beyond it.
HUGEPAGES = 600


def missing():
    """Why OVS-DPDK cannot run here, or None."""
    for f in (VSWITCHD, SCHEMA):
        if not os.path.exists(f):
            return f"{f} not found: tools/setup installs Debian's openvswitch-switch-dpdk"
    for t in TOOLS:
        if not shutil.which(t):
            return f"{t} not found: tools/setup installs Debian's openvswitch-switch-dpdk"
    return None


class OvsHost(Host):
    """ovs-vswitchd-dpdk (the Host: its output, EAL telemetry, the PMD's
    devices) and the ovsdb-server it reads its configuration from, which
    ends with it."""

    def __init__(self, argv, name, prefix, sockets, devices, log_path, env, db):
        super().__init__(argv, name, prefix, sockets, devices, log_path=log_path, env=env)
        self.db = db

    def stop(self, timeout=60):
        """SIGTERM to ovs-vswitchd (it exits without rte_eal_cleanup: vhost's
        connections close with the process), then to ovsdb-server."""
        try:
            return self.terminate(timeout)
        finally:
            self.db.terminate(timeout)

    def kill(self):
        super().kill()
        self.db.kill()


def _vsctl(db_sock, *args):
    subprocess.run(["ovs-vsctl", f"--db=unix:{db_sock}", "--no-wait", "--timeout=60"] + list(args),
                   check=True, capture_output=True, text=True)


def ovs_vswitchd(pmd, workdir, name, vdev, socket_mem_mb=SOCKET_MEM_MB):
    """ovs-vswitchd-dpdk probing `vdev` (one, or a list: a device each) with
    the PMD `pmd`: device k is served on `<workdir>/<name>-vhostK`. Its run
    directory (database, unixctl sockets) is `<workdir>/<name>-ovs`, its
    output `<workdir>/<name>-host.log`. Needs HUGEPAGES reserved (for two
    hosts). Returns once every socket is served."""
    vdevs = [vdev] if isinstance(vdev, str) else list(vdev)
    sockets = [os.path.join(workdir, f"{name}-vhost{k}") for k in range(len(vdevs))]
    run = os.path.join(workdir, f"{name}-ovs")
    os.makedirs(run, mode=0o700)
    # Every path OVS derives (pidfiles, unixctl sockets, logs, database)
    # falls in the private run directory.
    env = dict(os.environ, OVS_RUNDIR=run, OVS_LOGDIR=run, OVS_DBDIR=run)
    db_file, db_sock = os.path.join(run, "conf.db"), os.path.join(run, "db.sock")
    subprocess.run(["ovsdb-tool", "create", db_file, SCHEMA], check=True, capture_output=True, text=True)
    db = Proc(["ovsdb-server", db_file, f"--remote=punix:{db_sock}",
               f"--unixctl={os.path.join(run, 'ovsdb-server.ctl')}", "-vconsole:info", "-vsyslog:off"],
              f"{name}-ovsdb", log_path=os.path.join(workdir, f"{name}-ovsdb.log"), env=env)
    try:
        until(lambda: os.path.exists(db_sock), bool, 60, f"{db_sock} from ovsdb-server", alive=db.alive)
        prefix = unique(f"mlx5a-{name}")
        extra = ["--no-pci", "-d", pmd, "--file-prefix", prefix] + PMD_LOG + VHOST_LOG + \
            [a for v, sock in zip(vdevs, sockets) for a in ("--vdev", with_socket(v, sock))]
        _vsctl(db_sock, "init")
        _vsctl(db_sock, "set", "Open_vSwitch", ".", "other_config:dpdk-init=true",
               f"other_config:dpdk-socket-mem={socket_mem_mb}",
               "other_config:dpdk-extra=" + " ".join(extra))
        argv = [VSWITCHD, f"unix:{db_sock}", f"--unixctl={os.path.join(run, 'ovs-vswitchd.ctl')}",
                "-vconsole:info", "-vsyslog:off"]
        host = OvsHost(argv, name, prefix, sockets, [v.split(",")[0] for v in vdevs],
                       os.path.join(workdir, f"{name}-host.log"), env, db)
    except BaseException:
        db.kill()
        raise
    return _started(host, served(sockets))
