#include "solar/lower/aten.h"

#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using nlohmann::json;

// A trace builder for the tests: tensors by shape, ops by name and args.
struct Trace {
  json tensors = json::array();
  json ops = json::array();
  int tensor(std::vector<std::int64_t> shape, const char* role = "intermediate",
             const char* dtype = "float32") {
    int id = static_cast<int>(tensors.size());
    tensors.push_back({{"id", id}, {"shape", shape}, {"dtype", dtype}, {"role", role}});
    return id;
  }
  void op(const char* name, json args, std::vector<int> outs) {
    ops.push_back({{"op", name}, {"args", args}, {"outputs", outs}});
  }
  OpTrace build() const {
    return optrace_from_json(
        {{"schema", "solar.optrace.v1"}, {"name", "t"}, {"tensors", tensors}, {"ops", ops}});
  }
};
json T(int id) { return {{"tensor", id}}; }

// Multiply-accumulates of the graph: product of index extents of every mul+sum einsum
// without a mask (the tests with a mask count their points by formula instead).
Count macs(const ir::Graph& g) {
  Count total(0);
  for (const ir::Op& op : g.ops()) {
    if (op.kind() != ir::OpKind::Einsum) continue;
    const ir::EinsumOp& e = op.einsum();
    if (e.reduce != ir::Reduce::Sum || !e.combine.is_product_of_two_operands()) continue;
    Count n(1);
    for (const ir::IndexDim& d : e.indices) n = n * Count(d.extent);
    total = total + n;
  }
  return total;
}

int count_kind(const ir::Graph& g, ir::OpKind k) {
  int n = 0;
  for (const ir::Op& op : g.ops()) n += op.kind() == k;
  return n;
}

TEST(Aten, MmIsOneContraction) {
  Trace t;
  int a = t.tensor({4, 8}, "input"), b = t.tensor({8, 2}, "parameter"), c = t.tensor({4, 2}, "output");
  t.op("aten::mm.default", {{"self", T(a)}, {"mat2", T(b)}}, {c});
  LowerResult r = lower_aten(t.build());
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(macs(r.graph), Count(4 * 8 * 2));  // M*K*N
  EXPECT_EQ(r.graph.tensor(*r.graph.find_tensor("t1")).role, ir::Role::Weight);
  EXPECT_EQ(r.graph.tensor(*r.graph.find_tensor("t2")).role, ir::Role::Output);
}

TEST(Aten, AddmmDecomposesIntoMatmulAndBiasAdd) {
  Trace t;
  int bias = t.tensor({16}, "parameter"), x = t.tensor({4, 8}, "input"),
      w = t.tensor({8, 16}, "parameter"), y = t.tensor({4, 16}, "output");
  t.op("aten::addmm.default", {{"self", T(bias)}, {"mat1", T(x)}, {"mat2", T(w)}, {"beta", 1}, {"alpha", 1}}, {y});
  LowerResult r = lower_aten(t.build());
  EXPECT_EQ(macs(r.graph), Count(4 * 8 * 16));  // M*K*N
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Einsum), 2);
}

TEST(Aten, MatmulBroadcastsBatchDimensions) {
  Trace t;
  int a = t.tensor({3, 1, 4, 8}, "input"), b = t.tensor({5, 8, 2}, "input"),
      c = t.tensor({3, 5, 4, 2}, "output");
  t.op("aten::matmul.default", {{"self", T(a)}, {"other", T(b)}}, {c});
  LowerResult r = lower_aten(t.build());
  EXPECT_EQ(macs(r.graph), Count(3 * 5 * 4 * 8 * 2));  // B1*B2*M*K*N: each batch pair once
}

TEST(Aten, GroupedStridedPaddedConvolution) {
  const int N = 2, C = 8, H = 9, W = 9, K = 12, G = 4, R = 3, S = 3, st = 2, pad = 1;
  const int P = (H + 2 * pad - R) / st + 1, Q = (W + 2 * pad - S) / st + 1;
  Trace t;
  int x = t.tensor({N, C, H, W}, "input"), w = t.tensor({K, C / G, R, S}, "parameter"),
      b = t.tensor({K}, "parameter"), y = t.tensor({N, K, P, Q}, "output");
  t.op("aten::convolution.default",
       {{"input", T(x)}, {"weight", T(w)}, {"bias", T(b)}, {"stride", {st, st}}, {"padding", {pad, pad}},
        {"dilation", {1, 1}}, {"transposed", false}, {"output_padding", {0, 0}}, {"groups", G}},
       {y});
  LowerResult r = lower_aten(t.build());
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(macs(r.graph), Count(N * K * P * Q * (C / G) * R * S));  // N*K*P*Q*(C/G)*R*S
}

