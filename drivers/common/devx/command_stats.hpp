// What the engine keeps of the commands it completed: per command type
// (what a command did to which kind of object) a latency histogram with
// log2 buckets, and the firmware's refusals counted by type, status and
// syndrome. Fixed size but for the error keys, which are capped.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace mlx5async::devx {

enum class CmdVerb : uint8_t { Create, Modify, Query, Destroy, General };
enum class CmdObject : uint8_t { Virtq, Counters, Umem, Mkey, Qp, Cq, Sq, Other };
inline constexpr size_t kCmdVerbs = 5;
inline constexpr size_t kCmdObjects = 8;
inline constexpr size_t kCmdTypes = kCmdVerbs * kCmdObjects;

// A command's type as an index into CommandStats::latency.
struct CmdType {
    CmdVerb verb = CmdVerb::General;
    CmdObject object = CmdObject::Other;
    constexpr size_t index() const noexcept {
        return size_t(verb) * kCmdObjects + size_t(object);
    }
    static constexpr CmdType at(size_t i) noexcept {
        return {CmdVerb(i / kCmdObjects), CmdObject(i % kCmdObjects)};
    }
    friend constexpr bool operator==(CmdType, CmdType) = default;
};
// "create_virtq", "modify_counters", "general_other" ...
std::string cmd_type_name(CmdType t);
// From what the command does, its PRM opcode and, for general objects,
// their obj_type.
CmdType classify_command(CmdVerb verb, uint16_t opcode, uint16_t obj_type) noexcept;

struct LatencyHistogram {
    // Bucket b counts latencies in [2^b, 2^(b+1)) ns (bucket 0 also 0 ns);
    // the last one everything from 2^(kBuckets-1) ns (9 minutes) up.
    static constexpr size_t kBuckets = 40;
    uint64_t count = 0;  // completed (Done or Failed) commands
    uint64_t sum_ns = 0;
    uint64_t max_ns = 0;
    uint64_t timed_out = 0;  // given up on at their batch's deadline: no latency
    std::array<uint64_t, kBuckets> buckets{};

    static size_t bucket_of(uint64_t ns) noexcept;
    void record(uint64_t ns) noexcept;
    void merge(const LatencyHistogram& o) noexcept;
    // The upper bound of the bucket that holds quantile q (0 < q <= 1),
    // capped at max_ns: a latency at most this; 0 when empty.
    uint64_t quantile_ns(double q) const noexcept;
};

struct FwErrorCount {
    CmdType type;
    uint8_t status = 0;     // PRM status byte (0: the call failed, sys_errno)
    uint32_t syndrome = 0;  // PRM syndrome, or the errno when status is 0
    uint64_t count = 0;
};

struct CommandStats {
    std::array<LatencyHistogram, kCmdTypes> latency{};
    // Failed commands by (type, status, syndrome), first seen first.
    std::vector<FwErrorCount> fw_errors;
    // Failures whose key came after kMaxErrorKeys others: counted only here.
    uint64_t fw_errors_unkeyed = 0;
    static constexpr size_t kMaxErrorKeys = 64;

    void merge(const CommandStats& o);
    void count_error(CmdType t, uint8_t status, uint32_t syndrome, uint64_t n);
};

// Commands their callers run themselves, outside any batch (the guest
// memory's mkeys and umems, destroyed by their owner): counted beside the
// engine's. Thread-safe.
class CallStats {
public:
    // `err`: the call's errno (0: it succeeded).
    void record(CmdType t, std::chrono::nanoseconds latency, int err);
    CommandStats snapshot() const;

private:
    mutable std::mutex mu_;  // protects stats_
    CommandStats stats_;
};

// Runs `call` (it returns an errno, 0 on success), recorded in `stats`
// when there is one; returns what `call` returned.
template <typename Call>
int timed_call(CallStats* stats, CmdType t, Call call) {
    if (!stats) return call();
    const auto t0 = std::chrono::steady_clock::now();
    const int err = call();
    stats->record(t, std::chrono::steady_clock::now() - t0, err);
    return err;
}

}  // namespace mlx5async::devx
