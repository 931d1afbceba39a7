"""DPDK's telemetry v2 socket of one EAL process (JSON over SEQPACKET):
the PMD's /vdpa_mlx5async/* endpoints among others."""
import json
import socket

from .wait import until


class Telemetry:
    def __init__(self, prefix):
        self.path = f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"

    def _connect(self, timeout):
        """A connected socket and the greeting; the socket appears once EAL
        is up, so a missing one is waited for."""
        def attempt():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                s.settimeout(timeout)
                s.connect(self.path)
                return s, json.loads(s.recv(65536))
            except (FileNotFoundError, ConnectionRefusedError):
                s.close()
                return None
        return until(attempt, lambda r: r is not None, timeout, f"telemetry socket {self.path}")

    def query(self, cmd, timeout=30):
        """The payload of `cmd` ("/endpoint,params"): null (None) when the
        endpoint refused the parameters."""
        s, hello = self._connect(timeout)
        try:
            s.send(cmd.encode())
            reply = b""
            while True:  # one message, unless it was longer than max_output_len
                chunk = s.recv(hello.get("max_output_len", 16384) + 1)
                reply += chunk
                try:
                    return json.loads(reply)[cmd.split(",")[0]]
                except ValueError:
                    if not chunk:
                        raise
        finally:
            s.close()
