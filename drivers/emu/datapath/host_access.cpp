#include "host_access.hpp"

#include <pthread.h>
#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace mlx5async::emu::dp {
namespace host_access_detail {

thread_local sigjmp_buf* t_guard = nullptr;

namespace {
thread_local sigset_t t_fault_mask;
}  // namespace

namespace {

struct sigaction g_previous {};
std::atomic<uint64_t> g_faults{0};

void on_sigbus(int sig, siginfo_t* info, void* uctx) {
    if (sigjmp_buf* jb = t_guard) {
        g_faults.fetch_add(1, std::memory_order_relaxed);
        t_fault_mask = static_cast<ucontext_t*>(uctx)->uc_sigmask;
        siglongjmp(*jb, 1);
    }
    // Not the device's access: what the process had before.
    if (g_previous.sa_flags & SA_SIGINFO) {
        g_previous.sa_sigaction(sig, info, uctx);
        return;
    }
    if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
        return;
    }
    // Default (or ignored, which a fault cannot be): the access is retried
    // on return and faults again under the default disposition.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGBUS, &dfl, nullptr);
}

}  // namespace

void install_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa {};
        sa.sa_sigaction = on_sigbus;
        // SIGBUS stays unblocked in the handler: a fault inside it is not
        // fatal while the guard restores the mask.
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, &g_previous);
    });
}

void restore_mask_after_fault() { pthread_sigmask(SIG_SETMASK, &t_fault_mask, nullptr); }

}  // namespace host_access_detail

bool guarded_copy(void* dst, const void* src, size_t len) {
    return guarded([&] { std::memcpy(dst, src, len); });
}

// Not instrumented by TSan: its atomics run inside its runtime, where a
// SIGBUS is fatal whatever the handler, and the byte is another process's
// memory, which it cannot reason about anyway.
bool guarded_fetch_or(uint8_t* byte, uint8_t bits) {
    return guarded([byte, bits]() __attribute__((no_sanitize("thread"))) {
        __atomic_fetch_or(byte, bits, __ATOMIC_RELAXED);
    });
}

uint64_t host_faults() { return host_access_detail::g_faults.load(std::memory_order_relaxed); }

}  // namespace mlx5async::emu::dp
