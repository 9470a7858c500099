// SPDX-License-Identifier: BSD-3-Clause
// YAML readers (yaml-cpp). Numbers are read through a checked accessor so that every
// failure names file, field and range in one line.
#include "mini5d/plan/input_files.hpp"

#include "mini5d/plan/emit_slurm.hpp"  // validate_slurm

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "mini5d/plan/input_schema.hpp"

namespace mini5d::plan {

namespace {

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

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

// device.gemm.table: rows [op, m, n, k, GFLOP/s], op one of NN NT TN TT (the
// transposes of A and B), shapes positive integers.
std::vector<GemmPoint> read_gemm_table(const Fields& f, const std::string& key) {
  std::vector<GemmPoint> out;
  const YAML::Node t = f.at(key);
  if (!t) return out;
  if (!t.IsSequence()) f.fail(key, "expected a list of [op, m, n, k, GFLOP/s] rows");
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string fld = key + "[" + std::to_string(i) + "]";
    const YAML::Node r = t[i];
    if (!r.IsSequence() || r.size() != 5 || !r[0].IsScalar())
      f.fail(fld, "expected [op, m, n, k, GFLOP/s], e.g. [NT, 2048, 1536, 512, 98.5]");
    const std::string op = r[0].Scalar();
    if (op.size() != 2 || (op[0] != 'N' && op[0] != 'T') || (op[1] != 'N' && op[1] != 'T'))
      f.fail(fld, "op '" + op + "' is not valid (valid: NN, NT, TN, TT)");
    double v[4] = {};
    for (int j = 0; j < 4; ++j) {
      try {
        v[j] = r[j + 1].as<double>();
      } catch (const YAML::Exception&) {
        f.fail(fld, "'" + r[j + 1].Scalar() + "' is not a number");
      }
      const bool shape = j < 3;
      if (!std::isfinite(v[j]) || v[j] <= 0 || (shape && (v[j] != std::floor(v[j]) || v[j] > 1e9)) ||
          (!shape && v[j] > 1e7))
        f.fail(fld, fmt(v[j]) + " is out of range (m, n, k: integers in [1, 1e9]; GFLOP/s in (0, 1e7])");
    }
    out.push_back({op[0], op[1], v[0], v[1], v[2], 2 * v[0] * v[1] * v[2] / (v[3] * 1e9)});
  }
  return out;
}

// A tier's measured [bytes, GB/s] points, ascending in bytes (empty if absent).
BandwidthCurve read_curve(const Fields& f, const std::string& key) {
  BandwidthCurve out;
  const YAML::Node c = f.at(key);
  if (!c) return out;
  if (!c.IsSequence()) f.fail(key, "expected a list of [bytes, GB/s] pairs");
  double prev = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const std::string fld = key + "[" + std::to_string(i) + "]";
    if (!c[i].IsSequence() || c[i].size() != 2) f.fail(fld, "expected a [bytes, GB/s] pair");
    double b = 0, bw = 0;
    try {
      b = c[i][0].as<double>(), bw = c[i][1].as<double>();
    } catch (const YAML::Exception&) {
      f.fail(fld, "expected two numbers [bytes, GB/s]");
    }
    if (!(b > prev) || !(bw > 0)) f.fail(fld, "bytes must increase along the curve and GB/s must be > 0");
    prev = b;
    out.emplace_back(b, bw * 1e9);
  }
  return out;
}

LinkTier read_tier(const Fields& f, const std::string& key) {
  LinkTier t;
  t.name = f.text(key + ".name", key);
  t.bandwidth = 1e9 * f.number(key + ".bandwidth_gbs", 1e-6, 1e6,
                               "per-device, per-direction bandwidth in GB/s");
  t.latency = 1e-6 * f.number(key + ".latency_us", 0, 1e6, "latency per message in microseconds");
  t.curve = read_curve(f, key + ".curve");
  t.gather_curve = read_curve(f, key + ".gather_curve");
  t.send_curve = read_curve(f, key + ".send_curve");
  return t;
}

}  // namespace

