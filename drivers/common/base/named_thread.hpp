// Threads have names (visible in top/gdb). Never detached: std::jthread.
#pragma once

#include <pthread.h>

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

}  // namespace mlx5async
