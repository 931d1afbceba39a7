// Threads have names (visible in top/gdb). Never detached: std::jthread.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <string>
#include <thread>
#include <utility>

namespace mlx5async {

inline void name_this_thread(const std::string& name) noexcept {
    // Linux limit: 15 chars + NUL.
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

template <typename F>
std::jthread make_named_thread(std::string name, F&& fn) {
    return std::jthread([name = std::move(name), fn = std::forward<F>(fn)](std::stop_token st) mutable {
        name_this_thread(name);
        if constexpr (std::is_invocable_v<F&, std::stop_token>)
            fn(st);
        else
            fn();
    });
}

// Pins a started thread to one CPU (devarg event_core); 0 or the errno.
inline int pin_thread(std::jthread& t, int cpu) noexcept {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return cpu < 0 ? 0 : EINVAL;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(t.native_handle(), sizeof set, &set);
}

}  // namespace mlx5async
