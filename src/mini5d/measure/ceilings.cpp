// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/measure/ceilings.hpp"

#include <KokkosBlas3_gemm.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "mini5d/core/error.hpp"
#include "mini5d/core/fresh_file.hpp"
#include "mini5d/core/json_text.hpp"
#include "mini5d/core/regular_file.hpp"
#include "mini5d/core/replace_target.hpp"
#include "mini5d/kernels/views.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/measure/platform.hpp"

namespace mini5d::measure {

namespace {
std::string this_backend() { return ExecSpace::name(); }

std::string jstr(const std::string& s) { return json_quote(s); }
std::string jnum(double v) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.6g", v);
  return b;
}

// Best of `reps` timed runs of f (after one warm-up), in seconds.
template <class F>
double best_seconds(int reps, F&& f) {
  f();
  fence("mini5d::ceilings::warmup");
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    Kokkos::Timer t;
    f();
    fence("mini5d::ceilings::rep");
    best = std::min(best, t.seconds());
  }
  return best;
}

// The number after "key": in a flat JSON object (the cache is written by
// ceilings_json below), or a string value for string keys.
std::string field(const std::string& text, const std::string& key) {
  const auto at = text.find("\"" + key + "\"");
  if (at == std::string::npos) return "";
  auto colon = text.find(':', at);
  if (colon == std::string::npos) return "";
  ++colon;
  while (colon < text.size() && text[colon] == ' ') ++colon;
  if (colon < text.size() && text[colon] == '"') {
    const auto end = text.find('"', colon + 1);
    return end == std::string::npos ? "" : text.substr(colon + 1, end - colon - 1);
  }
  const auto end = text.find_first_of(",}\n", colon);
  return text.substr(colon, end - colon);
}
// True when the file at `path` was last written before the running executable was: a
// new build may run its kernels differently (another BLAS, other flags).
bool older_than_this_binary(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return false;  // not Linux: no way to tell, keep the cache
  const auto built = fs::last_write_time(exe, ec);
  if (ec) return false;
  const auto measured = fs::last_write_time(path, ec);
  return !ec && measured < built;
}
}  // namespace

Ceilings measure_ceilings() {
  Ceilings c;
  c.host = host_name();
  c.backend = this_backend();
  c.source = "measured by mini5d ceilings";
  {
    // 1024^3 sgemm: large enough for the BLAS's best blocking, ~20 ms on a CPU core.
    const int n = 1024;
    Mat<float> a("mini5d::ceilings::a", n, n), b("mini5d::ceilings::b", n, n), y("mini5d::ceilings::y", n, n);
    Kokkos::deep_copy(a, 1.0f);
    Kokkos::deep_copy(b, 0.5f);
    const double s = best_seconds(5, [&] { KokkosBlas::gemm("N", "T", 1.0f, a, b, 0.0f, y); });
    c.gemm_gflops = 2.0 * n * double(n) * n / s * 1e-9;
  }
  {
    // Triad over 3 x 128 MB: well beyond any last-level cache.
    const std::int64_t n = std::int64_t(32) << 20;
    Vec<float> a("mini5d::ceilings::ta", n), b("mini5d::ceilings::tb", n), d("mini5d::ceilings::tc", n);
    Kokkos::deep_copy(b, 1.0f);
    Kokkos::deep_copy(d, 2.0f);
    const double s = best_seconds(5, [&] {
      Kokkos::parallel_for(
          "mini5d::ceilings::triad", Range(0, n), KOKKOS_LAMBDA(const std::int64_t i) { a(i) = b(i) + 0.5f * d(i); });
    });
    c.stream_gbs = 3.0 * 4.0 * double(n) / s * 1e-9;
  }
  return c;
}

std::string ceilings_cache_path() {
  if (const char* p = std::getenv("MINI5D_CEILINGS"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/mini5d/ceilings.json";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/mini5d/ceilings.json";
  return "mini5d-ceilings.json";
}

std::string ceilings_json(const Ceilings& c) {
  std::ostringstream o;
  o << "{\"gemm_gflops\": " << jnum(c.gemm_gflops) << ", \"stream_gbs\": " << jnum(c.stream_gbs)
    << ", \"host\": " << jstr(c.host) << ", \"backend\": " << jstr(c.backend) << ", \"source\": " << jstr(c.source)
    << "}";
  return o.str();
}

std::optional<Ceilings> cached_ceilings() {
  const std::string path = ceilings_cache_path();
  // A cache: missing, unreadable, or not a regular file (a FIFO or device, never opened
  // blocking: core/regular_file.hpp) is the same as no cache.
  const FileRead r = read_regular_file(path, std::size_t{1} << 20);
  if (!r.ok()) return std::nullopt;
  const std::string& text = r.text;
  Ceilings c;
  c.host = field(text, "host");
  c.backend = field(text, "backend");
  c.gemm_gflops = std::atof(field(text, "gemm_gflops").c_str());
  c.stream_gbs = std::atof(field(text, "stream_gbs").c_str());
  if (!(c.gemm_gflops > 0) || !(c.stream_gbs > 0)) return std::nullopt;
  c.source = path;
  if (c.host != host_name())
    c.stale = "measured on host " + c.host + ", not " + host_name();
  else if (c.backend != this_backend())
    c.stale = "measured with the " + c.backend + " backend, not " + this_backend();
  else if (older_than_this_binary(path))
    c.stale = "measured before this mini5d was built";
  return c;
}

void save_ceilings(const Ceilings& c, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  // Renamed over: a FIFO or device there would be replaced, so it is refused; a link
  // is written through to its target.
  const ReplaceTarget target = replace_target(path, "MINI5D_CEILINGS");
  if (!target.problem.empty()) throw std::runtime_error("ceilings: " + target.problem);
  const std::string tmp = target.path + ".tmp";
  if (auto why = write_fresh(tmp, ceilings_json(c) + "\n"); !why.empty())
    throw std::runtime_error("ceilings: " + why);
  fs::rename(tmp, target.path, ec);
  if (ec) throw std::runtime_error("ceilings: cannot write " + path + ": " + ec.message());
}

Ceilings ceilings_from_cluster(const std::string& path) {
  plan::ClusterDesc cl;
  try {
    cl = plan::load_cluster_file(path);
  } catch (const plan::InputError& e) {
    throw InputError(e.what());  // a bad file is an input error (exit 2), not a fatal one
  }
  Ceilings c;
  c.host = host_name();
  c.backend = this_backend();
  c.gemm_gflops = (cl.device.sustained[0] > 0 ? cl.device.sustained[0] : cl.device.peak[0]) * 1e-9;
  c.stream_gbs = cl.device.hbm_bandwidth * 1e-9;
  if (!(c.gemm_gflops > 0) || !(c.stream_gbs > 0))
    throw std::runtime_error(path + ": device.sustained_tflops.fp32 (or peak_tflops.fp32) and "
                             "device.memory_bandwidth_gbs must be > 0 for the ceilings");
  c.source = "cluster file " + path;
  return c;
}

}  // namespace mini5d::measure
