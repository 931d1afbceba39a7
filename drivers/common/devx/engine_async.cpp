// The async strategy: one epoll loop on the calling thread over the cmd_comp
// fd, the work eventfd and the deadline timerfd. No sleeps, no poll interval.
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include <cerrno>
#include <deque>
#include <vector>

#include "common/base/log_sink.hpp"
#include "engine_impl.hpp"

namespace mlx5async::devx {
namespace {

constexpr int kGenShift = 32;
// A step refused this many times (EBUSY/EAGAIN) fails with that errno.
constexpr unsigned kMaxBusyRetries = 100000;

uint64_t make_wr_id(uint32_t gen, uint32_t entry) { return (uint64_t(gen) << kGenShift) | entry; }

timespec to_timespec(Clock::time_point t) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    if (ns < 1) ns = 1;  // zero would disarm the timer
    return timespec{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

// One batch in the async loop. Each entry has at most one step in flight:
// `next[e]` is the step waiting for a slot or issued; wr_ids and jobs carry
// (generation, entry) so a late completion cannot reach another batch.
class AsyncRun {
public:
    AsyncRun(Engine::Impl& m, Batch& b, BatchResult& res)
        : m_(m), entries_(b.entries()), res_(res), gen_(++m.gen), next_(entries_.size(), 0),
          issued_at_(entries_.size()), in_flight_(entries_.size(), false),
          open_(entries_.size(), false) {}

    void run(Clock::time_point deadline);

private:
    void dispatch();
    void issue(uint32_t e, bool slot_held);
    void post_blocking(uint32_t e, bool slot_held);
    void complete(uint32_t e, StepResult r);
    void on_work();
    void on_comp();
    void expire(StepState why);
    void arm_timer(Clock::time_point deadline, bool on);

    Engine::Impl& m_;
    std::vector<Entry>& entries_;
    BatchResult& res_;
    const uint32_t gen_;
    std::vector<size_t> next_;
    std::vector<Clock::time_point> issued_at_;
    std::vector<bool> in_flight_;
    std::vector<bool> open_;
    size_t open_count_ = 0;
    std::deque<uint32_t> ready_;  // waiting for a throttle slot; continuations first
    std::vector<uint32_t> busy_;  // async QUERY refused (EBUSY): retry after a completion
    EngineStats d_;
};

void AsyncRun::run(Clock::time_point deadline) {
    for (uint32_t e = 0; e < entries_.size(); ++e) {
        if (entries_[e].steps.empty()) continue;
        open_[e] = true;
        ++open_count_;
        ready_.push_back(e);
    }
    m_.throttle.reset_peak();
    m_.live_gen.store(gen_, std::memory_order_release);
    bool timed = deadline != Clock::time_point::max();
    if (timed) arm_timer(deadline, true);
    while (open_count_ > 0) {
        if (m_.closed.load()) {
            expire(StepState::Cancelled);
            break;
        }
        dispatch();
        if (open_count_ == 0) break;
        epoll_event evs[4];
        int n = ::epoll_wait(m_.epoll.get(), evs, 4, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            logf(LogLevel::Error, "devx: epoll_wait failed: errno %d", errno);
            expire(StepState::Cancelled);
            break;
        }
        bool completion = false, timeout = false;
        for (int i = 0; i < n; ++i) {
            int fd = evs[i].data.fd;
            if (fd == m_.work_fd.get()) {
                on_work();
                completion = true;
            } else if (fd == m_.comp.fd()) {
                on_comp();
                completion = true;
            } else if (fd == m_.timer_fd.get()) {
                m_.timer_fd.drain();
                timeout = true;
            }
        }
        if (completion) {  // EBUSY requeue: a slot was freed somewhere
            for (auto it = busy_.rbegin(); it != busy_.rend(); ++it) ready_.push_front(*it);
            busy_.clear();
        }
        if (timeout && open_count_ > 0) expire(StepState::TimedOut);
    }
    m_.live_gen.store(0, std::memory_order_release);
    if (timed) arm_timer(deadline, false);
    res_.peak_inflight = m_.throttle.peak();
    m_.add_stats(d_);
}

void AsyncRun::arm_timer(Clock::time_point deadline, bool on) {
    itimerspec its{};
    if (on) its.it_value = to_timespec(deadline);
    ::timerfd_settime(m_.timer_fd.get(), TFD_TIMER_ABSTIME, &its, nullptr);
    if (!on) m_.timer_fd.drain();  // an expiry that raced with the last completion
}

void AsyncRun::dispatch() {
    while (!ready_.empty()) {
        uint32_t e = ready_.front();
        const Command& c = entries_[e].steps[next_[e]];
        if (c.kind != CmdKind::Query || !m_.opt.async_query) {
            // Blocking commands go to the workers at once; each takes a throttle
            // slot itself, so a worker that finishes one command starts the
            // next without a round trip through this loop.
            ready_.pop_front();
            issue(e, false);
            continue;
        }
        if (!m_.throttle.try_acquire()) break;
        ready_.pop_front();
        issue(e, true);
    }
}

void AsyncRun::issue(uint32_t e, bool slot_held) {
    Command& c = entries_[e].steps[next_[e]];
    StepResult& r = res_.entries[e].steps[next_[e]];
    if (r.busy_retries == 0) ++d_.steps_issued;
    r.state = StepState::Issued;
    in_flight_[e] = true;
    issued_at_[e] = Clock::now();
    if (c.kind != CmdKind::Query || !m_.opt.async_query) return post_blocking(e, slot_held);

    size_t need = sizeof(mlx5dv_devx_async_cmd_hdr) + c.outlen;
    if (m_.comp_buf.size() < need) m_.comp_buf.resize(need);
    int ret = m_.api.obj_query_async(c.obj, c.in.data(), c.in.size(), c.outlen,
                                     make_wr_id(gen_, e), m_.comp.get());
    if (ret < 0) ret = -ret;
    if (ret == 0) {
        ++d_.async_queries;
        return;
    }
    m_.throttle.release();
    if (ret == EBUSY || ret == EAGAIN) {
        // Expected outcome, not an error: the kernel's command slots are full.
        ++r.busy_retries;
        ++d_.busy_retries;
        if (m_.throttle.in_flight() > 0) {  // a completion will come and requeue it
            r.state = StepState::Queued;
            in_flight_[e] = false;
            busy_.push_back(e);
            return;
        }
        // Nothing of ours in flight to wake us: the blocking query waits for a
        // slot in the kernel instead.
        ++d_.blocking_fallbacks;
        return post_blocking(e, false);
    }
    Outcome o;
    o.ran = true;
    o.ret = ret;
    o.issued = o.completed = issued_at_[e];
    complete(e, finish_step(std::move(c), std::move(o)));
}

void AsyncRun::post_blocking(uint32_t e, bool slot_held) {
    auto job = std::make_unique<Job>();
    job->gen = gen_;
    job->entry = e;
    job->holds_slot = slot_held;  // else the worker takes one; it releases it either way
    job->skip_if_stale = true;
    job->steps.push_back(std::move(entries_[e].steps[next_[e]]));
    m_.post(std::move(job));
}

void AsyncRun::complete(uint32_t e, StepResult r) {
    in_flight_[e] = false;
    size_t k = next_[e];
    bool ok = r.ok();
    r.busy_retries = res_.entries[e].steps[k].busy_retries;  // counted while it waited
    res_.entries[e].steps[k] = std::move(r);
    if (ok && k + 1 < entries_[e].steps.size()) {
        next_[e] = k + 1;
        ready_.push_front(e);  // pipelined: the next step as soon as this one completed
        return;
    }
    if (!ok) close_chain(entries_[e].steps, res_.entries[e].steps, k + 1, StepState::Cancelled);
    open_[e] = false;
    --open_count_;
}

void AsyncRun::on_work() {
    m_.work_fd.drain();
    for (auto& job : m_.take_done()) {
        if (job->gen != gen_ || job->entry >= entries_.size() || !in_flight_[job->entry]) {
            m_.discard_stale(*job);
            continue;
        }
        uint32_t e = job->entry;
        Command& c = job->steps[0];
        const Outcome& o = job->outcomes[0];
        if (c.kind == CmdKind::Query && (o.ret == EBUSY || o.ret == EAGAIN) && outcome_status(c, o) == 0 &&
            res_.entries[e].steps[next_[e]].busy_retries < kMaxBusyRetries) {
            // A fallback query refused too (only fault injection does that to a
            // blocking call): requeue it like an async EBUSY.
            ++res_.entries[e].steps[next_[e]].busy_retries;
            ++d_.busy_retries;
            res_.entries[e].steps[next_[e]].state = StepState::Queued;
            entries_[e].steps[next_[e]] = std::move(c);
            in_flight_[e] = false;
            busy_.push_back(e);
            continue;
        }
        complete(e, finish_step(std::move(c), std::move(job->outcomes[0])));
    }
}

void AsyncRun::on_comp() {
    auto* hdr = reinterpret_cast<mlx5dv_devx_async_cmd_hdr*>(m_.comp_buf.data());
    while (m_.api.get_async_cmd_comp(m_.comp.get(), hdr, m_.comp_buf.size()) == 0) {
        m_.throttle.release();
        auto now = Clock::now();
        uint32_t g = static_cast<uint32_t>(hdr->wr_id >> kGenShift);
        uint32_t e = static_cast<uint32_t>(hdr->wr_id);
        if (g != gen_ || e >= entries_.size() || !in_flight_[e]) {
            EngineStats s;
            s.stale_completions = 1;
            m_.add_stats(s);
            continue;
        }
        Command& c = entries_[e].steps[next_[e]];
        Outcome o;
        o.ran = true;
        o.out.assign(reinterpret_cast<const std::byte*>(hdr->out_data),
                     reinterpret_cast<const std::byte*>(hdr->out_data) + c.outlen);
        o.issued = issued_at_[e];
        o.completed = now;
        complete(e, finish_step(std::move(c), std::move(o)));
    }
}

void AsyncRun::expire(StepState why) {
    for (uint32_t e = 0; e < entries_.size(); ++e) {
        if (!open_[e]) continue;
        close_chain(entries_[e].steps, res_.entries[e].steps, next_[e], why);
        open_[e] = false;
    }
    open_count_ = 0;
    ready_.clear();
    busy_.clear();
}

}  // namespace

BatchResult Engine::Impl::run_async(Batch&& b, Clock::time_point deadline) {
    BatchResult res = make_result_skeleton(b);
    AsyncRun(*this, b, res).run(deadline);
    return res;
}

}  // namespace mlx5async::devx
