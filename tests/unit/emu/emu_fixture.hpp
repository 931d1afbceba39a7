// Shared fixture of the emulator tests: a fresh device per test (zero latency
// unless the test asks otherwise), an open DevX context, a PD, and helpers
// that build PRM commands with the codec and run them through emu::api().
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/prm/caps.hpp"
#include "common/prm/counters.hpp"
#include "common/prm/field.hpp"
#include "common/prm/general_obj.hpp"
#include "common/prm/mkey.hpp"
#include "common/prm/opcodes.hpp"
#include "common/prm/status.hpp"
#include "common/prm/virtq.hpp"
#include "common/prm/vport.hpp"
#include "emu/emu.hpp"
#include "emu/syndrome.hpp"

namespace mlx5async::emu::test {

inline constexpr const char* kZeroLatency =
    "create_us=0,modify_us=0,query_us=0,destroy_us=0,umem_us=0,general_us=0,pin_ns=0,unpin_ns=0,mtt_ns=0,mkey_us=0";

// What a command returned: errno-style rc and the PRM status in out.
struct CmdRet {
    int rc = 0;
    uint8_t status = 0;
    uint32_t syndrome = 0;
};

struct Vq {
    mlx5dv_devx_obj* obj = nullptr;
    uint32_t id = 0;
    CmdRet ret;
};

class EmuTest : public ::testing::Test {
protected:
    void SetUp() override { open_device(std::string("cx7,") + kZeroLatency); }
    void TearDown() override { close_all(); }

    void open_device(const std::string& spec);
    void close_all();

    // Three umems sized for queue_size (plus `extra` bytes each), and an attr
    // that CREATE accepts.
    prm::VirtqAttr valid_attr(uint16_t queue_index, uint16_t queue_size = 256, uint32_t extra = 0);
    // valid_attr(ring.queue_index) on a guest ring: `ring`'s three addresses,
    // reached through `mkey`.
    prm::VirtqAttr valid_attr_on_ring(const prm::VirtqAttr& ring, uint32_t mkey);
    // A direct MTT mkey over a umem of `buf`, which the guest sees at `start`.
    uint32_t direct_mkey(std::span<std::byte> buf, uint64_t start);
    Vq create_virtq(const prm::VirtqAttr& a);
    CmdRet modify_virtq(const Vq& vq, prm::VirtqAttr a, uint64_t select);
    CmdRet modify_raw(const Vq& vq, std::vector<std::byte>& in);
    CmdRet query_virtq(const Vq& vq, prm::VirtqAttr* out);
    // A virtq moved to the given state through legal MODIFYs (ERR: forced).
    Vq virtq_in_state(prm::VirtqState s, uint16_t queue_index = 0);
    uint32_t register_umem(size_t bytes);
    // QUERY_NIC_VPORT_CONTEXT of the function's own vport, decoded.
    Result<prm::NicVportContext> query_own_vport();
    prm::VirtqState state_of(const Vq& vq);
    // obj_destroy of a tracked object; it is forgotten when that succeeds.
    int destroy_obj(mlx5dv_devx_obj* o);

    const devx::DevxApi& A = api();
    std::string name_;
    Device* dev_ = nullptr;
    ibv_context* ctx_ = nullptr;
    ibv_pd* pd_ = nullptr;
    uint32_t pdn_ = 0;
    std::vector<std::unique_ptr<std::byte[]>> memory_;
    std::vector<mlx5dv_devx_umem*> umems_;
    std::vector<mlx5dv_devx_obj*> objs_;
};

// Reads status/syndrome of an output buffer.
inline CmdRet ret_of(int rc, std::span<const std::byte> out) {
    return {rc, uint8_t(prm::get_bits(out, 0, 8)), uint32_t(prm::get_bits(out, 32, 32))};
}

}  // namespace mlx5async::emu::test
