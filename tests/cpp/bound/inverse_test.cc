// Tests of the inverse roofline (inverse.h), anchored on the worked example of
// docs/inverse-roofline.md, worked example: a bf16 4096^3 GEMM with a 100 us target.
#include "solar/bound/inverse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "solar/ir/text.h"
#include "solar/util/errors.h"
#include "testing/fixtures.h"

namespace solar::bound {
namespace {

using ir::DType;
using tiling::TrafficMode;
using ::testing::HasSubstr;

constexpr double kT = 100e-6;             // the target: 100 us per run
constexpr double kN = 4096;
constexpr double kL2 = 50.0 * 1024 * 1024;  // 50 MiB on chip

// Tensor bf16 1e15 FLOP/s, DRAM 1e12 B/s, 50 MiB of L2.
hw::Device synthetic() {
  return testing::DeviceBuilder()
      .tensor(DType::BF16, 1e15)
      .vector(DType::F32, 1e14)
      .dram(1e12)
      .memory(hw::MemoryLevel::L2, kL2, std::nullopt)
      .build();
}

struct Gemm {
  ir::Graph g = ir::parse_graph(R"(
    a = bf16[4096,4096] input
    b = bf16[4096,4096] weight
    c = bf16[4096,4096]{output} einsum "mk,kn->mn" (a, b))");
  cost::GraphCost cost = cost::graph_cost(g);
};

// Orojenesis' mapspace (divisor tiles, no bypass), which the worked example's S_min uses.
tiling::GraphCurveOptions divisor_options() {
  tiling::GraphCurveOptions o;
  o.einsum.tiles = tiling::TileMode::Divisor;
  o.einsum.bypass = false;
  return o;
}

TEST(Inverse, WorkedExampleGemm4096At100us) {
  Gemm gemm;
  tiling::GraphTrafficModel model(gemm.g, gemm.cost, divisor_options());
  hw::Device d = synthetic();
  InverseOptions o;
  o.target_seconds = kT;
  o.bandwidth = 2e12;  // 2 TB/s
  InverseResult r = inverse_roofline(gemm.g, gemm.cost, model, {&d}, o);

  // Pi_min = 2*M*N*K / T = 1.374 PFLOP/s, all on the tensor unit at bf16.
  ASSERT_EQ(r.compute.size(), 1u);
  EXPECT_EQ(r.compute[0].kind, hw::UnitKind::Tensor);
  EXPECT_DOUBLE_EQ(r.compute[0].min_rate, 2 * kN * kN * kN / kT);
  EXPECT_NEAR(r.compute[0].min_rate, 1.374e15, 0.001e15);
  ASSERT_EQ(r.compute[0].by_dtype.size(), 1u);
  EXPECT_EQ(r.compute[0].by_dtype[0].first, DType::BF16);

  // beta_min at S = 50 MiB: the curve is at the compulsory 3*N^2*2 bytes there (100.7 MB),
  // so beta_min = 100.7 MB / 100 us = 1.007 TB/s.
  const BandwidthPoint* at_l2 = nullptr;
  for (const BandwidthPoint& p : r.bandwidth_curve)
    if (p.capacity_bytes == Count(static_cast<std::uint64_t>(kL2))) at_l2 = &p;
  ASSERT_NE(at_l2, nullptr);
  EXPECT_DOUBLE_EQ(at_l2->attainable_bandwidth, 3 * kN * kN * 2 / kT);
  EXPECT_NEAR(at_l2->attainable_bandwidth, 1.007e12, 0.001e12);
  EXPECT_DOUBLE_EQ(r.min_bandwidth_unlimited, 3 * kN * kN * 2 / kT);

  // S_min at 2 TB/s: the budget is 2e12 * 1e-4 = 2e8 bytes = 1e8 words. The divisor curve's
  // first point below it is 4,198,400 words (= 4096*1024 + 4096) moving 8.3886e7 words; the
  // point before, 1,050,624 words, moves 1.5099e8 (cache-aware.md §5.B): S_min = 8.4 MB.
  ASSERT_TRUE(r.capacity_for_bandwidth.has_value());
  const CapacityRequirement& c = *r.capacity_for_bandwidth;
  EXPECT_EQ(c.budget_bytes, Count(200'000'000));
  EXPECT_TRUE(c.feasible);
  ASSERT_TRUE(c.attainable_bytes.has_value());
  EXPECT_EQ(*c.attainable_bytes, Count(2 * (4096 * 1024 + 4096)));  // bf16: 2 bytes a word
  // The provable bound needs no more capacity than any schedule does.
  ASSERT_TRUE(c.provable_bytes.has_value());
  EXPECT_LE(*c.provable_bytes, *c.attainable_bytes);

  // The device: compute 2*N^3/1e15 = 137.4 us against 100 us; bandwidth at 50 MiB
  // 1.007 TB/s against 1 TB/s. It falls short in both, by these factors.
  ASSERT_EQ(r.devices.size(), 1u);
  const DeviceFit& f = r.devices[0];
  EXPECT_DOUBLE_EQ(f.compute_factor, (2 * kN * kN * kN / 1e15) / kT);
  EXPECT_EQ(f.compute_bottleneck, "tensor_core.bf16");
  ASSERT_TRUE(f.bandwidth_factor.has_value());
  EXPECT_DOUBLE_EQ(*f.bandwidth_factor, (3 * kN * kN * 2 / kT) / 1e12);
  EXPECT_FALSE(f.meets);
  EXPECT_THAT(f.verdict, HasSubstr("needs 1.37x this device's compute"));
  EXPECT_THAT(f.verdict, HasSubstr("needs 1.01x this device's DRAM bandwidth"));
}

TEST(Inverse, MinCapacityIsExact) {
  Gemm gemm;
  tiling::GraphTrafficModel model(gemm.g, gemm.cost);
  Count budget(300'000'000);
  for (TrafficMode mode : {TrafficMode::Attainable, TrafficMode::Provable}) {
    std::optional<Count> s = min_capacity(model, budget, mode);
    ASSERT_TRUE(s.has_value());
    EXPECT_LE(model.at(*s, mode).traffic_bytes, budget);
    EXPECT_GT(model.at(*s - Count(1), mode).traffic_bytes, budget);  // the least such S
  }
  // Below the compulsory traffic no capacity helps.
  EXPECT_FALSE(min_capacity(model, gemm.cost.compulsory_bytes() - Count(1),
                            TrafficMode::Attainable)
                   .has_value());
}

TEST(Inverse, BandwidthBelowCompulsoryIsInfeasible) {
  Gemm gemm;
  tiling::GraphTrafficModel model(gemm.g, gemm.cost);
  InverseOptions o;
  o.target_seconds = kT;
  o.bandwidth = 0.5e12;  // 5e7 bytes in 100 us, below the compulsory 1.007e8
  InverseResult r = inverse_roofline(gemm.g, gemm.cost, model, {}, o);
  ASSERT_TRUE(r.capacity_for_bandwidth.has_value());
  EXPECT_FALSE(r.capacity_for_bandwidth->feasible);
  EXPECT_FALSE(r.capacity_for_bandwidth->attainable_bytes.has_value());
  EXPECT_THAT(r.capacity_for_bandwidth->reason, HasSubstr("below the compulsory traffic"));
}

TEST(Inverse, ARateClearedByTheDeviceSaysSo) {
  Gemm gemm;
  tiling::GraphTrafficModel model(gemm.g, gemm.cost);
  hw::Device d = synthetic();
  InverseOptions o;
  o.target_seconds = 1.0 / 500;  // a 500 Hz loop: 2 ms per run
  InverseResult r = inverse_roofline(gemm.g, gemm.cost, model, {&d}, o);
  const DeviceFit& f = r.devices.at(0);
  EXPECT_TRUE(f.meets);
  EXPECT_DOUBLE_EQ(f.compute_factor, (2 * kN * kN * kN / 1e15) * 500);
  EXPECT_THAT(f.verdict, HasSubstr("meets the target"));
}

TEST(Inverse, NonPositiveTargetIsABadArgument) {
  Gemm gemm;
  tiling::GraphTrafficModel model(gemm.g, gemm.cost);
  for (double t : {0.0, -1e-3}) {
    InverseOptions o;
    o.target_seconds = t;
    try {
      inverse_roofline(gemm.g, gemm.cost, model, {}, o);
      FAIL() << "expected UserError for T = " << t;
    } catch (const UserError& e) {
      EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
      EXPECT_THAT(e.message(), HasSubstr("positive"));
    }
  }
}

TEST(Inverse, Fp32MatmulWorkGoesWhereThePolicySendsIt) {
  ir::Graph g = ir::parse_graph(R"(
    a = f32[64,32] input
    b = f32[32,16] weight
    c = f32[64,16]{output} einsum "mk,kn->mn" (a, b))");
  cost::GraphCost cost = cost::graph_cost(g);
  tiling::GraphTrafficModel model(g, cost);
  InverseOptions o;
  o.target_seconds = 1e-6;
  // pytorch-default: an fp32 matmul runs on the vector unit; tf32: on the tensor unit at tf32.
  InverseResult def = inverse_roofline(g, cost, model, {}, o);
  ASSERT_EQ(def.compute.size(), 1u);
  EXPECT_EQ(def.compute[0].kind, hw::UnitKind::Vector);
  EXPECT_DOUBLE_EQ(def.compute[0].work, 2.0 * 64 * 16 * 32);
  o.policy = MathPolicy::Tf32;
  InverseResult tf32 = inverse_roofline(g, cost, model, {}, o);
  ASSERT_EQ(tf32.compute.size(), 1u);
  EXPECT_EQ(tf32.compute[0].kind, hw::UnitKind::Tensor);
  EXPECT_EQ(tf32.compute[0].by_dtype[0].first, DType::TF32);
}

TEST(Inverse, SpecialFunctionWorkIsCountedInOps) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[100,10] input
    y = f32[100,10]{output} einsum [i=100,j=10] none exp($0) (x[i,j]) -> [i,j])");
  cost::GraphCost cost = cost::graph_cost(g);
  tiling::GraphTrafficModel model(g, cost);
  InverseOptions o;
  o.target_seconds = 1e-3;
  InverseResult r = inverse_roofline(g, cost, model, {}, o);
  const KindRequirement* special = nullptr;
  for (const KindRequirement& k : r.compute)
    if (k.kind == hw::UnitKind::Special) special = &k;
  ASSERT_NE(special, nullptr);
  EXPECT_DOUBLE_EQ(special->work, 100 * 10);  // one exp per element
  EXPECT_DOUBLE_EQ(special->min_rate, 100 * 10 / 1e-3);
  EXPECT_TRUE(special->by_dtype.empty());
}

