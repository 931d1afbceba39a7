// Benchmark entry: registers every benchmark, records the emulator profile
// and the git revision in the JSON context.
#include <benchmark/benchmark.h>

#include "bench_common.hpp"
#include "common/base/log_sink.hpp"

#ifndef MLX5A_GIT_REVISION
#define MLX5A_GIT_REVISION "unknown"
#endif

int main(int argc, char** argv) {
    using namespace mlx5async;
    bench::register_suspend_resume();
    bench::register_engine_overhead();
    benchmark::AddCustomContext("profile", bench::profile_spec());
    benchmark::AddCustomContext("git_revision", MLX5A_GIT_REVISION);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
