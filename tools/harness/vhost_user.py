"""The vhost-user protocol as a frontend writes it, raw: message encoding,
fds passed with SCM_RIGHTS, replies drained. For tools that talk to a host's
socket below any real frontend (the message-sequence fuzzer).

The numbers come from the project's and the system's headers, read at
import: request numbers and header flags from drivers/common/base/
vhost_user.hpp, the region limit from tools/vhost-user-guest/protocol.hpp,
protocol feature bits from rte_vhost.h, virtio feature and status bits from
the Linux uapi headers (as drivers/common/base/virtio_uapi.py takes them).
What none of them defines is in SPEC below."""
import os
import re
import socket
import struct
import subprocess

from . import TOP
from .wait import until


def _read(path):
    with open(path) as f:
        return f.read()


def _cpp_requests():
    """{name: number} of vhost_user.hpp's enum Request."""
    text = _read(os.path.join(TOP, "drivers", "common", "base", "vhost_user.hpp"))
    body = re.search(r"enum Request : uint32_t \{(.*?)\};", text, re.S).group(1)
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"(\w+) = (\d+),", body)}


def _cpp_flags():
    """The header's version and flag bits (vhost_user.hpp's kVersion, kFlag*)."""
    text = _read(os.path.join(TOP, "drivers", "common", "base", "vhost_user.hpp"))
    out = {"kVersion": int(re.search(r"kVersion = (0x[0-9a-fA-F]+|\d+)", text).group(1), 0)}
    for m in re.finditer(r"(kFlag\w+) = 1u << (\d+);", text):
        out[m.group(1)] = 1 << int(m.group(2))
    return out


def _defines(path, prefix):
    """{name: value} of the `#define PREFIXname N` lines of a C header."""
    return {m.group(1): int(m.group(2), 0)
            for m in re.finditer(rf"#define\s+{prefix}(\w+)\s+(0x[0-9a-fA-F]+|\d+)\b", _read(path))}