TEST(Inverse, TwoFourMacsCountOneFlopAtADensePeak) {
  constexpr double M = 64, N = 16, K = 32;
  ir::Graph g = ir::parse_graph(R"(
    a = bf16[64,32] input
    b = bf16[32,16]{sparsity="2:4"} weight
    c = bf16[64,16]{output} einsum "mk,kn->mn" (a, b))");
  cost::GraphCost cost = cost::graph_cost(g);
  tiling::GraphTrafficModel model(g, cost);
  InverseOptions o;
  o.target_seconds = 1e-6;
  hw::Device dense = synthetic();  // no sparse peak
  hw::Device sparse = synthetic();
  sparse.units[0].sparse_2_4_peak[DType::BF16] = testing::DeviceBuilder::sourced(2e15);
  InverseResult r = inverse_roofline(g, cost, model, {&dense, &sparse}, o);
  ASSERT_EQ(r.compute.size(), 1u);
  // The least dense peak, for a unit whose 2:4 peak is 2x dense: MNK FLOP, not 2*MNK.
  EXPECT_DOUBLE_EQ(r.compute[0].work, M * N * K);
  EXPECT_DOUBLE_EQ(r.compute[0].min_rate, M * N * K / 1e-6);
  // Without a 2:4 peak every MAC is 2 FLOP at the dense rate.
  EXPECT_DOUBLE_EQ(r.compute[0].work_without_2_4, 2 * M * N * K);
  EXPECT_DOUBLE_EQ(r.compute[0].min_rate_without_2_4, 2 * M * N * K / 1e-6);
  // The device factors use each device's own peaks.
  EXPECT_DOUBLE_EQ(r.devices[0].compute_seconds, 2 * M * N * K / 1e15);
  EXPECT_DOUBLE_EQ(r.devices[1].compute_seconds, 2 * M * N * K / 2e15);
  // The ridge sweep counts the same work: at the ridge r of the op, Pi(r) = MNK / T.
  ASSERT_EQ(r.ridge.size(), 1u);
  EXPECT_DOUBLE_EQ(r.ridge[0].min_rate, M * N * K / 1e-6);
}