TEST(Aten, SoftmaxDecomposesIntoFivePrimitives) {
  Trace t;
  int x = t.tensor({4, 10}, "input"), y = t.tensor({4, 10}, "output");
  t.op("aten::_softmax.default", {{"self", T(x)}, {"dim", -1}, {"half_to_float", false}}, {y});
  LowerResult r = lower_aten(t.build());
  // max-reduce, exp(x - max), sum-reduce, divide
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Einsum), 4);
  EXPECT_EQ(macs(r.graph), Count(0));
}

TEST(Aten, CausalGqaAttentionMasksBothContractions) {
  const int B = 2, Hq = 8, Hk = 2, L = 16, E = 32;
  Trace t;
  int q = t.tensor({B, Hq, L, E}, "input"), k = t.tensor({B, Hk, L, E}, "input"),
      v = t.tensor({B, Hk, L, E}, "input"), o = t.tensor({B, Hq, L, E}, "output"),
      lse = t.tensor({B, Hq, L});
  t.op("aten::_scaled_dot_product_flash_attention_for_cpu.default",
       {{"query", T(q)}, {"key", T(k)}, {"value", T(v)}, {"dropout_p", 0.0}, {"is_causal", true},
        {"attn_mask", nullptr}, {"scale", nullptr}},
       {o, lse});
  LowerResult r = lower_aten(t.build());
  EXPECT_TRUE(r.warnings.empty());
  std::vector<Count> spaces;
  for (const ir::Op& op : r.graph.ops()) {
    if (op.kind() != ir::OpKind::Einsum || !op.einsum().combine.is_product_of_two_operands()) continue;
    EXPECT_EQ(op.einsum().mask.size(), 1u);  // causal: l - s >= 0
    Count n(1);
    for (const ir::IndexDim& d : op.einsum().indices) n = n * Count(d.extent);
    spaces.push_back(n);
  }
  // QK^T and PV, each over the box B*Hk*(Hq/Hk)*L*L*E before the causal mask.
  EXPECT_EQ(spaces, (std::vector<Count>{Count(B * Hk * (Hq / Hk) * L * L * E),
                                        Count(B * Hk * (Hq / Hk) * L * L * E)}));
}

TEST(Aten, UnknownOpBecomesUnanalyzedWithAWarning) {
  Trace t;
  int x = t.tensor({4, 4}, "input"), y = t.tensor({4, 4}, "output");
  t.op("aten::_fft_r2c.default", {{"self", T(x)}, {"dim", {1}}}, {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("aten::_fft_r2c.default"), std::string::npos);
  ASSERT_EQ(count_kind(r.graph, ir::OpKind::Unanalyzed), 1);
  EXPECT_EQ(r.graph.ops()[0].unanalyzed().framework_op, "aten::_fft_r2c.default");
}

TEST(Aten, StrictRefusesAnUnknownOp) {
  Trace t;
  int x = t.tensor({4, 4}, "input"), y = t.tensor({4, 4}, "output");
  t.op("aten::_fft_r2c.default", {{"self", T(x)}}, {y});
  try {
    lower_aten(t.build(), {.strict = true});
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("--strict"), std::string::npos);
  }
}

