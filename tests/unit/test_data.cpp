// SPDX-License-Identifier: BSD-3-Clause
// Data sources: the Markov floor against a hand-computed chain, the sampler as a pure
// function of (seed, step, index), and every class of bad data file with its message.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "mini5d/core/error.hpp"
#include "mini5d/data/file_sources.hpp"
#include "mini5d/data/markov.hpp"

using namespace mini5d;
using Catch::Matchers::Contains;

namespace {
std::string tmp_path(const std::string& name) { return "mini5d_test_data_" + name; }

std::string load_error(const std::string& path, int seq = 4, int vocab = 100) {
  try {
    data::load_token_file(path, seq, vocab, 1);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("Markov: a deterministic chain has a zero floor", "[data]") {
  // Branching 1: every context has one successor, so the entropy rate is 0 and the
  // only uncertainty is in the first tokens.
  data::MarkovSource m(5, 1, 1, 3);
  CHECK(m.entropy_rate() == 0.0);
  REQUIRE(m.loss_floor(16).has_value());
  CHECK(*m.loss_floor(16) == 0.0);  // order 1: every target has its full context
}

TEST_CASE("Markov: the entropy rate matches a direct estimate from samples", "[data]") {
  // With order 1 the empirical conditional entropy of a long sample converges to the
  // exact rate; 200k transitions give ~3 decimal places.
  data::MarkovSource m(6, 1, 3, 11);
  const int len = 2001;
  std::vector<int> seq(len);
  std::vector<double> counts(36, 0.0);
  for (int s = 0; s < 100; ++s) {
    m.sequence(0, std::uint64_t(s), len, seq.data());
    for (int i = 1; i < len; ++i) counts[seq[i - 1] * 6 + seq[i]] += 1;
  }
  double total = 0, h = 0;
  for (double c : counts) total += c;
  for (int a = 0; a < 6; ++a) {
    double row = 0;
    for (int b = 0; b < 6; ++b) row += counts[a * 6 + b];
    for (int b = 0; b < 6; ++b)
      if (counts[a * 6 + b] > 0) h -= counts[a * 6 + b] / total * std::log(counts[a * 6 + b] / row);
  }
  CHECK(h == Approx(m.entropy_rate()).epsilon(0.01));
  CHECK(m.entropy_rate() > 0.1);
}

TEST_CASE("Markov: order 2 floor counts the first target's missing context", "[data]") {
  data::MarkovSource m(4, 2, 2, 5);
  // Target 1 sees one token of context: its floor H(x1|x0) >= the rate H(x2|x0,x1).
  const double f1 = *m.loss_floor(1), f8 = *m.loss_floor(8);
  CHECK(f1 >= m.entropy_rate() - 1e-12);
  CHECK(f8 == Approx((f1 + 7 * m.entropy_rate()) / 8).epsilon(1e-12));
}

TEST_CASE("Markov: an order-2 chain computed by hand", "[data]") {
  // Vocab {0, 1}, contexts (x0 x1) -> next token:
  //   00 -> 1;  01 -> 0 or 1, 1/2 each;  10 -> 0;  11 -> 0.
  // Context transitions: 00->01, 01->10 | 11 (1/2 each), 10->00, 11->10. Stationary:
  // pi00 = pi10 = pi01 = a, pi11 = a/2, so a = 2/7: pi = (2, 2, 2, 1)/7.
  // Entropy rate: only context 01 is uncertain: (2/7) ln 2.
  // First target x1 given x0: P(x0=0) = 4/7 with x1 = 0, 1 at 1/2 each (ln 2);
  // P(x0=1) = 3/7 with x1 = 0 at 2/3, 1 at 1/3 (ln 3 - (2/3) ln 2). Together
  // H(x1|x0) = (2/7) ln 2 + (3/7) ln 3.
  const data::MarkovSource m(2, 2, 2, {0, 1, 0, 1, 0, 1, 0, 1}, {0, 1, 0.5, 0.5, 1, 0, 1, 0}, 11);
  const double ln2 = std::log(2.0), ln3 = std::log(3.0);
  const double rate = 2.0 / 7 * ln2, first = 2.0 / 7 * ln2 + 3.0 / 7 * ln3;
  CHECK(m.entropy_rate() == Approx(rate).epsilon(1e-12));
  CHECK(*m.loss_floor(1) == Approx(first).epsilon(1e-12));
  CHECK(*m.loss_floor(32) == Approx((first + 31 * rate) / 32).epsilon(1e-12));
  // The samples follow the table: the deterministic contexts never branch.
  std::vector<int> seq(64);
  for (std::uint64_t i = 0; i < 50; ++i) {
    m.sequence(3, i, 64, seq.data());
    for (int t = 2; t < 64; ++t) {
      const int ctx = 2 * seq[t - 2] + seq[t - 1];
      if (ctx == 0) CHECK(seq[t] == 1);
      if (ctx >= 2) CHECK(seq[t] == 0);
    }
  }
}

TEST_CASE("sampler: sequences are a pure function of (seed, step, index)", "[data]") {
  data::MarkovSource a(16, 2, 3, 7), b(16, 2, 3, 7), c(16, 2, 3, 8);
  std::vector<int> x(33), y(33), z(33), w(33);
  a.sequence(5, 17, 33, x.data());
  b.sequence(5, 17, 33, y.data());  // another instance, same arguments
  c.sequence(5, 17, 33, z.data());  // other seed
  a.sequence(5, 18, 33, w.data());  // other index
  CHECK(x == y);
  CHECK(x != z);
  CHECK(x != w);
  std::vector<int> in, tg;
  data::fill_batch(a, 5, 16, 2, 32, in, tg);  // sequences 16, 17
  for (int t = 0; t < 32; ++t) {
    CHECK(in[32 + t] == x[t]);
    CHECK(tg[32 + t] == x[t + 1]);
  }
}

TEST_CASE("token files: round trip at 16 and 32 bits", "[data]") {
  std::vector<std::uint32_t> toks;
  for (int i = 0; i < 50; ++i) toks.push_back(std::uint32_t(i * 7 % 97));
  for (int width : {2, 4}) {
    const auto path = tmp_path("ok" + std::to_string(width));
    data::write_token_file(path, toks, 97, width);
    auto src = data::load_token_file(path, 8, 100, 3);
    CHECK(src->size() == 50);
    std::vector<int> s(9);
    src->sequence(0, 0, 9, s.data());
    // A window of consecutive tokens from the file.
    bool found = false;
    for (int at = 0; at + 9 <= 50 && !found; ++at) {
      bool same = true;
      for (int i = 0; i < 9; ++i) same = same && s[i] == int(toks[at + i]);
      found = same;
    }
    CHECK(found);
    std::remove(path.c_str());
  }
}

TEST_CASE("token files: each defect has its message", "[data]") {
  std::vector<std::uint32_t> toks(20, 3);
  const auto good = tmp_path("good");
  data::write_token_file(good, toks, 10, 2);
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto write = [](const std::string& p, const std::string& b) { std::ofstream(p, std::ios::binary) << b; };

  CHECK_THAT(load_error("/nonexistent/file.bin"), Contains("/nonexistent/file.bin: cannot open data file"));
  const auto empty = tmp_path("empty");
  write(empty, "");
  CHECK_THAT(load_error(empty), Contains(empty + ": token file is empty"));
  const auto magic = tmp_path("magic");
  write(magic, "NOTMAGIC" + bytes.substr(8));
  CHECK_THAT(load_error(magic), Contains("not a mini5d token file"));
  const auto trunc = tmp_path("trunc");
  write(trunc, bytes.substr(0, bytes.size() - 3));
  CHECK_THAT(load_error(trunc), Contains("header says 20 tokens of 2 bytes, but the file holds 37 bytes"));
  auto ver = bytes;
  ver[8] = 9;
  const auto vpath = tmp_path("version");
  write(vpath, ver);
  CHECK_THAT(load_error(vpath), Contains("token file version 9, this build reads version 1"));
  auto wid = bytes;
  wid[12] = 3;
  const auto wpath = tmp_path("width");
  write(wpath, wid);
  CHECK_THAT(load_error(wpath), Contains("bytes per token is 3, expected 2 or 4"));
  CHECK_THAT(load_error(good, 4, 5), Contains("vocabulary size 10 must be in [1, model.vocab=5]"));
  CHECK_THAT(load_error(good, 30), Contains("holds 20 tokens, fewer than model.seq + 1 = 31"));
  auto bad = bytes;
  bad[32 + 2 * 4] = 12;  // token 4 = 12 >= vocab 10
  const auto bpath = tmp_path("range");
  write(bpath, bad);
  CHECK_THAT(load_error(bpath), Contains("token 4 is 12, outside the file's vocabulary [0, 9]"));
  for (const auto& p : {good, empty, magic, trunc, vpath, wpath, bpath}) std::remove(p.c_str());
}

TEST_CASE("text files: empty and too short files are errors", "[data]") {
  const auto empty = tmp_path("empty.txt");
  std::ofstream(empty).close();
  CHECK_THROWS_WITH(data::load_text_file(empty, 8, 1), Contains(empty + ": data file is empty"));
  const auto shortf = tmp_path("short.txt");
  std::ofstream(shortf) << "abc";
  CHECK_THROWS_WITH(data::load_text_file(shortf, 8, 1),
                    Contains("data file has 3 bytes, fewer than model.seq + 1 = 9"));
  std::remove(empty.c_str());
  std::remove(shortf.c_str());
}
