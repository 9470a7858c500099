// SPDX-License-Identifier: BSD-3-Clause
// Known-bad layering for check-layering.py: gamma includes alpha, which the list does not allow.
#pragma once
#include "mini5d/alpha/a.hpp"
