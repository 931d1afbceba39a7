// What users type: devargs (vdpa_mlx5async0,emu=cx7,queues=4,...), fault
// rules (mlx5emu_fault, vdpa-testpmd `fault`) and emulator
// specs. Any text is accepted or refused with a message; nothing crashes,
// and what is accepted is in range.
// Input: a selector byte, then the text.
#include <cstdint>
#include <string>
#include <string_view>

#include "emu/fault_rule.hpp"
#include "emu/profile.hpp"
#include "fuzz_check.hpp"
#include "testkit/linked_emulator.hpp"
#include "vdpa/mlx5async/core/config.hpp"

namespace core = mlx5async::core;
namespace emu = mlx5async::emu;

namespace {

// As rte_kvargs splits a devargs string: pairs at ',', key and value at the first '='.
core::KeyValues split_devargs(std::string_view s) {
    core::KeyValues kv;
    while (!s.empty()) {
        size_t comma = s.find(',');
        std::string_view pair = s.substr(0, comma);
        size_t eq = pair.find('=');
        kv.emplace_back(std::string(pair.substr(0, eq)),
                        eq == std::string_view::npos ? std::string() : std::string(pair.substr(eq + 1)));
        if (comma == std::string_view::npos) break;
        s.remove_prefix(comma + 1);
    }
    return kv;
}

void devargs(std::string_view text) {
    auto c = core::parse_device_config(split_devargs(text));
    if (!c) {
        FUZZ_CHECK(!c.error().what.empty(), "a refused devarg has no message");
        return;
    }
    FUZZ_CHECK(c->is_emulated() != !c->hw_device.empty(), "accepted config without exactly one backend");
    FUZZ_CHECK(c->max_inflight >= 1 && c->timeout_ms >= 1, "accepted config out of range");
}

void fault_rule(std::string_view text) {
    auto r = emu::parse_fault_rule(text);
    if (!r) {
        FUZZ_CHECK(!r.error().what.empty(), "a refused fault rule has no message");
        return;
    }
    if (r->rule && r->rule->action == emu::FaultAction::Delay)
        FUZZ_CHECK(r->rule->extra_ns >= 0 && uint64_t(r->rule->extra_ns) <= emu::kMaxFaultDelayUs * 1000,
                   "accepted delay beyond its bound");
}

void emu_spec(std::string_view text) {
    auto p = emu::parse_spec(text);
    if (!p) FUZZ_CHECK(!p.error().what.empty(), "a refused spec has no message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 3) {
    case 0: devargs(text); break;
    case 1: fault_rule(text); break;
    case 2: emu_spec(text); break;
    }
    return 0;
}
