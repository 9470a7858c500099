// SPDX-License-Identifier: BSD-3-Clause
// The checked YAML access shared by the model/deck reader (input_files.cpp) and the
// cluster file reader (cluster_file.cpp), so that every failure names file, field and
// range in one line. Included by those .cpp files only: yaml-cpp stays private.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/inputs/input_schema.hpp"

namespace mini5d::plan::yaml_input {

std::string fmt(double v);
std::string join(const std::vector<std::string>& v);

class Fields {
 public:
  Fields(YAML::Node root, std::string source) : root_(std::move(root)), src_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(src_ + ": " + field + ": " + what);
  }

  // node at "a.b.c" (undefined node if any part is missing)
  YAML::Node at(const std::string& path) const {
    YAML::Node n;
    n.reset(root_);  // rebind (operator= would overwrite the tree)
    std::size_t pos = 0;
    while (true) {
      const std::size_t dot = path.find('.', pos);
      const std::string key = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
      if (!n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
      YAML::Node next = n[key];
      if (!next) return YAML::Node(YAML::NodeType::Undefined);
      n.reset(next);
      if (dot == std::string::npos) return n;
      pos = dot + 1;
    }
  }
  bool has(const std::string& path) const { return bool(at(path)); }

  // A number in [lo, hi]; `what` says what the field is (for the message).
  double number(const std::string& path, double lo, double hi, const std::string& what,
                bool required = true, double fallback = 0, bool integer = false) const {
    const YAML::Node n = at(path);
    const std::string range = range_text(lo, hi, integer);
    if (!n || n.IsNull()) {
      if (required) fail(path, "missing (" + what + "; valid: " + range + ")");
      return fallback;
    }
    if (!n.IsScalar()) fail(path, "expected a number (" + what + "; valid: " + range + ")");
    double v = 0;
    if (integer) {
      // Integers are written as integers: "2.5" and "1e3" are refused, not rounded.
      const std::string& txt = n.Scalar();
      char* end = nullptr;
      errno = 0;
      const long long iv = std::strtoll(txt.c_str(), &end, 10);
      if (txt.empty() || *end != '\0' || errno == ERANGE)
        fail(path, "'" + txt + "' is not an integer (" + what + "; valid: " + range + ")");
      if (double(iv) < lo || double(iv) > hi)
        fail(path, txt + " is out of range (" + what + "; valid: " + range + ")");
      return double(iv);
    }
    try {
      v = n.as<double>();
    } catch (const YAML::Exception&) {
      fail(path, "'" + n.Scalar() + "' is not a number (" + what + "; valid: " + range + ")");
    }
    if (!std::isfinite(v) || v < lo || v > hi || (integer && v != std::floor(v)))
      fail(path, fmt(v) + " is out of range (" + what + "; valid: " + range + ")");
    return v;
  }
  long long integer(const std::string& path, long long lo, long long hi, const std::string& what,
                    bool required = true, long long fallback = 0) const {
    return static_cast<long long>(number(path, double(lo), double(hi), what, required,
                                         double(fallback), true));
  }
  std::string text(const std::string& path, const std::string& fallback) const {
    const YAML::Node n = at(path);
    if (!n || n.IsNull()) return fallback;
    if (!n.IsScalar()) fail(path, "expected a string");
    return n.Scalar();
  }
  // A text that must be one of `valid` (the first is listed first in the message).
  std::string one_of(const std::string& path, const std::string& fallback,
                     const std::vector<std::string>& valid) const {
    const std::string s = text(path, fallback);
    std::string list;
    for (const std::string& v : valid) {
      if (v == s) return s;
      list += (list.empty() ? "" : ", ") + v;
    }
    fail(path, "'" + s + "' is not valid (valid: " + list + ")");
  }
  // Every map at a path the schema lists may hold only the listed keys.
  void check_keys(const KeySchema& schema, const std::string& kind) const {
    walk(root_, "", schema, kind);
  }
  bool flag(const std::string& path, bool fallback) const {
    const YAML::Node n = at(path);
    if (!n || n.IsNull()) return fallback;
    try {
      return n.as<bool>();
    } catch (const YAML::Exception&) {
      fail(path, "'" + n.Scalar() + "' is not a boolean (valid: true, false)");
    }
  }
  // The scalar fields of a top-level section, in file order.
  DeckSection scalars(const std::string& section) const {
    DeckSection out;
    const YAML::Node n = at(section);
    if (!n || !n.IsMap()) return out;
    for (auto it = n.begin(); it != n.end(); ++it)
      if (it->second.IsScalar()) out.emplace_back(it->first.Scalar(), it->second.Scalar());
    return out;
  }

 private:
  void walk(const YAML::Node& n, const std::string& path, const KeySchema& schema,
            const std::string& kind) const {
    const auto it = schema.find(path);
    if (it == schema.end() || !n.IsMap()) return;
    for (auto kv = n.begin(); kv != n.end(); ++kv) {
      const std::string key = kv->first.IsScalar() ? kv->first.Scalar() : "?";
      const std::string full = path.empty() ? key : path + "." + key;
      bool known = false;
      for (const auto& k : it->second) known = known || k == key;
      if (!known)
        fail(full, path.empty()
                       ? "unknown section or field of a " + kind + " (valid: " + join(it->second) + ")"
                       : "unknown field (valid in " + path + ": " + join(it->second) + ")");
      walk(kv->second, full, schema, kind);
    }
  }
  static std::string range_text(double lo, double hi, bool integer) {
    if (integer && hi < 9e18)
      return "an integer in [" + std::to_string(static_cast<long long>(lo)) + ", " +
             std::to_string(static_cast<long long>(hi)) + "]";
    std::string s = integer ? "an integer " : "a number ";
    if (hi >= 1e300) return s + ">= " + fmt(lo);
    return s + "in [" + fmt(lo) + ", " + fmt(hi) + "]";
  }
  YAML::Node root_;
  std::string src_;
};

YAML::Node parse(const std::string& text, const std::string& source);
std::string read_file(const std::string& path);

}  // namespace mini5d::plan::yaml_input
