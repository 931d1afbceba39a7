// Engine set-up, dispatch to the strategy, shutdown and shared helpers.
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/base/log_sink.hpp"
#include "common/prm/general_obj.hpp"
#include "engine_impl.hpp"
#include "error_log.hpp"

namespace mlx5async::devx {

const char* strategy_name(Strategy s) noexcept {
    const size_t i = size_t(s);
    return i < std::size(kStrategyNames) ? kStrategyNames[i].data() : "?";  // literals: NUL-terminated
}

std::optional<Strategy> parse_strategy(std::string_view s) noexcept {
    for (size_t i = 0; i < std::size(kStrategyNames); ++i)
        if (s == kStrategyNames[i]) return Strategy(i);
    return std::nullopt;
}

std::string strategy_choices(std::string_view sep) {
    std::string out;
    for (std::string_view n : kStrategyNames) out += (out.empty() ? "" : std::string(sep)) + std::string(n);
    return out;
}

// ---- helpers shared by the strategies ----

StepResult step_identity(const Command& c) {
    StepResult r;
    r.kind = c.kind;
    r.opcode = c.opcode;
    r.type = c.type;
    r.obj_id = c.obj_id;
    r.queue = c.queue;
    return r;
}

BatchResult make_result_skeleton(const Batch& b) {
    BatchResult r;
    r.entries.resize(b.size());
    const auto& entries = b.entries();
    for (size_t i = 0; i < entries.size(); ++i) {
        r.entries[i].queue = entries[i].queue;
        r.entries[i].steps.reserve(entries[i].steps.size());
        for (const Command& c : entries[i].steps) r.entries[i].steps.push_back(step_identity(c));
    }
    return r;
}

void close_chain(std::vector<Command>& steps, std::vector<StepResult>& results, size_t from,
                 StepState first, size_t through) {
    through = std::max(from, through);
    for (size_t i = from; i < steps.size(); ++i) {
        results[i].state = i <= through ? first : StepState::Cancelled;
        if (steps[i].owned) results[i].obj = std::move(steps[i].owned);
    }
}

size_t last_begun_step(const Job& job) noexcept {
    const size_t begun = job.steps_begun.load(std::memory_order_acquire);
    return job.first_step + (begun ? begun - 1 : 0);
}

void cancel_unissued(std::vector<Command>& steps, std::vector<StepResult>& results, size_t from) {
    close_chain(steps, results, from, StepState::Cancelled);
    if (from < results.size()) results[from].never_issued = true;
}

void tally(BatchResult& r) {
    r.done = r.failed = r.timed_out = r.cancelled = 0;
    for (const auto& e : r.entries)
        for (const auto& s : e.steps) {
            switch (s.state) {
            case StepState::Done: ++r.done; break;
            case StepState::Failed: ++r.failed; break;
            case StepState::TimedOut: ++r.timed_out; break;
            default: ++r.cancelled; break;
            }
            log_step_failure(s);
        }
}

// ---- Impl ----

Result<void> Engine::Impl::setup() {
    auto wfd = UniqueFd::eventfd(0, EFD_NONBLOCK);
    MLX5A_CHECK(wfd);
    work_fd = std::move(*wfd);
    unsigned nworkers = opt.workers ? opt.workers : opt.cmd_slots;
    if (opt.strategy == Strategy::Async) {
        auto c = CmdComp::create(api, ctx);
        MLX5A_CHECK(c);
        comp = std::move(*c);
        auto t = UniqueFd::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
        MLX5A_CHECK(t);
        timer_fd = std::move(*t);
        auto ep = UniqueFd::epoll_create();
        MLX5A_CHECK(ep);
        epoll = std::move(*ep);
        for (int fd : {comp.fd(), work_fd.get(), timer_fd.get()}) {
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.fd = fd;
            if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &ev) < 0)
                return unexpected(Error::sys(errno, "epoll_ctl"));
        }
        comp_buf.resize(sizeof(mlx5dv_devx_async_cmd_hdr) + 4096);
    }
    if (::sched_getaffinity(0, sizeof(worker_cpus), &worker_cpus) == 0)
        fast_workers.store(unsigned(std::max(1, CPU_COUNT(&worker_cpus))),
                           std::memory_order_relaxed);
    if (opt.strategy != Strategy::Sequential)
        pool = std::make_unique<WorkerPool>(
            nworkers, opt.thread_prefix, [this](std::unique_ptr<Job> j) { worker_run(std::move(j)); });
    return {};
}