ModelInput parse_model_text(const std::string& text, const std::string& source) {
  const Fields f(parse(text, source), source);
  ModelInput in;
  ModelDesc& m = in.model;
  // A file with any of the runtime's other sections is a deck and is held to the
  // runtime's field list; otherwise it is a model file (model: and train: only).
  const bool deck_like = f.has("parallel") || f.has("data") || f.has("checkpoint") ||
                         f.has("output");
  f.check_keys(deck_like ? deck_schema() : model_file_schema(),
               deck_like ? "deck" : "model file (a mini5d deck also has parallel:, data:, ...)");
  if (!f.has("model")) f.fail("model", "missing section (vocab, d_model, layers, heads, seq, ffn)");
  m.source = source;
  m.name = f.text("model.name", "");
  if (m.name.empty()) {
    std::string base = source.substr(source.find_last_of('/') + 1);
    m.name = base.substr(0, base.find_last_of('.'));
  }
  m.vocab = f.integer("model.vocab", 2, 100000000, "vocabulary size");
  m.d_model = f.integer("model.d_model", 1, 10000000, "residual width");
  m.layers = f.integer("model.layers", 1, 100000, "transformer blocks");
  m.heads = f.integer("model.heads", 1, 100000, "attention heads");
  m.seq = f.integer("model.seq", 1, 100000000, "tokens per sequence");
  m.ffn = f.integer("model.ffn", 1, 100000000, "MLP hidden width");
  m.experts = f.integer("model.experts", 0, 1000000, "experts per MoE layer, 0 or 1 for dense",
                        false, 0);
  m.top_k = f.integer("model.top_k", 1, 1000000, "experts per token", false, m.experts > 1 ? 2 : 1);
  if (m.experts > 1 && m.top_k > m.experts)
    f.fail("model.top_k", std::to_string(m.top_k) + " is out of range (experts per token; valid: 1.." +
                              std::to_string(m.experts) + ")");
  // Every block is costed as MoE: a deck alternating dense and MoE blocks is refused
  // rather than planned wrongly.
  if (m.experts > 1 &&
      f.integer("model.moe_every", 1, 1024, "blocks per MoE block", false, 1) != 1)
    f.fail("model.moe_every", "only 1 (every block has experts) is modelled by mini5d-plan");
  m.tie_embeddings = f.flag("model.tie_embeddings", false);
  if (m.d_model % m.heads)
    f.fail("model.heads", std::to_string(m.heads) + " does not divide d_model=" +
                              std::to_string(m.d_model) + " (valid: a divisor of d_model)");

  constexpr long long kMaxBatch = 2147483647LL;  // sequences per step: 2^31-1
  in.is_deck = f.has("parallel");
  if (in.is_deck) {
    Layout& l = in.deck_layout;
    l.d = int(f.integer("parallel.d", 1, 1 << 20, "data-parallel degree", false, 1));
    l.t = int(f.integer("parallel.t", 1, 1 << 20, "tensor-parallel degree", false, 1));
    l.p = int(f.integer("parallel.p", 1, 1 << 20, "pipeline-parallel degree", false, 1));
    l.c = int(f.integer("parallel.c", 1, 1 << 20, "context-parallel degree", false, 1));
    l.e = int(f.integer("parallel.e", 1, 1 << 20, "expert-parallel degree", false, 1));
    l.zero = int(f.integer("parallel.zero", 0, 3, "ZeRO stage", false, 0));
    l.virtual_stages = int(f.integer("parallel.virtual_stages", 1, 1024, "virtual pipeline stages", false, 1));
    const std::string sch = f.text("parallel.schedule", l.virtual_stages > 1 ? "interleaved" : "1f1b");
    if (!parse_schedule(sch, l.schedule))
      f.fail("parallel.schedule", "'" + sch + "' is not valid (valid: 1f1b, gpipe, interleaved)");
    // The runtime's defaults (core/deck.hpp): micro_batch 8, sequence parallelism on.
    l.micro_batch = int(f.integer("train.micro_batch", 1, 1 << 20, "sequences per micro-batch", false, 8));
    l.accumulation = int(f.integer("train.accumulation", 1, 1 << 20, "micro-batches per step", false, 1));
    const std::string rc = f.text("train.recompute", "none");
    if (!parse_recompute(rc, l.recompute))
      f.fail("train.recompute", "'" + rc + "' is not valid (valid: none, selective, full)");
    l.sp = l.t > 1 && f.flag("parallel.sp", true);
    in.train_fields = f.scalars("train");
    in.data_fields = f.scalars("data");
    in.output_fields = f.scalars("output");
    // Each factor is at most 2^20, so the product needs a wider type than long long
    // could promise for five of them; double is exact well past 2^31.
    const double batch = double(l.micro_batch) * l.accumulation * l.d * l.e;
    if (batch > double(kMaxBatch))
      f.fail("train.micro_batch", "micro_batch*accumulation*d*e = " + fmt(batch) +
                                      " sequences per step is out of range (valid: at most " +
                                      std::to_string(kMaxBatch) + ")");
    in.train.global_batch = static_cast<long long>(batch);
  }
  in.train.global_batch = f.integer("train.global_batch", 1, kMaxBatch,
                                    "sequences per optimizer step", false, in.train.global_batch);
  if (in.train.global_batch == 0) in.train.global_batch = 1;
  const std::string prec = f.text("train.precision", "fp32");
  if (!parse_precision(prec, in.train.precision))
    f.fail("train.precision", "'" + prec + "' is not valid (valid: fp32, bf16, fp64)");
  in.train.fp32_grad_accum = f.flag("train.fp32_grad_accum", false);
  return in;
}

