// What a fuzz target asserts: a violated property aborts with a message,
// which libFuzzer (and the replay driver's exit status) reports.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                  \
    do {                                                                        \
        if (!(cond)) {                                                          \
            std::fprintf(stderr, "fuzz: %s:%d: %s\n", __FILE__, __LINE__, what); \
            std::abort();                                                       \
        }                                                                       \
    } while (0)
