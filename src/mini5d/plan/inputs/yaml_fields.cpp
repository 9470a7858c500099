// SPDX-License-Identifier: BSD-3-Clause
// The free helpers of yaml_fields.hpp: number text, YAML parsing with the syntax error
// located, and reading a whole file (through core/regular_file.hpp).
#include "mini5d/plan/inputs/yaml_fields.hpp"

#include <sstream>

#include "mini5d/core/regular_file.hpp"

namespace mini5d::plan::yaml_input {

namespace {
// Model, cluster and validation files are a few KiB; this bounds a runaway one.
constexpr std::size_t kMaxInputBytes = std::size_t{64} << 20;
}  // namespace

std::string fmt(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

YAML::Node parse(const std::string& text, const std::string& source) {
  try {
    YAML::Node n = YAML::Load(text);
    if (!n.IsMap()) throw InputError(source + ": expected a YAML mapping at the top level");
    return n;
  } catch (const YAML::ParserException& e) {
    throw InputError(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                     std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg);
  }
}

std::string read_file(const std::string& path) {
  // Through the one reader (core/regular_file.hpp): a FIFO or a device given as a model,
  // cluster, deck or validation file is refused, never opened blocking or read for ever.
  const FileRead r = read_regular_file(path, kMaxInputBytes);
  if (r.status == FileRead::Status::cannot_open) throw InputError(path + ": cannot open file (" + r.why + ")");
  if (!r.ok()) throw InputError(path + ": " + describe(r));
  return r.text;
}

}  // namespace mini5d::plan::yaml_input
