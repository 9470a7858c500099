// SPDX-License-Identifier: BSD-3-Clause
// See meta.hpp. Besides meta_checksum (over all fields) the file keeps one checksum per
// field ("meta_field_checksums"), so a mismatch names the attribute that changed.
#include "mini5d/checkpoint/meta.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>

#include "mini5d/checkpoint/h5.hpp"
#include "mini5d/core/fnv1a.hpp"
#include "mini5d/core/printable.hpp"

namespace mini5d::checkpoint::detail {

namespace {

// Attributes stay well under HDF5's 64 KiB limit for one object-header message: a
// long manifest is split at line ends over manifest.0, manifest.1, ...
constexpr std::size_t kManifestPart = 32768;

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

// The covered fields, in canonical order, as (attribute name, value text).
std::vector<std::pair<std::string, std::string>> fields_of(const CheckpointMeta& m) {
  std::vector<std::pair<std::string, std::string>> f = {
      {"format_version", std::to_string(m.format_version)},
      {"step", std::to_string(m.step)},
      {"tokens_seen", std::to_string(m.tokens_seen)},
      {"deck", m.deck_yaml},
      {"layout", m.layout},
      {"train_seed", std::to_string(m.train_seed)},
      {"data_seed", std::to_string(m.data_seed)},
      {"data_cursor", std::to_string(m.data_cursor)},
      {"run_id", m.run_id},
  };
  for (const auto& [k, v] : m.extra) f.emplace_back("extra." + k, v);
  f.emplace_back("manifest", manifest_text(m.manifest));
  return f;
}

std::string field_line(const std::string& name, const std::string& value) {
  return name + "=" + std::to_string(value.size()) + ":" + value + "\n";
}

std::string field_sums_text(const CheckpointMeta& m) {
  std::string s;
  for (const auto& [k, v] : fields_of(m)) s += k + " " + hex(fnv1a(field_line(k, v))) + "\n";
  return s;
}

// Names the fields whose per-field checksum differs from the stored list.
void name_changed_fields(const std::string& path, const CheckpointMeta& m, const std::string& stored_list,
                         std::vector<std::string>& problems) {
  std::map<std::string, std::string> stored;
  std::istringstream in(stored_list);
  for (std::string name, sum; in >> name >> sum;) stored[name] = sum;
  const std::size_t before = problems.size();
  for (const auto& [k, v] : fields_of(m)) {
    const auto it = stored.find(k);
    if (it == stored.end())
      problems.push_back(printable_path(path) + ": root attribute " + k + " is not covered by meta_checksum (added after the save)");
    else if (it->second != hex(fnv1a(field_line(k, v))))
      problems.push_back(printable_path(path) + ": root attribute " + k + " fails its checksum (changed after the save)");
    if (it != stored.end()) stored.erase(it);
  }
  for (const auto& [k, sum] : stored)
    problems.push_back(printable_path(path) + ": root attribute " + k + " is missing (removed after the save)");
  if (problems.size() == before)
    problems.push_back(printable_path(path) + ": meta_checksum does not match the root attributes (changed after the save)");
}

// The cross-checks of fields that follow from each other.
void cross_check(const std::string& path, const CheckpointMeta& m, std::vector<std::string>& problems) {
  if (m.data_cursor != m.step)
    problems.push_back(printable_path(path) + ": data_cursor is " + std::to_string(m.data_cursor) + ", step " +
                       std::to_string(m.step) + " (the sampler's next step is the checkpoint's step)");
  const auto tps = m.extra.find("tokens_per_step");
  if (tps != m.extra.end()) {
    long long per = -1;
    try {
      per = std::stoll(tps->second);
    } catch (const std::exception&) {
    }
    if (per < 0)
      problems.push_back(printable_path(path) + ": extra.tokens_per_step is \"" + tps->second + "\", not a count");
    else if (m.tokens_seen != m.step * per)
      problems.push_back(printable_path(path) + ": tokens_seen is " + std::to_string(m.tokens_seen) + ", step " +
                         std::to_string(m.step) + " x extra.tokens_per_step " + std::to_string(per) + " is " +
                         std::to_string(m.step * per));
  }
  // The file's own name, when it is a step-NNNNNNNN.h5 (what the trainer writes).
  const auto slash = path.find_last_of('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string pre = "step-", suf = ".h5";
  if (base.size() > pre.size() + suf.size() && base.compare(0, pre.size(), pre) == 0 &&
      base.compare(base.size() - suf.size(), suf.size(), suf) == 0) {
    const std::string digits = base.substr(pre.size(), base.size() - pre.size() - suf.size());
    if (digits.find_first_not_of("0123456789") == std::string::npos && digits.size() <= 18 &&
        std::stoll(digits) != m.step)
      problems.push_back(printable_path(path) + ": the file is named for step " + std::to_string(std::stoll(digits)) +
                         ", its step attribute is " + std::to_string(m.step));
  }
}

}  // namespace

std::string canonical_meta(const CheckpointMeta& m) {
  std::string s;
  for (const auto& [k, v] : fields_of(m)) s += field_line(k, v);
  return s;
}

std::uint64_t meta_checksum(const CheckpointMeta& m) { return fnv1a(canonical_meta(m)); }

std::string manifest_text(const std::vector<ManifestEntry>& manifest) {
  std::string s;
  for (const auto& e : manifest) {
    s += e.path + "\tfloat32\t";
    for (std::size_t i = 0; i < e.shape.size(); ++i) s += (i ? "," : "") + std::to_string(e.shape[i]);
    s += "\n";
  }
  return s;
}

bool parse_manifest(const std::string& text, std::vector<ManifestEntry>& out) {
  out.clear();
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto t1 = line.find('\t'), t2 = line.find('\t', t1 == std::string::npos ? t1 : t1 + 1);
    if (t1 == std::string::npos || t2 == std::string::npos || line.substr(t1 + 1, t2 - t1 - 1) != "float32")
      return false;
    ManifestEntry e;
    e.path = line.substr(0, t1);
    const std::string dims = line.substr(t2 + 1);
    try {
      for (std::size_t pos = 0; pos < dims.size();) {
        const auto comma = dims.find(',', pos);
        e.shape.push_back(std::stoll(dims.substr(pos, comma - pos)));
        pos = comma == std::string::npos ? dims.size() : comma + 1;
      }
    } catch (const std::exception&) {
      return false;
    }
    out.push_back(e);
  }
  return true;
}

void write_root_attributes(hid_t file, const CheckpointMeta& m) {
  write_attr(file, "format_version", std::int64_t{m.format_version});
  write_attr(file, "creator", std::string("mini5d ") + MINI5D_VERSION);
  write_attr(file, "checksum_algorithm",
             std::string("per dataset: sum over elements of mix64(mix64(flat index) ^ float32 bits) "
                         "mod 2^64, mix64 = SplitMix64 finaliser; meta_checksum: FNV-1a 64 over "
                         "name=length:value lines of the covered root attributes (docs/checkpoints.md)"));
  write_attr(file, "step", std::int64_t{m.step});
  write_attr(file, "tokens_seen", std::int64_t{m.tokens_seen});
  write_attr(file, "deck", m.deck_yaml);
  write_attr(file, "layout", m.layout);
  write_attr(file, "train_seed", std::uint64_t{m.train_seed});
  write_attr(file, "data_seed", std::uint64_t{m.data_seed});
  write_attr(file, "data_cursor", std::int64_t{m.data_cursor});
  if (!m.run_id.empty()) write_attr(file, "run_id", m.run_id);
  for (const auto& [k, v] : m.extra) write_attr(file, "extra." + k, v);
  const std::string manifest = manifest_text(m.manifest);
  int part = 0;
  for (std::size_t pos = 0; pos < manifest.size() || part == 0; ++part) {
    std::size_t end = std::min(manifest.size(), pos + kManifestPart);
    if (end < manifest.size()) {
      const auto nl = manifest.rfind('\n', end - 1);
      if (nl != std::string::npos && nl >= pos) end = nl + 1;
    }
    write_attr(file, "manifest." + std::to_string(part), manifest.substr(pos, end - pos));
    pos = end;
  }
  write_attr(file, "meta_field_checksums", field_sums_text(m));
  write_attr(file, "meta_checksum", meta_checksum(m));
}

void read_root_attributes(hid_t f, const std::string& path, CheckpointMeta& m, std::vector<std::string>& problems) {
  std::int64_t version = 0, step = 0, tokens = 0, cursor = 0;
  const std::size_t before = problems.size();
  // Each read checks the attribute is one value of its type first (h5.hpp): an array
  // or another type is named, never read into a scalar.
  std::string why;
  auto bad = [&](const std::string& name) {
    problems.push_back(printable_path(path) + ": root attribute " + name + " " + why + " (changed after the save)");
    why.clear();
  };
  auto need = [&](bool ok, const std::string& name) {
    if (!why.empty()) bad(name);
    else if (!ok) problems.push_back(printable_path(path) + ": missing root attribute " + name);
  };
  need(read_attr(f, "format_version", version, &why), "format_version");
  need(read_attr(f, "step", step, &why), "step");
  need(read_attr(f, "tokens_seen", tokens, &why), "tokens_seen");
  need(read_attr(f, "deck", m.deck_yaml, &why), "deck");
  need(read_attr(f, "layout", m.layout, &why), "layout");
  need(read_attr(f, "train_seed", m.train_seed, &why), "train_seed");
  need(read_attr(f, "data_seed", m.data_seed, &why), "data_seed");
  need(read_attr(f, "data_cursor", cursor, &why), "data_cursor");
  read_attr(f, "run_id", m.run_id, &why);  // absent when the run had no identity
  if (!why.empty()) bad("run_id");
  m.format_version = static_cast<int>(version);
  m.step = static_cast<long>(step);
  m.tokens_seen = tokens;
  m.data_cursor = static_cast<long>(cursor);
  const std::string prefix = "extra.";
  for (const auto& a : attribute_names(f))
    if (a.compare(0, prefix.size(), prefix) == 0) {
      read_attr(f, a, m.extra[a.substr(prefix.size())], &why);
      if (!why.empty()) bad(a);
    }
  std::string manifest, part;
  need(read_attr(f, "manifest.0", manifest, &why), "manifest.0");
  int i = 1;
  for (; read_attr(f, "manifest." + std::to_string(i), part, &why); ++i) manifest += part;
  if (!why.empty()) bad("manifest." + std::to_string(i));
  if (!parse_manifest(manifest, m.manifest)) problems.push_back(printable_path(path) + ": root attribute manifest is malformed");
  std::uint64_t stored = 0;
  std::string field_sums;
  need(read_attr(f, "meta_checksum", stored, &why), "meta_checksum");
  need(read_attr(f, "meta_field_checksums", field_sums, &why), "meta_field_checksums");
  if (problems.size() != before) return;
  // Edited values are named once, by the checksum; the cross-checks then catch a
  // writer (or an editor who recomputed the checksum) whose counters disagree.
  if (stored != meta_checksum(m))
    name_changed_fields(path, m, field_sums, problems);
  else
    cross_check(path, m, problems);
}

}  // namespace mini5d::checkpoint::detail
