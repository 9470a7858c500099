// SPDX-License-Identifier: BSD-3-Clause
// How long this process has been running, for the start-up part of a restart: from
// the moment the kernel started it (the loader's mapping of the shared libraries and
// MPI_Init included), not from main.
#pragma once

namespace mini5d {

// Seconds since the process started: on Linux the kernel's start time
// (/proc/self/stat, in clock ticks, 10 ms) against CLOCK_BOOTTIME; elsewhere, or if
// that cannot be read, since this library was loaded.
double process_age_seconds();

}  // namespace mini5d
