// SPDX-License-Identifier: BSD-3-Clause
// The lint's known-bad snippet for lambdas that capture structured bindings (C++20):
// g++ accepts them in C++17 even with -pedantic-errors; clang and nvcc do not
// (`clang++ -std=c++17 -fsyntax-only` reports exactly the marked lines).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

using Section = std::vector<std::pair<std::string, int>>;

int bad(const Section& given, Section& out) {
  int n = 0;
  for (const auto& [k, v] : given) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& kv) { return kv.first == k; });  // LINT-EXPECT
    if (it != out.end()) it->second = v;  // fine: not in a lambda
    n += int(std::count_if(out.begin(), out.end(), [v](const auto& kv) { return kv.second == v; }));  // LINT-EXPECT
  }
  auto [first, second] = given.front();
  auto count = [=]() { return int(first.size()) + second; };  // LINT-EXPECT
  return n + count();
}

int fine(const Section& given, Section& out) {
  int n = 0;
  for (const auto& field : given) {
    const std::string& k = field.first;
    n += int(std::count_if(out.begin(), out.end(), [&](const auto& kv) { return kv.first == k; }));
  }
  for (const auto& [k, v] : given) {
    n += v + int(k.size());
    auto twice = [](int x) { return 2 * x; };  // captures nothing
    n += twice(v);
    auto len = [&](const std::string& s) { return int(s.size()) + n; };  // uses no binding
    n += len(k);
  }
  return n;
}
