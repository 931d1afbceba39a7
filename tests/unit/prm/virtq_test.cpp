// VIRTIO_NET_Q codec: golden command images and round trips.
//
// Golden bytes are derived by hand from the field table (prm-virtq-fields.tsv)
// and cross-checked against the offsets in Linux mlx5_ifc.h /
// mlx5_ifc_vdpa.h (general_obj_in_cmd_hdr, virtio_net_q_object, virtio_q)
// and DPDK 22.11 drivers/common/mlx5/mlx5_prm.h (mlx5_ifc_virtio_net_q_bits):
// the object starts at byte 16 of the command, state is bits 0x9c..0x9f of
// the object (byte 16+19, low nibble), modify_field_select is the object's
// first 64 bits.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/prm/opcodes.hpp"
#include "common/prm/virtq.hpp"

namespace mlx5async::prm {
namespace {

using Bytes = std::vector<std::byte>;

TEST(VirtqGolden, ModifyToSuspendImage) {
    VirtqAttr a;
    a.modify_field_select = modify_bits::STATE;
    a.state = VirtqState::SUSPEND;
    Bytes in(kVirtqCmdInBytes, std::byte{0xee});
    ASSERT_TRUE(encode_modify_virtq(5, a, in));

    Bytes want(kVirtqCmdInBytes, std::byte{0});
    want[0] = std::byte{0x0a};  // opcode 0xa01 MODIFY_GENERAL_OBJECT
    want[1] = std::byte{0x01};
    want[7] = std::byte{0x0d};  // obj_type 0x000d VIRTIO_NET_Q at bytes 6-7
    want[11] = std::byte{0x05};  // obj_id 5 at bytes 8-11
    want[16 + 7] = std::byte{0x01};   // modify_field_select = STATE (bit 0)
    want[16 + 19] = std::byte{0x02};  // state nibble at object bit 0x9c = SUSPEND
    EXPECT_EQ(in, want);
}

TEST(VirtqGolden, QueryInIsHeaderOnly) {
    Bytes in(kGeneralObjInHdrBytes, std::byte{0xee});
    encode_query_virtq(0x123456, in);
    Bytes want = {std::byte{0x0a}, std::byte{0x02}, {}, {}, {}, {}, {}, std::byte{0x0d},
                  {}, std::byte{0x12}, std::byte{0x34}, std::byte{0x56}, {}, {}, {}, {}};
    EXPECT_EQ(in, want);
}

}  // namespace
}  // namespace mlx5async::prm
