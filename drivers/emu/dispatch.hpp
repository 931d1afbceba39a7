// The firmware's command dispatcher: a table from (opcode, obj_type) to a
// handler. Each handler checks inlen, decodes with the PRM codec, validates,
// calls the store or the FSM, and encodes its output; a rejected command
// leaves every object unchanged and answers a PRM status + syndrome.
#pragma once

#include <cstdint>
#include <span>

#include "common/base/result.hpp"
#include "state.hpp"

namespace mlx5async::emu {

struct Mailbox {
    std::span<const std::byte> in;
    std::span<std::byte> out;  // at least 16 bytes (the API layer checks)
    uint32_t ctx = 0;          // creating context
    uint32_t created_id = 0;   // set by CREATE handlers
};

using Handler = Result<void> (*)(DeviceState&, Mailbox&);

inline constexpr uint16_t kAnyObjType = 0xffff;

struct Route {
    uint16_t opcode;
    uint16_t obj_type;  // kAnyObjType for non general-object commands
    Handler fn;
};

// Status and syndrome written into out (status OK on success). Takes st.mu.
struct DispatchResult {
    uint8_t status = 0;
    uint32_t syndrome = 0;
};
DispatchResult dispatch(DeviceState& st, Mailbox& m);

// Writes a failing output header (the rest of out zeroed).
void write_failure(std::span<std::byte> out, uint8_t status, uint32_t syndrome);

// Handlers (handlers_*.cpp).
Result<void> h_query_hca_cap(DeviceState&, Mailbox&);
Result<void> h_create_virtq(DeviceState&, Mailbox&);
Result<void> h_modify_virtq(DeviceState&, Mailbox&);
Result<void> h_query_virtq(DeviceState&, Mailbox&);
Result<void> h_destroy_virtq(DeviceState&, Mailbox&);
Result<void> h_create_counters(DeviceState&, Mailbox&);
Result<void> h_query_counters(DeviceState&, Mailbox&);
Result<void> h_destroy_counters(DeviceState&, Mailbox&);
Result<void> h_create_mkey(DeviceState&, Mailbox&);
Result<void> h_destroy_mkey(DeviceState&, Mailbox&);
Result<void> h_query_special_contexts(DeviceState&, Mailbox&);
Result<void> h_query_nic_vport_context(DeviceState&, Mailbox&);
Result<void> h_alloc_transport_domain(DeviceState&, Mailbox&);
Result<void> h_dealloc_transport_domain(DeviceState&, Mailbox&);
Result<void> h_create_tis(DeviceState&, Mailbox&);
Result<void> h_destroy_tis(DeviceState&, Mailbox&);
Result<void> h_create_cq(DeviceState&, Mailbox&);
Result<void> h_destroy_cq(DeviceState&, Mailbox&);
Result<void> h_create_qp(DeviceState&, Mailbox&);
Result<void> h_destroy_qp(DeviceState&, Mailbox&);
Result<void> h_modify_qp(DeviceState&, Mailbox&);  // RST2INIT / INIT2RTR / RTR2RTS
Result<void> h_create_sq(DeviceState&, Mailbox&);
Result<void> h_modify_sq(DeviceState&, Mailbox&);
Result<void> h_destroy_sq(DeviceState&, Mailbox&);

// Shared checks.
Result<void> check_general_obj_hdr(std::span<const std::byte> in);
// Destroys a virtq, unpinning what it holds (also used by context close).
void remove_virtq(DeviceState& st, uint32_t id);
// Destroys an mkey, unpinning what it holds (also used by context close).
void remove_mkey(DeviceState& st, uint32_t id);
// Destroy a CQ / QP, unpinning what it holds (also used by context close).
void remove_cq(DeviceState& st, uint32_t cqn);
void remove_qp(DeviceState& st, uint32_t qpn);
void remove_sq(DeviceState& st, uint32_t sqn);

}  // namespace mlx5async::emu
