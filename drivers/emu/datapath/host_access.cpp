#include "host_access.hpp"

#include <signal.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace mlx5async::emu::dp {
namespace host_access_detail {

thread_local sigjmp_buf* t_guard = nullptr;

namespace {

struct sigaction g_previous {};
std::atomic<uint64_t> g_faults{0};

void on_sigbus(int sig, siginfo_t* info, void* uctx) {
    if (sigjmp_buf* jb = t_guard) {
        g_faults.fetch_add(1, std::memory_order_relaxed);
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
        // SIGBUS stays unblocked in the handler, so the jump out of it
        // needs no signal mask restored (no system call per access).
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, &g_previous);
    });
}

}  // namespace host_access_detail

bool guarded_copy(void* dst, const void* src, size_t len) {
    return guarded([&] { std::memcpy(dst, src, len); });
}

uint64_t host_faults() { return host_access_detail::g_faults.load(std::memory_order_relaxed); }

}  // namespace mlx5async::emu::dp
