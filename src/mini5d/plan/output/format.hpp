// SPDX-License-Identifier: BSD-3-Clause
// Number formatting shared by the table, the explanation and the scripts.
#pragma once
#include <string>

namespace mini5d::plan {

std::string gib(double bytes, int decimals = 1);      // "61.2 GiB"
std::string human_bytes(double bytes);                 // "6.40 TB" (decimal units)
std::string ms(double seconds, int decimals = 1);     // "123.4 ms" (or "1.23 s")
std::string pct(double fraction, int decimals = 1);   // "12.3%"
std::string si(double value, const std::string& unit);  // "3.21 PFLOP/s"
std::string fixed(double v, int decimals);

}  // namespace mini5d::plan