TEST(Inverse, DenseWorkIsTheSameWithAndWithoutTwoFour) {
  Gemm gemm;
  tiling::GraphTrafficModel model(gemm.g, gemm.cost, divisor_options());
  InverseOptions o;
  o.target_seconds = kT;
  InverseResult r = inverse_roofline(gemm.g, gemm.cost, model, {}, o);
  EXPECT_EQ(r.compute[0].work_without_2_4, r.compute[0].work);  // 2*N^3, no 2:4 work
  EXPECT_EQ(r.compute[0].min_rate_without_2_4, r.compute[0].min_rate);
}

TEST(Inverse, RidgeSweepCountsTwoFourMacsOnTensorRoutesOnly) {
  // bf16 matmul, all 2:4: F = 100 FLOP (not 200); an fp32 matmul with a 2:4 operand runs on
  // the vector unit under pytorch-default, where nothing is skipped: F = 200.
  cost::GraphCost cost;
  cost::Work a, b;
  a.contraction = b.contraction = cost::ContractionClass::Matmul;
  a.macs[DType::BF16] = a.macs_2_4[DType::BF16] = 100;
  a.bytes_read = 10;
  b.macs[DType::F32] = b.macs_2_4[DType::F32] = 100;
  b.bytes_read = 100;
  cost.per_op = {a, b};
  std::vector<RidgePoint> pts = ridge_sweep(cost, 1.0);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_DOUBLE_EQ(pts[0].ridge, 200.0 / 100);  // op b: F/Q
  EXPECT_DOUBLE_EQ(pts[1].ridge, 100.0 / 10);   // op a
  // Under the tf32 policy the fp32 matmul runs on the tensor unit: F = 100.
  std::vector<RidgePoint> tf32 = ridge_sweep(cost, 1.0, MathPolicy::Tf32);
  EXPECT_DOUBLE_EQ(tf32[0].ridge, 100.0 / 100);
}

