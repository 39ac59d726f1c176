// End-to-end: text-form graphs, the cost module and the built-in device database.
#include "solar/report/report.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "solar/hw/database.h"
#include "solar/ir/text.h"

namespace solar::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const hw::DeviceDb& db() {
  static const hw::DeviceDb d = hw::DeviceDb::load_default();
  return d;
}

const bound::DeviceBounds& only(const Report& r) { return r.devices.at(0); }

TEST(Analyze, H100Bf16GemmIsComputeBound) {
  ir::Graph g = ir::parse_graph(R"(
    a = bf16[4096,4096] input
    b = bf16[4096,4096] weight
    c = bf16[4096,4096]{output} einsum "mk,kn->mn" (a, b))");
  Report r = analyze(g, {&db().get("H100_SXM")}, {});
  const double t = 2.0 * 4096 * 4096 * 4096 / 989.4e12;  // 2*M*N*K FLOP at the bf16 tensor peak
  const bound::DeviceBounds& b = only(r);
  EXPECT_DOUBLE_EQ(b.per_op[0].seconds, t);
  EXPECT_EQ(b.per_op[0].bottleneck, "tensor_core.bf16");
  EXPECT_DOUBLE_EQ(b.unfused.seconds, t);
  EXPECT_DOUBLE_EQ(b.fused.seconds, t);
  EXPECT_EQ(b.fused.bottleneck, "tensor_core.bf16");
  // The memory term: A and B read, C written, 2 bytes each, at 3.35 TB/s.
  EXPECT_DOUBLE_EQ(b.fused.terms[1].seconds, 3.0 * 2 * 4096 * 4096 / 3.35e12);
  EXPECT_EQ(b.fused.terms[1].resource, "dram");
  EXPECT_EQ(r.cost.total.total_macs(), Count(4096) * Count(4096) * Count(4096));
}

TEST(Analyze, TwoFourGemmShowsItsStructuredMacs) {
  ir::Graph g = ir::parse_graph(R"(
    a = bf16[4096,4096] input
    b = bf16[4096,4096]{sparsity="2:4"} weight
    c = bf16[4096,4096]{output} einsum "mk,kn->mn" (a, b))");
  Report r = analyze(g, {&db().get("H100_SXM"), &db().get("TPU_v5e")}, {});
  const std::uint64_t macs = 4096ull * 4096 * 4096;  // the contraction as written
  nlohmann::json j = to_json(r);
  EXPECT_EQ(j["totals"]["macs"], macs);
  EXPECT_EQ(j["totals"]["macs_2_4"], macs);  // all of them with a 2:4 operand
  EXPECT_EQ(j["totals"]["macs_2_4_by_dtype"]["bf16"], macs);
  EXPECT_EQ(j["totals"]["flops"], 2 * macs);  // dense FLOPs
  EXPECT_EQ(j["ops"][0]["macs_2_4"], macs);
  EXPECT_EQ(j["ops"][0]["macs_2_4_by_dtype"]["bf16"], macs);
  // H100 runs them at its 1978.8 TFLOP/s 2:4 peak; the TPU at its dense 197 TFLOP/s.
  EXPECT_EQ(j["ops"][0]["bottleneck"]["H100_SXM"], "tensor_core.bf16.2:4");
  EXPECT_DOUBLE_EQ(j["ops"][0]["seconds"]["H100_SXM"].get<double>(), 2.0 * macs / 1978.8e12);
  EXPECT_EQ(j["devices"]["H100_SXM"]["peaks_used"]["tensor_core.bf16.2:4"], 1978.8e12);
  EXPECT_EQ(j["ops"][0]["bottleneck"]["TPU_v5e"], "mxu.bf16");
  EXPECT_DOUBLE_EQ(j["ops"][0]["seconds"]["TPU_v5e"].get<double>(), 2.0 * macs / 197e12);
  std::string t = to_table(r);
  EXPECT_THAT(t, HasSubstr("of which 2:4 68.72 GMAC"));  // 4096^3
}

TEST(Analyze, DenseProgramsHaveNoTwoFourLine) {
  ir::Graph g = ir::parse_graph(R"(
    a = bf16[64,64] input
    b = bf16[64,64]{zeros=0.5} weight
    c = bf16[64,64]{output} einsum "mk,kn->mn" (a, b))");
  Report r = analyze(g, {&db().get("H100_SXM")}, {});
  EXPECT_EQ(to_json(r)["totals"]["macs_2_4"], 0);  // unstructured zeros are not skipped work
  EXPECT_THAT(to_table(r), Not(HasSubstr("of which 2:4")));
}

