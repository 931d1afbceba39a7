// The engine's and the ledger's events as the PMD's rte_trace points
// (trace_points.h): the observer every device's engines get, and the
// ledger's phase observer.
#pragma once

#include <memory>
#include <string>

#include "common/devx/engine.hpp"
#include "core/ledger.hpp"

namespace mlx5async::pmd {

// For the engines of device `dev` (DeviceConfig::engine_switches.observer).
std::shared_ptr<devx::CommandObserver> make_trace_observer(std::string dev);
// For its ledger (Ledger::set_observer).
core::Ledger::PhaseObserver make_ledger_tracer(std::string dev);

}  // namespace mlx5async::pmd
