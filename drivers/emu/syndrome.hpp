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

}  // namespace mlx5async::emu::syndrome
