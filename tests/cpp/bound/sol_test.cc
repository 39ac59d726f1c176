#include "solar/bound/sol.h"

#include <cmath>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "solar/hw/database.h"
#include "solar/ir/text.h"
#include "testing/fixtures.h"

namespace solar::bound {
namespace {

using cost::ContractionClass;
using cost::Work;
using ir::DType;
using ::testing::HasSubstr;

// A synthetic device with round numbers so that formulas read plainly: tensor bf16/f16
// 1e15 FLOP/s, tf32 5e14; vector f32 1e14, bf16 2e14; special 1e12 ops/s; DRAM 1e12 B/s;
// L2 1e8 B at 1e13 B/s.
hw::Device synthetic() {
  return testing::DeviceBuilder()
      .tensor(DType::BF16, 1e15).tensor(DType::F16, 1e15).tensor(DType::TF32, 5e14)
      .vector(DType::F32, 1e14).vector(DType::BF16, 2e14)
      .special(1e12)
      .dram(1e12)
      .memory(hw::MemoryLevel::L2, 1e8, 1e13)
      .build();
}

hw::Device without_special(hw::Device d) {
  std::erase_if(d.units, [](const hw::ComputeUnit& u) { return u.kind == hw::UnitKind::Special; });
  return d;
}

// n ops with empty bodies: compute_bounds only needs the op count to match the cost.
ir::Graph graph_of(std::size_t n) {
  ir::Graph g;
  g.name = "synthetic";
  for (std::size_t i = 0; i < n; ++i) {
    ir::Op op;
    op.name = "op" + std::to_string(i);
    g.add_op(std::move(op));
  }
  return g;
}

// A cost whose compulsory traffic defaults to the sum of the ops' bytes (no intermediates).
cost::GraphCost cost_of(std::vector<Work> ops, std::optional<Count> compulsory = std::nullopt) {
  cost::GraphCost c;
  Count bytes;
  for (const Work& w : ops) {
    if (!w.analyzed) ++c.num_unanalyzed;
    else bytes += w.bytes();
  }
  c.per_op = std::move(ops);
  c.compulsory_bytes_read = compulsory ? *compulsory : bytes;
  return c;
}

Work contraction(ContractionClass cls, DType d, Count macs, Count bytes) {
  Work w;
  w.contraction = cls;
  w.macs[d] = macs;
  w.bytes_read = bytes;
  return w;
}

Work matmul(DType d, std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  std::uint64_t width = static_cast<std::uint64_t>(ir::dtype_bits(d)) / 8;
  Work w = contraction(ContractionClass::Matmul, d, Count(m) * Count(n) * Count(k),
                       Count(width * (m * k + k * n)));
  w.bytes_written = Count(width * m * n);
  return w;
}

Work vector_op(DType d, Count flops, Count bytes, Count special = 0) {
  Work w;
  w.vector_flops[d] = flops;
  w.special_ops = special;
  w.bytes_read = bytes;
  return w;
}

Work unanalyzed() {
  Work w;
  w.analyzed = false;
  return w;
}

DeviceBounds bounds(const std::vector<Work>& ops, const hw::Device& d, Options o = {},
                    std::optional<Count> compulsory = std::nullopt) {
  ir::Graph g = graph_of(ops.size());
  return compute_bounds(g, cost_of(ops, compulsory), d, o);
}

double term(const std::vector<Term>& terms, const std::string& resource) {
  for (const Term& t : terms)
    if (t.resource == resource) return t.seconds;
  return -1;  // absent
}

TEST(OpRoofline, GemmIsComputeBound) {
  const std::uint64_t m = 4096, n = 4096, k = 4096;
  DeviceBounds b = bounds({matmul(DType::BF16, m, n, k)}, synthetic());
  const OpBound& op = b.per_op[0];
  EXPECT_DOUBLE_EQ(op.seconds, 2.0 * m * n * k / 1e15);  // 2*MNK FLOP at the bf16 tensor rate
  EXPECT_EQ(op.bottleneck, "tensor_core.bf16");
  EXPECT_DOUBLE_EQ(term(op.terms, "dram"), 2.0 * (m * k + k * n + m * n) / 1e12);
  EXPECT_TRUE(op.unknown.empty());
  EXPECT_EQ(b.device_id, "SYN");
  EXPECT_EQ(b.device_name, "Synthetic device");
  EXPECT_EQ(b.peaks_used.at("tensor_core.bf16"), 1e15);
  EXPECT_EQ(b.peaks_used.at("dram"), 1e12);
  EXPECT_EQ(b.dram_bandwidth, 1e12);
}

TEST(OpRoofline, GemvIsMemoryBound) {
  const std::uint64_t m = 4096, n = 1, k = 4096;
  DeviceBounds b = bounds({matmul(DType::BF16, m, n, k)}, synthetic());
  EXPECT_EQ(b.per_op[0].bottleneck, "dram");
  EXPECT_DOUBLE_EQ(b.per_op[0].seconds, 2.0 * (m * k + k * n + m * n) / 1e12);  // bf16 bytes / β
  EXPECT_DOUBLE_EQ(term(b.per_op[0].terms, "tensor_core.bf16"), 2.0 * m * n * k / 1e15);
}

TEST(OpRoofline, UnitsRunConcurrentlyMaxNotSum) {
  // 2e9 vector FLOPs at 1e14 = 2e-5 s; 1e7 special ops at 1e12 = 1e-5 s; 1000 bytes.
  DeviceBounds b = bounds({vector_op(DType::F32, 2'000'000'000, 1000, 10'000'000)}, synthetic());
  const OpBound& op = b.per_op[0];
  EXPECT_DOUBLE_EQ(op.seconds, 2e9 / 1e14);  // max(2e-5, 1e-5), not their sum
  EXPECT_EQ(op.bottleneck, "fp32_simt.f32");
  EXPECT_DOUBLE_EQ(term(op.terms, "mufu"), 1e7 / 1e12);
  EXPECT_DOUBLE_EQ(term(op.terms, "dram"), 1000 / 1e12);
  ASSERT_EQ(op.terms.size(), 3u);
  EXPECT_GE(op.terms[0].seconds, op.terms[1].seconds);  // largest first
}

TEST(OpRoofline, WorkOnOneUnitKindAddsUp) {
  // f32 and bf16 vector work share the vector unit: 1e9/1e14 + 2e9/2e14 seconds.
  Work w = vector_op(DType::F32, 1'000'000'000, 8);
  w.vector_flops[DType::BF16] = 2'000'000'000;
  DeviceBounds b = bounds({w}, synthetic());
  EXPECT_DOUBLE_EQ(b.per_op[0].seconds, 1e9 / 1e14 + 2e9 / 2e14);
  EXPECT_EQ(b.per_op[0].bottleneck, "fp32_simt.f32+fp32_simt.bf16");
}

TEST(OpRoofline, FreeViewHasNoBottleneck) {
  DeviceBounds b = bounds({Work{}}, synthetic());
  EXPECT_EQ(b.per_op[0].seconds, 0);
  EXPECT_EQ(b.per_op[0].bottleneck, "none");
  EXPECT_TRUE(b.per_op[0].terms.empty());
  EXPECT_EQ(b.unfused.bottleneck, "none");
  EXPECT_EQ(b.fused.bottleneck, "none");
}

// ---- 2:4 sparsity ----------------------------------------------------------------------

// `d` with a 2:4 sparse peak of `rate` for `dtype` on its tensor unit.
hw::Device with_sparse_2_4(hw::Device d, DType dtype, double rate) {
  for (hw::ComputeUnit& u : d.units)
    if (u.kind == hw::UnitKind::Tensor)
      u.sparse_2_4_peak[dtype] = testing::DeviceBuilder::sourced(rate);
  return d;
}

TEST(TwoFour, StructuredMacsRunAtTheSparsePeakAndTheRestAtTheDensePeak) {
  // 1e9 bf16 MACs, 6e8 of them with a 2:4 operand; 8 bytes so compute dominates.
  const Count macs = 1'000'000'000, sparse = 600'000'000;
  Work w = contraction(ContractionClass::Matmul, DType::BF16, macs, 8);
  w.macs_2_4[DType::BF16] = sparse;
  DeviceBounds b = bounds({w}, with_sparse_2_4(synthetic(), DType::BF16, 2e15));
  const OpBound& op = b.per_op[0];
  // (macs - macs_2_4)/dense + macs_2_4/sparse, 2 FLOP per MAC, on one unit kind.
  EXPECT_DOUBLE_EQ(op.seconds, 2 * 4e8 / 1e15 + 2 * 6e8 / 2e15);
  EXPECT_EQ(op.bottleneck, "tensor_core.bf16+tensor_core.bf16.2:4");
  EXPECT_EQ(b.peaks_used.at("tensor_core.bf16"), 1e15);
  EXPECT_EQ(b.peaks_used.at("tensor_core.bf16.2:4"), 2e15);
  // Fused: the same unit term (one op).
  EXPECT_DOUBLE_EQ(term(b.fused.terms, "tensor_core.bf16+tensor_core.bf16.2:4"), op.seconds);
}

TEST(TwoFour, AllStructuredMacsTakeTheSparseRouteAlone) {
  const Count macs = 1'000'000'000;
  Work w = contraction(ContractionClass::Matmul, DType::BF16, macs, 8);
  w.macs_2_4[DType::BF16] = macs;
  DeviceBounds b = bounds({w}, with_sparse_2_4(synthetic(), DType::BF16, 1.5e15));
  EXPECT_DOUBLE_EQ(b.per_op[0].seconds, 2 * 1e9 / 1.5e15);  // a sparse peak below 2x dense
  EXPECT_EQ(b.per_op[0].bottleneck, "tensor_core.bf16.2:4");
  EXPECT_EQ(b.peaks_used.count("tensor_core.bf16"), 0u);
}

TEST(TwoFour, WithoutASparsePeakTheZerosAreNotSkipped) {
  const Count macs = 1'000'000'000;
  Work w = contraction(ContractionClass::Matmul, DType::BF16, macs, 8);
  w.macs_2_4[DType::BF16] = macs;
  Work dense = contraction(ContractionClass::Matmul, DType::BF16, macs, 8);
  // No sparse peak for bf16 (only for f16): every MAC at the dense bf16 peak.
  DeviceBounds b = bounds({w}, with_sparse_2_4(synthetic(), DType::F16, 2e15));
  EXPECT_EQ(b.per_op[0].seconds, 2 * 1e9 / 1e15);
  EXPECT_EQ(b.per_op[0].seconds, bounds({dense}, synthetic()).per_op[0].seconds);
  EXPECT_EQ(b.per_op[0].bottleneck, "tensor_core.bf16");
  EXPECT_EQ(b.peaks_used.count("tensor_core.bf16.2:4"), 0u);
}

TEST(TwoFour, VectorRoutesHaveNoSparsePeak) {
  // An fp32 matmul runs on the vector unit under pytorch-default: no 2:4 speedup there.
  const Count macs = 1'000'000'000;
  Work w = contraction(ContractionClass::Matmul, DType::F32, macs, 8);
  w.macs_2_4[DType::F32] = macs;
  hw::Device d = with_sparse_2_4(synthetic(), DType::TF32, 1e15);
  EXPECT_DOUBLE_EQ(bounds({w}, d).per_op[0].seconds, 2 * 1e9 / 1e14);
  EXPECT_EQ(bounds({w}, d).per_op[0].bottleneck, "fp32_simt.f32");
  // Under the tf32 policy it runs on the tensor unit, at its tf32 sparse peak.
  EXPECT_DOUBLE_EQ(bounds({w}, d, Options{MathPolicy::Tf32}).per_op[0].seconds, 2 * 1e9 / 1e15);
  EXPECT_EQ(bounds({w}, d, Options{MathPolicy::Tf32}).per_op[0].bottleneck,
            "tensor_core.tf32.2:4");
}

// A compute-bound bf16 GEMM, dense or with a 2:4-sparse weight, costed from its IR.
struct SparseGemm {
  static constexpr std::uint64_t M = 8192, N = 8192, K = 8192;
  ir::Graph dense = ir::parse_graph(R"(
    a = bf16[8192,8192] input
    b = bf16[8192,8192] weight
    c = bf16[8192,8192]{output} einsum "mk,kn->mn" (a, b))");
  ir::Graph sparse = ir::parse_graph(R"(
    a = bf16[8192,8192] input
    b = bf16[8192,8192]{sparsity="2:4"} weight
    c = bf16[8192,8192]{output} einsum "mk,kn->mn" (a, b))");
  ir::Graph unstructured = ir::parse_graph(R"(
    a = bf16[8192,8192] input
    b = bf16[8192,8192]{zeros=0.9} weight
    c = bf16[8192,8192]{output} einsum "mk,kn->mn" (a, b))");
  DeviceBounds on(const ir::Graph& g, const hw::Device& d) const {
    return compute_bounds(g, cost::graph_cost(g), d, {});
  }
};

TEST(TwoFour, GemmOnH100TakesExactlyHalfTheDenseTime) {
  hw::DeviceDb db = hw::DeviceDb::load_default();
  const hw::Device& h100 = db.get("H100_SXM");
  SparseGemm gemm;
  DeviceBounds dense = gemm.on(gemm.dense, h100);
  DeviceBounds sparse = gemm.on(gemm.sparse, h100);
  // Dense: 2*MNK FLOP at 989.4 TFLOP/s; 2:4: the same FLOP at the 1978.8 sparse peak.
  const double flops = 2.0 * SparseGemm::M * SparseGemm::N * SparseGemm::K;
  EXPECT_DOUBLE_EQ(dense.fused.seconds, flops / 989.4e12);
  EXPECT_EQ(dense.fused.bottleneck, "tensor_core.bf16");
  EXPECT_EQ(sparse.fused.bottleneck, "tensor_core.bf16.2:4");
  EXPECT_EQ(sparse.fused.seconds, dense.fused.seconds / 2);  // exactly: sparse = 2 x dense
  EXPECT_EQ(sparse.unfused.seconds, dense.unfused.seconds / 2);
  EXPECT_EQ(sparse.per_op[0].seconds, dense.per_op[0].seconds / 2);
  EXPECT_EQ(sparse.peaks_used.at("tensor_core.bf16.2:4"), 1978.8e12);
}

TEST(TwoFour, GemmOnTpuV5eTakesTheDenseTime) {
  hw::DeviceDb db = hw::DeviceDb::load_default();
  const hw::Device& tpu = db.get("TPU_v5e");  // no sparse peak: the zeros are not skipped
  SparseGemm gemm;
  DeviceBounds dense = gemm.on(gemm.dense, tpu);
  DeviceBounds sparse = gemm.on(gemm.sparse, tpu);
  const double flops = 2.0 * SparseGemm::M * SparseGemm::N * SparseGemm::K;
  EXPECT_DOUBLE_EQ(dense.fused.seconds, flops / 197e12);
  EXPECT_EQ(sparse.fused.bottleneck, "mxu.bf16");
  EXPECT_EQ(sparse.fused.seconds, dense.fused.seconds);
  EXPECT_EQ(sparse.per_op[0].seconds, dense.per_op[0].seconds);
  // Only the bytes shrink (the compressed 2:4 weight): the DRAM term is smaller.
  EXPECT_LT(term(sparse.fused.terms, "dram"), term(dense.fused.terms, "dram"));
}

TEST(TwoFour, UnstructuredZerosShrinkBytesNotTime) {
  hw::DeviceDb db = hw::DeviceDb::load_default();
  const hw::Device& h100 = db.get("H100_SXM");
  SparseGemm gemm;
  DeviceBounds dense = gemm.on(gemm.dense, h100);
  DeviceBounds unstructured = gemm.on(gemm.unstructured, h100);
  EXPECT_EQ(term(unstructured.fused.terms, "tensor_core.bf16"),
            term(dense.fused.terms, "tensor_core.bf16"));
  // Compulsory bytes: a and c dense; b as a bitmap of K*N bits + K*N/10 bf16 nonzeros.
  const double kn = 8192.0 * 8192;
  EXPECT_DOUBLE_EQ(term(unstructured.fused.terms, "dram"),
                   (2 * kn + kn / 8 + 2 * (kn - std::floor(kn * 9 / 10)) + 2 * kn) / 3.35e12);
}

TEST(MathPolicy, Fp32MatmulAndConvolutionUnderEachPolicy) {
  const Count macs = 1'000'000'000;  // 1e9 MACs = 2e9 FLOP; 8 bytes so compute dominates
  Work mm = contraction(ContractionClass::Matmul, DType::F32, macs, 8);
  Work conv = contraction(ContractionClass::Convolution, DType::F32, macs, 8);
  struct Case {
    MathPolicy policy;
    double mm_rate, conv_rate;
    const char* mm_unit;
    const char* conv_unit;
  };
  for (const Case& c : {Case{MathPolicy::PytorchDefault, 1e14, 5e14, "fp32_simt.f32",
                             "tensor_core.tf32"},
                        Case{MathPolicy::Tf32, 5e14, 5e14, "tensor_core.tf32", "tensor_core.tf32"},
                        Case{MathPolicy::StrictFp32, 1e14, 1e14, "fp32_simt.f32",
                             "fp32_simt.f32"}}) {
    SCOPED_TRACE(std::string(policy_name(c.policy)));
    DeviceBounds b = bounds({mm, conv}, synthetic(), Options{c.policy, CacheState::Cold});
    EXPECT_DOUBLE_EQ(b.per_op[0].seconds, 2e9 / c.mm_rate);
    EXPECT_EQ(b.per_op[0].bottleneck, c.mm_unit);
    EXPECT_DOUBLE_EQ(b.per_op[1].seconds, 2e9 / c.conv_rate);
    EXPECT_EQ(b.per_op[1].bottleneck, c.conv_unit);
  }
}

TEST(MathPolicy, Fp8WithoutFp8RateUpcastsToF16) {
  DeviceBounds b = bounds(
      {contraction(ContractionClass::Matmul, DType::F8E4M3, 1'000'000'000'000, 8)}, synthetic());
  EXPECT_DOUBLE_EQ(b.per_op[0].seconds, 2e12 / 1e15);  // at the f16/bf16 tensor rate
  EXPECT_EQ(b.per_op[0].bottleneck.rfind("tensor_core.", 0), 0u);
  EXPECT_TRUE(b.per_op[0].unknown.empty());
}

TEST(UnknownRates, SpecialUnitMissingIsRecordedAndLeftOut) {
  // 1e9 special ops and 1e6 bytes on a device without a special unit (TPU-like).
  DeviceBounds b = bounds({vector_op(DType::F32, 0, 1'000'000, 1'000'000'000)},
                          without_special(synthetic()));
  const OpBound& op = b.per_op[0];
  EXPECT_DOUBLE_EQ(op.seconds, 1e6 / 1e12);  // only the memory term is known
  EXPECT_EQ(op.bottleneck, "dram");
  ASSERT_EQ(op.unknown.size(), 1u);
  EXPECT_THAT(op.unknown[0], HasSubstr("1e9 special-function ops"));
  EXPECT_THAT(op.unknown[0], HasSubstr("SYN publishes no special-function unit rate"));
  ASSERT_EQ(b.unfused.unknown.size(), 1u);
  EXPECT_THAT(b.unfused.unknown[0], HasSubstr("special-function"));
  ASSERT_EQ(b.fused.unknown.size(), 1u);
  EXPECT_THAT(b.fused.unknown[0], HasSubstr("special-function"));
  // It moves the fused SOL (1e6 B at 1e12 B/s) only if 1e9 ops take longer: below 1e9 / 1e-6.
  EXPECT_THAT(b.fused.unknown[0],
              HasSubstr("it raises the fused SOL (1e-06 s) only if it runs below 1e+15 ops/s"));
  EXPECT_EQ(b.peaks_used.count("mufu"), 0u);
}

TEST(UnknownRates, ContractionWithNoLegalRouteIsPricedAtTheCeiling) {
  // i32 contractions run only on a vector unit at i32, which the device does not publish: their
  // MACs are priced at the ceiling, each tensor and vector unit's fastest peak summed.
  Work w = contraction(ContractionClass::Matmul, DType::I32, 2'100'000'000, 4000);
  Work w2 = w;
  DeviceBounds b = bounds({w, w2}, synthetic());
  const double ceiling = 1e15 + 2e14;  // tensor_core bf16 + fp32_simt bf16
  EXPECT_DOUBLE_EQ(b.per_op[0].seconds, 2 * 2.1e9 / ceiling);  // 1 MAC = 2 FLOP
  EXPECT_EQ(b.per_op[0].bottleneck, "contraction.ceiling");
  EXPECT_TRUE(b.per_op[0].unknown.empty());
  EXPECT_TRUE(b.unfused.unknown.empty());
  EXPECT_TRUE(b.fused.unknown.empty());
  EXPECT_DOUBLE_EQ(b.fused.seconds, 2 * 2 * 2.1e9 / ceiling);  // both ops on one ceiling
  ASSERT_EQ(b.fused.ceiling.size(), 1u);  // aggregated over the graph
  EXPECT_EQ(b.fused.ceiling[0],
            "4.2e9 MACs i32 (matmul) in 2 ops: SYN publishes no rate for i32 or any wider legal "
            "route under the pytorch-default policy; priced at the ceiling 1200 TFLOP/s "
            "(tensor_core.bf16+fp32_simt.bf16: the fastest published rate of each tensor and "
            "vector unit, summed)");
  EXPECT_EQ(b.unfused.ceiling, b.fused.ceiling);
  EXPECT_DOUBLE_EQ(b.peaks_used.at("contraction.ceiling"), ceiling);
}

TEST(UnknownRates, Int64AddsArePricedAtTheVectorCeilingAsAResourceOfTheirOwn) {
  // i64 has no vector rate and no f32 fallback: its FLOPs are priced at the vector units'
  // fastest peak (fp32_simt bf16, 2e14). The ceiling is a resource of its own, beside the
  // op's f32 FLOPs on fp32_simt: the op takes the larger term, not their sum.
  Work w = vector_op(DType::I64, 1'000'000'000, 8);
  w.vector_flops[DType::F32] = 1'000'000;
  DeviceBounds b = bounds({w}, synthetic());
  EXPECT_DOUBLE_EQ(b.per_op[0].seconds, std::max(1e9 / 2e14, 1e6 / 1e14));
  EXPECT_EQ(b.per_op[0].bottleneck, "vector.ceiling");
  EXPECT_DOUBLE_EQ(b.fused.seconds, 1e9 / 2e14);
  EXPECT_TRUE(b.fused.unknown.empty());
  ASSERT_EQ(b.fused.ceiling.size(), 1u);
  EXPECT_THAT(b.fused.ceiling[0], HasSubstr("1e9 vector FLOPs i64: SYN publishes no vector rate "
                                            "for i64; priced at the ceiling 200 TFLOP/s "
                                            "(fp32_simt.bf16"));
}

TEST(UnknownRates, WorkWithoutAnyUnitToBoundItStaysUnknown) {
  // A device with no vector unit at all has no ceiling for vector work: it is left out.
  hw::Device d = testing::DeviceBuilder().tensor(DType::BF16, 1e15).dram(1e12).build();
  DeviceBounds b = bounds({vector_op(DType::I64, 1'000'000'000, 8)}, d);
  EXPECT_TRUE(b.fused.ceiling.empty());
  ASSERT_EQ(b.fused.unknown.size(), 1u);
  EXPECT_THAT(b.fused.unknown[0], HasSubstr("1e9 vector FLOPs i64"));
}

TEST(CacheState, WarmUsesL2BandwidthForDataThatFits) {
  Work small = vector_op(DType::F32, 0, 1'000'000);    // 1e6 B fits in 1e8 B of L2
  Work large = vector_op(DType::F32, 0, 200'000'000);  // 2e8 B does not
  DeviceBounds warm = bounds({small, large}, synthetic(), Options{MathPolicy::PytorchDefault,
                                                                   CacheState::Warm});
  EXPECT_EQ(warm.per_op[0].bottleneck, "l2");
  EXPECT_DOUBLE_EQ(warm.per_op[0].seconds, 1e6 / 1e13);
  EXPECT_EQ(warm.per_op[1].bottleneck, "dram");
  EXPECT_DOUBLE_EQ(warm.per_op[1].seconds, 2e8 / 1e12);
  EXPECT_EQ(warm.peaks_used.at("l2"), 1e13);

  DeviceBounds cold = bounds({small, large}, synthetic());
  EXPECT_EQ(cold.per_op[0].bottleneck, "dram");
  EXPECT_DOUBLE_EQ(cold.per_op[0].seconds, 1e6 / 1e12);
  EXPECT_EQ(cold.peaks_used.count("l2"), 0u);
}

TEST(CacheState, WarmWithoutPublishedL2BandwidthLeavesResidentBytesOut) {
  hw::Device d = synthetic();
  d.memory[1].bandwidth.reset();  // like H100: L2 capacity published, bandwidth not
  Work w = vector_op(DType::F32, 1'000'000, 1'000'000);
  DeviceBounds b = bounds({w}, d, Options{MathPolicy::PytorchDefault, CacheState::Warm});
  EXPECT_DOUBLE_EQ(b.per_op[0].seconds, 1e6 / 1e14);  // only the vector term remains
  EXPECT_EQ(b.per_op[0].bottleneck, "fp32_simt.f32");
  ASSERT_EQ(b.per_op[0].unknown.size(), 1u);
  EXPECT_THAT(b.per_op[0].unknown[0], HasSubstr("L2-resident"));
  EXPECT_THAT(b.per_op[0].unknown[0], HasSubstr("SYN publishes no L2 bandwidth"));
  ASSERT_EQ(b.fused.unknown.size(), 1u);
  EXPECT_THAT(b.fused.unknown[0], HasSubstr("compulsory bytes L2-resident"));
}

TEST(CacheState, WarmWithoutL2IsCold) {
  hw::Device d = synthetic();
  d.memory.pop_back();  // TPU-like: no L2 level
  Work w = vector_op(DType::F32, 0, 1'000'000);
  DeviceBounds warm = bounds({w}, d, Options{MathPolicy::PytorchDefault, CacheState::Warm});
  DeviceBounds cold = bounds({w}, d);
  EXPECT_EQ(warm.per_op[0].seconds, cold.per_op[0].seconds);
  EXPECT_EQ(warm.per_op[0].bottleneck, "dram");
  EXPECT_EQ(warm.fused.seconds, cold.fused.seconds);
}

TEST(Unfused, IsTheSumOfOpsWithPerResourceTerms) {
  const std::uint64_t n = 4096;
  Work gemm = matmul(DType::BF16, n, n, n);                   // compute-bound
  Work ew = vector_op(DType::F32, 1'000'000, 100'000'000);    // memory-bound
  DeviceBounds b = bounds({gemm, ew, ew}, synthetic());
  double t_gemm = 2.0 * n * n * n / 1e15;  // 1.37e-4 s > its 2*3*n^2 B / 1e12 = 1.0e-4 s
  double t_ew = 1e8 / 1e12;
  EXPECT_DOUBLE_EQ(b.per_op[0].seconds, t_gemm);
  EXPECT_DOUBLE_EQ(b.per_op[1].seconds, t_ew);
  EXPECT_DOUBLE_EQ(b.unfused.seconds, t_gemm + 2 * t_ew);
  EXPECT_DOUBLE_EQ(term(b.unfused.terms, "tensor_core.bf16"), t_gemm);
  EXPECT_DOUBLE_EQ(term(b.unfused.terms, "dram"), 2.0 * 3 * n * n / 1e12 + 2 * t_ew);
  EXPECT_DOUBLE_EQ(term(b.unfused.terms, "fp32_simt.f32"), 2 * 1e6 / 1e14);
  EXPECT_EQ(b.unfused.bottleneck, "dram");  // 2 * t_ew = 2e-4 s of dram-bound ops > t_gemm
}

TEST(Unfused, BottleneckGroupsOpSecondsByEachOpsBottleneck) {
  // Op A: tensor 3e-5 s, dram 2.9e-5 s (tensor-bound); op B: dram 1e-5 s. Summed terms put
  // dram first (3.9e-5 vs 3e-5), but the op seconds that each resource bounds are tensor
  // 3e-5 vs dram 1e-5: the tensor unit is what limits this graph.
  Work a = contraction(ContractionClass::Matmul, DType::BF16, 15'000'000'000, 29'000'000);
  Work b = vector_op(DType::F32, 0, 10'000'000);
  DeviceBounds r = bounds({a, b}, synthetic());
  EXPECT_EQ(r.unfused.terms[0].resource, "dram");
  EXPECT_EQ(r.unfused.terms[0].memory, hw::MemoryLevel::Dram);  // typed: summing keeps the level
  EXPECT_EQ(r.unfused.terms[1].memory, std::nullopt);           // a compute term
  EXPECT_EQ(r.unfused.bottleneck, "tensor_core.bf16");
}

TEST(Fused, IsTheMaxOfWholeGraphTerms) {
  Work gemm = matmul(DType::BF16, 1024, 1024, 1024);
  Work ew = vector_op(DType::F32, 1'000'000, 8'000'000);
  const Count compulsory = 5'000'000;  // intermediates stay on chip
  DeviceBounds b = bounds({gemm, ew, ew}, synthetic(), {}, compulsory);
  double tensor = 2.0 * 1024 * 1024 * 1024 / 1e15;
  double vector = 2 * 1e6 / 1e14;
  double dram = 5e6 / 1e12;
  EXPECT_DOUBLE_EQ(term(b.fused.terms, "tensor_core.bf16"), tensor);
  EXPECT_DOUBLE_EQ(term(b.fused.terms, "fp32_simt.f32"), vector);
  EXPECT_DOUBLE_EQ(term(b.fused.terms, "dram"), dram);
  EXPECT_DOUBLE_EQ(b.fused.seconds, std::max({tensor, vector, dram}));
  EXPECT_EQ(b.fused.bottleneck, "dram");  // 5e-6 > 2.1e-6
  EXPECT_GE(b.unfused.seconds, b.fused.seconds);
}

TEST(Fused, WarmCompulsoryBytesThatFitStreamFromL2) {
  Work ew = vector_op(DType::F32, 0, 50'000'000);
  Options warm{MathPolicy::PytorchDefault, CacheState::Warm};
  DeviceBounds b = bounds({ew}, synthetic(), warm, Count(50'000'000));
  EXPECT_DOUBLE_EQ(b.fused.seconds, 5e7 / 1e13);
  EXPECT_EQ(b.fused.bottleneck, "l2");
}

TEST(Fused, WarmNeverNeedsMoreDramTrafficThanTheOpByOpSchedule) {
  // Ten ops of 5e7 B each fit in L2 one at a time; their 5e8 compulsory bytes do not. The
  // op-by-op schedule moves everything at L2 rate under the warm model, so the fused bound
  // must not charge DRAM for them.
  std::vector<Work> ops(10, vector_op(DType::F32, 0, 50'000'000));
  Options warm{MathPolicy::PytorchDefault, CacheState::Warm};
  DeviceBounds b = bounds(ops, synthetic(), warm);
  EXPECT_DOUBLE_EQ(b.unfused.seconds, 10 * 5e7 / 1e13);
  EXPECT_EQ(term(b.fused.terms, "dram"), -1);  // absent
  EXPECT_DOUBLE_EQ(b.fused.seconds, 5e8 / 1e13);
  EXPECT_GE(b.unfused.seconds, b.fused.seconds);
}

TEST(Levels, SharesSumToOne) {
  std::vector<Work> ops = {matmul(DType::BF16, 512, 512, 512), vector_op(DType::F32, 3, 7),
                           vector_op(DType::BF16, 1'000'000, 2'000'000, 1000), Work{},
                           unanalyzed()};
  DeviceBounds b = bounds(ops, synthetic());
  double sum = 0;
  for (const OpBound& op : b.per_op) sum += op.share;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(b.per_op[0].share, b.per_op[0].seconds / b.unfused.seconds);
}

TEST(Levels, UnanalyzedOpsAreExcludedFromTheSums) {
  Work ew = vector_op(DType::F32, 0, 1'000'000);
  DeviceBounds with = bounds({ew, unanalyzed()}, synthetic());
  DeviceBounds alone = bounds({ew}, synthetic());
  EXPECT_EQ(with.per_op[1].seconds, 0);
  EXPECT_EQ(with.per_op[1].bottleneck, "unanalyzed");
  EXPECT_EQ(with.per_op[1].share, 0);
  EXPECT_EQ(with.unfused.seconds, alone.unfused.seconds);
  EXPECT_EQ(with.fused.seconds, alone.fused.seconds);
}

TEST(Levels, UnfusedIsAtLeastFusedOnRandomGraphs) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::uint64_t> count(0, 3'000'000'000);
  const DType dtypes[] = {DType::BF16, DType::F32, DType::F8E4M3, DType::F64, DType::I8};
  const ContractionClass classes[] = {ContractionClass::Matmul, ContractionClass::Convolution};
  hw::Device no_l2_bw = synthetic();
  no_l2_bw.memory[1].bandwidth.reset();
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<Work> ops;
    Count bytes;
    int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      Work w;
      if (rng() % 2) w = contraction(classes[rng() % 2], dtypes[rng() % 5], count(rng), 0);
      w.vector_flops[dtypes[rng() % 5]] += count(rng) / 8;
      if (rng() % 3 == 0) w.special_ops = count(rng) / 1000;
      w.bytes_read = count(rng) / 10;
      w.bytes_written = count(rng) / 10;
      if (rng() % 10 == 0) w = unanalyzed();
      bytes += w.bytes();
      ops.push_back(w);
    }
    // Compulsory traffic is at most the unfused traffic.
    Count compulsory = bytes == Count(0) ? Count(0) : Count(rng() % (bytes.to_u64() + 1));
    for (const hw::Device& d : {synthetic(), without_special(synthetic()), no_l2_bw})
      for (MathPolicy p : {MathPolicy::PytorchDefault, MathPolicy::Tf32, MathPolicy::StrictFp32})
        for (CacheState c : {CacheState::Cold, CacheState::Warm}) {
          DeviceBounds b = bounds(ops, d, Options{p, c}, compulsory);
          ASSERT_GE(b.unfused.seconds, b.fused.seconds)
              << "trial " << trial << " " << policy_name(p) << " " << cache_state_name(c);
          double sum = 0;
          for (const OpBound& op : b.per_op) sum += op.seconds;
          ASSERT_DOUBLE_EQ(b.unfused.seconds, sum);
        }
  }
}

TEST(Levels, CostMustMatchTheGraph) {
  ir::Graph g = graph_of(2);
  try {
    compute_bounds(g, cost_of({Work{}}), synthetic(), {});
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("has 2 ops but its cost has 1"));
  }
}

// Speed is measured in bench/ (bench_analyze_100k), not asserted here.
TEST(Levels, HundredThousandOpsAreAllBounded) {
  const std::size_t n = 100'000;
  std::vector<Work> ops;
  ops.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    ops.push_back(i % 3 == 0 ? matmul(DType::BF16, 64, 64, 64)
                             : vector_op(i % 3 == 1 ? DType::F32 : DType::BF16, 4096, 16384, 64));
  ir::Graph g = graph_of(n);
  cost::GraphCost c = cost_of(std::move(ops));
  hw::Device d = synthetic();
  DeviceBounds b = compute_bounds(g, c, d, {});
  EXPECT_EQ(b.per_op.size(), n);
  EXPECT_GE(b.unfused.seconds, b.fused.seconds);
}


// ---- links: collectives on a system (docs/parallel.md, "Collective ops in the graph") ----

namespace links {

// A tensor-parallel layer's rank: x[M,K] @ w[K,N] in bf16, then its all-reduce over 8 ranks.
constexpr double M = 128, K = 1024, N = 4096, kRanks = 8;
constexpr double S = 2 * M * N;            // the all-reduce's buffer, bytes (bf16)
constexpr double kLinkB = 50e9, kNic = 5e9, kPeer = 10e9;  // bytes/s per device per direction

ir::Graph tp_layer(const std::string& group = "size=8") {
  return ir::parse_graph(R"(
    x = bf16[128,1024] input
    w = bf16[1024,4096] weight
    h = bf16[128,4096] einsum "mk,kn->mn" (x, w)
    y = bf16[128,4096]{output} collective all_reduce sum {)" + group + R"(} (h))");
}

hw::Sourced rate(double v) { return hw::Sourced{v, "spec", "V", ""}; }

// `devices` synthetic devices per switched domain at kLinkB, `nodes` domains over kNic NICs;
// the switch reduces when `reduces`.
hw::System switched(int devices, int nodes, bool reduces = false) {
  hw::System s;
  s.id = "SYN_SYSTEM";
  s.device = "SYN";
  s.nodes = nodes;
  s.scale_up.devices = devices;
  s.scale_up.link.topology = hw::Topology::Switched;
  s.scale_up.link.bandwidth = rate(kLinkB);
  if (reduces) s.scale_up.link.reduction = hw::InNetworkReduction{"SHARP", "spec", "V", "", {}};
  s.scale_out = hw::ScaleOutLink{"NIC", rate(kNic), std::nullopt, std::nullopt};
  return s;
}

hw::System mesh(int devices) {
  hw::System s = switched(devices, 1);
  s.scale_up.link.topology = hw::Topology::Mesh;
  s.scale_up.link.bandwidth = rate((devices - 1) * kPeer);
  s.scale_up.link.peer_bandwidth = rate(kPeer);
  return s;
}

const Term* term(const std::vector<Term>& terms, const std::string& resource) {
  for (const Term& t : terms)
    if (t.resource == resource) return &t;
  return nullptr;
}

DeviceBounds bounds_of(const ir::Graph& g, const hw::System* system) {
  return compute_bounds(g, cost::graph_cost(g), synthetic(), Options{}, system);
}

TEST(Links, MatmulAndAllReduceOverlappedAndNot) {
  ir::Graph g = tp_layer();
  hw::System sys = switched(8, 1);
  DeviceBounds b = bounds_of(g, &sys);
  const double compute = 2 * M * N * K / 1e15;                   // tensor bf16 at 1e15 FLOP/s
  const double dram = 2 * (M * K + K * N + M * N) / 1e12;        // compulsory bytes at 1e12 B/s
  const double link = 2 * (kRanks - 1) / kRanks * S / kLinkB;    // ring: 2(n-1)/n S per dir
  const double reduce = (kRanks - 1) / kRanks * M * N / 2e14;    // (n-1)/n E bf16 vector FLOPs
  ASSERT_NE(term(b.fused.terms, "scale_up"), nullptr);
  EXPECT_DOUBLE_EQ(term(b.fused.terms, "scale_up")->seconds, link);
  EXPECT_EQ(term(b.fused.terms, "scale_up")->link, LinkKind::ScaleUp);
  EXPECT_DOUBLE_EQ(term(b.fused.terms, "tensor_core.bf16")->seconds, compute);
  EXPECT_DOUBLE_EQ(term(b.fused.terms, "dram")->seconds, dram);
  // Overlapped: the max over every resource; not overlapped: max(compute, DRAM) + the links.
  EXPECT_DOUBLE_EQ(b.fused.seconds, std::max({compute, dram, link, reduce}));
  EXPECT_EQ(b.fused.bottleneck, "scale_up");  // a link may be the bottleneck
  ASSERT_TRUE(b.fused.seconds_no_overlap.has_value());
  EXPECT_DOUBLE_EQ(*b.fused.seconds_no_overlap, std::max({compute, dram, reduce}) + link);
  EXPECT_FALSE(b.fused.latency_seconds.has_value());  // no hop latency published
  // The collective's own roofline: max over its reduction, its DRAM bytes and its link.
  const OpBound& ar = b.per_op[1];
  EXPECT_DOUBLE_EQ(ar.seconds, std::max({reduce, 2 * S / 1e12, link}));
  EXPECT_EQ(ar.bottleneck, "scale_up");
  ASSERT_EQ(ar.links.size(), 1u);
  EXPECT_DOUBLE_EQ(ar.links[0].bytes, 2 * (kRanks - 1) / kRanks * S);
  EXPECT_DOUBLE_EQ(ar.links[0].bandwidth, kLinkB);
  // Unfused: the ops' rooflines summed; without overlap each op's local max plus its link.
  const double mm = std::max(compute, 2 * (M * K + K * N + M * N) / 1e12);
  EXPECT_DOUBLE_EQ(b.unfused.seconds, mm + ar.seconds);
  EXPECT_DOUBLE_EQ(*b.unfused.seconds_no_overlap, mm + std::max(reduce, 2 * S / 1e12) + link);
  // The graph's link use.
  EXPECT_EQ(b.system_id, "SYN_SYSTEM");
  ASSERT_EQ(b.links.size(), 1u);
  EXPECT_EQ(b.links[0].link, LinkKind::ScaleUp);
  EXPECT_DOUBLE_EQ(b.links[0].bytes, 2 * (kRanks - 1) / kRanks * S);
  EXPECT_DOUBLE_EQ(b.links[0].seconds, link);
  EXPECT_EQ(b.links[0].collectives, 1);
}

TEST(Links, InSwitchReductionMovesSOncePerDirection) {
  ir::Graph g = tp_layer();
  hw::System sys = switched(8, 1, /*reduces=*/true);
  DeviceBounds b = bounds_of(g, &sys);
  EXPECT_DOUBLE_EQ(term(b.fused.terms, "scale_up")->seconds, S / kLinkB);
  EXPECT_EQ(b.per_op[1].links[0].algorithm, "in-network reduction");
}

TEST(Links, MeshGroupGetsItsPeersLinks) {
  ir::Graph g = tp_layer("size=4");  // 4 of the 8 mesh devices: 3 peers each
  hw::System sys = mesh(8);
  DeviceBounds b = bounds_of(g, &sys);
  EXPECT_DOUBLE_EQ(term(b.fused.terms, "scale_up")->seconds, 2.0 * 3 / 4 * S / (3 * kPeer));
}

TEST(Links, HierarchicalGroupUsesBothLinks) {
  // 16 ranks over 2 domains of 8: the scale-up ring over g = 8, the NICs carrying 1/g of the
  // domain's share over m = 2 (docs/parallel.md, "Hierarchical").
  ir::Graph g = tp_layer("size=16, group=\"dp\"");
  hw::System sys = switched(8, 2);
  DeviceBounds b = bounds_of(g, &sys);
  const double up = 2.0 * 7 / 8 * S / kLinkB, out = 2.0 * 1 / 2 * S / 8 / kNic;
  EXPECT_DOUBLE_EQ(term(b.fused.terms, "scale_up")->seconds, up);
  EXPECT_DOUBLE_EQ(term(b.fused.terms, "scale_out")->seconds, out);
  const double local = std::max(2 * M * N * K / 1e15, 2 * (M * K + K * N + M * N) / 1e12);
  EXPECT_DOUBLE_EQ(b.fused.seconds, std::max({local, up, out}));
  EXPECT_DOUBLE_EQ(*b.fused.seconds_no_overlap, local + up + out);
  ASSERT_EQ(b.links.size(), 2u);  // scale_up first
  EXPECT_EQ(b.links[1].link, LinkKind::ScaleOut);
  // A group stated as one rank per domain (data parallel over nodes) uses only the NICs.
  ir::Graph dp = tp_layer("size=2, ranks_per_domain=1");
  DeviceBounds d = bounds_of(dp, &sys);
  EXPECT_EQ(term(d.fused.terms, "scale_up"), nullptr);
  EXPECT_DOUBLE_EQ(term(d.fused.terms, "scale_out")->seconds, 2.0 * 1 / 2 * S / kNic);
}

TEST(Links, WithoutASystemTheBytesHaveNoTime) {
  ir::Graph g = tp_layer();
  DeviceBounds b = bounds_of(g, nullptr);
  EXPECT_EQ(term(b.fused.terms, "scale_up"), nullptr);
  EXPECT_FALSE(b.fused.seconds_no_overlap.has_value());
  EXPECT_TRUE(b.links.empty());
  // Flagged as unknown work is: in the level's and the op's sentences.
  ASSERT_EQ(b.fused.unknown.size(), 1u);
  // S = 1,048,576 B, in three digits.
  EXPECT_THAT(b.fused.unknown[0], HasSubstr("1.05e6 bytes of all_reduce payload"));
  EXPECT_THAT(b.fused.unknown[0], HasSubstr("link time is left out"));
  EXPECT_THAT(b.per_op[1].unknown.at(0), HasSubstr("no system gives its links (--system)"));
  // The fused level's sentence adds how much the payload could move it.
  ASSERT_EQ(b.unfused.unknown.size(), 1u);
  EXPECT_EQ(b.fused.unknown[0].rfind(b.unfused.unknown[0], 0), 0u);
  const double local = std::max(2 * M * N * K / 1e15, 2 * (M * K + K * N + M * N) / 1e12);
  EXPECT_DOUBLE_EQ(b.fused.seconds, local);
}

TEST(Links, RefusesGroupsThatDoNotFit) {
  ir::Graph g = tp_layer("size=16");
  hw::System sys = switched(8, 1);
  try {
    bounds_of(g, &sys);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
    EXPECT_THAT(e.message(), HasSubstr("op 'y': a group of 16 ranks does not fit SYN_SYSTEM"));
  }
  hw::System other = sys;
  other.device = "H100_SXM";
  try {
    bounds_of(tp_layer(), &other);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
    EXPECT_THAT(e.message(), HasSubstr("system SYN_SYSTEM is made of H100_SXM, not SYN"));
  }
}

TEST(Links, EveryKindOnEveryTopology) {
  // One collective of each kind over 4 ranks, x = f32[64,32] (E = 2048, 4 bytes each); each
  // op's per-link bytes are docs/parallel.md's formulas in its payload S (cost.md).
  ir::Graph g = ir::parse_graph(R"(
    x = f32[64,32] input
    ar = f32[64,32]{output} collective all_reduce sum {size=4} (x)
    ag = f32[256,32]{output} collective all_gather {size=4, axis=0} (x)
    rs = f32[16,32]{output} collective reduce_scatter sum {size=4, axis=0} (x)
    aa = f32[64,32]{output} collective all_to_all {size=4, split_axis=0, concat_axis=0} (x)
    sd = f32[64,32]{output} collective send {peer=1} (x)
    rv = f32[64,32]{output} collective recv {peer=1} ()
    bc = f32[64,32]{output} collective broadcast {size=4, root=0} (x))");
  constexpr double X = 4 * 64 * 32, n = 4;  // the input's bytes; ranks
  // The payload S of each op in graph order, and its point-to-point bytes per direction.
  const double payload[] = {X, n * X, X, X, X, X, X};
  const double bytes[] = {2 * (n - 1) / n * X, (n - 1) / n * (n * X), (n - 1) / n * X,
                          (n - 1) / n * X,     X,                     X,
                          X};
  // Switched: the full per-device bandwidth for any group (no in-switch reduction here).
  hw::System sw = switched(8, 1);
  DeviceBounds b = bounds_of(g, &sw);
  for (std::size_t i = 0; i < 7; ++i) {
    ASSERT_EQ(b.per_op[i].links.size(), 1u) << i;
    EXPECT_DOUBLE_EQ(b.per_op[i].links[0].bytes, bytes[i]) << i;
    EXPECT_DOUBLE_EQ(b.per_op[i].links[0].seconds, bytes[i] / kLinkB) << i;
    EXPECT_EQ(cost::graph_cost(g).per_op[i].comm->payload.to_double(), payload[i]) << i;
  }
  // Mesh: a group of k ranks gets its k - 1 peers' links (a pair: one).
  hw::System me = mesh(8);
  DeviceBounds m = bounds_of(g, &me);
  for (std::size_t i = 0; i < 7; ++i) {
    const double peers = i == 4 || i == 5 ? 1 : n - 1;  // send and recv: a pair
    EXPECT_DOUBLE_EQ(m.per_op[i].links[0].seconds, bytes[i] / (peers * kPeer)) << i;
  }
  // Hierarchical: 4 ranks as 1 per domain over 4 domains use the NICs alone.
  ir::Graph dp = ir::parse_graph(R"(
    x = f32[64,32] input
    ar = f32[64,32]{output} collective all_reduce sum {size=4, ranks_per_domain=1} (x)
    ag = f32[256,32]{output} collective all_gather {size=4, ranks_per_domain=1, axis=0} (x))");
  hw::System h = switched(8, 4);
  DeviceBounds d = bounds_of(dp, &h);
  ASSERT_EQ(d.per_op[0].links.size(), 1u);
  EXPECT_EQ(d.per_op[0].links[0].link, LinkKind::ScaleOut);
  EXPECT_DOUBLE_EQ(d.per_op[0].links[0].bytes, 2 * (n - 1) / n * X);  // 2(m-1)/m S/g, g = 1
  EXPECT_DOUBLE_EQ(d.per_op[1].links[0].bytes, (n - 1) / n * (n * X));
  EXPECT_DOUBLE_EQ(d.fused.terms[0].seconds,
                   (2 * (n - 1) / n * X + (n - 1) / n * (n * X)) / kNic);
}

TEST(Links, LatencyFloorIsTheLongestChainApart) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[1024] input
    a = f32[1024] collective all_reduce sum {size=8} (x)
    b = f32[1024] collective all_reduce sum {size=8} (a)
    c = f32[1024] collective all_reduce sum {size=8} (x)
    y = f32[1024]{output} einsum [i=1024] none add($0,$1) (b[i], c[i]) -> [i])");
  hw::System sys = switched(8, 1);
  sys.scale_up.link.latency = rate(1e-6);  // one hop
  DeviceBounds b = bounds_of(g, &sys);
  // a then b in sequence; c beside them: 2 hops of 1 us, never in `seconds`.
  ASSERT_TRUE(b.fused.latency_seconds.has_value());
  EXPECT_DOUBLE_EQ(*b.fused.latency_seconds, 2e-6);
  EXPECT_DOUBLE_EQ(b.fused.seconds, 3 * 2.0 * 7 / 8 * 4096 / kLinkB);
}

}  // namespace links

}  // namespace
}  // namespace solar::bound