def _dpdk_header(name):
    """A header of the installed DPDK (pkg-config libdpdk's include folders)."""
    try:
        flags = subprocess.run(["pkg-config", "--cflags-only-I", "libdpdk"], capture_output=True,
                               text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        flags = []
    for d in [f[2:] for f in flags if f.startswith("-I")] + ["/usr/include/dpdk"]:
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    raise FileNotFoundError(f"{name} of DPDK (libdpdk-dev)")


REQ = _cpp_requests()
_FLAGS = _cpp_flags()
VERSION = _FLAGS["kVersion"]
FLAG_REPLY = _FLAGS["kFlagReply"]
FLAG_NEED_REPLY = _FLAGS["kFlagNeedReply"]
MAX_REGIONS = int(re.search(r"kMaxRegions = (\d+);", _read(
    os.path.join(TOP, "tools", "vhost-user-guest", "protocol.hpp"))).group(1))
_rte_vhost = _dpdk_header("rte_vhost.h")
PROTO = _defines(_rte_vhost, "VHOST_USER_PROTOCOL_F_")  # {"MQ": 0, "REPLY_ACK": 3, ...}
F_PROTOCOL_FEATURES = _defines(_rte_vhost, "VHOST_USER_F_")["PROTOCOL_FEATURES"]
VIRTIO_F = _defines("/usr/include/linux/virtio_config.h", "VIRTIO_F_")
VIRTIO_NET_F = _defines("/usr/include/linux/virtio_net.h", "VIRTIO_NET_F_")
VHOST_F_LOG_ALL = _defines("/usr/include/linux/vhost_types.h", "VHOST_F_")["LOG_ALL"]
STATUS = _defines("/usr/include/linux/virtio_config.h", "VIRTIO_CONFIG_S_")

# Facts of the vhost-user spec (QEMU docs/interop/vhost-user.rst, "Front-end
# message types" and "Message specification") that no header here defines:
# the requests vhost_user.hpp leaves out, and each request's payload layout
# (struct formats, little-endian). The layouts are those of
# tools/vhost-user-guest/protocol.hpp's MemRegion and VringAddr and of
# DPDK's lib/vhost/vhost_user.h, which is not installed.
SPEC_REQUESTS = {
    "NET_SET_MTU": 20, "SET_BACKEND_REQ_FD": 21, "IOTLB_MSG": 22, "SET_VRING_ENDIAN": 23,
    "CREATE_CRYPTO_SESSION": 26, "CLOSE_CRYPTO_SESSION": 27, "POSTCOPY_ADVISE": 28,
    "POSTCOPY_LISTEN": 29, "POSTCOPY_END": 30, "GET_INFLIGHT_FD": 31, "SET_INFLIGHT_FD": 32,
    "GPU_SET_SOCKET": 33, "RESET_DEVICE": 34, "VRING_KICK": 35, "GET_MAX_MEM_SLOTS": 36,
    "ADD_MEM_REG": 37, "REM_MEM_REG": 38,
}
VRING_NOFD = 1 << 8          # KICK/CALL/ERR payload: no fd follows (polling)
VRING_IDX_MASK = 0xff
REGION = "<QQQQ"             # guest_phys_addr, memory_size, userspace_addr, mmap_offset
LAYOUT = {
    "u64": "<Q",             # features, protocol features, status, KICK/CALL/ERR index
    "state": "<II",          # SET_VRING_NUM/BASE/ENABLE, GET_VRING_BASE: index, num
    "addr": "<IIQQQQ",       # SET_VRING_ADDR: index, flags, desc, used, avail, log
    "log": "<QQ",            # SET_LOG_BASE: mmap_size, mmap_offset
    "config": "<III",        # GET/SET_CONFIG: offset, size, flags, then the bytes
    "inflight": "<QQHH",     # GET/SET_INFLIGHT_FD: mmap_size, mmap_offset, queues, size
    "mem_reg": "<Q" + REGION[1:],  # ADD/REM_MEM_REG: padding, then one region
    "iotlb": "<QQQBB",       # IOTLB_MSG: iova, size, uaddr, perm, type
}
MAX_CONFIG = 256             # GET/SET_CONFIG bytes at most
HEADER = "<III"              # request, flags, size
ALL_REQUESTS = {**SPEC_REQUESTS, **REQ}
NAMES = {v: k for k, v in ALL_REQUESTS.items()}


def mem_table(regions):
    """SET_MEM_TABLE's payload: nregions, padding, the regions (up to
    MAX_REGIONS are laid out; more are counted but not written)."""
    body = b"".join(struct.pack(REGION, *r) for r in regions[:MAX_REGIONS])
    return struct.pack("<II", len(regions), 0) + body


def header(request, flags, size):
    return struct.pack(HEADER, request, flags, size)


class Conn:
    """One frontend connection: raw messages out, replies drained."""

    def __init__(self, path, timeout=30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)

        def attempt():  # a full listen backlog refuses at once (EAGAIN)
            try:
                self.sock.connect(path)
                return True
            except BlockingIOError:
                return False
        until(attempt, bool, timeout, f"connection to {path} accepted")

    def send(self, data, fds=()):
        """Bytes with `fds` on their first byte (how vhost reads them: with
        the header)."""
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))] if fds else []
        sent = self.sock.sendmsg([data], anc)
        if sent < len(data):
            self.sock.sendall(data[sent:])

    def drain(self):
        """Reads whatever the host has written (replies), closing any fd
        it passed; returns the bytes read. False once the host closed."""
        got = b""
        timeout = self.sock.gettimeout()
        self.sock.setblocking(False)  # a socket with a timeout would wait for data
        try:
            while True:
                try:
                    data, anc, _, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(4 * MAX_REGIONS))
                except (BlockingIOError, InterruptedError):
                    return got
                except (ConnectionResetError, BrokenPipeError):
                    return False
                _close_passed(anc)
                if not data:
                    return False
                got += data
        finally:
            self.sock.settimeout(timeout)

    def request(self, request, payload=b"", flags=VERSION, reply=True, fds=()):
        """A well-formed message, `fds` with it; with `reply`, waits for
        the reply's payload (within the socket timeout): the request's own
        reply, or with FLAG_NEED_REPLY the REPLY_ACK."""
        self.send(header(request, flags, len(payload)) + payload, fds)
        if not reply:
            return None
        hdr = self._recv_exact(struct.calcsize(HEADER))
        req, rflags, size = struct.unpack(HEADER, hdr)
        if req != request or not rflags & FLAG_REPLY:
            raise AssertionError(f"reply to {NAMES.get(request, request)}: request {req}, flags {rflags:#x}")
        return self._recv_exact(size)

    def _recv_exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionResetError("the host closed the connection")
            out += chunk
        return out

    def close(self):
        self.sock.close()


def _close_passed(anc):
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            for fd in struct.unpack(f"{len(data) // 4}i", data[:len(data) // 4 * 4]):
                os.close(fd)
