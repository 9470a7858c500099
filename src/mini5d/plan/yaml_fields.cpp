// SPDX-License-Identifier: BSD-3-Clause
// The free helpers of yaml_fields.hpp: number text, YAML parsing with the syntax error
// located, and reading a whole file.
#include "mini5d/plan/yaml_fields.hpp"

#include <fstream>
#include <sstream>

namespace mini5d::plan::yaml_input {

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
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace mini5d::plan::yaml_input
