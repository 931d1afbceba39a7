// The driver's hooks on a connection's vhost-user messages
// (rte_vhost_extern_callback_register). DPDK 22.11 tells a vDPA driver of
// SET_FEATURES through set_features, whose result it ignores, and of
// SET_LOG_BASE not at all. After each message of the connection the device
// serves, the hook:
// - answers a SET_FEATURES that asks for LOG_ALL with a failure while the
//   device is not logging (the REPLY_ACK carries 1; without REPLY_ACK vhost
//   closes the connection): a frontend must never migrate with the pages
//   the device writes unlogged;
// - moves the device to the log a SET_LOG_BASE mapped while LOG_ALL is on,
//   before vhost reads the next message; a log it cannot register fails
//   the message, which closes the connection, for the same reason.
// The hooks are registered at the driver's first callback that names the
// connection's vid. An application that registers its own extern callbacks
// for a vid replaces them (doc/guides/mlx5async.md, "Known gaps").
#pragma once

#include "common/base/result.hpp"
#include "vdpa/mlx5async/core/device.hpp"

namespace mlx5async::pmd {

void watch_messages(int vid);

// vhost's current log of `vid` (LOG_ALL on). On vhost's thread (a vDPA op or
// a hook): no SET_LOG_BASE runs meanwhile.
Result<core::DirtyLog> vhost_dirty_log(int vid);

}  // namespace mlx5async::pmd