void Engine::Impl::follow_caller_cpus() noexcept {
    cpu_set_t caller;
    if (::pthread_getaffinity_np(::pthread_self(), sizeof caller, &caller) != 0) return;
    if (CPU_EQUAL(&caller, &worker_cpus)) return;
    if (int r = pool->set_affinity(caller); r != 0) {
        if (!affinity_warned)
            logf(LogLevel::Warning, "devx: moving the workers to the caller's CPUs failed: %s",
                 std::strerror(r));
        affinity_warned = true;
        return;
    }
    worker_cpus = caller;
    fast_workers.store(unsigned(std::max(1, CPU_COUNT(&caller))), std::memory_order_relaxed);
}

namespace {

// Whether the loop has nothing to do with this job but bookkeeping: its
// chain ended (done, or failed with a final error) or went on as an async
// QUERY whose completion will wake the loop anyway.
bool job_is_quiet(const Job& j) {
    if (j.query == Job::Continuation::Issued) return true;
    if (j.query == Job::Continuation::Refused || j.outcomes.empty()) return false;
    const Command& c = j.steps[j.outcomes.size() - 1];
    const Outcome& o = j.outcomes.back();
    if (!outcome_ok(c, o)) return !outcome_busy_query(c, o);  // busy: requeued
    return j.outcomes.size() == j.steps.size() && !j.more_after;
}

}  // namespace

void Engine::Impl::worker_run(std::unique_ptr<Job> job) noexcept {
    // A batch that returned (deadline) issues nothing more: a queued job of
    // it goes back unrun (no outcomes) and is discarded as stale.
    bool stale = job->skip_if_stale && job->gen != live_gen.load(std::memory_order_acquire);
    // Few workers were woken for fast commands: while jobs wait and a slot is
    // free, the pool grows by one, up to fast_workers; once the average says
    // the commands are slow after all, up to the commands of the job's class
    // that may run at once. A command that hangs leaves the average as it
    // was: the loop's stall check grows the pool then.
    const bool throttled = job->first_throttled();
    if (job->continue_async && !throttled) queued_without_token.fetch_sub(1, std::memory_order_relaxed);
    if (job->continue_async && has_room(throttled))
        pool->wake_one_if_queued(fast_commands() ? fast_workers.load(std::memory_order_relaxed)
                                                 : (throttled ? throttle : slots).limit());
    if (!stale) run_steps(*job);
    bool quiet = job_is_quiet(*job);
    if (job->continue_async)
        for (size_t i = 0; i < job->outcomes.size(); ++i) {
            if (outcome_busy_query(job->steps[i], job->outcomes[i])) break;
            job->results.push_back(finish_step(std::move(job->steps[i]), std::move(job->outcomes[i])));
        }
    hand_back(std::move(job), quiet);
}

namespace {

// Step i of the job (first_step + i of its entry) takes what earlier steps made.
void bind_step(Job& job, size_t i) {
    job.steps[i].bind([&job](size_t step) -> Made {
        if (step < job.first_step) return job.made_before.at(step);
        const size_t j = step - job.first_step;
        return outcome_made(job.steps.at(j), job.outcomes.at(j));
    });
}

}  // namespace