TEST(Inverse, RidgeSweepAtBreakpoints) {
  // Op 0: F = 100 FLOP, Q = 10 B (r0 = 10); op 1: F = 10, Q = 10 (r1 = 1).
  cost::GraphCost cost;
  cost::Work a, b;
  a.vector_flops[DType::F32] = 100;
  a.bytes_read = 10;
  b.vector_flops[DType::F32] = 10;
  b.bytes_read = 10;
  cost.per_op = {a, b};
  std::vector<RidgePoint> pts = ridge_sweep(cost, 2.0);
  ASSERT_EQ(pts.size(), 2u);
  // r = 1: max(100, 1*10) + max(10, 1*10) = 110 FLOP over 2 s.
  EXPECT_DOUBLE_EQ(pts[0].ridge, 1.0);
  EXPECT_DOUBLE_EQ(pts[0].min_rate, (100.0 + 10.0) / 2.0);
  EXPECT_DOUBLE_EQ(pts[0].min_bandwidth, pts[0].min_rate / 1.0);
  // r = 10: max(100, 10*10) + max(10, 10*10) = 200 FLOP over 2 s.
  EXPECT_DOUBLE_EQ(pts[1].ridge, 10.0);
  EXPECT_DOUBLE_EQ(pts[1].min_rate, (100.0 + 100.0) / 2.0);
  EXPECT_DOUBLE_EQ(pts[1].min_bandwidth, pts[1].min_rate / 10.0);
}

TEST(Inverse, CollectivesLinkTimeIsSaidToBeLeftOut) {
  // The inverse roofline asks for compute, DRAM and on-chip capacity; a collective's link time
  // has no rate here, and the device's fit says so rather than dropping it.
  ir::Graph g = ir::parse_graph(R"(
    x = bf16[64,64] input
    y = bf16[64,64]{output} collective all_reduce sum {size=8} (x))");
  cost::GraphCost c = cost::graph_cost(g);
  tiling::GraphTrafficModel model(g, c);
  hw::Device d = synthetic();
  InverseOptions o;
  o.target_seconds = kT;
  InverseResult r = inverse_roofline(g, c, model, {&d}, o);
  ASSERT_EQ(r.devices.size(), 1u);
  ASSERT_EQ(r.devices[0].unknown.size(), 1u);
  EXPECT_THAT(r.devices[0].unknown[0], HasSubstr("8192 bytes of all_reduce payload"));  // 64x64x2
}

}  // namespace
}  // namespace solar::bound
