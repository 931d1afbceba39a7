// Benchmark entry: registers every benchmark, records the emulator profile
// and the git revision in the JSON context.
#include <benchmark/benchmark.h>
#include <sys/prctl.h>

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
    bench::register_suspend_resume();
    bench::register_engine_overhead();
    bench::register_floor();
    benchmark::AddCustomContext("profile", bench::profile_spec());
    benchmark::AddCustomContext("git_revision", MLX5A_GIT_REVISION);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
