// A device's control operations in arrival order, on a thread of the
// device's own ("mlx5a-strand"): a job runs after every job posted before
// it and never beside another, so the state the jobs touch needs no lock
// (Linux mlx5_vnet's per-device workqueue; Chromium's SequencedTaskRunner).
// A caller that needs the answer waits on its job (dev_close: the indexes);
// one that does not, posts and goes on (dev_conf's start). Readers that must
// not wait behind a long job read what the jobs publish instead.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "common/base/result.hpp"

namespace mlx5async::core {

class Strand {
    // One job's hand-off between its poster and the strand.
    template <typename R>
    struct Slot {
        enum class State : uint8_t { Queued, Running, Done, Cancelled, Abandoned };
        std::mutex mu;  // protects state, result
        std::condition_variable cv;
        State state = State::Queued;
        std::optional<R> result;

        bool begin() {
            std::lock_guard lk(mu);
            if (state != State::Queued) return false;  // abandoned or cancelled
            state = State::Running;
            return true;
        }
        void finish(R r) {
            std::lock_guard lk(mu);
            result.emplace(std::move(r));
            state = State::Done;
            cv.notify_all();
        }
        void cancel() {
            std::lock_guard lk(mu);
            if (state == State::Queued || state == State::Abandoned) state = State::Cancelled;
            cv.notify_all();
        }
    };

public:
    // The answer of one posted job. Dropping it does not cancel the job.
    template <typename R>
    class Pending {
    public:
        explicit Pending(std::shared_ptr<Slot<R>> s) : s_(std::move(s)) {}
        // Its result; Errc::Cancelled when the strand stopped before it ran.
        R wait() {
            std::unique_lock lk(s_->mu);
            s_->cv.wait(lk, [&] { return done(); });
            return take();
        }
        // Its result if it finished within `d`. Otherwise a job not started
        // yet is dropped (it will not run) and a running one goes on unwaited.
        std::optional<R> wait_for(std::chrono::milliseconds d) {
            std::unique_lock lk(s_->mu);
            if (s_->cv.wait_for(lk, d, [&] { return done(); })) return take();
            if (s_->state == Slot<R>::State::Queued) s_->state = Slot<R>::State::Abandoned;
            return std::nullopt;
        }

    private:
        bool done() const {
            return s_->state == Slot<R>::State::Done || s_->state == Slot<R>::State::Cancelled;
        }
        R take() {
            if (s_->state == Slot<R>::State::Done) return std::move(*s_->result);
            return R(fail(Errc::Cancelled, "the device is closing: the operation did not run"));
        }
        std::shared_ptr<Slot<R>> s_;
    };

    // Starts the thread (it inherits the creating thread's CPUs).
    explicit Strand(std::string thread_name);
    // stop().
    ~Strand();
    Strand(const Strand&) = delete;
    Strand& operator=(const Strand&) = delete;

    // Queues `f` (returning a Result<...>) behind every job posted so far.
    template <typename F>
    auto post(F f) -> Pending<std::invoke_result_t<F&>> {
        using R = std::invoke_result_t<F&>;
        auto slot = std::make_shared<Slot<R>>();
        enqueue(Job{[slot, f = std::move(f)]() mutable {
                        if (slot->begin()) slot->finish(f());
                    },
                    [slot] { slot->cancel(); }});
        return Pending<R>(std::move(slot));
    }
    // post(f).wait(); on the strand itself, f runs at once (a job waiting
    // for a job behind it would wait for ever).
    template <typename F>
    auto run(F f) -> std::invoke_result_t<F&> {
        if (on_strand()) return f();
        return post(std::move(f)).wait();
    }

    // Drops every job not started (their waiters get Errc::Cancelled), lets
    // the running one finish, joins. Later posts are dropped at once.
    void stop();
    bool on_strand() const;
    // Jobs queued and running (tests: a start still behind another).
    size_t backlog() const;

private:
    struct Job {
        std::function<void()> run;
        std::function<void()> cancel;
    };
    void enqueue(Job j);
    void loop(std::stop_token st);

    mutable std::mutex mu_;  // protects jobs_, running_, stopped_
    std::condition_variable_any cv_;
    std::deque<Job> jobs_;
    bool running_ = false;
    bool stopped_ = false;
    std::jthread thread_;  // last: started once the members exist
};

}  // namespace mlx5async::core
