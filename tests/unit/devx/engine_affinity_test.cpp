// Where the engine's workers run: on the CPUs of the thread that calls run()
// (EngineOptions::workers_follow_caller), or where their creator ran.
#include <dirent.h>
#include <sched.h>
#include <sys/types.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "testkit/eventually.hpp"
#include "common/devx/engine.hpp"
#include "testkit/fake_devx_api.hpp"

namespace mlx5async::devx {
namespace {

using namespace std::chrono_literals;
using testing::FakeDevx;

// The affinity of every thread of this process whose name starts with prefix.
std::vector<cpu_set_t> thread_cpus(const std::string& prefix) {
    std::vector<cpu_set_t> out;
    DIR* d = opendir("/proc/self/task");
    if (!d) return out;
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::string comm;
        std::getline(std::ifstream(std::string("/proc/self/task/") + e->d_name + "/comm"), comm);
        if (comm.rfind(prefix, 0) != 0) continue;
        cpu_set_t s;
        CPU_ZERO(&s);
        if (sched_getaffinity(pid_t(std::atoi(e->d_name)), sizeof s, &s) == 0) out.push_back(s);
    }
    closedir(d);
    return out;
}

cpu_set_t one_cpu(const cpu_set_t& all) {
    cpu_set_t s;
    CPU_ZERO(&s);
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &s);
            break;
        }
    return s;
}

class EngineAffinity : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(sched_getaffinity(0, sizeof all_, &all_), 0);
        if (CPU_COUNT(&all_) < 2) GTEST_SKIP() << "needs a process allowed on 2 CPUs";
        for (int i = 0; i < 4; ++i) vqs_.push_back(fake_.make_obj(prm::VirtqState::RDY));
    }
    void TearDown() override {
        if (eng_) eng_->shutdown();
    }
    Engine& engine(bool follow) {
        EngineOptions o;
        o.max_inflight = 4;
        o.workers = 4;
        o.workers_follow_caller = follow;
        o.thread_prefix = "aff-wk";
        auto e = Engine::create(FakeDevx::api(), fake_.ctx(), o);
        EXPECT_TRUE(e);
        eng_ = std::move(*e);
        return *eng_;
    }
    BatchResult suspend_all(Engine& eng) {
        Batch b;
        for (size_t q = 0; q < vqs_.size(); ++q) b.add_suspend(vqs_[q], int(q));
        return eng.run(std::move(b), 10s);
    }
    // Runs a batch from a thread allowed on `cpus` only.
    BatchResult suspend_from(Engine& eng, const cpu_set_t& cpus) {
        BatchResult r;
        std::thread([&] {
            ASSERT_EQ(sched_setaffinity(0, sizeof cpus, &cpus), 0);
            r = suspend_all(eng);
        }).join();
        return r;
    }
    void expect_workers_on(const cpu_set_t& cpus, const char* when) {
        // A worker names itself once it runs: wait for the four names.
        std::vector<cpu_set_t> got;
        mlx5async::testing::eventually([&] { return (got = thread_cpus("aff-wk")).size() >= 4; });
        ASSERT_EQ(got.size(), 4u) << when;
        for (auto& s : got) EXPECT_TRUE(CPU_EQUAL(&s, &cpus)) << when;
    }

    cpu_set_t all_{};
    FakeDevx fake_;
    std::vector<DevxObj> vqs_;
    std::unique_ptr<Engine> eng_;
};

TEST_F(EngineAffinity, WorkersFollowTheCallersCpus) {
    Engine& eng = engine(true);
    expect_workers_on(all_, "created: the creator's CPUs");
    const cpu_set_t one = one_cpu(all_);
    EXPECT_TRUE(suspend_from(eng, one).ok());
    expect_workers_on(one, "after a batch from a thread on one CPU");
    EXPECT_TRUE(suspend_all(eng).ok());  // this thread: every CPU again
    expect_workers_on(all_, "after a batch from a thread on every CPU");
}

TEST_F(EngineAffinity, WorkersKeepTheCreatorsCpusWhenAsked) {
    Engine& eng = engine(false);
    EXPECT_TRUE(suspend_from(eng, one_cpu(all_)).ok());
    expect_workers_on(all_, "workers_follow_caller = false");
}

}  // namespace
}  // namespace mlx5async::devx
