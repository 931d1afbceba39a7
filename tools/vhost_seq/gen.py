"""The sequences of the vhost-user message-sequence fuzzer: one per
(seed, index), the same on every run (random.Random of both), as plain
data a record can hold and a replay can send again.

A message is {"req", "flags", "payload" (hex), "size" (the header's, None:
the payload's length), "fds" (fd kinds, made at send time), "cut" (None, or
send only this many bytes of it and close)}. A sequence is a list of
messages; the connection closes after the last one.

Sequences lean towards the start sequence a real frontend sends (features,
owner, memory table, each ring's NUM/BASE/ADDR/KICK/CALL/ENABLE, status),
then mutate it: other or invalid request numbers, wrong and oversize sizes,
truncated headers, random flags and payloads, fds of every kind, and a
close at any point."""
import random
import struct

from harness import vhost_user as vu

PAGE = 4096
# A guest's memory: one region of MEM bytes at guest address 0; its rings
# lie in the first pages (desc, avail, used: a page each, ring after ring).
MEM = 1 << 20
UVA = 0x7f0000000000
QUEUE_SIZE = 256
FD_KINDS = ["eventfd", "eventfd-nb", "memfd", "pipe-r", "pipe-w", "null", "file"]
FIRST_INVALID = max(vu.NAMES) + 1
W = vu.REQ  # request numbers by name


def msg(req, payload=b"", fds=(), flags=vu.VERSION):
    return {"req": req, "flags": flags, "payload": payload.hex(), "size": None, "fds": list(fds),
            "cut": None}


def u64(req, v, fds=()):
    return msg(req, struct.pack(vu.LAYOUT["u64"], v), fds)


def state(req, index, num):
    return msg(req, struct.pack(vu.LAYOUT["state"], index, num))


