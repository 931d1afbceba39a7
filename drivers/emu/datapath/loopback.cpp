#include "loopback.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <variant>

#include "packed_ring.hpp"
#include "split_ring.hpp"

namespace mlx5async::emu::dp {
namespace {

// virtio 1.x §5.1.6 struct virtio_net_hdr: byte offsets of the fields we use
// (little-endian).
constexpr size_t kHdrFlags = 0, kHdrCsumStart = 6, kHdrCsumOffset = 8, kHdrNumBuffers = 10;
constexpr std::byte kNeedsCsum{1};  // VIRTIO_NET_HDR_F_NEEDS_CSUM

// Whether the virtq's queue_feature_bit_mask (PRM numbering, split 12..3 /
// 2..0) has `bit` (prm::queue_feature_bits).
bool negotiated(const prm::VirtqAttr& a, unsigned bit) {
    uint16_t mask = uint16_t(a.queue_feature_bit_mask_12_3 << 3) | a.queue_feature_bit_mask_2_0;
    return (mask >> bit) & 1;
}

// RFC 1071: ones'-complement sum of big-endian 16-bit words (an odd last
// byte padded with zero), folded to 16 bits.
uint16_t ones_sum(const std::byte* p, size_t n) {
    uint64_t s = 0;
    auto byte = [&](size_t i) { return std::to_integer<uint32_t>(p[i]); };
    for (size_t i = 0; i + 1 < n; i += 2) s += byte(i) << 8 | byte(i + 1);
    if (n & 1) s += byte(n - 1) << 8;
    while (s >> 16) s = (s & 0xffff) + (s >> 16);
    return uint16_t(s);
}

// virtio 1.x §5.1.6.2: a TX header with NEEDS_CSUM (meaningful only with CSUM
// negotiated on TX) asks the device to store the checksum of csum_start..end
// at csum_start + csum_offset, where the driver put the pseudo-header sum.
// The offsets are checked whatever the receiver (a transmit does not depend
// on its peer); false when they point outside the packet. §5.1.6.4: a
// receiver without GUEST_CSUM gets a complete checksum and no NEEDS_CSUM, as
// from the wire; one with GUEST_CSUM MAY get NEEDS_CSUM: the header as sent.
bool complete_csum(std::vector<std::byte>& pkt, size_t hl, const prm::VirtqAttr& tx,
                   const prm::VirtqAttr& rx) {
    namespace fb = prm::queue_feature_bits;
    bool needs = pkt.size() >= hl && (pkt[kHdrFlags] & kNeedsCsum) != std::byte{0};
    if (!needs || !negotiated(tx, fb::CSUM)) return true;
    uint16_t start, off;
    std::memcpy(&start, pkt.data() + kHdrCsumStart, 2);
    std::memcpy(&off, pkt.data() + kHdrCsumOffset, 2);
    size_t from = hl + start, at = from + off;
    if (at + 2 > pkt.size()) return false;
    if (negotiated(rx, fb::GUEST_CSUM)) return true;
    uint16_t c = uint16_t(~ones_sum(pkt.data() + from, pkt.size() - from));
    // As Linux skb_checksum_help / QEMU net_checksum_finish_nozero: the device
    // does not know the protocol, and 0 means "no checksum" to UDP (RFC 768);
    // 0xffff is the same ones'-complement value for everyone else.
    if (c == 0) c = 0xffff;
    pkt[at] = std::byte(c >> 8);
    pkt[at + 1] = std::byte(c & 0xff);
    pkt[kHdrFlags] &= ~kNeedsCsum;
    return true;
}

// Counters: a descriptor error also completes as an error CQE.
void count_error(QueueIo& q, uint8_t type) {
    q.error = type;
    ++q.ctr.error_cqes;
    switch (type) {
        case error_type::kChainLoop:
        case error_type::kChainTooLong: ++q.ctr.exceed_max_chain; break;
        case error_type::kBufferAddr: ++q.ctr.invalid_buffer; break;
        default: ++q.ctr.bad_desc_errors; break;
    }
}

// A virtq's ring in the layout its object names (virtio_q_type).
class RingOf {
public:
    RingOf(const GuestMem& m, const prm::VirtqAttr& a)
        : ring_(a.virtio_q_type == prm::VirtqType::PACKED
                    ? Layouts(std::in_place_type<PackedRing>, m, a.desc_addr, a.available_addr,
                              a.used_addr, a.queue_size)
                    : Layouts(std::in_place_type<SplitRing>, m, a.desc_addr, a.available_addr,
                              a.used_addr, a.queue_size)) {}
    const Ring& operator*() const {
        return std::visit([](const auto& r) -> const Ring& { return r; }, ring_);
    }
    const Ring* operator->() const { return &**this; }

private:
    using Layouts = std::variant<SplitRing, PackedRing>;
    Layouts ring_;
};

// The next available chain of q, or nullopt (none, or an error recorded).
std::optional<Chain> next_chain(const Ring& r, QueueIo& q) {
    RingError err;
    auto c = r.available(q.attr.hw_available_index, err);
    if (!c && err.error_type) count_error(q, err.error_type);
    return c;
}

// Completes fetched chains (one packet's): their used entries, one used
// idx store, hw indexes, counters.
bool complete(const Ring& r, QueueIo& q, std::span<const Chain> chains,
              std::span<const UsedElem> used) {
    if (!r.push_used(q.attr.hw_used_index, used)) {
        count_error(q, error_type::kRingAddr);
        return false;
    }
    for (const Chain& c : chains) {
        q.attr.hw_available_index = r.after(q.attr.hw_available_index, c.slots);
        q.attr.hw_used_index = r.after(q.attr.hw_used_index, c.slots);
        q.ctr.received_desc += c.descs.size();
        q.ctr.completed_desc += c.descs.size();
    }
    return true;
}

// A TX chain, sent (or dropped): used with length 0.
bool complete_tx(const Ring& r, QueueIo& q, const Chain& c) {
    const UsedElem used{c.head, 0, c.slots};
    return complete(r, q, {&c, 1}, {&used, 1});
}

bool rings_ok(const Ring& r, QueueIo& q) {
    if (r.reachable()) return true;
    count_error(q, error_type::kRingAddr);
    return false;
}

enum class Frame { Other, Arp, Announce };

// What an Ethernet frame is (behind at most one 802.1Q tag): ARP (RFC 826),
// or an announce: a gratuitous IPv4-over-Ethernet ARP, whose sender protocol
// address is its target's (RFC 5227 §3), what Linux's netdev_notify_peers
// sends after a migration.
Frame classify(const std::vector<std::byte>& pkt, size_t hl) {
    auto be16 = [&](size_t at) {
        return uint16_t(std::to_integer<uint16_t>(pkt[at]) << 8 | std::to_integer<uint16_t>(pkt[at + 1]));
    };
    size_t type_at = hl + 12;
    if (pkt.size() < type_at + 2) return Frame::Other;
    if (be16(type_at) == 0x8100) type_at += 4;
    if (pkt.size() < type_at + 2 || be16(type_at) != 0x0806) return Frame::Other;
    const size_t arp = type_at + 2;  // htype ptype hlen plen oper sha(6) spa(4) tha(6) tpa(4)
    if (pkt.size() < arp + 28 || be16(arp + 2) != 0x0800 || pkt[arp + 4] != std::byte{6} ||
        pkt[arp + 5] != std::byte{4})
        return Frame::Arp;
    return std::memcmp(pkt.data() + arp + 14, pkt.data() + arp + 24, 4) == 0 ? Frame::Announce
                                                                            : Frame::Arp;
}

enum class Rx { Done, Blocked, Error };

// Receives pkt on rx (virtio 1.x §5.1.6.4): into the next chain, truncated
// to it, without MRG_RXBUF; with it, into as many chains as the packet
// needs, their count in the first header's num_buffers. Blocked (nothing
// consumed) while rx has too few buffers.
Rx receive(const Ring& rxr, QueueIo& rx, std::vector<std::byte>& pkt) {
    const bool mergeable = negotiated(rx.attr, prm::queue_feature_bits::MRG_RXBUF);
    std::vector<Chain> chains;
    size_t room = 0;
    uint16_t pos = rx.attr.hw_available_index;
    while (chains.empty() || (mergeable && room < pkt.size())) {
        // A packed ring's slots run out at its size; a split ring's avail
        // idx says so first.
        if (chains.size() >= rx.attr.queue_size) return Rx::Blocked;
        RingError err;
        auto c = rxr.available(pos, err);
        if (!c && !err.error_type) return Rx::Blocked;
        if (!c) {
            count_error(rx, err.error_type);
            return Rx::Error;
        }
        pos = rxr.after(pos, c->slots);
        if (c->readable) {  // an RX chain has no device-readable part
            count_error(rx, error_type::kDescFlags);
            return Rx::Error;
        }
        room += c->writable;
        chains.push_back(std::move(*c));
    }
    if (net_hdr_len(rx.attr) == 12 && pkt.size() >= 12) {
        uint16_t n = uint16_t(chains.size());
        std::memcpy(pkt.data() + kHdrNumBuffers, &n, 2);
    }
    // Every buffer written before any is used: the driver sees the packet whole.
    std::vector<UsedElem> used;
    size_t off = 0;
    for (const Chain& c : chains) {
        size_t n = std::min(pkt.size() - off, c.writable);
        if (!rxr.scatter(c, pkt.data() + off, n)) {
            count_error(rx, error_type::kBufferAddr);
            return Rx::Error;
        }
        used.push_back({c.head, uint32_t(n), c.slots});
        off += n;
    }
    return complete(rxr, rx, chains, used) ? Rx::Done : Rx::Error;
}

}  // namespace

size_t net_hdr_len(const prm::VirtqAttr& a) {
    return a.virtio_version_1_0 || negotiated(a, prm::queue_feature_bits::MRG_RXBUF) ? 12 : 10;
}

namespace {

LoopbackResult move_packets(const Translator& tr, QueueIo& tx, QueueIo* rx, uint32_t budget) {
    LoopbackResult res;
    GuestMem txm(tr, tx.attr.virtio_q_mkey, tx.on_write, &tx.host_fault);
    const RingOf txr(txm, tx.attr);
    std::vector<std::byte> pkt;
    if (!rings_ok(*txr, tx)) return res;
    while (res.packets + res.dropped < budget && !tx.error) {
        auto tc = next_chain(*txr, tx);
        if (!tc) break;
        if (tc->writable) {  // a TX chain has no device-writable part
            count_error(tx, error_type::kDescFlags);
            break;
        }
        if (!rx || rx->error) {
            res.blocked = true;
            break;
        }
        GuestMem rxm(tr, rx->attr.virtio_q_mkey, rx->on_write, &rx->host_fault);
        const RingOf rxr(rxm, rx->attr);
        if (!rings_ok(*rxr, *rx)) break;
        if (!txr->gather(*tc, pkt)) {
            count_error(tx, error_type::kBufferAddr);
            break;
        }
        const size_t hl = net_hdr_len(tx.attr);
        if (!complete_csum(pkt, hl, tx.attr, rx->attr)) {
            count_error(tx, error_type::kNetHdr);
            break;
        }
        if (tx.max_frame && pkt.size() > hl + tx.max_frame) {
            if (!complete_tx(*txr, tx, *tc)) break;
            if (tx.frames) ++tx.frames->oversize;
            ++res.dropped;
            continue;
        }
        const Frame kind = classify(pkt, hl);
        Rx r = receive(*rxr, *rx, pkt);
        if (r != Rx::Done) {
            res.blocked = r == Rx::Blocked;
            break;
        }
        if (tx.frames && kind != Frame::Other) ++tx.frames->arp;
        if (tx.frames && kind == Frame::Announce) ++tx.frames->announces;
        if (kind == Frame::Announce && tx.on_announce && *tx.on_announce) (*tx.on_announce)();
        res.announces += kind == Frame::Announce;
        if (!complete_tx(*txr, tx, *tc)) break;
        ++res.packets;
    }
    return res;
}

}  // namespace

LoopbackResult loopback(const Translator& tr, QueueIo& tx, QueueIo* rx, uint32_t budget) {
    LoopbackResult res = move_packets(tr, tx, rx, budget);
    // Whatever failed on a queue whose memory faulted, the memory is why.
    if (tx.error && tx.host_fault) tx.error = error_type::kHostFault;
    if (rx && rx->error && rx->host_fault) rx->error = error_type::kHostFault;
    return res;
}

}  // namespace mlx5async::emu::dp
