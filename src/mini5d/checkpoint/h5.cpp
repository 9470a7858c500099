// SPDX-License-Identifier: BSD-3-Clause
// See h5.hpp. Strings are written as fixed-length UTF-8 attributes (h5dump and h5py
// show them as text); variable-length ones are read too, for files made by other tools.
#include "mini5d/checkpoint/h5.hpp"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace mini5d::checkpoint::detail {

QuietH5Errors::QuietH5Errors() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}
QuietH5Errors::~QuietH5Errors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

std::string h5_error_detail() {
  std::string out;
  // Walking upward starts at the most specific entry (where the error arose).
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
        auto* s = static_cast<std::string*>(data);
        if (n == 0 && e->desc) *s = e->desc;
        return 0;
      },
      &out);
  if (out.empty()) return "unknown HDF5 error";
  // "MPI_File_write_at_all failed: MPI error string is 'Other I/O error , error stack:\n
  // ...\nADIOI_GEN_WRITECONTIG(80)..: Other I/O error No space left on device'": keep the
  // call and the last line's error.
  const auto nl = out.find('\n');
  if (nl != std::string::npos) {
    std::string last = out.substr(out.rfind('\n') + 1);
    if (const auto colon = last.find(": "); colon != std::string::npos) last = last.substr(colon + 2);
    while (!last.empty() && (last.back() == '\'' || std::isspace(static_cast<unsigned char>(last.back())))) last.pop_back();
    std::string head = out.substr(0, nl);
    if (const auto mpi = head.find(": MPI error string is"); mpi != std::string::npos) head.resize(mpi);
    out = head + ": " + last;
  }
  return out;
}

std::string mpiio_name(const std::string& path) {
  // ROMIO reads a name's text before its first ':' as a file-system type ("nfs:",
  // "lustre:"), so "run-12:00/step-2.h5" fails as an unknown type "run-12", after
  // training. With ':' in the path, the generic Unix driver is named explicitly, on the
  // absolute path (ROMIO takes everything after the first prefix literally). Without
  // one, ROMIO keeps choosing the driver from the file system, as before.
  if (path.find(':') == std::string::npos) return path;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return "ufs:" + (ec ? path : abs.string());
}

H5Handle open_file(MPI_Comm comm, const std::string& path_given, bool create, std::string& detail) {
  const std::string path = mpiio_name(path_given);
  H5Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL);
  // Metadata read once and broadcast, written collectively: scales to many ranks.
  // Every metadata call below is made by all ranks, in the same order.
  H5Pset_all_coll_metadata_ops(fapl.get(), 1);
  H5Pset_coll_metadata_write(fapl.get(), 1);
  const hid_t f = create ? H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get())
                         : H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (f < 0) detail = h5_error_detail();
  return H5Handle(f, H5Fclose);
}

H5Handle transfer_for(bool all_one_range) {
  H5Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  H5Pset_dxpl_mpio(dxpl.get(), all_one_range ? H5FD_MPIO_INDEPENDENT : H5FD_MPIO_COLLECTIVE);
  return dxpl;
}

namespace {

void write_raw_attr(hid_t obj, const std::string& name, hid_t file_type, hid_t mem_type,
                    const void* value) {
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attr(H5Acreate2(obj, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), mem_type, value) < 0)
    throw std::runtime_error("cannot write attribute " + name + ": " + h5_error_detail());
}

H5Handle open_attr(hid_t obj, const std::string& name) {
  if (H5Aexists(obj, name.c_str()) <= 0) return {};
  return H5Handle(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
}

// Far above the largest attribute mini5d writes (a manifest part is 32 KiB, a deck a
// few KiB), and what a reader allocates at most for one string.
constexpr std::size_t kMaxStringAttr = std::size_t{16} << 20;

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER: return "an integer";
    case H5T_FLOAT: return "a floating-point number";
    case H5T_STRING: return "a string";
    case H5T_COMPOUND: return "a compound";
    case H5T_ARRAY: return "an array type";
    case H5T_ENUM: return "an enum";
    case H5T_VLEN: return "a variable-length sequence";
    default: return "of another type";
  }
}