class Guest:
    """What one sequence's frontend believes: features, rings, memory."""

    def __init__(self, rng, queues):
        self.rng = rng
        self.rings = 2 * rng.choice([1, 1, queues, queues + 1])
        f = 1 << vu.VIRTIO_F["VERSION_1"] | 1 << vu.F_PROTOCOL_FEATURES
        if self.rings > 2:
            f |= 1 << vu.VIRTIO_NET_F["MQ"]
        if rng.random() < 0.1:
            f |= 1 << vu.VHOST_F_LOG_ALL
        self.features = f if rng.random() < 0.9 else rng.getrandbits(64)
        pf = [vu.PROTO[n] for n in ("MQ", "REPLY_ACK", "STATUS", "CONFIG", "LOG_SHMFD")]
        self.protocol = sum(1 << b for b in pf if rng.random() < 0.7)
        self.uva = UVA + rng.randrange(0, 1 << 20) * PAGE

    def ring_addrs(self, ring):
        """desc, avail, used of `ring` as user addresses (the table maps
        guest address 0 at self.uva)."""
        base = self.uva + 3 * PAGE * ring
        return base, base + PAGE, base + 2 * PAGE

    def memfd(self):
        """The memory's fd: its size is the table's, or less."""
        r = self.rng.random()
        size = MEM if r < 0.85 else self.rng.choice([0, PAGE, MEM // 2])
        return f"memfd:{size}"


def start_sequence(g):
    """A frontend's start (DPDK virtio_user's order), then a stop."""
    out = [msg(W["GET_FEATURES"]), msg(W["SET_OWNER"]), msg(W["GET_PROTOCOL_FEATURES"]),
           u64(W["SET_PROTOCOL_FEATURES"], g.protocol), msg(W["GET_QUEUE_NUM"]),
           u64(W["SET_FEATURES"], g.features),
           msg(W["SET_MEM_TABLE"], vu.mem_table([(0, MEM, g.uva, 0)]), [g.memfd()])]
    if g.features >> vu.VHOST_F_LOG_ALL & 1:
        out.append(msg(W["SET_LOG_BASE"], struct.pack(vu.LAYOUT["log"], PAGE, 0), ["memfd:4096"]))
    for r in range(g.rings):
        desc, avail, used = g.ring_addrs(r)
        out += [u64(W["SET_VRING_CALL"], r, ["eventfd-nb"]),
                state(W["SET_VRING_NUM"], r, QUEUE_SIZE), state(W["SET_VRING_BASE"], r, 0),
                msg(W["SET_VRING_ADDR"], struct.pack(vu.LAYOUT["addr"], r, 0, desc, used, avail, 0)),
                u64(W["SET_VRING_KICK"], r, ["eventfd-nb"])]
    out += [state(W["SET_VRING_ENABLE"], r, 1) for r in range(g.rings)]
    st = vu.STATUS
    out.append(u64(W["SET_STATUS"], st["ACKNOWLEDGE"] | st["DRIVER"] | st["FEATURES_OK"] | st["DRIVER_OK"]))
    out.append(msg(W["GET_CONFIG"], struct.pack(vu.LAYOUT["config"], 0, 12, 0) + bytes(12)))
    out += [state(W["SET_VRING_ENABLE"], r, 0) for r in range(g.rings)]
    out += [state(W["GET_VRING_BASE"], r, 0) for r in range(g.rings)]
    out.append(u64(W["SET_STATUS"], 0))
    return out


def random_fds(rng):
    n = rng.choice([0, 0, 1, 1, 1, 2, 3, vu.MAX_REGIONS, vu.MAX_REGIONS + 2])
    out = []
    for _ in range(n):
        k = rng.choice(FD_KINDS)
        if k in ("memfd", "file"):
            k += f":{rng.choice([0, 1, PAGE - 1, PAGE, MEM // 2, MEM])}"
        out.append(k)
    return out


def random_payload(rng, req):
    """A payload of `req`'s layout with random fields, or random bytes."""
    name = vu.NAMES.get(req, "")
    r = rng.random()
    if name == "SET_MEM_TABLE" and r < 0.6:
        regions = [(rng.choice([0, rng.getrandbits(64)]), rng.choice([0, PAGE, MEM, rng.getrandbits(64)]),
                    rng.choice([UVA, rng.getrandbits(64)]), rng.choice([0, PAGE, rng.getrandbits(64)]))
                   for _ in range(rng.choice([0, 1, 2, vu.MAX_REGIONS, vu.MAX_REGIONS + 1]))]
        return vu.mem_table(regions)
    if name == "SET_VRING_ADDR" and r < 0.6:
        return struct.pack(vu.LAYOUT["addr"], rng.randrange(0, 260), rng.getrandbits(32),
                           *[UVA + rng.randrange(0, MEM) if rng.random() < 0.7 else rng.getrandbits(64)
                             for _ in range(4)])
    if name in ("SET_VRING_NUM", "SET_VRING_BASE", "SET_VRING_ENABLE", "GET_VRING_BASE") and r < 0.7:
        return struct.pack(vu.LAYOUT["state"], rng.choice([0, 1, 2, 3, 255, 256, rng.getrandbits(32)]),
                           rng.choice([0, 1, 2, 255, 256, 32768, 65535, 65536, rng.getrandbits(32)]))
    if name in ("SET_VRING_KICK", "SET_VRING_CALL", "SET_VRING_ERR") and r < 0.7:
        return struct.pack("<Q", rng.randrange(0, 8) | rng.choice([0, 0, vu.VRING_NOFD, 1 << 9]))
    if name == "SET_LOG_BASE" and r < 0.6:
        return struct.pack(vu.LAYOUT["log"], rng.choice([0, PAGE, MEM, rng.getrandbits(64)]),
                           rng.choice([0, PAGE, rng.getrandbits(64)]))
    if name in ("GET_CONFIG", "SET_CONFIG") and r < 0.6:
        size = rng.choice([0, 12, vu.MAX_CONFIG, vu.MAX_CONFIG + 1, rng.getrandbits(32)])
        return struct.pack(vu.LAYOUT["config"], rng.choice([0, 8, rng.getrandbits(32)]), size,
                           rng.getrandbits(32)) + bytes(min(size, vu.MAX_CONFIG))
    if r < 0.5:
        return struct.pack("<Q", rng.getrandbits(64))
    return rng.randbytes(rng.choice([0, 1, 4, 8, 12, 16, 40, 64, 264, 300]))


def random_request(rng):
    r = rng.random()
    if r < 0.75:
        return rng.choice(list(W.values()))
    if r < 0.9:
        return rng.choice(list(vu.SPEC_REQUESTS.values()))
    return rng.choice([0, FIRST_INVALID, 0x7fffffff, 0xffffffff, rng.getrandbits(32)])


def random_message(rng):
    req = random_request(rng)
    return {**msg(req, random_payload(rng, req), random_fds(rng) if rng.random() < 0.3 else []),
            "flags": vu.VERSION if rng.random() < 0.7 else rng.getrandbits(32)}


def mutate(rng, m):
    """One change to message m (a copy)."""
    m = dict(m)
    what = rng.randrange(8)
    if what == 0:
        m["req"] = random_request(rng)
    elif what == 1:
        m["flags"] = rng.choice([0, 2, vu.VERSION | vu.FLAG_NEED_REPLY, vu.VERSION | vu.FLAG_REPLY,
                                 rng.getrandbits(32)])
    elif what == 2:  # a size the payload does not have: short, long, beyond any request's
        n = len(m["payload"]) // 2
        m["size"] = rng.choice([0, max(0, n - 1), n + 1, n + 8, 700, 4096, 65536, 0xffffffff])
    elif what == 3:
        m["payload"] = random_payload(rng, m["req"]).hex()
    elif what == 4:
        m["fds"] = random_fds(rng)
    elif what == 5:  # a header or payload cut short, then the close
        m["cut"] = rng.randrange(1, 12 + len(m["payload"]) // 2 + 1)
    elif what == 6:
        m["payload"] = ""
    else:
        m["req"] = rng.choice([0, FIRST_INVALID, rng.getrandbits(32)])
    return m


def sequence(seed, index, queues):
    """Sequence `index` of `seed`: a list of messages."""
    rng = random.Random(seed << 32 | index)
    g = Guest(rng, queues)
    kind = rng.random()
    if kind < 0.2:  # random messages only
        out = [random_message(rng) for _ in range(rng.randrange(1, 30))]
    else:
        out = []
        rate = 0.0 if kind < 0.45 else rng.choice([0.02, 0.05, 0.15, 0.4])
        for m in start_sequence(g):
            r = rng.random()
            if r < rate * 0.3:
                continue  # dropped
            out.append(mutate(rng, m) if r < rate else m)
            if rng.random() < rate * 0.3:
                out.append(random_message(rng))
        for _ in range(int(len(out) * rate * 0.2)):  # a few swapped neighbours
            i = rng.randrange(max(1, len(out) - 1))
            out[i:i + 2] = out[i:i + 2][::-1]
    if rng.random() < 0.5:  # the close comes at any point
        out = out[:rng.randrange(0, len(out) + 1)]
    for i, m in enumerate(out):  # nothing after a cut message: the host closes
        if m["cut"] is not None:
            return out[:i + 1]
    return out


# Requests whose payload names a ring: vhost checks that index before any
# hook sees the message (see vring_fds).
VRING_REQUESTS = {W[n] for n in ("SET_VRING_NUM", "SET_VRING_ADDR", "SET_VRING_BASE", "GET_VRING_BASE",
                                 "SET_VRING_KICK", "SET_VRING_CALL", "SET_VRING_ERR", "SET_VRING_ENABLE")}


def vring_fds(messages):
    """How many fds the sequence sends with ring requests. DPDK 22.11's
    vhost keeps those of one whose ring index is out of range ("failed to
    alloc queue"): it drops the connection before any hook of the driver,
    which could close them, is called (doc/open-questions.md)."""
    return sum(len(m["fds"]) for m in messages if m["req"] in VRING_REQUESTS)


def describe(m):
    """One line per message, for a failure report."""
    name = vu.NAMES.get(m["req"], f"#{m['req']}")
    size = len(m["payload"]) // 2 if m["size"] is None else m["size"]
    extra = (f" fds={m['fds']}" if m["fds"] else "") + (f" cut={m['cut']}" if m["cut"] is not None else "")
    return f"{name} flags={m['flags']:#x} size={size} payload={m['payload'][:64]}{extra}"
