// QUERY_NIC_VPORT_CONTEXT: what the function's NIC vport holds, of which
// the driver reads the MTU (as Linux mlx5_vnet's query_mtu: the port's
// hardware MTU, Ethernet header, VLAN tag and FCS included).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "../base/result.hpp"

namespace mlx5async::prm {

inline constexpr size_t kQueryNicVportContextInBytes = 16;
inline constexpr size_t kQueryNicVportContextOutBytes = 272;

// Ethernet header (14), one VLAN tag (4) and the FCS (4): the port's
// hardware MTU minus this is the largest IP packet (Linux MLX5V_ETH_HARD_MTU).
inline constexpr uint16_t kEthHardMtuOverhead = 22;

struct NicVportContext {
    uint16_t mtu = 0;  // hardware MTU (bytes on the wire, FCS included)
    uint64_t permanent_mac = 0;  // 48 bits
};

// Of the function's own vport (other_vport 0).
void encode_query_nic_vport_context(std::span<std::byte> in);
void encode_query_nic_vport_context_out(const NicVportContext& c, std::span<std::byte> out);
Result<NicVportContext> decode_query_nic_vport_context_out(std::span<const std::byte> out);
// The emulator: the vport the input names (0: the caller's own), or
// InvalidArgument naming the first reserved field holding a set bit.
Result<uint16_t> decode_query_nic_vport_context_in(std::span<const std::byte> in, bool& other_vport);

}  // namespace mlx5async::prm
