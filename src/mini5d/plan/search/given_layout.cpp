// SPDX-License-Identifier: BSD-3-Clause
// --layout / --deck: parse, complete, rank (see given_layout.hpp).
#include "mini5d/plan/search/given_layout.hpp"

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "mini5d/rules/deck_choices.hpp"
#include "mini5d/core/stage_layers_text.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/rules/stage_split.hpp"

namespace mini5d::plan {

namespace {
const char* kKeys = "d, t, p, c, e, mb, m, zero, recompute, v, sp, schedule, stages, map";

[[noreturn]] void bad(const std::string& what) { throw InputError("--layout: " + what); }

int int_value(const std::string& key, const std::string& v, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno == ERANGE || x < lo || x > hi)
    bad(key + "=" + v + " is not valid (valid: an integer in [" + std::to_string(lo) + ", " +
        std::to_string(hi) + "])");
  return int(x);
}
}  // namespace

LayoutSpec parse_layout_spec(const std::string& spec) {
  LayoutSpec s;
  Layout& l = s.layout;
  bool has_sp = false, has_schedule = false;
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) bad("'" + item + "' is not key=value (keys: " + kKeys + ")");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    constexpr long long kDeg = 1 << 20;
    if (k == "d") l.d = int_value(k, v, 1, kDeg), s.has_d = true;
    else if (k == "t") l.t = int_value(k, v, 1, kDeg);
    else if (k == "p") l.p = int_value(k, v, 1, kDeg);
    else if (k == "c") l.c = int_value(k, v, 1, kDeg);
    else if (k == "e") l.e = int_value(k, v, 1, kDeg);
    else if (k == "mb") l.micro_batch = int_value(k, v, 1, kDeg);
    else if (k == "m") l.accumulation = int_value(k, v, 1, kDeg), s.has_m = true;
    else if (k == "zero") l.zero = int_value(k, v, 0, 3);
    else if (k == "v") l.virtual_stages = int_value(k, v, 1, 1024);
    else if (k == "stages") {
      // Blocks per virtual stage, "3+5" (commas separate the spec's keys).
      std::string text = v;
      for (char& ch : text) ch = ch == '+' ? ',' : ch;
      if (const std::string why = parse_stage_layers(text, l.stage_layers); !why.empty())
        bad("stages=" + v + " is not valid (" + why + "; valid: auto, balanced or block counts per virtual stage such as 3+5)");
    } else if (k == "recompute") {
      if (!parse_choice(v, l.recompute)) bad("recompute=" + v + " is not valid (valid: none, selective, full)");
    } else if (k == "sp") {
      // The deck's true/false (rules/deck_choices.hpp), or on/off as the tables print it.
      if (!parse_choice(v == "on" ? "true" : v == "off" ? "false" : v, l.sp))
        bad("sp=" + v + " is not valid (valid: on, off)");
      has_sp = true;
    } else if (k == "schedule") {
      if (!parse_choice(v, l.schedule)) bad("schedule=" + v + " is not valid (valid: 1f1b, gpipe, interleaved)");
      has_schedule = true;
    } else if (k == "map") {
      if (v != "block" && v != "cyclic") bad("map=" + v + " is not valid (valid: block, cyclic)");
      l.mapping = v == "cyclic" ? Mapping::cyclic : Mapping::block;
    } else {
      bad("unknown key '" + k + "' (valid: " + kKeys + ")");
    }
  }
  // The runtime's defaults: sequence parallelism on with tensor parallelism, and the
  // interleaved schedule whenever there are virtual stages.
  if (!has_sp) l.sp = l.t > 1;
  if (!has_schedule) l.schedule = l.virtual_stages > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  return s;
}

Layout complete_layout(const LayoutSpec& s, const TrainDesc& tr, long long devices) {
  Layout l = s.layout;
  const long long others = 1LL * l.t * l.p * l.c * l.e;
  if (!s.has_d && devices % others == 0) l.d = int(devices / others);
  const long long per = 1LL * l.micro_batch * l.d * l.e;
  if (!s.has_m && tr.global_batch % per == 0 && tr.global_batch / per <= 2147483647LL)
    l.accumulation = int(tr.global_batch / per);
  return l;
}

GivenRank rank_of_given(const SearchResult& r) { return {r.ahead_of_given + 1, r.fitting}; }

}  // namespace mini5d::plan
