// SPDX-License-Identifier: BSD-3-Clause
// Known-bad layering for check-layering.py: alpha and beta include each other.
#pragma once
#include "mini5d/alpha/a.hpp"