TEST(Analyze, Fp32MatmulAndConvolutionFollowThePolicy) {
  // Valid (unpadded) convolution: N=32, C=K=256, 56x56 output, 3x3 window.
  ir::Graph g = ir::parse_graph(R"(
    a = f32[4096,4096] input
    b = f32[4096,4096] weight
    c = f32[4096,4096]{output} einsum "mk,kn->mn" (a, b)
    x = f32[32,256,58,58] input
    w = f32[256,256,3,3] weight
    y = f32[32,256,56,56]{output} einsum [n=32,k=256,p=56,q=56,c=256,r=3,s=3] sum mul($0,$1) (x[n,c,p+r,q+s], w[k,c,r,s]) -> [n,k,p,q])");
  const double mm_flop = 2.0 * 4096 * 4096 * 4096;
  const double conv_flop = 2.0 * 32 * 256 * 56 * 56 * 256 * 3 * 3;  // 2*N*K*P*Q*C*R*S
  const hw::Device& h100 = db().get("H100_SXM");
  struct Case {
    bound::MathPolicy policy;
    double mm_rate, conv_rate;
  };
  for (const Case& c : {Case{bound::MathPolicy::PytorchDefault, 66.9e12, 494.7e12},
                        Case{bound::MathPolicy::Tf32, 494.7e12, 494.7e12},
                        Case{bound::MathPolicy::StrictFp32, 66.9e12, 66.9e12}}) {
    SCOPED_TRACE(std::string(bound::policy_name(c.policy)));
    Report r = analyze(g, {&h100}, bound::Options{c.policy, bound::CacheState::Cold});
    EXPECT_DOUBLE_EQ(only(r).per_op[0].seconds, mm_flop / c.mm_rate);
    EXPECT_DOUBLE_EQ(only(r).per_op[1].seconds, conv_flop / c.conv_rate);
  }
}

TEST(Analyze, Fp8OnA100UpcastsToHalfPrecision) {
  ir::Graph g = ir::parse_graph(R"(
    a = f8e4m3[8192,8192] input
    b = f8e4m3[8192,8192] weight
    c = bf16[8192,8192]{output} einsum "mk,kn->mn" (a, b))");
  Report r = analyze(g, {&db().get("A100_SXM_80GB"), &db().get("H100_SXM")}, {});
  const double flop = 2.0 * 8192 * 8192 * 8192;
  EXPECT_DOUBLE_EQ(r.devices[0].per_op[0].seconds, flop / 312e12);  // A100 f16/bf16 tensor
  EXPECT_THAT(r.devices[0].per_op[0].bottleneck, HasSubstr("tensor_core."));
  EXPECT_TRUE(r.devices[0].per_op[0].unknown.empty());
  EXPECT_DOUBLE_EQ(r.devices[1].per_op[0].seconds, flop / 1978.9e12);  // H100 fp8 tensor
  EXPECT_EQ(r.devices[1].per_op[0].bottleneck, "tensor_core.f8e4m3");
}

TEST(Analyze, SpecialFunctionsOnATpuAreUnknown) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[1024,1024] input
    y = f32[1024,1024]{output} einsum [m=1024,n=1024] none exp($0) (x[m,n]) -> [m,n])");
  Report r = analyze(g, {&db().get("TPU_v5e")}, {});
  ASSERT_EQ(only(r).unfused.unknown.size(), 1u);
  EXPECT_THAT(only(r).unfused.unknown[0], HasSubstr("special-function"));
  EXPECT_EQ(only(r).per_op[0].bottleneck, "dram");
  EXPECT_THAT(to_table(r), HasSubstr("TPU_v5e publishes no special-function unit rate"));
}

TEST(Analyze, WarmOnATpuIsCold) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[1024] input
    y = f32[1024]{output} einsum [m=1024] none add($0,1) (x[m]) -> [m])");
  bound::Options warm{bound::MathPolicy::PytorchDefault, bound::CacheState::Warm};
  Report w = analyze(g, {&db().get("TPU_v5e")}, warm);
  Report c = analyze(g, {&db().get("TPU_v5e")}, {});
  EXPECT_EQ(only(w).unfused.seconds, only(c).unfused.seconds);
  EXPECT_EQ(only(w).per_op[0].bottleneck, "dram");
}

TEST(Analyze, UnanalyzedOpsAreCountedAndReported) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[64,128] input
    y = f32[64,128] einsum [m=64,n=128] none add($0,1) (x[m,n]) -> [m,n]
    f = f32[64,65]{output} unanalyzed "aten::_fft_r2c" {reason="no lowering for FFT"} (y))");
  Report r = analyze(g, {&db().get("H100_SXM")}, {});
  nlohmann::json j = to_json(r);
  EXPECT_EQ(j["coverage"]["unanalyzed"], 1);
  EXPECT_EQ(j["coverage"]["complete"], false);
  EXPECT_EQ(j["coverage"]["unanalyzed_ops"][0]["framework_op"], "aten::_fft_r2c");
  EXPECT_EQ(j["coverage"]["unanalyzed_ops"][0]["bytes_estimate"], 4 * (64 * 128 + 64 * 65));
  EXPECT_EQ(only(r).per_op[1].bottleneck, "unanalyzed");
  EXPECT_THAT(to_table(r), HasSubstr("UNANALYZED"));
}

