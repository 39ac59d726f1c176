// The graph runner: source checks, refusals, liveness and the memory limit, kept tensors.
#include "solar/exec/executor.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include "exec_fixtures.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::DType;
using testing::make;
using testing::run_text;
using testing::values;

constexpr const char* kPermute = R"(
x = f32[2,3] input
y = f32[3,2]{output} move permute {perm=[1,0]} (x)
)";

template <class E>
void expect_error(const std::function<void()>& f, const std::string& what) {
  try {
    f();
    FAIL() << "no error; wanted: " << what;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
        << "message: " << e.what() << "\nwanted:  " << what;
  }
}

TEST(RunGraph, PermutesAMatrix) {
  TensorMap r = run_text(kPermute, {{"x", make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_EQ(r.size(), 1u);  // only the output comes back
  EXPECT_EQ(values(r["y"]), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(RunGraph, MissingSourceNamesTheTensor) {
  expect_error<UserError>([] { run_text(kPermute, {}); }, "no value for input 'x' f32[2,3]");
}

TEST(RunGraph, MismatchedSourceNamesTheTensor) {
  expect_error<UserError>(
      [] { run_text(kPermute, {{"x", make(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6})}}); },
      "value for input 'x' is f32[3,2] but the graph declares f32[2,3]");
  expect_error<UserError>(
      [] { run_text(kPermute, {{"x", make(DType::F64, {2, 3}, {1, 2, 3, 4, 5, 6})}}); },
      "value for input 'x' is f64[2,3] but the graph declares f32[2,3]");
}

TEST(RunGraph, UnknownSourceAndKeepAreRefused) {
  Buffer x = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  expect_error<UserError>([&] { run_text(kPermute, {{"x", x}, {"z", x}}); },
                          "'z' is not an input, weight or constant of graph");
  expect_error<UserError>([&] { run_text(kPermute, {{"x", x}, {"y", x}}); }, "(it is output)");
  expect_error<UserError>([&] { run_text(kPermute, {{"x", x}}, {}, {"nope"}); },
                          "cannot keep 'nope'");
}

TEST(RunGraph, UnanalyzedOpIsUnsupportedNamingFrameworkOp) {
  expect_error<Unsupported>(
      [] {
        run_text("x = f32[2,128] input\n"
                 "f = f32[2,65]{output} unanalyzed \"aten::_fft_r2c\" {reason=\"no lowering for FFT\"} (x)",
                 {{"x", Buffer::zeros(DType::F32, {2, 128})}});
      },
      "op 'f': unanalyzed framework op 'aten::_fft_r2c' (no lowering for FFT)");
}

TEST(RunGraph, OpsNothingNeedsAreSkipped) {
  ExecStats stats;
  TensorMap r = run_text(std::string(kPermute) +
                             "f = f32[2,65] unanalyzed \"aten::_fft_r2c\" {reason=\"FFT\"} (x)\n",
                         {{"x", make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}}, {}, {}, &stats);
  EXPECT_EQ(stats.ops_run, 1);  // the permute; nothing reads the FFT's result
  EXPECT_EQ(r.count("f"), 0u);
}

TEST(RunGraph, KeepReturnsIntermediates) {
  TensorMap r = run_text(R"(
x = f32[2] input
a = f32[2] move copy (x)
b = f32[4]{output} move pad {pads=[1,1]} (a)
)",
                         {{"x", make(DType::F32, {2}, {5, 6})}}, {}, {"a", "x"});
  EXPECT_EQ(values(r["a"]), (std::vector<double>{5, 6}));
  EXPECT_EQ(values(r["x"]), (std::vector<double>{5, 6}));
  EXPECT_EQ(values(r["b"]), (std::vector<double>{0, 5, 6, 0}));
}

// A chain of four 1024-element f64 copies: 8 KiB each; at most two are live at once.
constexpr const char* kChain = R"(
x = f64[1024] input
a = f64[1024] move copy (x)
b = f64[1024] move copy (a)
c = f64[1024] move copy (b)
y = f64[1024]{output} move copy (c)
)";
constexpr std::uint64_t kTensorBytes = 8 * 1024;

TEST(RunGraph, FreesIntermediatesAfterLastUse) {
  ExecOptions opt;
  opt.memory_limit_bytes = 2 * kTensorBytes;  // below the 4 tensors allocated in all
  ExecStats stats;
  TensorMap r = run_text(kChain, {{"x", Buffer::zeros(DType::F64, {1024})}}, opt, {}, &stats);
  EXPECT_EQ(stats.peak_bytes, 2 * kTensorBytes);       // an op's input and its output
  EXPECT_EQ(stats.allocated_bytes, 4 * kTensorBytes);  // a, b, c, y
  EXPECT_EQ(stats.ops_run, 4);
  EXPECT_EQ(stats.limit_bytes, 2 * kTensorBytes);
}

TEST(RunGraph, PeakAboveLimitIsRefusedBeforeRunning) {
  ExecOptions opt;
  opt.memory_limit_bytes = 2 * kTensorBytes - 1;
  expect_error<UserError>(
      [&] { run_text(kChain, {{"x", Buffer::zeros(DType::F64, {1024})}}, opt); },
      "needs 16384 bytes of live tensors at op 'b', more than the memory limit of 16383 bytes");
}

TEST(RunGraph, TensorLargerThanLimitIsNamed) {
  ExecOptions opt;
  opt.memory_limit_bytes = kTensorBytes - 1;
  expect_error<UserError>(
      [&] { run_text(kChain, {{"x", Buffer::zeros(DType::F64, {1024})}}, opt); },
      "tensor 'a' f64[1024] needs 8192 bytes");
}

TEST(RunGraph, HugeTensorIsRefusedWithoutAllocating) {
  // 2^40 f32 elements = 4 TiB: refused from the plan under the default limit.
  expect_error<UserError>(
      [] {
        // A broadcast view of one element: materialized, so it allocates.
        run_text("x = f32[1] input\ny = f32[1099511627776]{output} move view (x)",
                 {{"x", Buffer::zeros(DType::F32, {1})}});
      },
      "tensor 'y' f32[1099511627776] needs 4398046511104 bytes");
}

TEST(RunGraph, DefaultLimitIsEightyPercentOfMemory) {
  std::uint64_t phys = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                       static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_LE(default_memory_limit_bytes(), phys * 8 / 10);
  EXPECT_GE(default_memory_limit_bytes(), phys * 8 / 10 - sysconf(_SC_PAGESIZE) * 10);
}

TEST(RunGraph, ThreadCountDoesNotChangeResults) {
  std::mt19937 rng(12);
  Buffer x = testing::random(DType::F32, {128, 96, 33}, rng);
  const char* text = "x = f32[128,96,33] input\n"
                     "y = f32[33,128,96]{output} move permute {perm=[2,0,1]} (x)";
  ExecOptions one, two;
  one.threads = 1;
  two.threads = 2;
  EXPECT_EQ(values(run_text(text, {{"x", x}}, one)["y"]), values(run_text(text, {{"x", x}}, two)["y"]));
}

}  // namespace
}  // namespace solar::exec
