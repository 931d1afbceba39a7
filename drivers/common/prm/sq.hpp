// A send queue of the driver's own on the function (CREATE_SQ, MODIFY_SQ
// RST -> RDY, DESTROY_SQ, as DPDK's mlx5_devx_cmd_create_sq /
// mlx5_devx_cmd_modify_sq build them) and the send WQE it posts: a control
// segment and an Ethernet segment holding the whole frame inline (Linux
// mlx5e and DPDK mlx5 inline short frames this way). The driver sends its
// announce frames through it (RARP after a migration); the emulator puts
// them on its wire. Typed attributes and both directions of each command:
// the driver encodes inputs and decodes outputs, the emulator the reverse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "../base/result.hpp"

namespace mlx5async::prm {

inline constexpr size_t kCreateSqInBytes = 0x880 / 8;  // create_sq_in up to pas[]
inline constexpr size_t kModifySqInBytes = 0x880 / 8;
inline constexpr size_t kSqCmdBytes = 16;              // outputs, destroy_sq_in

// sqc.state and modify_sq_in.sq_state (Linux MLX5_SQC_STATE_*).
enum class SqState : uint8_t { RST = 0x0, RDY = 0x1, ERR = 0x3 };
const char* sq_state_name(uint8_t s) noexcept;
// wq.wq_type (MLX5_WQ_TYPE_CYCLIC).
inline constexpr uint8_t kWqTypeCyclic = 0x1;
// sqc.ts_format (MLX5_SQC_TIMESTAMP_FORMAT_*), and the HCA cap sq_ts_format
// it must agree with (MLX5_HCA_CAP_TIMESTAMP_FORMAT_*: 0 free running only,
// 1 real time only, 2 both).
enum class SqTsFormat : uint8_t { FREE_RUNNING = 0x0, DEFAULT = 0x1, REAL_TIME = 0x2 };
// The ts_format an SQ takes on a device whose cap is `cap` (DPDK's
// mlx5_ts_format_conv).
SqTsFormat sq_ts_format_for_cap(uint8_t cap) noexcept;
bool sq_ts_format_allowed(uint8_t cap, uint8_t ts_format) noexcept;

struct SqAttr {
    uint16_t uid = 0;
    bool flush_in_error_en = false;
    uint8_t min_wqe_inline_mode = 0;  // 3 bits
    uint8_t state = 0;                // 4 bits, SqState (CREATE: RST)
    uint8_t ts_format = 0;            // 2 bits, SqTsFormat
    uint32_t user_index = 0;          // 24 bits
    uint32_t cqn = 0;                 // 24 bits
    uint16_t tis_lst_sz = 0;
    uint32_t tis_num_0 = 0;           // 24 bits
    // wq
    uint8_t wq_type = 0;              // 4 bits
    uint32_t pd = 0;                  // 24 bits
    uint32_t uar_page = 0;            // 24 bits
    uint64_t dbr_addr = 0;            // offset of the doorbell record in dbr_umem_id
    uint8_t log_wq_stride = 0;        // 4 bits: 64-byte WQE basic blocks = 6
    uint8_t log_wq_pg_sz = 0;         // 5 bits: page shift - 12
    uint8_t log_wq_sz = 0;            // 5 bits: basic blocks in the ring
    bool dbr_umem_valid = false;
    bool wq_umem_valid = false;
    uint32_t dbr_umem_id = 0;
    uint32_t wq_umem_id = 0;
    uint64_t wq_umem_offset = 0;

