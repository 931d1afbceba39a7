#include "loopback.hpp"

#include <algorithm>
#include <cstring>

namespace mlx5async::emu::dp {
namespace {

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

SplitRing ring_of(const GuestMem& m, const prm::VirtqAttr& a) {
    return SplitRing(m, a.desc_addr, a.available_addr, a.used_addr, a.queue_size);
}

// The next available chain of q, or nullopt (none, or an error recorded).
std::optional<Chain> next_chain(const SplitRing& r, QueueIo& q) {
    RingError err;
    auto n = r.pending(q.attr.hw_available_index, err);
    if (!n) {
        count_error(q, err.error_type);
        return std::nullopt;
    }
    if (*n == 0) return std::nullopt;
    auto c = r.chain_at(q.attr.hw_available_index, err);
    if (!c) count_error(q, err.error_type);
    return c;
}

// Completes a fetched chain: used entry, used idx, hw indexes, counters.
bool complete(const SplitRing& r, QueueIo& q, const Chain& c, uint32_t len) {
    if (!r.push_used(q.attr.hw_used_index, c.head, len)) {
        count_error(q, error_type::kRingAddr);
        return false;
    }
    ++q.attr.hw_available_index;
    ++q.attr.hw_used_index;
    q.ctr.received_desc += c.descs.size();
    q.ctr.completed_desc += c.descs.size();
    return true;
}

// virtio §2.7: desc 16·size, avail 6 + 2·size, used 6 + 8·size bytes.
bool rings_ok(const GuestMem& m, QueueIo& q) {
    const prm::VirtqAttr& a = q.attr;
    if (m.covers(a.desc_addr, 16ull * a.queue_size) &&
        m.covers(a.available_addr, 6 + 2ull * a.queue_size) &&
        m.covers(a.used_addr, 6 + 8ull * a.queue_size))
        return true;
    count_error(q, error_type::kRingAddr);
    return false;
}

}  // namespace

size_t net_hdr_len(const prm::VirtqAttr& a) {
    bool mrg = a.queue_feature_bit_mask_2_0 & (1u << prm::queue_feature_bits::MRG_RXBUF);
    return a.virtio_version_1_0 || mrg ? 12 : 10;
}

LoopbackResult loopback(const Translator& tr, QueueIo& tx, QueueIo* rx, uint32_t budget) {
    LoopbackResult res;
    GuestMem txm(tr, tx.attr.virtio_q_mkey, tx.on_write);
    SplitRing txr = ring_of(txm, tx.attr);
    std::vector<std::byte> pkt;
    if (!rings_ok(txm, tx)) return res;
    while (res.packets < budget && !tx.error) {
        auto tc = next_chain(txr, tx);
        if (!tc) break;
        if (tc->writable) {  // a TX chain has no device-writable part
            count_error(tx, error_type::kDescFlags);
            break;
        }
        if (!rx || rx->error) {
            res.blocked = true;
            break;
        }
        GuestMem rxm(tr, rx->attr.virtio_q_mkey, rx->on_write);
        SplitRing rxr = ring_of(rxm, rx->attr);
        if (!rings_ok(rxm, *rx)) break;
        auto rc = next_chain(rxr, *rx);
        if (!rc) {
            res.blocked = !rx->error;
            break;
        }
        if (rc->readable) {  // an RX chain has no device-readable part
            count_error(*rx, error_type::kDescFlags);
            break;
        }
        if (!txr.gather(*tc, pkt)) {
            count_error(tx, error_type::kBufferAddr);
            break;
        }
        // virtio 1.x §5.1.6.4: without MRG_RXBUF num_buffers is 1.
        size_t hl = net_hdr_len(tx.attr);
        if (hl == 12 && pkt.size() >= 12) {
            uint16_t one = 1;
            std::memcpy(pkt.data() + 10, &one, 2);
        }
        size_t n = std::min(pkt.size(), rc->writable);
        if (!rxr.scatter(*rc, pkt.data(), n)) {
            count_error(*rx, error_type::kBufferAddr);
            break;
        }
        if (!complete(rxr, *rx, *rc, uint32_t(n))) break;
        if (!complete(txr, tx, *tc, 0)) break;
        ++res.packets;
    }
    return res;
}

}  // namespace mlx5async::emu::dp
