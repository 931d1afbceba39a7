// The device's accesses to host memory that a frontend can take away under
// it. A umem registration pins its pages (ib_umem_get): the kernel keeps
// them for the device whatever the process does, even when the frontend
// truncates the memfd behind guest memory or the vhost log. The emulator
// cannot pin: it reaches those pages through a mapping of the file, and a
// page past a truncated file's end is SIGBUS. Every datapath access to
// registered memory therefore runs guarded: a SIGBUS inside it makes the
// access fail (the virtq goes to ERR, error_type kHostFault), never the
// process. A SIGBUS outside a guarded access goes to the disposition the
// process had before (the application's handler, or the default).
//
// The handler is installed on first use and stays; an application that
// installs its own SIGBUS handler afterwards without chaining to it loses
// the guard (the access then faults as it would without the emulator).
#pragma once

#include <atomic>
#include <csetjmp>
#include <cstddef>
#include <cstdint>

namespace mlx5async::emu::dp {

namespace host_access_detail {
// Set while this thread runs a guarded access (the handler jumps to it).
extern thread_local sigjmp_buf* t_guard;
void install_handler();
// The signal mask of the faulting access, as the handler found it: a
// handler that runs with signals blocked (a sanitizer's wrapper blocks them
// all) would otherwise leave them blocked after the jump.
void restore_mask_after_fault();
}  // namespace host_access_detail

// Runs f() (memory accesses only: no objects with destructors, no locks,
// no allocation: a fault skips the rest of it). False when it faulted.
template <typename F>
bool guarded(F&& f) {
    host_access_detail::install_handler();
    sigjmp_buf jb;
    // No mask saved here (that is a system call per access): a fault
    // restores the mask it interrupted, from the handler's context.
    if (sigsetjmp(jb, 0) != 0) {
        host_access_detail::t_guard = nullptr;
        host_access_detail::restore_mask_after_fault();
        return false;
    }
    host_access_detail::t_guard = &jb;
    // The handler runs on this thread: the accesses stay between the stores.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    f();
    std::atomic_signal_fence(std::memory_order_seq_cst);
    host_access_detail::t_guard = nullptr;
    return true;
}

// memcpy that fails instead of faulting.
bool guarded_copy(void* dst, const void* src, size_t len);

// An atomic or into one byte of memory another process reads and clears
// concurrently (the vhost log); false when it faulted.
bool guarded_fetch_or(uint8_t* byte, uint8_t bits);

// SIGBUS caught in guarded accesses since the process started (tests).
uint64_t host_faults();

}  // namespace mlx5async::emu::dp