void Engine::Impl::run_steps(Job& job) noexcept {
    bool held = job.holds_slot;  // admitted, for a command of class held_throttled
    bool held_throttled = job.first_throttled();
    for (size_t i = 0; i < job.steps.size(); ++i) {
        const bool throttled = job.steps[i].throttled();
        if (i > 0) {
            if (!(job.chain || job.continue_async) ||
                !outcome_ok(job.steps[i - 1], job.outcomes[i - 1]))
                break;
            if (job.continue_async) {
                if (job.gen != live_gen.load(std::memory_order_acquire)) break;  // batch returned
                if (job.steps[i].kind == CmdKind::Query) {
                    job.steps_begun.store(unsigned(i + 1), std::memory_order_release);
                    if (job.steps[i].binds()) bind_step(job, i);
                    issue_continuation_query(job, i, held_throttled);  // takes the admission over
                    return;
                }
                // A blocking step runs on with the same admission, when of the same class.
                if (throttled != held_throttled) {
                    // Into the throttle: a free token, or the chain gives way.
                    const bool token = throttled && throttle.try_acquire();
                    if (throttled && !token && give_way_for_token()) {
                        job.gave_way = true;
                        break;  // released below
                    }
                    leave(held_throttled);
                    held = token;
                    if (token) slots.acquire();  // token, then slot: admit()'s order
                }
            } else {
                leave(held_throttled);  // threads: admitted per blocking call, as in the kernel
                held = false;
            }
        }
        // Blocking commands wait for their admission, as mlx5_core's semaphores
        // make them; a first step that needs a token gives way as a later one does.
        if (!held) {
            const bool try_first = i == 0 && throttled && job.first_may_give_way;
            if (try_first && throttle.try_acquire()) {
                slots.acquire();
            } else if (try_first && give_way_for_token()) {
                job.gave_way = true;
                break;  // unrun
            } else {
                admit(throttled);
            }
        }
        held = true;
        held_throttled = throttled;
        if (cut.load(std::memory_order_acquire) && (i == 0 || job.continue_async)) break;  // cut_short
        if (i == 0 && job.skip_if_stale) {
            uint8_t waiting = Job::kWaiting;
            if (!job.claim.compare_exchange_strong(waiting, Job::kIssued)) break;  // abandoned
        }
        job.steps_begun.store(unsigned(i + 1), std::memory_order_release);
        if (job.steps[i].binds()) bind_step(job, i);
        job.outcomes.emplace_back();
        Outcome& o = job.outcomes.back();
        observe_issue(job.steps[i]);
        execute_blocking(job.steps[i], o);
        observe_completion(job.steps[i], o);
        int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(o.completed - o.issued).count();
        ewma(blocking_ns, ns, 3);
    }
    if (held) {
        // Counted before the slot goes: late_commands() never sees neither.
        job.answered_not_taken = true;
        answered_not_taken.fetch_add(1);
        leave(held_throttled);
    }
}

void Engine::Impl::issue_continuation_query(Job& job, size_t i, bool held_throttled) noexcept {
    Command& c = job.steps[i];
    if (!held_throttled) {  // a QUERY is a general-object command: a token too
        leave(false);
        admit(true);
    }
    observe_issue(c);
    job.query_issued = Clock::now();
    int ret = api.obj_query_async(c.obj, c.in.data(), c.in.size(), c.outlen,
                                  make_wr_id(job.gen, job.entry), comp.get());
    if (ret < 0) ret = -ret;
    job.query = ret == 0 ? Job::Continuation::Issued : Job::Continuation::Refused;
    job.query_errno = ret;
    // Issued: the admission is the query's until the loop reads its completion.
    if (ret != 0) leave(true);
}

void Engine::Impl::hand_back(std::unique_ptr<Job> job, bool quiet) noexcept {
    bool write = false;
    bool late = false;
    {
        std::lock_guard lk(done_mu);
        late = job->answered_not_taken && job->gen != live_gen.load(std::memory_order_relaxed);
        bool wake = true;  // a returned batch (drain() waits) or the threads strategy
        if (job->skip_if_stale && job->gen == live_gen.load(std::memory_order_relaxed)) {
            bool last = --live_jobs == 0;  // the loop must see the batch end
            wake = last || loop_waiting || !quiet || job->others_wait;
        }
        done.push_back(std::move(job));
        if (wake) write = work_signal.arm_locked();  // one pending wake-up takes the whole list
    }
    if (write) work_signal.write(work_fd);
    if (late && opt.on_late_answer) opt.on_late_answer();
}

void Engine::Impl::wake_loop() noexcept {
    bool write;
    {
        std::lock_guard lk(done_mu);
        write = work_signal.arm_locked();
    }
    if (write) work_signal.write(work_fd);
}

void Engine::Impl::post(std::unique_ptr<Job> job) {
    jobs_out.fetch_add(1);
    pool->post(std::move(job));
}

