// The objects behind a virtq's interrupts in QP event mode (event_mode = QP,
// as Linux mlx5_vdpa and DPDK drivers/vdpa/mlx5/mlx5_vdpa_event.c use it):
// a completion queue (CREATE_CQ/DESTROY_CQ), a firmware-owned QP the virtq
// names in event_qpn_or_msix, and a driver-owned RC QP connected to it
// (CREATE_QP, RST2INIT/INIT2RTR/RTR2RTS, DESTROY_QP). Each interrupt is a
// message from the firmware QP that consumes one receive WQE of the driver
// QP and writes one CQE into the CQ; an armed CQ then raises a completion
// event (event 0) on the DevX event channel subscribed to it.
//
// Also the CQE, the doorbell records and the CQ arm doorbell. Typed attributes
// and both directions of each command: the driver encodes inputs and decodes
// outputs, the emulator the reverse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "../base/result.hpp"
#include "field.hpp"

namespace mlx5async::prm {

// Fixed parts of the inputs (without pas[]), from Linux mlx5_ifc.h; the codec
// tests check them against the layouts. qpc is 0x740 bits at 0xc0, so both
// QP inputs end at 0x880 (create_qp_in: wq_umem_* at 0x800..0x87f;
// transitions: reserved_at_800[0x80]).
inline constexpr size_t kCreateCqInBytes = 0x880 / 8;   // create_cq_in up to pas[]
inline constexpr size_t kCreateQpInBytes = 0x880 / 8;   // create_qp_in up to pas[]
inline constexpr size_t kQpModifyInBytes = 0x880 / 8;   // rst2init/init2rtr/rtr2rts_qp_in
inline constexpr size_t kEventQpCmdBytes = 16;          // outputs, destroy inputs

// ---- Completion queue --------------------------------------------------

struct CqAttr {
    uint16_t uid = 0;
    uint8_t cqe_sz = 0;          // 3 bits: 0 = 64-byte CQEs
    bool cc = false;             // collapsed: every CQE is written at index 0 (DPDK use_first_only)
    bool oi = false;             // overrun ignore
    uint8_t log_cq_size = 0;     // 5 bits
    uint32_t uar_page = 0;       // 24 bits: UAR page of the arm doorbell
    uint32_t c_eqn = 0;          // completion EQ (mlx5dv_devx_query_eqn); Linux
                                 // c_eqn_or_apu_element, 32 bits (DPDK: c_eqn, low 8)
    uint8_t log_page_size = 0;   // 5 bits: page shift - 12
    bool dbr_umem_valid = false;
    uint32_t dbr_umem_id = 0;
    uint64_t dbr_addr = 0;       // offset of the doorbell record in dbr_umem_id
    bool cq_umem_valid = false;
    uint32_t cq_umem_id = 0;
    uint64_t cq_umem_offset = 0;

    bool operator==(const CqAttr&) const = default;
};

// Fails naming the field when a value does not fit.
Result<void> encode_create_cq(const CqAttr& a, std::span<std::byte> in);
Result<CqAttr> decode_create_cq_in(std::span<const std::byte> in);
// First reserved field of create_cq_in (cqc included) holding a set bit, or empty.
std::string_view create_cq_in_nonzero_reserved(std::span<const std::byte> in);
void encode_create_cq_out(uint32_t cqn, std::span<std::byte> out);
Result<uint32_t> decode_create_cq_out(std::span<const std::byte> out);  // status checked
void encode_destroy_cq(uint32_t cqn, std::span<std::byte> in);
Result<uint32_t> decode_destroy_cq_in(std::span<const std::byte> in);

// ---- Queue pair --------------------------------------------------------

enum class QpServiceType : uint8_t { RC = 0x0 };
enum class QpPmState : uint8_t { MIGRATED = 0x3 };
enum class QpRqType : uint8_t { REGULAR = 0x0, ZERO_LEN = 0x3 };
// qpc.state
enum class QpState : uint8_t { RST = 0x0, INIT = 0x1, RTR = 0x2, RTS = 0x3, ERR = 0x6 };

struct QpAttr {
    uint16_t uid = 0;
    uint8_t st = 0;              // 8 bits, QpServiceType
    uint8_t pm_state = 0;        // 2 bits, QpPmState
    uint32_t pd = 0;             // 24 bits
    uint8_t ts_format = 0;       // 2 bits
    uint8_t log_rq_stride = 0;   // 3 bits: stride = 16 << n bytes
    uint8_t log_rq_size = 0;     // 4 bits
    uint8_t rq_type = 0;         // 3 bits, QpRqType
    bool no_sq = false;
    uint8_t log_sq_size = 0;     // 4 bits
    uint32_t uar_page = 0;       // 24 bits
    uint8_t log_page_size = 0;   // 5 bits
    uint32_t cqn_snd = 0;        // 24 bits
    uint32_t cqn_rcv = 0;        // 24 bits
    bool dbr_umem_valid = false;
    uint32_t dbr_umem_id = 0;
    uint64_t dbr_addr = 0;       // offset of the doorbell record in dbr_umem_id
    bool wq_umem_valid = false;
    uint32_t wq_umem_id = 0;
    uint64_t wq_umem_offset = 0;

