// A DevX backend the PMD loads at probe (emu=<spec> devargs): a shared
// library exporting one versioned C entry point, mlx5async_backend_entry(),
// that hands over its DevxApi table and the few hooks the driver uses
// beyond DevX. mlx5emu implements it (libmlx5emu.so); the PMD links none of
// it and names none of its types (core/backend.cpp loads it). Devices are
// addressed by the name the driver gives them at create_device.
//
// Every function is noexcept at the boundary: failures come back as -errno
// with a message in `err` (NUL-terminated, truncated to errlen).
#pragma once

#include <cstddef>
#include <cstdint>

#include "devx_api.hpp"

extern "C" {

// Bumped whenever the table below changes; the driver refuses another.
#define MLX5ASYNC_BACKEND_ABI 2

// Frames a virtq sent, as the backend's datapath saw them.
struct mlx5async_backend_frames {
    uint64_t arp;        // ARP frames
    uint64_t announces;  // of those, gratuitous: the guest announcing itself
    uint64_t oversize;   // longer than the port's MTU: dropped
};

// Frames the device sent to the network (its port's wire), by ethertype.
struct mlx5async_backend_wire {
    uint64_t frames, bytes;
    uint64_t rarp, arp, ipv4, ipv6, other;
    uint64_t pcap_errors;  // frames the wire's pcap file did not take
};

struct mlx5async_backend {
    uint32_t abi;      // MLX5ASYNC_BACKEND_ABI
    const char* name;  // "mlx5emu"
    const mlx5async::devx::DevxApi* devx;
    // Checks a device spec ("cx7,modify_us=0") as create_device will read it.
    int (*check_spec)(const char* spec, char* err, size_t errlen);
    // A device `name` (unused) from `spec`; opened through devx->get_device_list.
    int (*create_device)(const char* name, const char* spec, char* err, size_t errlen);
    void (*destroy_device)(const char* name);
    // What virtq object `obj_id` of device `name` sent (zeros when unknown).
    void (*frames)(const char* name, uint32_t obj_id, mlx5async_backend_frames* out);
    // `fn(arg, ring)` runs on the backend's datapath thread when a virtq of
    // `name` sends a gratuitous ARP; fn null stops the calls (none runs after
    // this returns).
    void (*watch_announces)(const char* name, void (*fn)(void* arg, uint16_t ring), void* arg);
    // What device `name` sent to the network (zeros when unknown).
    void (*wire)(const char* name, mlx5async_backend_wire* out);
};

// The backend's table for `abi`, or null when it implements another.
const mlx5async_backend* mlx5async_backend_entry(uint32_t abi);
typedef const mlx5async_backend* (*mlx5async_backend_entry_fn)(uint32_t abi);

}  // extern "C"
