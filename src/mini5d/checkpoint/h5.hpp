// SPDX-License-Identifier: BSD-3-Clause
// Thin HDF5 helpers for the checkpoint code (private: nothing outside checkpoint/
// includes HDF5): an owning handle, error-stack silencing and its most specific
// message, opening a file over MPI-IO, attributes, dataset discovery, and the one
// collective transfer of a shard that both save and load use.
#pragma once
#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mini5d/checkpoint/runs.hpp"
#include "mini5d/core/shard.hpp"

namespace mini5d::checkpoint::detail {

// Owns one HDF5 id and closes it with the matching H5?close.
class H5Handle {
 public:
  H5Handle() = default;
  H5Handle(hid_t id, herr_t (*closer)(hid_t)) : id_(id), close_(closer) {}
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  H5Handle& operator=(H5Handle&& o) noexcept {
    if (this != &o) {
      close();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = -1;
    }
    return *this;
  }
  ~H5Handle() { close(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Returns what the close returned (negative on failure), 0 if there was nothing to close.
  herr_t close() {
    herr_t s = 0;
    if (id_ >= 0 && close_) s = close_(id_);
    id_ = -1;
    return s;
  }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// Silences HDF5's printing of its error stack while alive: we report one clean line.
class QuietH5Errors {
 public:
  QuietH5Errors();
  ~QuietH5Errors();
  QuietH5Errors(const QuietH5Errors&) = delete;
  QuietH5Errors& operator=(const QuietH5Errors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// The most specific message on HDF5's error stack, on one line (an MPI-IO error's
// multi-line error stack shortened to its last line, the OS error); call right after
// the failing call.
std::string h5_error_detail();

// The name MPI-IO is given for `path`: `path` itself, or "ufs:" and its absolute path
// when it holds a ':' (which ROMIO would read as a file-system type prefix).
std::string mpiio_name(const std::string& path);

// Opens (or, with `create`, truncates and creates) a file over MPI-IO with collective
// metadata. Invalid handle on failure, with h5_error_detail() in `detail`. Collective.
H5Handle open_file(MPI_Comm comm, const std::string& path, bool create, std::string& detail);

// The transfer property list for one dataset, the same on every rank: independent
// MPI-IO when every rank's part of it is one range of the file (`all_one_range`, agreed
// by the ranks), else collective. A rank writing or reading one range gains nothing from
// two-phase I/O, and a collective costs every rank several of MPI's own collectives per
// dataset: a 4-rank save of the tiny deck on 2 cores took 5.3 s collective and 1.3 s
// independent, its load 8.5 s and 0.34 s. Strided parts (a row-parallel weight's
// columns) stay collective, where MPI-IO merges them into large requests.
H5Handle transfer_for(bool all_one_range);

// Attributes (all ranks must write the same values). Writers throw std::runtime_error;
// readers return false if the attribute is missing or not one value of the type: an
// array, another class, an integer over 8 bytes, a string over 16 MiB is checked before
// anything is read, and said in `problem` ("is an array of 3 values, not a scalar"),
// which stays untouched when the attribute is just missing.
void write_attr(hid_t obj, const std::string& name, const std::string& value);
void write_attr(hid_t obj, const std::string& name, std::int64_t value);
void write_attr(hid_t obj, const std::string& name, std::uint64_t value);
bool read_attr(hid_t obj, const std::string& name, std::string& value, std::string* problem = nullptr);
bool read_attr(hid_t obj, const std::string& name, std::int64_t& value, std::string* problem = nullptr);
bool read_attr(hid_t obj, const std::string& name, std::uint64_t& value, std::string* problem = nullptr);
std::vector<std::string> attribute_names(hid_t obj);

// True if every component of the absolute `path` exists (H5Lexists needs that).
bool path_exists(hid_t file, const std::string& path);
std::vector<std::int64_t> dataset_shape(hid_t dset);
// Every dataset in the file as an absolute path, in natural order.
std::vector<std::string> dataset_paths(hid_t file);
bool natural_less(const std::string& a, const std::string& b);
std::string shape_string(const std::vector<std::int64_t>& shape);

// One H5Dwrite (from `in`) or H5Dread (into `out`) of the blocks of `desc` as the
// union of hyperslabs, with `dxpl` from transfer_for; `desc == nullptr` takes part with
// an empty selection (and no buffer), in the same direction as the other ranks: every
// rank of a collective call must make the same call. `runs` are shard_runs(*desc) (checked disjoint). Returns
// false on failure, with h5_error_detail() in `detail` if given (taken at once: the
// closing of the selections clears HDF5's error stack).
enum class Direction { write, read };
bool transfer(hid_t dset, hid_t dxpl, Direction dir, const ShardDescriptor* desc, const std::vector<Run>& runs,
              const float* in, float* out, std::string* detail = nullptr);

}  // namespace mini5d::checkpoint::detail