void Engine::Impl::post_live(std::vector<std::unique_ptr<Job>>& jobs) {
    if (jobs.empty()) return;
    jobs_out.fetch_add(static_cast<unsigned>(jobs.size()));
    {
        std::lock_guard lk(done_mu);
        live_jobs += static_cast<unsigned>(jobs.size());
    }
    // Slow commands: as many workers awake as admission lets commands run;
    // the other jobs wait in the queue for a worker that finishes (a worker
    // woken for a command the throttle holds back would only sleep again).
    size_t throttled = 0;
    for (const auto& j : jobs) throttled += j->first_throttled();
    const size_t other = jobs.size() - throttled;
    queued_without_token.fetch_add(unsigned(other), std::memory_order_relaxed);
    const size_t runnable = throttled ? std::min<size_t>(slots.limit(), throttle.limit() + other)
                                      : slots.limit();
    pool->post_all(jobs, fast_commands() ? 1 : SIZE_MAX, runnable);
}

std::vector<std::unique_ptr<Job>> Engine::Impl::take_done() {
    std::vector<std::unique_ptr<Job>> out;
    std::lock_guard lk(done_mu);
    out.swap(done);
    jobs_out.fetch_sub(static_cast<unsigned>(out.size()));
    for (const auto& j : out)
        if (j->answered_not_taken) answered_not_taken.fetch_sub(1);
    work_signal.disarm_locked(work_fd);
    return out;
}

void Engine::Impl::discard_stale(Job& job) noexcept {
    // Last step first: a step may name what the one before made (a direct
    // mkey its umem), which the device keeps until that is gone. Results
    // made on the worker release what they hold (a created object is
    // destroyed) as they go.
    for (size_t i = job.outcomes.size(); i-- > job.results.size();)
        discard_outcome(job.steps[i], job.outcomes[i]);
    while (!job.results.empty()) job.results.pop_back();
    EngineStats d;
    d.stale_completions = 1;
    add_stats(d);
}

void Engine::Impl::observe_completion_slow(const Command& c, const Outcome& o) const noexcept {
    uint8_t status = outcome_status(c, o);
    uint32_t syndrome = 0;
    if (status)
        if (auto h = prm::read_general_obj_out(o.out)) syndrome = h->syndrome;
    opt.observer->command_completed(c, status, syndrome, o.ret, o.completed - o.issued);
}

void Engine::Impl::add_stats(const EngineStats& d) noexcept {
    std::lock_guard lk(stats_mu);
    stats.batches += d.batches;
    stats.steps_issued += d.steps_issued;
    stats.async_queries += d.async_queries;
    stats.busy_retries += d.busy_retries;
    stats.blocking_fallbacks += d.blocking_fallbacks;
    stats.stale_completions += d.stale_completions;
    stats.timed_out += d.timed_out;
    stats.failed += d.failed;
}

// Reads whatever async completions are available; all belong to finished
// batches here (called with run_mu held, between batches).
void Engine::Impl::drain_stale_completions() noexcept {
    if (!comp.get()) return;
    auto* hdr = reinterpret_cast<mlx5dv_devx_async_cmd_hdr*>(comp_buf.data());
    while (api.get_async_cmd_comp(comp.get(), hdr, comp_buf.size()) == 0) {
        leave(true);
        EngineStats d;
        d.stale_completions = 1;
        add_stats(d);
    }
    for (auto& j : take_done()) discard_stale(*j);
}

void Engine::Impl::release_all() noexcept {
    if (pool)
        for (auto& j : pool->stop()) {  // never started
            jobs_out.fetch_sub(1);
            discard_stale(*j);
        }
    pool.reset();
    drain_stale_completions();
    epoll.reset();
    timer_fd.reset();
    comp.reset();
    released = true;  // work_fd stays open until ~Impl: shutdown() may still signal it
}

// ---- Engine ----

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() { shutdown(); }