// Why `attr` is not one value of class `want` ("" if it is): a file edited by another
// tool may hold an array, a string array or another type under a name mini5d reads,
// and reading it as one value would write past the caller's buffer. Checked before
// any read: the class, the dataspace (a scalar) and the size.
std::string shape_problem(hid_t attr, hid_t type, H5T_class_t want) {
  const H5T_class_t have = H5Tget_class(type);
  if (have != want) return std::string("is ") + class_name(have) + ", not " + class_name(want);
  H5Handle space(H5Aget_space(attr), H5Sclose);
  const H5S_class_t sc = H5Sget_simple_extent_type(space.get());
  if (sc != H5S_SCALAR) {
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    return sc == H5S_NULL ? std::string("is empty (a null dataspace), not one value")
                          : "is an array of " + std::to_string(static_cast<long long>(n)) + " value" +
                                (n == 1 ? "" : "s") + ", not a scalar";
  }
  const std::size_t size = H5Tget_size(type);
  if (want == H5T_INTEGER && (size == 0 || size > 8))
    return "is an integer of " + std::to_string(size) + " bytes, not at most 8";
  if (want == H5T_STRING && H5Tis_variable_str(type) <= 0 && size > kMaxStringAttr)
    return "is a string of " + std::to_string(size) + " bytes, more than the limit of 16 MiB";
  return {};
}

template <class T>
bool read_int_attr(hid_t obj, const std::string& name, hid_t mem_type, T& value, std::string* problem) {
  H5Handle attr = open_attr(obj, name);
  if (!attr.valid()) return false;
  H5Handle type(H5Aget_type(attr.get()), H5Tclose);
  if (auto p = shape_problem(attr.get(), type.get(), H5T_INTEGER); !p.empty()) {
    if (problem) *problem = p;
    return false;
  }
  // Read into a local first: the caller's value changes only on success. (HDF5
  // converts between integer types, saturating a value the target cannot hold.)
  T v{};
  if (H5Aread(attr.get(), mem_type, &v) < 0) {
    if (problem) *problem = "does not fit the integer type mini5d reads it as";
    return false;
  }
  value = v;
  return true;
}

}  // namespace

void write_attr(hid_t obj, const std::string& name, const std::string& value) {
  H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), value.size() + 1);
  H5Tset_strpad(type.get(), H5T_STR_NULLTERM);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  write_raw_attr(obj, name, type.get(), type.get(), value.c_str());
}
void write_attr(hid_t obj, const std::string& name, std::int64_t value) {
  write_raw_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}
