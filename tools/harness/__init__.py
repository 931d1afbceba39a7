"""The Python harness of mlx5async: what `./run demo`, `./run migrate` and
the e2e tests drive, in one place (standard library only).

  wait       until(): a condition polled against a deadline (the only wait)
  proc       Proc (a child process, its output in a file), Workdir, unique()
  telemetry  Telemetry: DPDK's telemetry socket of one EAL process
  host       Host: a DPDK process serving mlx5async devices (vdpa-testpmd,
             tests/e2e/vdpa_host, Debian's dpdk-testpmd), HostSession, the
             EAL arguments
  ovs        OvsHost: Debian's ovs-vswitchd-dpdk with a private ovsdb-server
  frontend   Frontend (dpdk-testpmd over virtio_user), VhostUserGuest
             (tools/vhost-user-guest)
  vhost_user the protocol's numbers (from the project's and the system's
             headers) and Conn: raw messages and fds to a host's socket
  qemu       Vm and Qmp: a QEMU guest on vhost-user sockets
  hugepages  Hugepages: 2 MiB pages and a private hugetlbfs mount
  migration  Testbed, Migration: hosts and guests of a live migration
  cases      run_case(), Skip: the command line of every e2e script

Tools and tests import it with tools/ on sys.path (`from harness.host
import Host`)."""
import os

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
