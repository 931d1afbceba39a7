// The driver's hooks on a connection's vhost-user messages
// (rte_vhost_extern_callback_register). DPDK 22.11 tells a vDPA driver of
// SET_FEATURES through set_features, whose result it ignores, and of
// SET_LOG_BASE not at all. Before each message of any connection to the
// driver's devices, a hook refuses a SET_MEM_TABLE with a region whose
// file is shorter than the range vhost maps from it: vhost would touch the
// pages past its end (SIGBUS) before the driver hears of the memory.
// After each message of the connection the device serves, a hook:
// - answers a SET_FEATURES that asks for LOG_ALL with a failure while the
//   device is not logging (the REPLY_ACK carries 1; without REPLY_ACK vhost
//   closes the connection): a frontend must never migrate with the pages
//   the device writes unlogged;
// - moves the device to the log a SET_LOG_BASE mapped while LOG_ALL is on,
//   before vhost reads the next message; a log it cannot register fails
//   the message, which closes the connection, for the same reason;
// - tells the device of a SET_VRING_BASE (Device::frontend_set_base): the
//   ring's next start is from the frontend's base, not the device's own.
// The hooks are registered when the connection is made: by the driver on
// its own sockets (vhost_socket), by an application's new_connection op
// through rte_pmd_mlx5async_watch_connection, and otherwise at the
// driver's first callback that names the vid. An application that
// registers its own extern callbacks for a vid replaces them
// (doc/guides/mlx5async.md, "Known gaps").
#pragma once

#include "common/base/result.hpp"
#include "vdpa/mlx5async/core/device.hpp"

namespace mlx5async::pmd {

void watch_messages(int vid);

// vhost_socket's notify ops: the hooks from the connection's first message.
int watch_new_connection(int vid) noexcept;

// vhost's current log of `vid` (LOG_ALL on). On vhost's thread (a vDPA op or
// a hook): no SET_LOG_BASE runs meanwhile.
Result<core::DirtyLog> vhost_dirty_log(int vid);

}  // namespace mlx5async::pmd
