// Opaque kernels (sort, argsort, topk, cumulative ops, argmax/argmin) against std:: reference
// computations and exact known results, and the refusal of unknown functions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "exec_fixtures.h"
#include "solar/exec/kernels.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::DType;
using testing::list;
using testing::make;
using testing::random;
using testing::ravel;
using testing::run_text;
using testing::unravel;
using testing::values;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An opaque statement with placeholder costs (the executor ignores them).
std::string opaque(const std::string& outs, const std::string& fn, const std::string& attrs,
                   const std::string& ins) {
  return fmt::format("{} opaque \"{}\" {{vector_flops=0, special_ops=0, bytes=0, "
                     "assumption=\"test\"{}{}}} ({})",
                     outs, fn, attrs.empty() ? "" : ", ", attrs, ins);
}

TEST(Opaque, SortIsStableWithNaNLast) {
  Buffer x = make(DType::F32, {6}, {3, kNaN, 1, 3, -2, 1});
  TensorMap r = run_text("x = f32[6] input\n" +
                             opaque("v, i = f32[6]{output}, i64[6]{output}", "sort", "axis=0", "x"),
                         {{"x", x}});
  std::vector<double> v = values(r["v"]);
  EXPECT_EQ(std::vector<double>(v.begin(), v.begin() + 5), (std::vector<double>{-2, 1, 1, 3, 3}));
  EXPECT_TRUE(std::isnan(v[5]));  // NaN sorts above +inf, as in PyTorch
  EXPECT_EQ(values(r["i"]), (std::vector<double>{4, 2, 5, 0, 3, 1}));  // ties keep input order
}

TEST(Opaque, SortDescendingKeepsTieOrderAndPutsNaNFirst) {
  Buffer x = make(DType::F32, {5}, {1, 2, kNaN, 2, 0});
  TensorMap r = run_text("x = f32[5] input\n" +
                             opaque("v, i = f32[5]{output}, i64[5]{output}", "sort",
                                    "descending=1, stable=1", "x"),
                         {{"x", x}});
  EXPECT_EQ(values(r["i"]), (std::vector<double>{2, 1, 3, 0, 4}));
}

TEST(Opaque, SortAlongEachAxisMatchesStdSort) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<std::int64_t> shape = {std::uniform_int_distribution<std::int64_t>(1, 4)(rng),
                                       std::uniform_int_distribution<std::int64_t>(1, 9)(rng),
                                       std::uniform_int_distribution<std::int64_t>(1, 3)(rng)};
    std::int64_t axis = trial % 3;
    bool desc = trial % 2;
    Buffer x = random(DType::I64, shape, rng, -5, 5);  // many ties
    TensorMap r = run_text(fmt::format("x = i64{0} input\n", list(shape)) +
                               opaque(fmt::format("v, i = i64{0}{{output}}, i32{0}{{output}}",
                                                  list(shape)),
                                      "sort", fmt::format("axis={}, descending={}", axis - 3, desc ? 1 : 0),
                                      "x"),
                           {{"x", x}});
    std::vector<double> xv = values(x), v = values(r["v"]), iv = values(r["i"]);
    for (std::int64_t e = 0; e < x.num_elements(); ++e) {
      std::vector<std::int64_t> p = unravel(e, shape);
      if (p[axis] != 0) continue;  // once per line
      std::vector<std::pair<double, std::int64_t>> line;
      for (std::int64_t k = 0; k < shape[axis]; ++k) {
        p[axis] = k;
        line.push_back({xv[ravel(p, shape)], k});
      }
      std::stable_sort(line.begin(), line.end(), [&](auto a, auto b) {
        return desc ? a.first > b.first : a.first < b.first;
      });
      for (std::int64_t k = 0; k < shape[axis]; ++k) {
        p[axis] = k;
        ASSERT_EQ(v[ravel(p, shape)], line[k].first);
        ASSERT_EQ(iv[ravel(p, shape)], line[k].second);
      }
    }
  }
}

TEST(Opaque, ArgsortGivesIndices) {
  Buffer x = make(DType::F64, {2, 3}, {3, 1, 2, 0, 5, 4});
  TensorMap r = run_text("x = f64[2,3] input\n" +
                             opaque("i = i64[2,3]{output}", "argsort", "axis=1", "x"),
                         {{"x", x}});
  EXPECT_EQ(values(r["i"]), (std::vector<double>{1, 2, 0, 0, 2, 1}));
}

TEST(Opaque, TopkLargestAndSmallest) {
  Buffer x = make(DType::F32, {2, 5}, {5, 1, 4, 2, 3, 0, 9, 9, 7, 8});
  TensorMap r = run_text("x = f32[2,5] input\n" +
                             opaque("v, i = f32[2,2]{output}, i64[2,2]{output}", "topk", "k=2", "x") +
                             "\n" +
                             opaque("s = f32[1,5]{output}", "topk", "k=1, axis=0, largest=0",
                                    "x"),
                         {{"x", x}});
  EXPECT_EQ(values(r["v"]), (std::vector<double>{5, 4, 9, 9}));
  EXPECT_EQ(values(r["s"]), (std::vector<double>{0, 1, 4, 2, 3}));  // column minima
  EXPECT_EQ(values(r["i"]), (std::vector<double>{0, 2, 1, 2}));  // equal values: lower index first
}

