// SPDX-License-Identifier: BSD-3-Clause
// The --validate mode of mini5d-plan (validation_cli.cpp): published runs against the
// planner, for the docs' tables and perf/fit_cluster.py.
#pragma once

namespace mini5d::plan {

// argv as mini5d-plan got it (one of them --validate); returns the exit status.
int validate_main(int argc, char** argv);

}  // namespace mini5d::plan