TEST(Aten, AKnownOpWithUnmodeledArgumentsIsUnanalyzedNotPartial) {
  Trace t;
  int x = t.tensor({1, 4, 6, 6}, "input"), y = t.tensor({1, 4, 3, 3}, "output");
  // avg pooling with ceil_mode: divisors at the edge differ; refused before emitting anything
  t.op("aten::avg_pool2d.default",
       {{"self", T(x)}, {"kernel_size", {2, 2}}, {"stride", {2, 2}}, {"padding", {0, 0}},
        {"ceil_mode", true}, {"count_include_pad", true}, {"divisor_override", nullptr}},
       {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(r.graph.ops()[0].kind(), ir::OpKind::Unanalyzed);
  EXPECT_NE(r.warnings[0].find("ceil_mode"), std::string::npos);
}

TEST(Aten, TransposedConvolutionIsAMaskedEinsum) {
  const int N = 1, C = 4, K = 6, H = 5, R = 3, st = 2;
  const int O = (H - 1) * st + R;  // no padding: every input x tap lands inside
  Trace t;
  int x = t.tensor({N, C, H, H}, "input"), w = t.tensor({C, K, R, R}, "parameter"),
      y = t.tensor({N, K, O, O}, "output");
  t.op("aten::convolution.default",
       {{"input", T(x)}, {"weight", T(w)}, {"bias", nullptr}, {"stride", {st, st}}, {"padding", {0, 0}},
        {"dilation", {1, 1}}, {"transposed", true}, {"output_padding", {0, 0}}, {"groups", 1}},
       {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  ASSERT_EQ(r.graph.ops().size(), 1u);
  const ir::EinsumOp& e = r.graph.ops()[0].einsum();
  EXPECT_EQ(e.mask.size(), 4u);  // o - r - 2i == 0 per spatial dimension, as two inequalities
  // Live points: for each (i, r) exactly one o, so N*C*K*H*H*R*R of the box are live.
  std::vector<std::int64_t> ext = e.extents();
  std::int64_t live = 0, box = 1;
  for (std::int64_t v : ext) box *= v;
  // Enumerate the (o0, r0, i0) sub-box of one spatial dimension and square it.
  std::int64_t per_dim = 0;
  for (int o = 0; o < O; ++o)
    for (int rr = 0; rr < R; ++rr)
      for (int i = 0; i < H; ++i) per_dim += (o - rr - st * i == 0);
  live = N * C * K * per_dim * per_dim;
  EXPECT_EQ(per_dim, H * R);
  EXPECT_EQ(live, N * C * K * H * H * R * R);  // N*Cin*Kout*Hin*Win*R*S
  EXPECT_EQ(box, std::int64_t(N) * K * C * O * R * H * O * R * H);
}

TEST(Aten, MaxPoolPadsWithMinusInfinity) {
  Trace t;
  int x = t.tensor({2, 3, 8, 8}, "input"), y = t.tensor({2, 3, 4, 4}, "output"),
      idx = t.tensor({2, 3, 4, 4}, "intermediate", "int64");
  t.op("aten::max_pool2d_with_indices.default",
       {{"self", T(x)}, {"kernel_size", {3, 3}}, {"stride", {2, 2}}, {"padding", {1, 1}},
        {"dilation", {1, 1}}, {"ceil_mode", false}},
       {y, idx});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  const ir::EinsumOp& e = r.graph.ops()[0].einsum();
  EXPECT_EQ(e.reduce, ir::Reduce::Max);
  ASSERT_TRUE(e.operands[0].pad.has_value());
  EXPECT_TRUE(std::isinf(*e.operands[0].pad) && *e.operands[0].pad < 0);
  EXPECT_EQ(r.graph.ops()[1].kind(), ir::OpKind::Opaque);  // the indices
}

TEST(Aten, InPlaceVersionsAndViewsLower) {
  Trace t;
  int x = t.tensor({2, 3}, "input"), v = t.tensor({3, 2}), a = t.tensor({3, 2}),
      b = t.tensor({3, 2}, "output");
  t.op("aten::t.default", {{"self", T(x)}}, {v});
  t.op("aten::relu.default", {{"self", T(v)}}, {a});
  t.op("aten::add_.Scalar", {{"self", T(a)}, {"other", 1.5}, {"alpha", 1}}, {b});
  LowerResult r = lower_aten(t.build());
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Move), 1);
  EXPECT_EQ(r.graph.ops()[0].move().kind, ir::MoveKind::View);
}

TEST(Aten, LayerNormDefinesMeanAndRstdOutputs) {
  Trace t;
  int x = t.tensor({4, 6, 8}, "input"), w = t.tensor({8}, "parameter"), b = t.tensor({8}, "parameter"),
      y = t.tensor({4, 6, 8}, "output"), m = t.tensor({4, 6, 1}), s = t.tensor({4, 6, 1});
  t.op("aten::native_layer_norm.default",
       {{"input", T(x)}, {"normalized_shape", {8}}, {"weight", T(w)}, {"bias", T(b)}, {"eps", 1e-5}},
       {y, m, s});
  LowerResult r = lower_aten(t.build());
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_TRUE(r.graph.find_tensor("t4").has_value());  // mean
  EXPECT_TRUE(r.graph.find_tensor("t5").has_value());  // rstd
}

}  // namespace
}  // namespace solar::lower
