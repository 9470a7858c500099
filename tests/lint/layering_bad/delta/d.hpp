// SPDX-License-Identifier: BSD-3-Clause
// Known-bad layering for check-layering.py: the list lets delta include beta, and nothing does.
#pragma once
