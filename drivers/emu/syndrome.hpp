// Syndromes the emulated firmware returns, one per validation rule, so a test
// (and a log line) tells which rule fired. Real syndromes are opaque 32-bit
// values; ours share the prefix 0x0e3 ("emu") and are distinct.
#pragma once

#include <cstdint>

namespace mlx5async::emu::syndrome {

inline constexpr uint32_t kBadOpcode = 0x0e300001;           // BAD_OP_ERR
inline constexpr uint32_t kBadObjType = 0x0e300002;          // BAD_PARAM_ERR
inline constexpr uint32_t kInLenShort = 0x0e300003;          // BAD_INP_LEN_ERR
inline constexpr uint32_t kOutLenShort = 0x0e300004;         // BAD_OUTP_LEN_ERR
inline constexpr uint32_t kReservedNonZero = 0x0e300005;     // BAD_PARAM_ERR
inline constexpr uint32_t kHdrReservedNonZero = 0x0e300006;  // BAD_PARAM_ERR (op_param)
inline constexpr uint32_t kBadOpMod = 0x0e300007;            // BAD_PARAM_ERR (QUERY_HCA_CAP)
inline constexpr uint32_t kDecodeFailed = 0x0e300008;        // BAD_PARAM_ERR (value the codec rejects)
inline constexpr uint32_t kOtherVport = 0x0e300009;          // BAD_PARAM_ERR (another function's vport)
// umem_N too small: kUmemTooSmall + N-1; offset+size past the registration: kUmemRange + N-1.
inline constexpr uint32_t kUmemTooSmall = 0x0e300010;
inline constexpr uint32_t kUmemRange = 0x0e300014;
inline constexpr uint32_t kQueueIndexRange = 0x0e300020;    // BAD_PARAM_ERR
inline constexpr uint32_t kQueueSizeZero = 0x0e300021;      // BAD_PARAM_ERR
inline constexpr uint32_t kQueueSizeNotPow2 = 0x0e300022;   // BAD_PARAM_ERR
inline constexpr uint32_t kQueueTypeUnsupported = 0x0e300023;
inline constexpr uint32_t kEventModeUnsupported = 0x0e300024;
inline constexpr uint32_t kCreateStateNotInit = 0x0e300025;
inline constexpr uint32_t kDescGroupMkeyUnsupported = 0x0e300026;
inline constexpr uint32_t kUnknownModifyBits = 0x0e300030;  // BAD_PARAM_ERR
inline constexpr uint32_t kBadStateValue = 0x0e300031;      // BAD_PARAM_ERR (state > 3)
// BAD_RES_STATE_ERR family.
inline constexpr uint32_t kIllegalTransition = 0x0e300040;
inline constexpr uint32_t kFreezeToRdyUnsupported = 0x0e300041;
inline constexpr uint32_t kStateIsErr = 0x0e300042;
inline constexpr uint32_t kFieldsOutsideInitSuspend = 0x0e300043;
// BAD_RES_ERR: unknown id of a kind: kUnknownObject + Kind.
inline constexpr uint32_t kUnknownObject = 0x0e300050;
// RES_BUSY: object pinned by another.
inline constexpr uint32_t kObjectInUse = 0x0e300060;
inline constexpr uint32_t kTableFull = 0x0e300061;  // LIM_ERR
// Memory keys (CREATE_MKEY) and virtq rings through virtio_q_mkey.
inline constexpr uint32_t kMkeyAccessMode = 0x0e300070;     // BAD_PARAM_ERR: not MTT/KLM
inline constexpr uint32_t kMkeyLenZero = 0x0e300071;        // BAD_PARAM_ERR
inline constexpr uint32_t kMkeyRangeOverflow = 0x0e300072;  // start_addr + len wraps
inline constexpr uint32_t kMkeyUmemRange = 0x0e300074;      // umem_offset + len past the umem
inline constexpr uint32_t kMkeyPageSize = 0x0e300075;       // log_page_size < 12
inline constexpr uint32_t kMkeyTranslations = 0x0e300076;   // too few MTT octwords for len
inline constexpr uint32_t kMkeyUmemWithKlm = 0x0e300077;    // KLM with mkey_umem_valid
inline constexpr uint32_t kMkeyKlmEmpty = 0x0e300078;       // KLM with no entries
inline constexpr uint32_t kMkeyKlmInLen = 0x0e300079;       // BAD_INP_LEN_ERR: entries past inlen
inline constexpr uint32_t kMkeyKlmZero = 0x0e30007a;        // entry byte_count 0
inline constexpr uint32_t kMkeyKlmIndirect = 0x0e30007b;    // entry names an indirect mkey
inline constexpr uint32_t kMkeyKlmRange = 0x0e30007c;       // entry outside its mkey
inline constexpr uint32_t kMkeyKlmLength = 0x0e30007d;      // entries do not sum to len
inline constexpr uint32_t kMkeyKlmUnknown = 0x0e30007e;     // BAD_RES_ERR: entry mkey unknown
inline constexpr uint32_t kVirtqMkeyUnknown = 0x0e300080;   // BAD_PARAM_ERR
// Ring area not translatable through virtio_q_mkey: + 0 desc, 1 avail (driver), 2 used (device).
inline constexpr uint32_t kVirtqRingUntranslated = 0x0e300081;
// Commands flushed when the device closed (async completions).
inline constexpr uint32_t kFlushed = 0x0e3000f0;

// Transport domain / TIS (handlers_transport.cpp) and the virtq's tisn.
inline constexpr uint32_t kTisUnknownTd = 0x0e300090;      // BAD_PARAM_ERR
inline constexpr uint32_t kTisUnknownPd = 0x0e300091;      // BAD_PARAM_ERR
inline constexpr uint32_t kVirtqTisUnknown = 0x0e300092;   // BAD_PARAM_ERR

// Dirty bitmap of a virtq (MODIFY with DIRTY_BITMAP_PARAMS).
inline constexpr uint32_t kVirtqDirtyMkeyUnknown = 0x0e300093;  // BAD_PARAM_ERR: not an mkey of the context
inline constexpr uint32_t kVirtqDirtyBitmapRange = 0x0e300094;  // BAD_PARAM_ERR: [addr, +size) not in the mkey

// Event QP mode of a virtq (event_mode QP: event_qpn_or_msix).
inline constexpr uint32_t kVirtqEventQpUnknown = 0x0e300095;    // BAD_PARAM_ERR: no QP of this context
inline constexpr uint32_t kVirtqEventQpNotFirmware = 0x0e300096; // BAD_PARAM_ERR: not a ZERO_LEN-RQ QP
inline constexpr uint32_t kVirtqEventQpOtherPd = 0x0e300097;    // BAD_PARAM_ERR: QP of another PD

// CREATE_CQ (handlers_event_qp.cpp).
inline constexpr uint32_t kCqCqeSize = 0x0e3000a0;      // BAD_PARAM_ERR: cqe_sz not 64 bytes (0)
inline constexpr uint32_t kCqLogSize = 0x0e3000a1;      // BAD_PARAM_ERR: log_cq_size > 22
inline constexpr uint32_t kCqNoUmem = 0x0e3000a2;       // BAD_PARAM_ERR: cq/dbr umem_valid not set (no PAS here)
inline constexpr uint32_t kCqUmemUnknown = 0x0e3000a3;  // BAD_RES_ERR: cq_umem_id unknown or another context's
inline constexpr uint32_t kCqUmemRange = 0x0e3000a4;    // BAD_PARAM_ERR: 64 << log_cq_size bytes past the umem
inline constexpr uint32_t kCqDbrUmemUnknown = 0x0e3000a5;  // BAD_RES_ERR
inline constexpr uint32_t kCqDbrRange = 0x0e3000a6;     // BAD_PARAM_ERR: dbr_addr + 8 past the umem
inline constexpr uint32_t kCqDbrAlign = 0x0e3000a7;     // BAD_PARAM_ERR: record not 8-byte aligned
inline constexpr uint32_t kCqBadUar = 0x0e3000a8;       // BAD_PARAM_ERR: uar_page not a UAR of the context
inline constexpr uint32_t kCqBadEqn = 0x0e3000a9;       // BAD_PARAM_ERR: c_eqn not a completion EQ
inline constexpr uint32_t kCqBufAlign = 0x0e3000aa;     // BAD_PARAM_ERR: CQE buffer not 64-byte aligned

// CREATE_QP.
inline constexpr uint32_t kQpServiceType = 0x0e3000b0;  // BAD_PARAM_ERR: st not RC
inline constexpr uint32_t kQpRqType = 0x0e3000b1;       // BAD_PARAM_ERR: rq_type not REGULAR/ZERO_LEN
inline constexpr uint32_t kQpFirmwareShape = 0x0e3000b2;  // BAD_PARAM_ERR: ZERO_LEN QP with SQ/CQ/UAR/umem
inline constexpr uint32_t kQpSqUnsupported = 0x0e3000b3;  // BAD_PARAM_ERR: a send queue (no_sq 0)
inline constexpr uint32_t kQpBadUar = 0x0e3000b4;       // BAD_PARAM_ERR: uar_page not a UAR of the context
inline constexpr uint32_t kQpBadCq = 0x0e3000b5;        // BAD_PARAM_ERR: cqn_rcv/cqn_snd not a CQ of the context
inline constexpr uint32_t kQpNoUmem = 0x0e3000b6;       // BAD_PARAM_ERR: wq/dbr umem_valid not set
inline constexpr uint32_t kQpUmemUnknown = 0x0e3000b7;  // BAD_RES_ERR: wq_umem_id unknown or another context's
inline constexpr uint32_t kQpUmemRange = 0x0e3000b8;    // BAD_PARAM_ERR: RQ (stride << log_rq_size) past the umem
inline constexpr uint32_t kQpDbrUmemUnknown = 0x0e3000b9;  // BAD_RES_ERR
inline constexpr uint32_t kQpDbrRange = 0x0e3000ba;     // BAD_PARAM_ERR: dbr_addr + 8 past the umem
inline constexpr uint32_t kQpDbrAlign = 0x0e3000bb;     // BAD_PARAM_ERR: record not 8-byte aligned
inline constexpr uint32_t kQpBadPd = 0x0e3000bc;        // BAD_RES_ERR: pd unknown or another context's

// QP transitions (RST2INIT / INIT2RTR / RTR2RTS).
inline constexpr uint32_t kQpBadState = 0x0e3000c0;         // BAD_RES_STATE_ERR: QP not in the transition's source state
inline constexpr uint32_t kQpRemoteUnknown = 0x0e3000c1;    // BAD_PARAM_ERR: remote_qpn names no QP
inline constexpr uint32_t kQpRemoteOtherContext = 0x0e3000c2;  // BAD_PARAM_ERR
inline constexpr uint32_t kQpRemoteOtherPd = 0x0e3000c3;    // BAD_PARAM_ERR
inline constexpr uint32_t kQpRemoteSelf = 0x0e3000c4;       // BAD_PARAM_ERR: remote_qpn is the QP itself

// CREATE_SQ / MODIFY_SQ (handlers_sq.cpp).
inline constexpr uint32_t kSqCreateNotRst = 0x0e3000d0;   // BAD_PARAM_ERR: sqc.state not RST at create
inline constexpr uint32_t kSqWqType = 0x0e3000d1;         // BAD_PARAM_ERR: wq_type not cyclic
inline constexpr uint32_t kSqStride = 0x0e3000d2;         // BAD_PARAM_ERR: log_wq_stride not 6 (64-byte blocks)
inline constexpr uint32_t kSqLogSize = 0x0e3000d3;        // BAD_PARAM_ERR: log_wq_sz past log_max_wq_sz
inline constexpr uint32_t kSqTis = 0x0e3000d4;            // BAD_PARAM_ERR: not one TIS of the context
inline constexpr uint32_t kSqBadCq = 0x0e3000d5;          // BAD_PARAM_ERR: cqn not a (non-collapsed) CQ of the context
inline constexpr uint32_t kSqBadPd = 0x0e3000d6;          // BAD_RES_ERR: pd unknown or another context's
inline constexpr uint32_t kSqBadUar = 0x0e3000d7;         // BAD_PARAM_ERR: uar_page not a UAR of the context
inline constexpr uint32_t kSqNoUmem = 0x0e3000d8;         // BAD_PARAM_ERR: wq/dbr umem_valid not set
inline constexpr uint32_t kSqUmemUnknown = 0x0e3000d9;    // BAD_RES_ERR: wq_umem_id unknown or another context's
inline constexpr uint32_t kSqUmemRange = 0x0e3000da;      // BAD_PARAM_ERR: ring past the umem
inline constexpr uint32_t kSqRingAlign = 0x0e3000db;      // BAD_PARAM_ERR: ring not 64-byte aligned
inline constexpr uint32_t kSqDbrUmemUnknown = 0x0e3000dc; // BAD_RES_ERR
inline constexpr uint32_t kSqDbrRange = 0x0e3000dd;       // BAD_PARAM_ERR: dbr_addr + 8 past the umem
inline constexpr uint32_t kSqDbrAlign = 0x0e3000de;       // BAD_PARAM_ERR: record not 8-byte aligned
inline constexpr uint32_t kSqTsFormat = 0x0e3000df;       // BAD_PARAM_ERR: ts_format the cap sq_ts_format refuses
inline constexpr uint32_t kSqBadState = 0x0e3000e0;       // BAD_RES_STATE_ERR: sq_state is not the SQ's state
inline constexpr uint32_t kSqIllegalTransition = 0x0e3000e1;  // BAD_PARAM_ERR: not RST->RDY, RDY->ERR/RST, ERR->RST

}  // namespace mlx5async::emu::syndrome
