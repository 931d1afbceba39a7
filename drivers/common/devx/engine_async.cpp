// The async strategy: one epoll loop on the calling thread over the cmd_comp
// fd, the work eventfd and the deadline timerfd. No sleeps, no poll interval.
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "common/base/log_sink.hpp"
#include "dependencies.hpp"
#include "engine_impl.hpp"

namespace mlx5async::devx {
namespace {

using std::chrono::nanoseconds;

// Fast commands: how often (ms) the loop checks that the few awake workers
// are not all stuck in a command that blocks after all (one that hangs: slow
// ones that complete turn the engine slow, and workers grow the pool).
constexpr int kStallCheckMs = 1;

timespec to_timespec(Clock::time_point t) {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    if (ns < 1) ns = 1;  // zero would disarm the timer
    return timespec{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

bool is_busy(int ret) { return ret == EBUSY || ret == EAGAIN; }

// One batch in the async loop. Each entry has at most one step in flight:
// `next[e]` is the step waiting for a slot or issued; wr_ids and jobs carry
// (generation, entry) so a late completion cannot reach another batch.
class AsyncRun {
public:
    AsyncRun(Engine::Impl& m, Batch& b, BatchResult& res)
        : m_(m), entries_(b.entries()), res_(res), gen_(++m.gen), next_(entries_.size(), 0),
          issued_at_(entries_.size()), in_flight_(entries_.size(), false),
          at_worker_(entries_.size(), false), job_of_(entries_.size(), nullptr),
          gave_way_at_(entries_.size(), SIZE_MAX), open_(entries_.size(), false),
          deps_(b, res) {}

    void run(Clock::time_point deadline);

private:
    void start();
    void finish();
    void dispatch();
    void issue(uint32_t e, bool slot_held);
    void on_busy(uint32_t e);
    void post_blocking(uint32_t e, bool slot_held);
    bool record(uint32_t e, StepResult r);
    void complete(uint32_t e, StepResult r);
    void complete_query(uint32_t e, Outcome o);
    bool take_jobs();
    void on_job(std::unique_ptr<Job> job);
    void on_comp();
    void expire(StepState why);
    void cut_now();
    void cancel(uint32_t e);
    void ended(uint32_t e, bool ok);
    void arm_timer(Clock::time_point deadline, bool on);
    static void arm_at(UniqueFd& fd, Clock::time_point t);
    static void disarm(UniqueFd& fd);
    int wait_events(epoll_event* evs, int max);

    Engine::Impl& m_;
    std::vector<Entry>& entries_;
    BatchResult& res_;
    const uint32_t gen_;
    std::vector<size_t> next_;
    std::vector<Clock::time_point> issued_at_;
    std::vector<bool> in_flight_;
    std::vector<bool> at_worker_;  // its step(s) are in a job not yet back
    std::vector<Job*> job_of_;     // that job (alive until the loop takes it back)
    std::vector<size_t> gave_way_at_;  // the step at which the entry last gave way for a token
    std::vector<bool> open_;
    size_t open_count_ = 0;
    Dependencies deps_;  // entries that wait for others of the batch
    size_t query_outlen_ = 0;     // largest QUERY output of the batch
    std::deque<uint32_t> ready_;  // waiting for admission; continuations first
    std::vector<uint32_t> busy_;  // async QUERY refused (EBUSY): retry after a completion
    // Completions of QUERYs a worker issued, read before that worker's job
    // came back (the job still holds the command).
    std::unordered_map<uint32_t, Outcome> early_;
    std::vector<std::unique_ptr<Job>> to_post_;  // blocking jobs for the workers
    size_t built_ = 0;  // blocking jobs made by this batch
    EngineStats d_;
    // Fast commands (few workers awake): the loop's sleep times out now and
    // then, so that a batch whose commands hang still gets its workers
    // (epoll's own timeout: no timer syscalls in batches of microseconds).
    bool stall_check_ = false;
    bool cut_ = false;  // Engine::cut_short: nothing more is issued
};

void AsyncRun::start() {
    for (uint32_t e = 0; e < entries_.size(); ++e) {
        if (entries_[e].steps.empty() || deps_.settled(e)) continue;
        open_[e] = true;
        ++open_count_;
        for (const Command& c : entries_[e].steps)
            if (c.kind == CmdKind::Query) query_outlen_ = std::max(query_outlen_, c.outlen);
    }
    for (uint32_t e = 0; e < entries_.size(); ++e)
        if (open_[e] && !deps_.waits(e)) ready_.push_back(e);
    // Workers issue QUERYs too: the buffer must fit any of them before they do.
    size_t need = sizeof(mlx5dv_devx_async_cmd_hdr) + query_outlen_;
    if (m_.comp_buf.size() < need) m_.comp_buf.resize(need);
    m_.throttle.reset_peak();
    m_.slots.reset_peak();
    stall_check_ = m_.opt.stall_check && m_.fast_commands();
    std::lock_guard lk(m_.done_mu);
    m_.live_jobs = 0;
    m_.loop_waiting = false;
    m_.live_gen.store(gen_, std::memory_order_release);
}

void AsyncRun::finish() {
    {
        std::lock_guard lk(m_.done_mu);
        m_.live_gen.store(0, std::memory_order_release);
        m_.loop_waiting = false;
    }
    res_.peak_inflight = m_.throttle.peak();
    res_.peak_slots = m_.slots.peak();
    m_.add_stats(d_);
}

void AsyncRun::run(Clock::time_point deadline) {
    start();
    if (m_.cut.load()) cut_now();
    dispatch();  // the first commands before the timer: one syscall less before they start
    bool timed = deadline != Clock::time_point::max();
    if (timed) arm_timer(deadline, true);
    while (open_count_ > 0) {
        if (m_.closed.load()) {
            expire(StepState::Cancelled);
            break;
        }
        if (!cut_ && m_.cut.load()) cut_now();
        if (open_count_ == 0) break;
        dispatch();
        if (open_count_ == 0) break;
        if (take_jobs()) continue;  // jobs came back while we were busy: no sleep
        epoll_event evs[4];
        int n = wait_events(evs, 4);
        if (n == 0) continue;  // the stall check's timeout
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
                take_jobs();  // drains work_fd
            } else if (fd == m_.comp.fd()) {
                // Jobs first: a worker hands its job back before the QUERY it
                // issued can complete, so its completion finds the step issued.
                take_jobs();
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
        if (timeout && open_count_ > 0) {
            // Jobs a worker finished and handed back quietly before the
            // deadline count as done, not as timed out.
            take_jobs();
            if (open_count_ > 0) expire(StepState::TimedOut);
        }
    }
    if (timed) arm_timer(deadline, false);
    finish();
}

int AsyncRun::wait_events(epoll_event* evs, int max) {
    if (stall_check_) {
        int n = ::epoll_wait(m_.epoll.get(), evs, max, kStallCheckMs);
        if (n == 0 && m_.slots.in_flight() < m_.slots.limit())
            m_.pool->wake_one_if_stalled(nanoseconds(std::chrono::milliseconds(kStallCheckMs)).count());
        return n;
    }
    return ::epoll_wait(m_.epoll.get(), evs, max, -1);
}

void AsyncRun::arm_timer(Clock::time_point deadline, bool on) {
    if (on) return arm_at(m_.timer_fd, deadline);
    disarm(m_.timer_fd);
}

void AsyncRun::arm_at(UniqueFd& fd, Clock::time_point t) {
    itimerspec its{};
    its.it_value = to_timespec(t);
    ::timerfd_settime(fd.get(), TFD_TIMER_ABSTIME, &its, nullptr);
}

void AsyncRun::disarm(UniqueFd& fd) {
    itimerspec its{};
    ::timerfd_settime(fd.get(), TFD_TIMER_ABSTIME, &its, nullptr);
    fd.drain();  // an expiry that raced with the last completion
}

void AsyncRun::dispatch() {
    while (!ready_.empty()) {
        uint32_t e = ready_.front();
        const Command& c = entries_[e].steps[next_[e]];
        if (c.kind != CmdKind::Query) {
            // Blocking commands go to the workers at once; each is admitted
            // on its worker, so a worker that finishes one command starts the
            // next without a round trip through this loop.
            ready_.pop_front();
            issue(e, false);
            continue;
        }
        if (!m_.try_admit(true)) break;
        ready_.pop_front();
        issue(e, true);
    }
    m_.post_live(to_post_);
}

void AsyncRun::issue(uint32_t e, bool slot_held) {
    Command& c = entries_[e].steps[next_[e]];
    StepResult& r = res_.entries[e].steps[next_[e]];
    if (r.busy_retries == 0) ++d_.steps_issued;
    r.state = StepState::Issued;
    in_flight_[e] = true;
    issued_at_[e] = Clock::now();
    if (c.kind != CmdKind::Query) return post_blocking(e, slot_held);  // its worker binds it
    if (c.binds()) c.bind([&](size_t step) { return res_.entries[e].steps.at(step).made(); });

    m_.observe_issue(c);
    int ret = m_.api.obj_query_async(c.obj, c.in.data(), c.in.size(), c.outlen,
                                     make_wr_id(gen_, e), m_.comp.get());
    if (ret < 0) ret = -ret;
    if (ret == 0) {
        ++d_.async_queries;
        return;
    }
    m_.leave(true);
    if (is_busy(ret)) {
        // Expected outcome, not an error: the kernel's command slots are full.
        ++r.busy_retries;
        ++d_.busy_retries;
        return on_busy(e);
    }
    Outcome o;
    o.ran = true;
    o.ret = ret;
    o.issued = o.completed = issued_at_[e];
    m_.observe_completion(c, o);
    complete(e, finish_step(std::move(c), std::move(o)));
}

// Step next_[e], a QUERY, was refused (EBUSY/EAGAIN) and holds no slot.
void AsyncRun::on_busy(uint32_t e) {
    if (cut_) {
        in_flight_[e] = false;
        return cancel(e);
    }
    if (m_.slots.in_flight() > 0) {  // a completion will come and requeue it
        res_.entries[e].steps[next_[e]].state = StepState::Queued;
        in_flight_[e] = false;
        busy_.push_back(e);
        return;
    }
    // Nothing of ours in flight to wake us: the blocking query waits for a
    // slot in the kernel instead.
    ++d_.blocking_fallbacks;
    post_blocking(e, false);
}

void AsyncRun::post_blocking(uint32_t e, bool slot_held) {
    auto& steps = entries_[e].steps;
    auto job = std::make_unique<Job>();
    job->gen = gen_;
    job->entry = e;
    job->holds_slot = slot_held;  // else the worker takes one; it releases it either way
    job->skip_if_stale = true;
    job->continue_async = true;
    job->first_step = next_[e];
    job->first_may_give_way = gave_way_at_[e] != next_[e];
    for (size_t k = 0; k < next_[e]; ++k) job->made_before.push_back(res_.entries[e].steps[k].made());
    job->steps.push_back(std::move(steps[next_[e]]));
    // The worker goes on with the chain, up to a DESTROY: its object must stay
    // in the batch, to be handed back if the chain stops before it.
    size_t k = next_[e] + 1;
    for (; k < steps.size() && steps[k].kind != CmdKind::Destroy; ++k)
        job->steps.push_back(std::move(steps[k]));
    job->more_after = k < steps.size();
    job->others_wait = !job->more_after && deps_.has_dependents(e);
    in_flight_[e] = true;
    at_worker_[e] = true;
    job_of_[e] = job.get();
    to_post_.push_back(std::move(job));  // posted together at the end of dispatch()
    ++built_;
    // The batch's first job goes at once: its worker's wake-up overlaps
    // with building the others.
    if (built_ == 1) m_.post_live(to_post_);
}

// Stores the result of step next_[e]; true when the chain goes on with the
// next step, false when it ended (that was the last step, or it failed: the
// rest is Cancelled).
bool AsyncRun::record(uint32_t e, StepResult r) {
    size_t k = next_[e];
    bool ok = r.ok();
    r.busy_retries = res_.entries[e].steps[k].busy_retries;  // counted while it waited
    res_.entries[e].steps[k] = std::move(r);
    if (ok && k + 1 < entries_[e].steps.size()) {
        next_[e] = k + 1;
        return true;
    }
    if (!ok) close_chain(entries_[e].steps, res_.entries[e].steps, k + 1, StepState::Cancelled);
    open_[e] = false;
    --open_count_;
    ended(e, ok);
    return false;
}

// Entry e closed: the entries waiting for it are queued or, when it did
// not end with every step Done (or nothing more is issued), cancelled.
void AsyncRun::ended(uint32_t e, bool ok) {
    if (!deps_.has_dependents(e)) return;
    std::vector<uint32_t> released, cancelled;  // cancel() below comes back here
    deps_.ended(e, ok, released, cancelled);
    for (uint32_t x : cancelled)
        if (open_[x]) {
            open_[x] = false;
            --open_count_;
        }
    for (uint32_t x : released) {
        if (cut_) cancel(x);
        else ready_.push_back(x);
    }
}

void AsyncRun::complete(uint32_t e, StepResult r) {
    in_flight_[e] = false;
    // Pipelined: the next step as soon as this one completed.
    if (!record(e, std::move(r))) return;
    if (cut_) return cancel(e);
    ready_.push_front(e);
}

void AsyncRun::complete_query(uint32_t e, Outcome o) {
    Command& c = entries_[e].steps[next_[e]];
    o.out.resize(c.outlen);
    o.issued = issued_at_[e];  // set from the job when a worker issued it
    m_.observe_completion(c, o);
    complete(e, finish_step(std::move(c), std::move(o)));
}

// Takes the jobs workers handed back; false when there were none (then the
// loop may sleep, and tells the workers what it waits for).
bool AsyncRun::take_jobs() {
    std::vector<std::unique_ptr<Job>> jobs;
    {
        std::lock_guard lk(m_.done_mu);
        if (m_.done.empty()) {
            m_.loop_waiting = !ready_.empty() || !busy_.empty() || !early_.empty();
            // A late write of a wake-up already taken (not shutdown()'s:
            // that one is armed, and the loop must see it).
            m_.work_signal.clear_stray_locked(m_.work_fd);
            return false;
        }
    }
    jobs = m_.take_done();
    for (auto& job : jobs) on_job(std::move(job));
    // A finished job freed a slot: EBUSY refusals may retry.
    for (auto it = busy_.rbegin(); it != busy_.rend(); ++it) ready_.push_front(*it);
    busy_.clear();
    return true;
}

void AsyncRun::on_job(std::unique_ptr<Job> job) {
    uint32_t e = job->entry;
    if (job->gen != gen_ || e >= entries_.size() || !at_worker_[e]) return m_.discard_stale(*job);
    at_worker_[e] = false;
    job_of_[e] = nullptr;
    in_flight_[e] = false;
    auto& steps = entries_[e].steps;
    const size_t ran = job->outcomes.size();
    for (size_t i = ran; i < job->steps.size(); ++i)  // not run: back to the batch
        steps[job->first_step + i] = std::move(job->steps[i]);
    for (size_t i = 0; i < ran; ++i) {
        if (i > 0) ++d_.steps_issued;
        if (i < job->results.size()) {
            if (!record(e, std::move(job->results[i]))) return;  // chain ended
            continue;
        }
        // A blocking query refused (outcome_busy_query): requeue it like an
        // async EBUSY; the deadline bounds the retries.
        Command& c = job->steps[i];
        StepResult& r = res_.entries[e].steps[next_[e]];
        ++r.busy_retries;
        ++d_.busy_retries;
        r.state = StepState::Queued;
        steps[next_[e]] = std::move(c);
        busy_.push_back(e);
        return;
    }
    StepResult& r = res_.entries[e].steps[next_[e]];
    if (job->gave_way) gave_way_at_[e] = next_[e];
    if (ran == 0 || job->query == Job::Continuation::NotReached) {  // the worker stopped before it
        if (cut_) return cancel(e);
        ready_.push_front(e);
        return;
    }
    ++d_.steps_issued;
    r.state = StepState::Issued;
    issued_at_[e] = job->query_issued;
    if (job->query == Job::Continuation::Issued) {  // its completion comes here
        ++d_.async_queries;
        in_flight_[e] = true;
        if (auto it = early_.find(e); it != early_.end()) {
            Outcome o = std::move(it->second);
            early_.erase(it);
            complete_query(e, std::move(o));
        }
        return;
    }
    if (is_busy(job->query_errno)) {
        ++r.busy_retries;
        ++d_.busy_retries;
        return on_busy(e);
    }
    Outcome o;
    o.ran = true;
    o.ret = job->query_errno;
    o.issued = o.completed = job->query_issued;
    m_.observe_completion(steps[next_[e]], o);
    complete(e, finish_step(std::move(steps[next_[e]]), std::move(o)));
}

void AsyncRun::on_comp() {
    auto* hdr = reinterpret_cast<mlx5dv_devx_async_cmd_hdr*>(m_.comp_buf.data());
    unsigned freed = 0;
    while (m_.api.get_async_cmd_comp(m_.comp.get(), hdr, m_.comp_buf.size()) == 0) {
        m_.leave_quiet(true);
        ++freed;
        auto now = Clock::now();
        uint32_t g = static_cast<uint32_t>(hdr->wr_id >> kGenShift);
        uint32_t e = static_cast<uint32_t>(hdr->wr_id);
        if (g != gen_ || e >= entries_.size() || !in_flight_[e]) {
            EngineStats s;
            s.stale_completions = 1;
            m_.add_stats(s);
            continue;
        }
        Outcome o;
        o.ran = true;
        auto* out = reinterpret_cast<const std::byte*>(hdr->out_data);
        o.completed = now;
        if (at_worker_[e]) {
            // Issued by a worker whose job is not back yet: keep the output
            // until it is (take_jobs() before the loop sleeps).
            o.out.assign(out, out + query_outlen_);
            early_[e] = std::move(o);
            continue;
        }
        o.out.assign(out, out + entries_[e].steps[next_[e]].outlen);
        complete_query(e, std::move(o));
    }
    // Workers blocked for a slot are woken once, after the whole round: one
    // woken per freed slot would preempt this loop, on its CPU, between two
    // completions, making each completion a round trip loop -> worker -> loop.
    m_.wake_admission_waiters(freed);
}

void AsyncRun::expire(StepState why) {
    for (uint32_t e = 0; e < entries_.size(); ++e) {
        if (!open_[e]) continue;
        open_[e] = false;
        // A step no worker issued yet never will be.
        bool abandoned = false;
        const Job* job = at_worker_[e] ? job_of_[e] : nullptr;
        if (job && job->first_step == next_[e]) {
            uint8_t waiting = Job::kWaiting;
            abandoned = job_of_[e]->claim.compare_exchange_strong(waiting, Job::kAbandoned);
        }
        // The steps the worker ran before the one it is in are unsure too:
        // what they made is released when the job comes back stale.
        const size_t through = job && !abandoned ? last_begun_step(*job) : next_[e];
        close_chain(entries_[e].steps, res_.entries[e].steps, next_[e], why, through);
        if (abandoned) res_.entries[e].steps[next_[e]].never_issued = true;
    }
    for (uint32_t e : ready_)  // no admission came for them
        if (next_[e] < res_.entries[e].steps.size()) res_.entries[e].steps[next_[e]].never_issued = true;
    for (uint32_t e = 0; e < entries_.size(); ++e)  // nor the entries they would have released
        if (deps_.waits(e) && !deps_.settled(e) && !entries_[e].steps.empty())
            res_.entries[e].steps[0].never_issued = true;
    open_count_ = 0;
    ready_.clear();
    busy_.clear();
    early_.clear();
}

// Entry e's step next_[e] was never issued and never will be.
void AsyncRun::cancel(uint32_t e) {
    if (!open_[e]) return;
    cancel_unissued(entries_[e].steps, res_.entries[e].steps, next_[e]);
    open_[e] = false;
    --open_count_;
    ended(e, false);
}

// Engine::cut_short: the entries waiting for admission, for an EBUSY retry
// or in a job no worker started end here; those in flight complete.
void AsyncRun::cut_now() {
    cut_ = true;
    for (uint32_t e : ready_) cancel(e);
    for (uint32_t e : busy_) cancel(e);
    ready_.clear();
    busy_.clear();
    for (uint32_t e = 0; e < entries_.size(); ++e)
        if (open_[e] && deps_.waits(e)) cancel(e);
    for (uint32_t e = 0; e < entries_.size(); ++e) {
        if (!open_[e] || !at_worker_[e] || !job_of_[e] || job_of_[e]->first_step != next_[e]) continue;
        uint8_t waiting = Job::kWaiting;
        if (!job_of_[e]->claim.compare_exchange_strong(waiting, Job::kAbandoned)) continue;
        // Its job comes back unrun and is discarded (no longer this entry's).
        at_worker_[e] = false;
        job_of_[e] = nullptr;
        in_flight_[e] = false;
        cancel(e);
    }
}

}  // namespace

BatchResult Engine::Impl::run_async(Batch&& b, Clock::time_point deadline) {
    BatchResult res = make_result_skeleton(b);
    AsyncRun(*this, b, res).run(deadline);
    return res;
}

}  // namespace mlx5async::devx
