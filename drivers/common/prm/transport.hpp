// Transport domain (ALLOC/DEALLOC_TRANSPORT_DOMAIN) and TIS
// (CREATE/DESTROY_TIS): the transport objects a virtq's TX side points to
// through tisn_or_qpn (as DPDK's mlx5 vDPA creates them at device open).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "../base/result.hpp"

namespace mlx5async::prm {

inline constexpr size_t kTransportCmdBytes = 16;  // alloc/dealloc TD, destroy TIS, outputs
inline constexpr size_t kCreateTisInBytes = 192;  // 32-byte header + 160-byte tisc

struct TisAttr {
    uint32_t transport_domain = 0;  // 24 bits
    uint32_t pd = 0;                // 24 bits
    uint32_t underlay_qpn = 0;      // 24 bits
    uint8_t prio = 0;               // 4 bits
    uint8_t lag_tx_port_affinity = 0;  // 4 bits
    bool strict_lag_tx_port_affinity = false;
    bool tls_en = false;

    bool operator==(const TisAttr&) const = default;
};

void encode_alloc_transport_domain(std::span<std::byte> in);
void encode_alloc_transport_domain_out(uint32_t td, std::span<std::byte> out);
Result<uint32_t> decode_alloc_transport_domain_out(std::span<const std::byte> out);
void encode_dealloc_transport_domain(uint32_t td, std::span<std::byte> in);
Result<uint32_t> decode_dealloc_transport_domain_in(std::span<const std::byte> in);

// Fails naming the field when a value does not fit.
Result<void> encode_create_tis(const TisAttr& a, std::span<std::byte> in);
Result<TisAttr> decode_create_tis_in(std::span<const std::byte> in);
// Name of the first reserved field of create_tis_in holding a set bit, or empty.
std::string_view create_tis_in_nonzero_reserved(std::span<const std::byte> in);
void encode_create_tis_out(uint32_t tisn, std::span<std::byte> out);
Result<uint32_t> decode_create_tis_out(std::span<const std::byte> out);
void encode_destroy_tis(uint32_t tisn, std::span<std::byte> in);
Result<uint32_t> decode_destroy_tis_in(std::span<const std::byte> in);

}  // namespace mlx5async::prm
