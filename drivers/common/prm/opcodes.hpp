// PRM command opcodes and general-object types used by this project.
#pragma once

#include <cstdint>

namespace mlx5async::prm {

enum class Opcode : uint16_t {
    QUERY_HCA_CAP = 0x100,
    CREATE_MKEY = 0x200,
    DESTROY_MKEY = 0x202,
    QUERY_SPECIAL_CONTEXTS = 0x203,
    CREATE_CQ = 0x400,
    DESTROY_CQ = 0x401,
    CREATE_QP = 0x500,
    DESTROY_QP = 0x501,
    RST2INIT_QP = 0x502,
    INIT2RTR_QP = 0x503,
    RTR2RTS_QP = 0x504,
    ALLOC_PD = 0x800,
    DEALLOC_PD = 0x801,
    ALLOC_UAR = 0x802,
    DEALLOC_UAR = 0x803,
    CREATE_SQ = 0x904,
    MODIFY_SQ = 0x905,
    DESTROY_SQ = 0x906,
    CREATE_TIS = 0x912,
    DESTROY_TIS = 0x914,
    ALLOC_TRANSPORT_DOMAIN = 0x816,
    DEALLOC_TRANSPORT_DOMAIN = 0x817,
    QUERY_NIC_VPORT_CONTEXT = 0x754,
    CREATE_GENERAL_OBJECT = 0xa00,
    MODIFY_GENERAL_OBJECT = 0xa01,
    QUERY_GENERAL_OBJECT = 0xa02,
    DESTROY_GENERAL_OBJECT = 0xa03,
    CREATE_UMEM = 0xa08,
    DESTROY_UMEM = 0xa0a,
};

enum class ObjType : uint16_t {
    VIRTIO_NET_Q = 0x000d,
    VIRTIO_Q_COUNTERS = 0x001c,
};

// mlx5_core's mlx5_cmd_is_throttle_opcode: the general-object commands,
// which the kernel admits ceil(max_reg_cmds / 2) at a time; every other
// command (CREATE_MKEY, CREATE_UMEM, QP and CQ commands ...) is bounded only
// by the command slots (max_reg_cmds).
bool is_throttled_opcode(uint16_t opcode) noexcept;

// "MODIFY_GENERAL_OBJECT"; "UNKNOWN_OPCODE" otherwise.
const char* opcode_name(uint16_t opcode) noexcept;
const char* obj_type_name(uint16_t obj_type) noexcept;

// Event numbers delivered on a DevX event channel.
inline constexpr uint16_t kEventObjectChange = 0x27;

}  // namespace mlx5async::prm
