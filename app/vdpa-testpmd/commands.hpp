// vdpa-testpmd: the `vdpa> ` command line (DPDK cmdline library).
#pragma once

#include <memory>
#include <string>

#include "app.hpp"

namespace vdpa_testpmd {

class Commands {
public:
    explicit Commands(App& app);
    ~Commands();
    // Runs each line of path as a command (echoed after the prompt); stops
    // at `quit`. Returns -errno when the file cannot be read.
    int run_file(const std::string& path);
    // The interactive prompt, until `quit`, EOF or a signal.
    void run_interactive();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vdpa_testpmd