    bool operator==(const QpAttr&) const = default;
};

Result<void> encode_create_qp(const QpAttr& a, std::span<std::byte> in);
Result<QpAttr> decode_create_qp_in(std::span<const std::byte> in);
std::string_view create_qp_in_nonzero_reserved(std::span<const std::byte> in);
void encode_create_qp_out(uint32_t qpn, std::span<std::byte> out);
Result<uint32_t> decode_create_qp_out(std::span<const std::byte> out);
void encode_destroy_qp(uint32_t qpn, std::span<std::byte> in);
Result<uint32_t> decode_destroy_qp_in(std::span<const std::byte> in);

// The fields that name what earlier commands made, for a chain that fills
// them when the command is issued (devx::Command::ids_from): a CQ's umem,
// a QP's CQ and umem, a transition's QP and its peer.
struct CqUmemFields {
    Field dbr_umem_id, cq_umem_id;
};
CqUmemFields create_cq_umem_fields();
struct QpMadeFields {
    Field cqn_rcv, cqn_snd, dbr_umem_id, wq_umem_id;
};
QpMadeFields create_qp_made_fields();
struct QpModifyMadeFields {
    Field qpn, remote_qpn;
};
QpModifyMadeFields qp_modify_made_fields();

// The three state transitions that connect an RC QP (one opcode each).
enum class QpTransition : uint16_t { RST2INIT = 0x502, INIT2RTR = 0x503, RTR2RTS = 0x504 };
const char* qp_transition_name(QpTransition t) noexcept;

// The qpc fields these transitions carry (the rest of the qpc is zero).
struct QpModify {
    QpTransition transition = QpTransition::RST2INIT;
    uint32_t qpn = 0;              // 24 bits, the QP modified
    uint32_t remote_qpn = 0;       // 24 bits, INIT2RTR: the peer
    uint8_t mtu = 0;               // 3 bits, INIT2RTR (ib mtu enum, 1 = 256)
    uint8_t log_msg_max = 0;       // 5 bits, INIT2RTR
    uint8_t min_rnr_nak = 0;       // 5 bits, INIT2RTR
    uint8_t vhca_port_num = 0;     // 8 bits, primary_address_path, RST2INIT
    bool fl = false;               // primary_address_path.fl (force loopback), INIT2RTR
    uint8_t retry_count = 0;       // 3 bits, RTR2RTS
    uint8_t rnr_retry = 0;         // 3 bits, RTR2RTS

    bool operator==(const QpModify&) const = default;
};

Result<void> encode_qp_modify(const QpModify& m, std::span<std::byte> in);
// Reads the transition from the opcode (BAD: not one of the three).
Result<QpModify> decode_qp_modify_in(std::span<const std::byte> in);
void encode_qp_modify_out(std::span<std::byte> out);  // status OK, syndrome 0
Result<void> decode_qp_modify_out(std::span<const std::byte> out);  // status checked

// ---- CQE, doorbell records, arm doorbell -------------------------------

inline constexpr size_t kCqeBytes = 64;
// op_own >> 4 (Linux MLX5_CQE_*).
enum class CqeOpcode : uint8_t { REQ = 0x0, RESP_SEND = 0x2, REQ_ERR = 0xd, RESP_ERR = 0xe, INVALID = 0xf };

// Error CQE syndromes (Linux MLX5_CQE_SYNDROME_*).
enum class CqeSyndrome : uint8_t { LOCAL_LENGTH_ERR = 0x01, LOCAL_QP_OP_ERR = 0x02, WR_FLUSH_ERR = 0x05 };

struct Cqe {
    uint32_t byte_cnt = 0;     // byte 44, be32
    uint8_t vendor_err_synd = 0;  // byte 54 (error CQEs)
    uint8_t syndrome = 0;      // byte 55 (error CQEs), CqeSyndrome
    uint32_t qpn = 0;          // 24 bits of byte 56, be32 (sop_drop_qpn)
    uint16_t wqe_counter = 0;  // byte 60, be16
    uint8_t signature = 0;     // byte 62
    uint8_t opcode = 0;        // high nibble of byte 63, CqeOpcode
    bool owner = false;        // bit 0 of byte 63
    bool operator==(const Cqe&) const = default;
};
void encode_cqe(const Cqe& c, std::span<std::byte, kCqeBytes> out);  // other bytes zeroed
Cqe decode_cqe(std::span<const std::byte, kCqeBytes> in);

// CQ doorbell record: two be32 words, [0] consumer index (24 bits), [1] arm word.
inline constexpr size_t kCqDbrBytes = 8;
// QP doorbell record: [0] receive counter (16 bits), [1] send counter.
inline constexpr size_t kQpDbrBytes = 8;
// The CQ doorbell register of a UAR page: be64 (arm word << 32 | cqn).
inline constexpr uint32_t kUarCqDoorbellOffset = 0x20;

enum class CqArmCmd : uint8_t { NEXT = 0x0, SOLICITED = 0x1 };
struct CqArm {
    uint8_t sn = 0;   // 2 bits, incremented by the driver after each event
    CqArmCmd cmd = CqArmCmd::NEXT;
    uint32_t ci = 0;  // 24 bits
    bool operator==(const CqArm&) const = default;
};
// sn << 28 | cmd << 24 | ci (host order; stored big-endian in record and register).
uint32_t cq_arm_word(const CqArm& a);
CqArm decode_cq_arm_word(uint32_t w);
// The value written to the UAR register (host order; stored big-endian).
inline constexpr uint64_t cq_uar_doorbell(uint32_t arm_word, uint32_t cqn) {
    return (uint64_t(arm_word) << 32) | (cqn & 0xffffff);
}

// Completion event (Linux MLX5_EVENT_TYPE_COMP) and its EQE: type at byte 1,
// data.comp.cqn (be32, 24 bits) at byte 56.
inline constexpr uint16_t kEventCompletion = 0x00;
inline constexpr size_t kEqeCompCqnOffset = 56;

}  // namespace mlx5async::prm
