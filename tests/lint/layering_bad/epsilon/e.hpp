// SPDX-License-Identifier: BSD-3-Clause
// Known-bad layering for check-layering.py: epsilon is not in the list.
#pragma once
