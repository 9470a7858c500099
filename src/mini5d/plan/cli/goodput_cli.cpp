// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/plan/cli/goodput_cli.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include "mini5d/rules/goodput.hpp"

namespace mini5d::plan {

namespace {

const char* const kUsage =
    "step_s=S,save_s=C,restart_s=R,node_mtbf_s=M,nodes=N[,write_s=W][,interval_steps=K]";

struct BadArgument : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// key=value pairs, comma-separated; every key known, none twice, every value a number.
std::map<std::string, double> parse_pairs(const std::string& text) {
  static const char* const kKeys[] = {"step_s", "save_s", "restart_s", "node_mtbf_s", "nodes", "write_s",
                                      "interval_steps"};
  std::map<std::string, double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw BadArgument("'" + item + "' is not key=value (expected " + kUsage + ")");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    if (!known) throw BadArgument("unknown key '" + key + "' (expected " + kUsage + ")");
    if (out.count(key)) throw BadArgument("'" + key + "' given twice");
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0') throw BadArgument(key + ": '" + value + "' is not a number");
    out[key] = v;
  }
  for (const char* k : {"step_s", "save_s", "restart_s", "node_mtbf_s", "nodes"})
    if (!out.count(k)) throw BadArgument(std::string(k) + ": missing (expected " + kUsage + ")");
  return out;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// A whole number in [lo, 1e15], or the one line saying it is not.
long long whole(const std::string& key, double v, long long lo) {
  if (!std::isfinite(v) || v != std::floor(v) || v < double(lo) || v > 1e15)
    throw BadArgument(key + ": " + num(v) + " is out of range (valid: an integer >= " +
                      std::to_string(lo) + ")");
  return static_cast<long long>(v);
}

}  // namespace

int goodput_main(int argc, char** argv) {
  try {
    std::string text;
    int found = 0;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a != "--goodput") throw BadArgument("'" + a + "' does not go with --goodput (it takes one argument)");
      if (i + 1 >= argc) throw BadArgument("needs " + std::string(kUsage));
      text = argv[++i];
      ++found;
    }
    if (found != 1) throw BadArgument("given more than once");
    const auto kv = parse_pairs(text);
    goodput::Inputs in;
    in.step_s = kv.at("step_s");
    in.save_s = kv.at("save_s");
    in.restart_s = kv.at("restart_s");
    in.node_mtbf_s = kv.at("node_mtbf_s");
    in.nodes = whole("nodes", kv.at("nodes"), 1);
    in.write_s = kv.count("write_s") ? kv.at("write_s") : 0;
    if (const std::string bad = goodput::invalid_field(in); !bad.empty()) throw BadArgument(bad);
    const long long k = kv.count("interval_steps") ? whole("interval_steps", kv.at("interval_steps"), 1)
                                                   : goodput::young_interval_steps(in);
    std::printf("{\"ettr\": %s, \"interval_steps\": %lld, \"young_daly_s\": %s, \"young_daly_steps\": %lld, "
                "\"job_mtbf_s\": %s, \"step_s\": %s, \"save_s\": %s, \"write_s\": %s, \"restart_s\": %s, "
                "\"node_mtbf_s\": %s, \"nodes\": %lld}\n",
                num(goodput::ettr(in, k)).c_str(), k, num(goodput::young_interval_s(in)).c_str(),
                goodput::young_interval_steps(in), num(in.job_mtbf_s()).c_str(), num(in.step_s).c_str(),
                num(in.save_s).c_str(), num(in.write_s).c_str(), num(in.restart_s).c_str(),
                num(in.node_mtbf_s).c_str(), in.nodes);
    return 0;
  } catch (const BadArgument& e) {
    std::fprintf(stderr, "mini5d-plan: --goodput: %s\n", e.what());
    return 1;
  }
}

}  // namespace mini5d::plan