// A dead branch is in no level: every bound equals the graph's without it, and the report
// lists it (coverage.dead, class "dead", 0 s) with what it would cost.
TEST(Analyze, DeadOpsAreListedAndInNoBound) {
  const std::string live = R"(
    x = bf16[1024,1024] input
    w = bf16[1024,1024] weight
    y = bf16[1024,1024]{output} einsum "mk,kn->mn" (x, w))";
  ir::Graph g = ir::parse_graph(live + R"(
    u = bf16[1024,4096] weight
    d = bf16[1024,4096] einsum "mk,kn->mn" (x, u)
    e = bf16[1024,4096] einsum [m=1024,n=4096] none exp($0) (d[m,n]) -> [m,n])");
  ir::Graph alone = ir::parse_graph(live);
  const hw::Device& h100 = db().get("H100_SXM");
  Report r = analyze(g, {&h100}, {}), ref = analyze(alone, {&h100}, {});
  EXPECT_EQ(only(r).unfused.seconds, only(ref).unfused.seconds);
  EXPECT_EQ(only(r).fused.seconds, only(ref).fused.seconds);
  ASSERT_TRUE(r.cache_aware.at(0).available);
  EXPECT_EQ(r.cache_aware[0].seconds, ref.cache_aware.at(0).seconds);
  EXPECT_EQ(r.cache_aware[0].traffic_bytes, ref.cache_aware[0].traffic_bytes);
  nlohmann::json j = to_json(r);
  EXPECT_EQ(j["coverage"]["dead"], 2);
  EXPECT_EQ(j["coverage"]["dead_ops"], nlohmann::json({"d", "e"}));
  EXPECT_EQ(j["coverage"]["complete"], true);
  EXPECT_EQ(j["totals"]["macs"], 1024 * 1024 * 1024);
  EXPECT_EQ(j["ops"][1]["class"], "dead");
  EXPECT_EQ(j["ops"][1]["macs"], std::uint64_t{1024} * 4096 * 1024);  // what it would cost
  EXPECT_EQ(j["ops"][1]["seconds"]["H100_SXM"], 0.0);
  EXPECT_EQ(only(r).per_op[2].bottleneck, "dead");
  EXPECT_EQ(j["coverage"]["dead_macs"], std::uint64_t{1024} * 4096 * 1024);  // M*N*K of d
  // Unfused, bf16: d reads x and u and writes d; e reads d and writes e.
  EXPECT_EQ(j["coverage"]["dead_bytes"], 2 * (1024 * 1024 + 4 * 1024 * 4096));
  EXPECT_THAT(to_table(r), HasSubstr("dead ops: 2 (4.295 GMAC, 35.65 MB unfused): no result "
                                     "reaches an output, not counted"));
}

TEST(Analyze, NullDeviceIsAUserError) {
  ir::Graph g = ir::parse_graph("x = f32[4] input\ny = f32[4]{output} move copy (x)");
  try {
    analyze(g, {nullptr}, {});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
    EXPECT_THAT(e.what(), HasSubstr("null"));
  }
}

// The invariant of docs/bounds.md on every example graph, device, policy and cache state.
TEST(Analyze, UnfusedIsAtLeastFusedOnTheExamples) {
  namespace fs = std::filesystem;
  int graphs = 0;
  std::vector<const hw::Device*> devices;
  for (const std::string& id : db().ids())
    if (id != "host") devices.push_back(&db().get(id));
  const fs::path examples = fs::path(SOLAR_SOURCE_DIR) / "examples";
  for (const fs::directory_entry& e : fs::directory_iterator(examples)) {
    if (e.path().extension() != ".solar") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    ir::Graph g = ir::parse_graph(text.str(), e.path().string());
    ++graphs;
    for (bound::MathPolicy p : {bound::MathPolicy::PytorchDefault, bound::MathPolicy::Tf32,
                                bound::MathPolicy::StrictFp32})
      for (bound::CacheState c : {bound::CacheState::Cold, bound::CacheState::Warm}) {
        Report r = analyze(g, devices, bound::Options{p, c});
        for (const bound::DeviceBounds& b : r.devices) {
          EXPECT_GE(b.unfused.seconds, b.fused.seconds)
              << e.path() << " " << b.device_id << " " << bound::policy_name(p) << " "
              << bound::cache_state_name(c);
          EXPECT_GT(b.fused.seconds, 0) << e.path() << " " << b.device_id;
          double share = 0;
          for (const bound::OpBound& op : b.per_op) share += op.share;
          EXPECT_NEAR(share, 1.0, 1e-9) << e.path() << " " << b.device_id;
        }
        nlohmann::json j = to_json(r);
        EXPECT_EQ(j["ops"].size(), g.ops().size());
        EXPECT_FALSE(to_table(r).empty());
      }
  }
  EXPECT_GE(graphs, 3);
}

}  // namespace
}  // namespace solar::report