ModelInput load_model_file(const std::string& path) {
  return parse_model_text(read_file(path), path);
}

ClusterDesc parse_cluster_text(const std::string& text, const std::string& source) {
  const Fields f(parse(text, source), source);
  f.check_keys(cluster_file_schema(), "cluster file");
  ClusterDesc cl;
  cl.source = source;
  cl.name = f.text("name", source);
  cl.nodes = f.integer("nodes", 1, 10000000, "number of nodes", false, 1);
  cl.devices_per_node = f.integer("devices_per_node", 1, 4096, "accelerators (or ranks) per node");
  cl.cores_per_node = f.integer("cores_per_node", 1, 100000, "CPU cores per node", false,
                                cl.devices_per_node);
  if (!f.has("device")) f.fail("device", "missing section (memory_gib, peak_tflops, ...)");
  DeviceDesc& d = cl.device;
  d.kind = f.text("device.kind", "gpu");
  if (d.kind != "gpu" && d.kind != "cpu")
    f.fail("device.kind", "'" + d.kind + "' is not valid (valid: gpu, cpu)");
  d.name = f.text("device.name", d.kind);
  d.memory = GiB * f.number("device.memory_gib", 1e-3, 1e6, "memory per device in GiB");
  d.reserved = GiB * f.number("device.reserved_gib", 0, d.memory / GiB,
                              "GiB per device taken by runtime and allocator", false, 0);
  if (d.reserved >= d.memory)
    f.fail("device.reserved_gib", "must be smaller than device.memory_gib");
  d.hbm_bandwidth = 1e9 * f.number("device.memory_bandwidth_gbs", 1e-3, 1e6,
                                   "device memory bandwidth in GB/s");
  d.kernel_overhead = 1e-6 * f.number("device.kernel_overhead_us", 0, 1e5,
                                      "launch and synchronisation cost per kernel in microseconds",
                                      false, d.kind == "gpu" ? 5 : 1);
  const std::string gm = f.text("device.gemm.model", "roofline");
  if (gm == "roofline") d.gemm_model = GemmModel::roofline;
  else if (gm == "flat") d.gemm_model = GemmModel::flat;
  else if (gm == "measured") d.gemm_model = GemmModel::measured;
  else f.fail("device.gemm.model", "'" + gm + "' is not valid (valid: roofline, flat, measured)");
  d.gemm_table = read_gemm_table(f, "device.gemm.table");
  const std::string mbk = "device.memory_bound.";
  d.elementwise_bandwidth = 1e9 * f.number(mbk + "elementwise_gbs", 1e-6, 1e6,
                                           "LayerNorm/GELU/residual rate in GB/s", false, 0);
  d.softmax_bandwidth = 1e9 * f.number(mbk + "softmax_gbs", 1e-6, 1e6, "softmax rate in GB/s", false, 0);
  d.optimizer_bandwidth = 1e9 * f.number(mbk + "optimizer_gbs", 1e-6, 1e6, "AdamW rate in GB/s", false, 0);
  d.memory_bound_source = f.text(mbk + "source", "");
  d.memory_bound_measured = f.flag(mbk + "measured", false);
  d.memory_bound_fixed = 1e-6 * f.number(mbk + "fixed_us_per_block", 0, 1e9,
                                         "seconds per block and micro-batch not scaling with bytes, in us",
                                         false, 0);
  if (d.memory_bound_fixed > 0 && !d.memory_bound_measured)
    f.fail(mbk + "fixed_us_per_block", "needs measured: true (it replaces kernel_overhead_us per kernel)");
  if (d.gemm_model == GemmModel::measured && d.gemm_table.empty())
    f.fail("device.gemm.table", "missing (model: measured needs [op, m, n, k, GFLOP/s] rows; "
                                "`mini5d calibrate` writes them)");
  d.gemm_call_overhead = 1e-6 * f.number("device.gemm.call_overhead_us", 0, 1e5,
                                         "fixed cost of one GEMM call in microseconds", false,
                                         d.kernel_overhead * 1e6);
  d.gemm_source = f.text("device.gemm.source", "");
  const char* precs[3] = {"fp32", "bf16", "fp64"};
  bool any = false;
  for (int i = 0; i < 3; ++i) {
    const std::string p = std::string("device.peak_tflops.") + precs[i];
    const std::string s = std::string("device.sustained_tflops.") + precs[i];
    d.peak[i] = 1e12 * f.number(p, 0, 1e6, "peak dense TFLOP/s", false, 0);
    d.sustained[i] = 1e12 * f.number(s, 0, 1e6, "sustained GEMM TFLOP/s", false, 0);
    if (d.sustained[i] > 0 && d.peak[i] == 0) f.fail(p, "missing (needed since " + s + " is given)");
    if (d.sustained[i] > d.peak[i])
      f.fail(s, fmt(d.sustained[i] / 1e12) + " is out of range (valid: <= " + p + " = " +
                    fmt(d.peak[i] / 1e12) + ")");
    if (d.peak[i] > 0 && d.sustained[i] == 0) d.sustained[i] = d.peak[i];
    any = any || d.peak[i] > 0;
  }
  if (!any) f.fail("device.peak_tflops", "missing (give at least fp32: peak dense TFLOP/s)");

  if (!f.has("links.intra_node"))
    f.fail("links.intra_node", "missing (bandwidth_gbs, latency_us between devices of a node)");
  LinkTier intra = read_tier(f, "links.intra_node");
  intra.span_devices = double(cl.devices_per_node);
  cl.tiers.push_back(intra);
  if (f.has("links.middle")) {
    LinkTier mid = read_tier(f, "links.middle");
    mid.span_devices = double(cl.devices_per_node) *
                       double(f.integer("links.middle.nodes_per_group", 1, 1000000,
                                        "nodes sharing the middle tier"));
    cl.tiers.push_back(mid);
  }
  if (f.has("links.inter_node")) {
    LinkTier inter = read_tier(f, "links.inter_node");
    inter.span_devices = 0;
    cl.tiers.push_back(inter);
  } else if (cl.nodes > 1) {
    f.fail("links.inter_node", "missing (bandwidth_gbs, latency_us between nodes; needed for nodes > 1)");
  }
  cl.software.name = f.text("software.name", cl.software.name);
  cl.software.tp_overlap = f.number("software.tp_overlap", 0, 1,
                                    "fraction of tensor-parallel communication hidden behind GEMMs",
                                    false, 0);
  cl.software.pp_scatter_gather = f.flag("software.pp_scatter_gather", false);
  cl.software.attention_dropout = f.flag("software.attention_dropout", false);
  cl.software.overlap_efficiency = f.number("software.overlap_efficiency", 0, 1,
                                            "fraction of overlappable communication compute hides", false, -1);
  cl.software.attention_block = int(f.integer("software.attention_block", 0, 1 << 20,
                                              "queries per causal attention block (0: the whole square)",
                                              false, cl.software.attention_block));
  cl.slurm_partition = f.text("slurm.partition", "");
  cl.slurm_account = f.text("slurm.account", "");
  cl.slurm_gpu_bind = f.text("slurm.gpu_bind", "closest");
  cl.slurm_mpi = f.text("slurm.mpi", "");
  cl.slurm_binding = f.text("slurm.binding", "srun");
  cl.slurm_gpu_aware_env = f.text("slurm.gpu_aware_env", "");
  cl.slurm_time = f.text("slurm.time", "01:00:00");
  validate_cluster(cl);
  return cl;
}

ClusterDesc load_cluster_file(const std::string& path) {
  return parse_cluster_text(read_file(path), path);
}

void validate_cluster(const ClusterDesc& cl) {
  validate_slurm(cl);
  if (cl.nodes < 1) throw InputError(cl.source + ": nodes: must be >= 1");
  if (cl.nodes > 1 && cl.tiers.size() < 2)
    throw InputError(cl.source + ": links.inter_node: missing (needed for nodes > 1, got nodes=" +
                     std::to_string(cl.nodes) + ")");
  // The last tier must span everything, whatever the file said.
}

void validate_model(const ModelDesc& m, const TrainDesc& tr) {
  if (tr.global_batch < 1 || tr.global_batch > 2147483647LL)
    throw InputError(m.source + ": train.global_batch: " + std::to_string(tr.global_batch) +
                     " is out of range (sequences per step; valid: an integer in [1, 2147483647])");
}

}  // namespace mini5d::plan