    bool operator==(const SqAttr&) const = default;
};

// Fails naming the field when a value does not fit.
Result<void> encode_create_sq(const SqAttr& a, std::span<std::byte> in);
Result<SqAttr> decode_create_sq_in(std::span<const std::byte> in);
// First reserved field of create_sq_in (sqc included) holding a set bit, or empty.
std::string_view create_sq_in_nonzero_reserved(std::span<const std::byte> in);
void encode_create_sq_out(uint32_t sqn, std::span<std::byte> out);
Result<uint32_t> decode_create_sq_out(std::span<const std::byte> out);  // status checked

// MODIFY_SQ of the state only (modify_bitmask 0: the state is always
// modifiable): `from` is the SQ's current state, `to` the context's.
struct SqModify {
    uint32_t sqn = 0;
    uint8_t from = 0;  // SqState
    uint8_t to = 0;    // SqState
    bool operator==(const SqModify&) const = default;
};
Result<void> encode_modify_sq(const SqModify& m, std::span<std::byte> in);
Result<SqModify> decode_modify_sq_in(std::span<const std::byte> in);
// First reserved field of modify_sq_in, the bitmask and every sqc field but
// state included (a state-only modify), holding a set bit, or empty.
std::string_view modify_sq_in_nonzero_reserved(std::span<const std::byte> in);
void encode_modify_sq_out(std::span<std::byte> out);  // status OK
Result<void> decode_modify_sq_out(std::span<const std::byte> out);  // status checked

void encode_destroy_sq(uint32_t sqn, std::span<std::byte> in);
Result<uint32_t> decode_destroy_sq_in(std::span<const std::byte> in);

// ---- Send WQE ----------------------------------------------------------

inline constexpr size_t kWqeBasicBlock = 64;  // MLX5_SEND_WQE_BB
inline constexpr size_t kWqeSegment = 16;     // a ds unit (MLX5_WSEG_SIZE)
inline constexpr uint8_t kWqeOpcodeSend = 0x0a;  // MLX5_OPCODE_SEND
inline constexpr uint8_t kWqeCeCqeAlways = 0x2;  // fm_ce_se.ce: a CQE per WQE (MLX5_WQE_CTRL_CQ_UPDATE)
// The UAR page's send doorbell register: the WQE's first 8 bytes go there
// after the doorbell record (MLX5_BF_OFFSET; rdma-core's uar->reg_addr).
inline constexpr uint32_t kUarSendDoorbellOffset = 0x800;
// The doorbell record's send counter (MLX5_SND_DBR): be32 word 1.
inline constexpr size_t kSqDbrBytes = 8;
inline constexpr size_t kSqDbrSendCounter = 4;
// Smallest frame the Ethernet segment takes inline: destination, source
// and ethertype (a frame shorter than its header is malformed).
inline constexpr size_t kEthHeaderBytes = 14;
// The largest WQE (MLX5_WQE_SIZE_MAX: 60 segments).
inline constexpr uint8_t kMaxWqeDs = 60;

// The control segment: enough to find the WQE's extent and owner.
struct WqeCtrl {
    uint8_t opc_mod = 0;
    uint16_t wqe_index = 0;
    uint8_t opcode = 0;
    uint32_t sqn = 0;  // 24 bits
    uint8_t ds = 0;    // 16-byte segments in the WQE, the control one included
    uint8_t signature = 0;
    uint8_t fm = 0;
    uint8_t ce = 0;
    bool se = false;
    uint32_t imm = 0;
    bool operator==(const WqeCtrl&) const = default;
};
// Whole basic blocks a WQE of `ds` segments takes in the ring.
inline constexpr uint16_t wqe_basic_blocks(uint8_t ds) {
    return uint16_t((size_t(ds) * kWqeSegment + kWqeBasicBlock - 1) / kWqeBasicBlock);
}
// Segments of a SEND whose frame of `frame_bytes` is all inline.
uint8_t inline_send_ds(size_t frame_bytes);

// A SEND of `frame` inlined whole into the Ethernet segment, index
// `wqe_index` (the ring's counter), with a CQE when `signaled`. `out` holds
// whole basic blocks (wqe_basic_blocks(inline_send_ds(size)) of them):
// zero-padded past the frame. Fails for a frame shorter than an Ethernet
// header or longer than the largest WQE holds.
Result<void> encode_inline_send(uint16_t wqe_index, uint32_t sqn, bool signaled,
                                std::span<const std::byte> frame, std::span<std::byte> out);
// The control segment of a WQE (its first 16 bytes); reserved bits set are
// InvalidArgument naming the field.
Result<WqeCtrl> decode_wqe_ctrl(std::span<const std::byte> ctrl);

// A SEND read back: its control segment, the frame inlined in its Ethernet
// segment, and how many 16-byte segments follow the inline data (data
// segments: the emulator carries only inline frames).
struct InlineSend {
    WqeCtrl ctrl;
    std::vector<std::byte> frame;
    uint8_t trailing_ds = 0;
};
// `wqe` is the WQE's ds * 16 bytes, in order. InvalidArgument (naming what)
// for a WQE that is not a SEND, an Ethernet segment with reserved bits set
// (software parser, checksum, LSO or metadata fields), or inline data
// longer than its segments.
Result<InlineSend> decode_inline_send(std::span<const std::byte> wqe);

}  // namespace mlx5async::prm