TEST(Opaque, TopkChecksK) {
  Buffer x = make(DType::F32, {3}, {1, 2, 3});
  try {
    run_text("x = f32[3] input\n" + opaque("v = f32[4]{output}", "topk", "k=4", "x"), {{"x", x}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("k = 4 is outside [0, 3]"), std::string::npos) << e.message();
    EXPECT_NE(std::string(e.what()).find("op 'v'"), std::string::npos) << e.what();
  }
}

TEST(Opaque, CumsumAndCumprod) {
  Buffer x = make(DType::I32, {2, 3}, {1, 2, 3, 4, 5, 6});
  TensorMap r = run_text("x = i32[2,3] input\n" +
                             opaque("s = i64[2,3]{output}", "cumsum", "axis=1", "x") + "\n" +
                             opaque("p = i64[2,3]{output}", "cumprod", "axis=0", "x"),
                         {{"x", x}});
  EXPECT_EQ(values(r["s"]), (std::vector<double>{1, 1 + 2, 1 + 2 + 3, 4, 4 + 5, 4 + 5 + 6}));
  EXPECT_EQ(values(r["p"]), (std::vector<double>{1, 2, 3, 1 * 4, 2 * 5, 3 * 6}));
}

TEST(Opaque, CumsumAccumulatesInF64) {
  // 2^24 + 1 + 1: an f32 accumulator would lose each 1 (2^24 + 1 is not an f32).
  Buffer x = make(DType::F32, {3}, {16777216, 1, 1});
  Buffer y = make(DType::F64, {3}, {0.1, 0.2, 0.3});
  TensorMap r = run_text("x = f32[3] input\ny = f64[3] input\n" +
                             opaque("s = f32[3]{output}", "cumsum", "axis=0", "x") + "\n" +
                             opaque("t = f64[3]{output}", "cumsum", "axis=-1", "y"),
                         {{"x", x}, {"y", y}});
  EXPECT_EQ(values(r["s"])[2], 16777218.0);
  EXPECT_EQ(values(r["t"])[2], 0.1 + 0.2 + 0.3);
}

TEST(Opaque, CummaxMovesIndexOnTiesAndKeepsNaN) {
  Buffer x = make(DType::F32, {6}, {1, 3, 3, 2, kNaN, 5});
  TensorMap r = run_text("x = f32[6] input\n" +
                             opaque("v, i = f32[6]{output}, i64[6]{output}", "cummax", "axis=0", "x") +
                             "\n" +
                             opaque("w, j = f32[6]{output}, i64[6]{output}", "cummin", "axis=0", "x"),
                         {{"x", x}});
  std::vector<double> v = values(r["v"]);
  EXPECT_EQ(std::vector<double>(v.begin(), v.begin() + 4), (std::vector<double>{1, 3, 3, 3}));
  EXPECT_TRUE(std::isnan(v[4]) && std::isnan(v[5]));
  EXPECT_EQ(values(r["i"]), (std::vector<double>{0, 1, 2, 2, 4, 4}));  // PyTorch: >= moves it
  EXPECT_EQ(values(r["j"]), (std::vector<double>{0, 0, 0, 0, 4, 4}));
}

TEST(Opaque, ArgmaxFirstOccurrence) {
  Buffer x = make(DType::F32, {2, 3}, {1, 7, 7, 9, 2, 9});
  TensorMap r = run_text("x = f32[2,3] input\n" +
                             opaque("a = i64[2]{output}", "argmax", "axis=1", "x") + "\n" +
                             opaque("b = i64[]{output}", "argmin", "", "x"),
                         {{"x", x}});
  EXPECT_EQ(values(r["a"]), (std::vector<double>{1, 0}));
  EXPECT_EQ(values(r["b"]), (std::vector<double>{0}));  // over the flattened input
}

TEST(Opaque, UnknownFunctionIsUnsupportedBeforeRunning) {
  Buffer x = make(DType::F32, {4}, {1, 0, 2, 0});
  try {
    run_text("x = f32[4] input\n" + opaque("n = i64[4,1]{output}", "nonzero", "", "x"),
             {{"x", x}});
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_NE(e.message().find("op 'n'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("cannot run opaque function \"nonzero\""), std::string::npos);
    EXPECT_NE(e.message().find("sort"), std::string::npos);  // lists what it can run
  }
  EXPECT_TRUE(knows_opaque("topk"));
  EXPECT_FALSE(knows_opaque("unique"));
}

TEST(Opaque, OutputShapeIsChecked) {
  Buffer x = make(DType::F32, {4}, {1, 0, 2, 0});
  try {
    run_text("x = f32[4] input\n" + opaque("s = f32[5]{output}", "cumsum", "axis=0", "x"),
             {{"x", x}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph);
    EXPECT_NE(e.message().find("has shape [5] but must be [4]"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace solar::exec
