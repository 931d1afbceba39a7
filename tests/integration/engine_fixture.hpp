// The engine over a fresh emulated device per test: N ready virtqs with
// distinct hw indexes, an engine of the chosen strategy, and access to the
// emulator's faults, counters and trace.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "common/base/log_sink.hpp"
#include "common/devx/engine.hpp"
#include "drivers/emu/emu.hpp"
#include "testkit/emu_virtqs.hpp"

namespace mlx5async::devx {

using namespace std::chrono_literals;
inline constexpr auto kGenerous = 30s;

class EngineEmu : public ::testing::Test {
protected:
    // Default spec: zero modelled latency (properties, not times).
    void start(unsigned queues, std::string spec = "cx7,modify_us=0,query_us=0,create_us=0",
               EngineOptions opt = {}) {
        static std::atomic<int> seq{0};
        name_ = "itest" + std::to_string(seq++);
        auto dev = emu::create_device(name_, spec + ",max_virtqs=1024");
        ASSERT_TRUE(dev) << to_string(dev.error());
        auto rv = testing::make_ready_virtqs(emu::api(), name_, queues);
        ASSERT_TRUE(rv) << to_string(rv.error());
        rv_ = std::make_unique<testing::ReadyVirtqs>(std::move(*rv));
        dev_ = emu::device_of(rv_->ctx.get());
        ASSERT_NE(dev_, nullptr);
        auto e = Engine::create(emu::api(), rv_->ctx.get(), std::move(opt));
        ASSERT_TRUE(e) << to_string(e.error());
        eng_ = std::move(*e);
    }
    void TearDown() override {
        if (eng_) eng_->shutdown();
        eng_.reset();
        rv_.reset();
        if (!name_.empty()) (void)emu::destroy_device(name_);
        set_log_sink(nullptr);
    }

    Batch suspend_all() {
        Batch b;
        for (size_t q = 0; q < rv_->vqs.size(); ++q) b.add_suspend(rv_->vqs[q], int(q));
        return b;
    }
    Batch resume_all() {
        Batch b;
        for (size_t q = 0; q < rv_->vqs.size(); ++q) b.add_resume(rv_->vqs[q], int(q));
        return b;
    }
    uint32_t id(size_t q) const { return rv_->vqs[q].obj_id(); }
    prm::VirtqState emu_state(size_t q) const {
        auto info = dev_->virtq_info(id(q));
        return info ? info->state : prm::VirtqState::ERR;
    }

    std::string name_;
    std::unique_ptr<testing::ReadyVirtqs> rv_;
    emu::Device* dev_ = nullptr;
    std::unique_ptr<Engine> eng_;
};

}  // namespace mlx5async::devx
