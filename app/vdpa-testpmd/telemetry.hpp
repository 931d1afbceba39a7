// vdpa-testpmd's own telemetry commands, beside the PMD's:
// /vdpa_testpmd/emu_objects,<device>: the objects the emulated device
// holds (pds, uars, umems, mkeys, counters, virtqs, cqs, qps, sqs), which a
// soak samples to see that nothing leaks in the device.
#pragma once

#include "app.hpp"

namespace vdpa_testpmd {

// Registers the commands over app's ports (found at start, never removed).
void register_telemetry(App& app);

}  // namespace vdpa_testpmd
