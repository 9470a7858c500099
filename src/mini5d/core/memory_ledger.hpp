// SPDX-License-Identifier: BSD-3-Clause
// Memory accounting by category. Every long-lived buffer the app allocates (model
// state, optimizer state, activations, communication and work buffers) is recorded
// here under one category, with current and peak bytes per category and for the
// total, so the report can print measured memory next to the analytic prediction
// (docs/parallelism.md). One ledger per process (= per rank); an owner holds a Charge that
// gives its bytes back when the owner goes away.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace mini5d::mem {

// checkpoint_staging: the host copies an asynchronous checkpoint writes from while
// training goes on (train/async_checkpoint.hpp).
enum class Category { weights, gradients, optimizer, activations, comm_buffers, workspace, checkpoint_staging };
constexpr int kCategories = 7;
const char* to_string(Category c);

struct Usage {
  std::int64_t current = 0, peak = 0;
};

class Ledger {
 public:
  void add(Category c, std::int64_t bytes);
  void remove(Category c, std::int64_t bytes);
  const Usage& of(Category c) const { return cat_[int(c)]; }
  const Usage& total() const { return total_; }
  // Forget the peaks (current stays): e.g. between tests in one process.
  void reset_peaks();

 private:
  std::array<Usage, kCategories> cat_{};
  Usage total_;
};

// The process's ledger.
Ledger& ledger();

// Bytes charged to a category for as long as the Charge lives (move-only).
class Charge {
 public:
  Charge() = default;
  Charge(Category c, std::int64_t bytes) : cat_(c), bytes_(bytes) { ledger().add(c, bytes); }
  Charge(Charge&& o) noexcept : cat_(o.cat_), bytes_(o.bytes_) { o.bytes_ = 0; }
  Charge& operator=(Charge&& o) noexcept {
    if (this != &o) {
      release();
      cat_ = o.cat_;
      bytes_ = o.bytes_;
      o.bytes_ = 0;
    }
    return *this;
  }
  Charge(const Charge&) = delete;
  Charge& operator=(const Charge&) = delete;
  ~Charge() { release(); }
  std::int64_t bytes() const { return bytes_; }
  // Add more bytes to this charge (several buffers of one owner).
  void grow(std::int64_t bytes) {
    ledger().add(cat_, bytes);
    bytes_ += bytes;
  }

 private:
  void release() {
    if (bytes_ != 0) ledger().remove(cat_, bytes_);
    bytes_ = 0;
  }
  Category cat_ = Category::workspace;
  std::int64_t bytes_ = 0;
};

// Bytes of a Kokkos View's allocation (its span times the element size).
template <class View>
std::int64_t view_bytes(const View& v) {
  return std::int64_t(v.span()) * std::int64_t(sizeof(typename View::value_type));
}

}  // namespace mini5d::mem