Result<std::unique_ptr<Engine>> Engine::create(const DevxApi& api, ibv_context* ctx,
                                               EngineOptions opt) {
    if (opt.max_inflight == 0) return fail(Errc::InvalidArgument, "max_inflight must be > 0");
    if (opt.cmd_slots != 0 && opt.cmd_slots < opt.max_inflight)
        return fail(Errc::InvalidArgument, "cmd_slots " + std::to_string(opt.cmd_slots) +
                                               " is below max_inflight " +
                                               std::to_string(opt.max_inflight));
    auto impl = std::make_unique<Impl>(api, ctx, std::move(opt));
    if (auto r = impl->setup(); !r) {
        impl->release_all();
        return unexpected(r.error());
    }
    return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

BatchResult Engine::run(Batch&& batch, Clock::time_point deadline) {
    Impl& m = *impl_;
    std::lock_guard lk(m.run_mu);
    auto t0 = Clock::now();
    BatchResult r;
    if (m.closed.load() || m.cut.load()) {
        r = make_result_skeleton(batch);
        for (size_t e = 0; e < r.entries.size(); ++e)
            cancel_unissued(batch.entries()[e].steps, r.entries[e].steps, 0);
        tally(r);
        return r;
    }
    if (m.pool && m.opt.workers_follow_caller) m.follow_caller_cpus();
    const uint8_t label = batch.label();
    if (m.opt.observer) {
        size_t steps = 0;
        for (const Entry& e : batch.entries()) steps += e.steps.size();
        m.opt.observer->batch_submitted(label, batch.size(), steps);
    }
    switch (m.opt.strategy) {
    case Strategy::Async: r = m.run_async(std::move(batch), deadline); break;
    case Strategy::Sequential: r = m.run_sequential(std::move(batch), deadline); break;
    case Strategy::Threads: r = m.run_threads(std::move(batch), deadline); break;
    }
    r.elapsed = Clock::now() - t0;
    tally(r);
    EngineStats d;
    d.batches = 1;
    d.timed_out = r.timed_out;
    d.failed = r.failed;
    m.add_stats(d);
    if (m.opt.command_stats) {
        std::lock_guard slk(m.stats_mu);
        for (const EntryResult& e : r.entries)
            for (const StepResult& s : e.steps) record_step(m.cmd_stats, s);
    }
    if (m.opt.observer) m.opt.observer->batch_returned(label, r);
    return r;
}

bool Engine::drain(Clock::time_point deadline) {
    Impl& m = *impl_;
    std::lock_guard lk(m.run_mu);
    if (m.released) return true;
    for (;;) {
        m.drain_stale_completions();
        if (m.slots.in_flight() == 0 && m.jobs_out.load() == 0) return true;
        auto now = Clock::now();
        if (now >= deadline) return false;
        pollfd fds[2] = {{m.work_fd.get(), POLLIN, 0}, {m.comp.fd(), POLLIN, 0}};
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
        int timeout = ms > INT32_MAX ? -1 : static_cast<int>(ms);
        ::poll(fds, m.comp.get() ? 2 : 1, timeout);  // wakes on the completion itself
    }
}

unsigned Engine::late_commands() {
    Impl& m = *impl_;
    std::lock_guard lk(m.run_mu);
    if (m.released) return 0;
    m.drain_stale_completions();
    return m.slots.in_flight() + m.answered_not_taken.load();
}

void Engine::shutdown() noexcept {
    if (!impl_) return;
    Impl& m = *impl_;
    m.closed.store(true);
    if (m.work_fd.valid()) m.wake_loop();  // a running async batch wakes up and returns
    std::lock_guard lk(m.run_mu);
    if (!m.released) m.release_all();
}

void Engine::cut_short(bool on) noexcept {
    if (!impl_) return;
    Impl& m = *impl_;
    m.cut.store(on);
    if (on && m.work_fd.valid()) m.wake_loop();  // a running async batch stops issuing
}

Strategy Engine::strategy() const noexcept { return impl_->opt.strategy; }
const EngineOptions& Engine::options() const noexcept { return impl_->opt; }
const Throttle& Engine::throttle() const noexcept { return impl_->throttle; }
const Throttle& Engine::slots() const noexcept { return impl_->slots; }
unsigned Engine::worker_count() const noexcept { return impl_->pool ? impl_->pool->size() : 0; }
unsigned Engine::workers_asleep() const noexcept { return impl_->pool ? impl_->pool->asleep() : 0; }

EngineStats Engine::stats() const noexcept {
    std::lock_guard lk(impl_->stats_mu);
    return impl_->stats;
}

CommandStats Engine::command_stats() const {
    std::lock_guard lk(impl_->stats_mu);
    return impl_->cmd_stats;
}

}  // namespace mlx5async::devx
