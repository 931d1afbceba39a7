// Benchmark entry: registers every benchmark, records the emulator profile
// and the git revision in the JSON context.
#include <benchmark/benchmark.h>
#include <sched.h>
#include <sys/prctl.h>

#include <string>

#include "bench_common.hpp"
#include "git_rev.h"


int main(int argc, char** argv) {
    using namespace mlx5async;
    // The emulator models command latency with timed waits; Linux rounds them
    // up by the thread's timer slack (50 us by default). 1 us, inherited by
    // every thread created from here (engine workers, emulator firmware
    // thread, the sequential caller), keeps the model's latencies as
    // configured, for all strategies alike.
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#ifdef MLX5A_BENCH_DESTINATION
    bench::register_destination();
#else
    bench::register_suspend_resume();
    bench::register_heuristics();
    bench::register_engine_overhead();
    bench::register_floor();
    bench::register_datapath();
#endif
    benchmark::AddCustomContext("profile", bench::profile_spec());
    benchmark::AddCustomContext("git_revision", MLX5A_GIT_REVISION);
    // The CPUs the process may run on (MLX5A_BENCH_CPUS pins it): the
    // ratios depend on whether its threads wake each other across vCPUs.
    cpu_set_t cpus;
    std::string list;
    if (::sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &cpus)) list += (list.empty() ? "" : ",") + std::to_string(c);
    benchmark::AddCustomContext("cpu_affinity", list);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
