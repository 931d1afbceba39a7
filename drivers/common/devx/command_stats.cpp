#include "command_stats.hpp"

#include <algorithm>
#include <bit>

#include "common/prm/opcodes.hpp"

namespace mlx5async::devx {
namespace {

constexpr const char* kVerbNames[kCmdVerbs] = {"create", "modify", "query", "destroy", "general"};
constexpr const char* kObjectNames[kCmdObjects] = {"virtq", "counters", "umem", "mkey",
                                                   "qp",    "cq",       "sq",   "other"};

CmdObject object_of(uint16_t opcode, uint16_t obj_type) noexcept {
    using prm::Opcode;
    if (prm::is_throttled_opcode(opcode)) {
        switch (static_cast<prm::ObjType>(obj_type)) {
        case prm::ObjType::VIRTIO_NET_Q: return CmdObject::Virtq;
        case prm::ObjType::VIRTIO_Q_COUNTERS: return CmdObject::Counters;
        }
        return CmdObject::Other;
    }
    switch (static_cast<Opcode>(opcode)) {
    case Opcode::CREATE_UMEM:
    case Opcode::DESTROY_UMEM: return CmdObject::Umem;
    case Opcode::CREATE_MKEY:
    case Opcode::DESTROY_MKEY: return CmdObject::Mkey;
    case Opcode::CREATE_QP:
    case Opcode::DESTROY_QP:
    case Opcode::RST2INIT_QP:
    case Opcode::INIT2RTR_QP:
    case Opcode::RTR2RTS_QP: return CmdObject::Qp;
    case Opcode::CREATE_CQ:
    case Opcode::DESTROY_CQ: return CmdObject::Cq;
    case Opcode::CREATE_SQ:
    case Opcode::MODIFY_SQ:
    case Opcode::DESTROY_SQ: return CmdObject::Sq;
    default: return CmdObject::Other;
    }
}

}  // namespace

std::string cmd_type_name(CmdType t) {
    return std::string(kVerbNames[size_t(t.verb)]) + "_" + kObjectNames[size_t(t.object)];
}

CmdType classify_command(CmdVerb verb, uint16_t opcode, uint16_t obj_type) noexcept {
    return {verb, object_of(opcode, obj_type)};
}

size_t LatencyHistogram::bucket_of(uint64_t ns) noexcept {
    if (ns == 0) return 0;
    return std::min<size_t>(kBuckets - 1, size_t(std::bit_width(ns) - 1));
}

void LatencyHistogram::record(uint64_t ns) noexcept {
    ++count;
    sum_ns += ns;
    max_ns = std::max(max_ns, ns);
    ++buckets[bucket_of(ns)];
}

void LatencyHistogram::merge(const LatencyHistogram& o) noexcept {
    count += o.count;
    sum_ns += o.sum_ns;
    max_ns = std::max(max_ns, o.max_ns);
    timed_out += o.timed_out;
    for (size_t b = 0; b < kBuckets; ++b) buckets[b] += o.buckets[b];
}

uint64_t LatencyHistogram::quantile_ns(double q) const noexcept {
    if (count == 0) return 0;
    // The rank-th smallest latency (1-based), rank = ceil(q * count).
    const auto rank = std::max<uint64_t>(1, uint64_t(q * double(count) + 0.999999));
    uint64_t seen = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
        seen += buckets[b];
        if (seen >= rank) {
            const uint64_t upper = b + 1 < kBuckets ? (uint64_t(2) << b) - 1 : max_ns;
            return std::min(upper, max_ns);
        }
    }
    return max_ns;
}

void CommandStats::count_error(CmdType t, uint8_t status, uint32_t syndrome, uint64_t n) {
    for (FwErrorCount& e : fw_errors)
        if (e.type == t && e.status == status && e.syndrome == syndrome) {
            e.count += n;
            return;
        }
    if (fw_errors.size() >= kMaxErrorKeys) {
        fw_errors_unkeyed += n;
        return;
    }
    fw_errors.push_back({t, status, syndrome, n});
}

void CommandStats::merge(const CommandStats& o) {
    for (size_t i = 0; i < kCmdTypes; ++i) latency[i].merge(o.latency[i]);
    for (const FwErrorCount& e : o.fw_errors) count_error(e.type, e.status, e.syndrome, e.count);
    fw_errors_unkeyed += o.fw_errors_unkeyed;
}

void CallStats::record(CmdType t, std::chrono::nanoseconds latency, int err) {
    std::lock_guard lk(mu_);
    stats_.latency[t.index()].record(uint64_t(latency.count()));
    if (err) stats_.count_error(t, 0, uint32_t(err), 1);
}

CommandStats CallStats::snapshot() const {
    std::lock_guard lk(mu_);
    return stats_;
}

}  // namespace mlx5async::devx
