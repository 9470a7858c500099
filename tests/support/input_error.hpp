// SPDX-License-Identifier: BSD-3-Clause
// The message of the InputError a call throws: what the tests of the one-line messages
// users see compare, whole or in part.
#pragma once
#include <functional>
#include <string>

#include "mini5d/core/error.hpp"

namespace mini5d::test {

// What input_error returns when the call throws no InputError.
inline const std::string kNoInputError = "(no InputError)";

inline std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return kNoInputError;
}

}  // namespace mini5d::test