void write_attr(hid_t obj, const std::string& name, std::uint64_t value) {
  write_raw_attr(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

bool read_attr(hid_t obj, const std::string& name, std::int64_t& value, std::string* problem) {
  return read_int_attr(obj, name, H5T_NATIVE_INT64, value, problem);
}
bool read_attr(hid_t obj, const std::string& name, std::uint64_t& value, std::string* problem) {
  return read_int_attr(obj, name, H5T_NATIVE_UINT64, value, problem);
}

bool read_attr(hid_t obj, const std::string& name, std::string& value, std::string* problem) {
  H5Handle attr = open_attr(obj, name);
  if (!attr.valid()) return false;
  H5Handle type(H5Aget_type(attr.get()), H5Tclose);
  if (auto p = shape_problem(attr.get(), type.get(), H5T_STRING); !p.empty()) {
    if (problem) *problem = p;
    return false;
  }
  if (H5Tis_variable_str(type.get()) > 0) {
    H5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    char* s = nullptr;
    if (H5Aread(attr.get(), mem.get(), &s) < 0) return false;
    value = s ? std::string(s, ::strnlen(s, kMaxStringAttr)) : "";
    H5free_memory(s);
    return true;
  }
  std::string buf(H5Tget_size(type.get()) + 1, '\0');
  if (H5Aread(attr.get(), type.get(), buf.data()) < 0) return false;
  value = buf.substr(0, buf.find('\0'));
  return true;
}

std::vector<std::string> attribute_names(hid_t obj) {
  std::vector<std::string> names;
  hsize_t idx = 0;
  H5Aiterate2(
      obj, H5_INDEX_NAME, H5_ITER_INC, &idx,
      [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
        static_cast<std::vector<std::string>*>(data)->push_back(name);
        return 0;
      },
      &names);
  return names;
}

bool path_exists(hid_t file, const std::string& path) {
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return true;
}

std::vector<std::int64_t> dataset_shape(hid_t dset) {
  H5Handle space(H5Dget_space(dset), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(rank > 0 ? rank : 0);
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return std::vector<std::int64_t>(dims.begin(), dims.end());
}

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string x = a.substr(i, ie - i), y = b.substr(j, je - j);
      if (x.size() != y.size()) return x.size() < y.size();  // no leading zeros in our names
      if (x != y) return x < y;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::vector<std::string> dataset_paths(hid_t file) {
  struct Visit {
    hid_t file;
    std::vector<std::string> paths;
  } v{file, {}};
  H5Lvisit(
      file, H5_INDEX_NAME, H5_ITER_INC,
      [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
        auto* vis = static_cast<Visit*>(data);
        H5Handle obj(H5Oopen(vis->file, name, H5P_DEFAULT), H5Oclose);
        if (obj.valid() && H5Iget_type(obj.get()) == H5I_DATASET)
          vis->paths.push_back(std::string("/") + name);
        return 0;
      },
      &v);
  std::sort(v.paths.begin(), v.paths.end(), natural_less);
  return v.paths;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool transfer(hid_t dset, hid_t dxpl, Direction dir, const ShardDescriptor* desc, const std::vector<Run>& runs,
              const float* in, float* out, std::string* detail) {
  H5Handle fspace(H5Dget_space(dset), H5Sclose);
  const std::int64_t n = desc ? desc->local_elements() : 0;
  if (n == 0) {
    H5Sselect_none(fspace.get());
  } else if (desc->global_shape.empty()) {
    H5Sselect_all(fspace.get());  // a scalar
  } else {
    bool first = true;
    for (const auto& b : desc->blocks) {
      if (b.size() == 0) continue;
      const std::vector<hsize_t> start(b.offset.begin(), b.offset.end()),
          count(b.extent.begin(), b.extent.end());
      if (H5Sselect_hyperslab(fspace.get(), first ? H5S_SELECT_SET : H5S_SELECT_OR, start.data(),
                              nullptr, count.data(), nullptr) < 0)
        return false;
      first = false;
    }
  }
  const hsize_t mdims = n > 0 ? static_cast<hsize_t>(n) : 1;
  H5Handle mspace(H5Screate_simple(1, &mdims, nullptr), H5Sclose);
  if (n == 0) H5Sselect_none(mspace.get());

  // HDF5 pairs elements in row-major order of the union: use the caller's buffer when
  // it already holds them in that order, else stage through a packed copy.
  const bool direct = runs_are_packed(runs);
  std::vector<float> staging(direct ? 0 : static_cast<std::size_t>(n));
  float dummy = 0;
  herr_t status;
  if (dir == Direction::write) {
    const float* buf = n == 0 ? &dummy : direct ? in + runs.front().local : staging.data();
    if (!direct) {
      std::size_t k = 0;
      for (const auto& r : runs)
        for (std::int64_t i = 0; i < r.length; ++i) staging[k++] = in[r.local + i];
    }
    status = H5Dwrite(dset, H5T_NATIVE_FLOAT, mspace.get(), fspace.get(), dxpl, buf);
  } else {
    float* buf = n == 0 ? &dummy : direct ? out + runs.front().local : staging.data();
    status = H5Dread(dset, H5T_NATIVE_FLOAT, mspace.get(), fspace.get(), dxpl, buf);
    if (status >= 0 && !direct) {
      std::size_t k = 0;
      for (const auto& r : runs)
        for (std::int64_t i = 0; i < r.length; ++i) out[r.local + i] = staging[k++];
    }
  }
  if (status < 0 && detail) *detail = h5_error_detail();
  return status >= 0;
}

}  // namespace mini5d::checkpoint::detail
