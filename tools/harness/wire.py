"""What an emulated device sent to the network: its wire's pcap file
(emulator spec wire_pcap=PATH, nanosecond timestamps, CLOCK_REALTIME), read
with dpkt."""
import os

import dpkt

ETH_P_RARP = 0x8035
RARP_REQUEST_REVERSE = 3


def mac_str(b):
    return ":".join(f"{x:02x}" for x in b)


def frames(path):
    """[(wall_ns, bytes)] of every frame in the file, oldest first; [] when
    the device wrote none (no file yet)."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return []
    with open(path, "rb") as f:
        # A nanosecond file's timestamps come as Decimal seconds: exact.
        return [(int(ts * 10**9), bytes(buf)) for ts, buf in dpkt.pcap.Reader(f)]


def rarp_source(frame):
    """The announced MAC of a QEMU-style RARP (broadcast, reverse request,
    sender = target = the Ethernet source), or None for any other frame."""
    eth = dpkt.ethernet.Ethernet(frame)
    if eth.type != ETH_P_RARP or eth.dst != b"\xff" * 6:
        return None
    a = eth.data if isinstance(eth.data, dpkt.arp.ARP) else dpkt.arp.ARP(bytes(eth.data))
    if a.op != RARP_REQUEST_REVERSE or a.sha != eth.src or a.tha != eth.src:
        return None
    return mac_str(eth.src)


def rarps(path):
    """[(wall_ns, mac)] of the RARPs in the device's pcap."""
    out = []
    for ts, buf in frames(path):
        mac = rarp_source(buf)
        if mac:
            out.append((ts, mac))
    return out
