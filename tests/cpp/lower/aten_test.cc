#include "lower/trace_builder.h"
#include "solar/lower/aten.h"

#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using nlohmann::json;

// A trace builder for the tests: tensors by shape, ops by name and args.
struct Trace : testing::TraceBuilder {};
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
    EXPECT_EQ(op.einsum().hint, ir::ContractionHint::Attention);  // run by attention kernels
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
  int x = t.tensor({4, 6}, "input"), y = t.tensor({4, 6}, "output");
  // division with a rounding mode PyTorch does not define: refused, nothing emitted
  t.op("aten::div.Tensor_mode", {{"self", T(x)}, {"other", 2.0}, {"rounding_mode", "nearest"}}, {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(r.graph.ops()[0].kind(), ir::OpKind::Unanalyzed);
  EXPECT_NE(r.warnings[0].find("rounding mode"), std::string::npos);
}

// Live points of an einsum by enumerating its box (small boxes only): the exact count the
// cost model must reproduce.
std::int64_t live_points(const ir::EinsumOp& e) {
  const std::vector<std::int64_t> ext = e.extents();
  std::vector<std::int64_t> at(ext.size(), 0);
  std::int64_t live = 0;
  for (;;) {
    bool ok = true;
    for (const ir::AffineConstraint& m : e.mask) ok = ok && m.expr.evaluate(at.data()) >= 0;
    live += ok;
    std::size_t d = 0;
    for (; d < ext.size(); ++d) {
      if (++at[d] < ext[d]) break;
      at[d] = 0;
    }
    if (d == ext.size()) return live;
  }
}

const ir::EinsumOp& only_contraction(const ir::Graph& g) {
  const ir::EinsumOp* found = nullptr;
  for (const ir::Op& op : g.ops())
    if (op.kind() == ir::OpKind::Einsum && op.einsum().reduce == ir::Reduce::Sum &&
        op.einsum().combine.is_product_of_two_operands()) {
      EXPECT_EQ(found, nullptr) << "more than one contraction";
      found = &op.einsum();
    }
  if (!found) throw InternalError("no contraction", __FILE__, __LINE__);
  return *found;
}

// (input position, tap) pairs of one spatial dimension that land inside the output.
std::int64_t landing_pairs(int in, int taps, int stride, int dil, int pad, int out) {
  std::int64_t n = 0;
  for (int i = 0; i < in; ++i)
    for (int r = 0; r < taps; ++r) n += i * stride + r * dil - pad >= 0 && i * stride + r * dil - pad < out;
  return n;
}

json conv_args(int x, int w, json bias, int st, int pad, int dil, int op, int groups, int nd = 2) {
  return {{"input", T(x)}, {"weight", T(w)}, {"bias", bias}, {"stride", std::vector<int>(nd, st)},
          {"padding", std::vector<int>(nd, pad)}, {"dilation", std::vector<int>(nd, dil)},
          {"transposed", true}, {"output_padding", std::vector<int>(nd, op)}, {"groups", groups}};
}

TEST(Aten, TransposedConvolutionIsAGatherOverStrideResidues) {
  // padding crops taps at both ends, output_padding adds a row and column
  const int N = 2, C = 4, K = 3, G = 1, H = 5, R = 3, st = 2, pad = 1, op = 1;
  const int O = (H - 1) * st - 2 * pad + R + op;  // 10: a multiple of the stride
  Trace t;
  int x = t.tensor({N, C, H, H}, "input"), w = t.tensor({C, K / G, R, R}, "parameter"),
      y = t.tensor({N, K, O, O}, "output");
  t.op("aten::convolution.default", conv_args(x, w, nullptr, st, pad, 1, op, G), {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  ASSERT_EQ(r.graph.ops().size(), 1u);  // written in place: no crop, no bias
  const ir::EinsumOp& e = only_contraction(r.graph);
  // every live point is one (input position, tap) pair landing inside the output
  const std::int64_t pairs = landing_pairs(H, R, st, 1, pad, O);
  EXPECT_EQ(live_points(e), std::int64_t{N} * C * K * pairs * pairs);  // N*Cin*Kg*pairs^2
  EXPECT_LT(pairs, H * R);  // padding crops some taps: they are not counted
  // per spatial dimension the output subscript is stride*q + rho (one-to-one, in range)
  EXPECT_EQ(e.output.size(), 4u);
  EXPECT_EQ(e.output[2].terms().size(), 2u);
}

TEST(Aten, TransposedConvolutionWithAnOddOutputIsCroppedByAFreeSlice) {
  const int N = 1, C = 2, K = 4, G = 2, H = 4, R = 3, st = 2, pad = 0;
  const int O = (H - 1) * st + R;  // 9: one past a multiple of the stride
  Trace t;
  int x = t.tensor({N, C, H, H}, "input"), w = t.tensor({C, K / G, R, R}, "parameter"),
      b = t.tensor({K}, "parameter"), y = t.tensor({N, K, O, O}, "output");
  t.op("aten::convolution.default", conv_args(x, w, T(b), st, pad, 1, 0, G), {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  const ir::EinsumOp& e = only_contraction(r.graph);
  EXPECT_EQ(live_points(e), std::int64_t{N} * C * (K / G) * (H * R) * (H * R));  // every tap lands
  int slices = 0;
  for (const ir::Op& op : r.graph.ops())
    slices += op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::Slice;
  EXPECT_EQ(slices, 1);  // [.., 10, 10] -> [.., 9, 9]
}

TEST(Aten, DilatedTransposedConvolutionCountsExactly) {
  const int N = 1, C = 2, K = 3, H = 7, R = 3, st = 2, pad = 2, dil = 3;
  const int O = (H - 1) * st - 2 * pad + dil * (R - 1) + 1;
  Trace t;
  int x = t.tensor({N, C, H}, "input"), w = t.tensor({C, K, R}, "parameter"), y = t.tensor({N, K, O}, "output");
  t.op("aten::convolution.default", conv_args(x, w, nullptr, st, pad, dil, 0, 1, 1), {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  EXPECT_EQ(live_points(only_contraction(r.graph)), std::int64_t{N} * C * K * landing_pairs(H, R, st, dil, pad, O));
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

TEST(Aten, ATransposeIsAFreeAliasItsConsumerReadsThroughStrides) {
  Trace t;
  int x = t.tensor({2, 3}, "input"), v = t.tensor({3, 2}), a = t.tensor({3, 2}),
      b = t.tensor({3, 2}, "output");
  t.op("aten::t.default", {{"self", T(x)}}, {v});
  t.op("aten::relu.default", {{"self", T(v)}}, {a});
  t.op("aten::add_.Scalar", {{"self", T(a)}, {"other", 1.5}, {"alpha", 1}}, {b});
  LowerResult r = lower_aten(t.build());
  EXPECT_TRUE(r.warnings.empty());
  for (const ir::Op& op : r.graph.ops()) {  // views only: the input flattened, the alias
    if (op.kind() == ir::OpKind::Move) {
      EXPECT_TRUE(op.move().kind == ir::MoveKind::View || op.move().kind == ir::MoveKind::Slice);
    }
  }
  // relu reads x itself with its subscripts swapped: v[i0, i1] = x[i1, i0]
  const ir::Op* relu = nullptr;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Einsum && !relu) relu = &op;
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->inputs[0], *r.graph.find_tensor("t0"));
  const auto& sub = relu->einsum().operands[0].subscript;
  ASSERT_EQ(sub.size(), 2u);
  EXPECT_EQ(sub[0].as_plain_index(), std::optional<ir::IndexPos>(1));
  EXPECT_EQ(sub[1].as_plain_index(), std::optional<ir::IndexPos>(0));
}

TEST(Aten, OverlappingWindowsReadTheirTensorFlattened) {
  Trace t;
  int x = t.tensor({2, 7}, "input"), v = t.tensor({2, 5, 3}), s = t.tensor({2, 5}, "output");
  t.op("aten::unfold.default", {{"self", T(x)}, {"dimension", 1}, {"size", 3}, {"step", 1}}, {v});
  t.op("aten::sum.dim_IntList", {{"self", T(v)}, {"dim", {-1}}, {"keepdim", false}}, {s});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  const ir::Op& sum = r.graph.ops().back();
  ASSERT_EQ(sum.kind(), ir::OpKind::Einsum);
  EXPECT_EQ(r.graph.tensor(sum.inputs[0]).shape, (std::vector<std::int64_t>{14}));  // x flattened
  std::int64_t at[3] = {1, 2, 1};  // v[1, 2, 1] = x[1, 2 + 1] = flat 7 + 3
  EXPECT_EQ(sum.einsum().operands[0].subscript[0].evaluate(at), 10);
}

TEST(Aten, FlipReadsBackwardsAndRollReadsEachElementOnce) {
  Trace t;
  int x = t.tensor({4, 5}, "input"), f = t.tensor({4, 5}, "output"), ro = t.tensor({4, 5}, "output");
  t.op("aten::flip.default", {{"self", T(x)}, {"dims", {1}}}, {f});
  t.op("aten::roll.default", {{"self", T(x)}, {"shifts", {1, -2}}, {"dims", {0, 1}}}, {ro});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  ASSERT_EQ(r.graph.ops().size(), 2u);
  const ir::EinsumOp& flip = r.graph.ops()[0].einsum();
  std::int64_t at[2] = {1, 0};
  EXPECT_EQ(flip.operands[0].subscript[1].evaluate(at), 4);  // column 0 reads column 5-1-0
  const ir::EinsumOp& roll = r.graph.ops()[1].einsum();
  EXPECT_EQ(live_points(roll), 4 * 5);  // one live point (one read) per output element
}

TEST(Aten, UnevenAdaptiveAveragePoolingReadsEachWindowOnce) {
  const int L = 7, O = 3;  // windows [0,3) [2,5) [4,7)
  Trace t;
  int x = t.tensor({2, L}, "input"), y = t.tensor({2, O}, "output");
  t.op("aten::adaptive_avg_pool1d.default", {{"self", T(x)}, {"output_size", {O}}}, {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  std::int64_t window_reads = 0;
  for (int o = 0; o < O; ++o) window_reads += (o + 1) * L / O + ((o + 1) * L % O != 0) - o * L / O;
  EXPECT_EQ(window_reads, 9);
  EXPECT_EQ(live_points(r.graph.ops()[0].einsum()), 2 * window_reads);  // batch x window elements
}

TEST(Aten, AveragePoolingWithCeilModeDividesByTheTapsInside) {
  Trace t;
  int x = t.tensor({1, 1, 6, 6}, "input"), y = t.tensor({1, 1, 3, 3}, "output");
  t.op("aten::avg_pool2d.default",
       {{"self", T(x)}, {"kernel_size", {3, 3}}, {"stride", {2, 2}}, {"padding", {0, 0}},
        {"ceil_mode", true}, {"count_include_pad", true}, {"divisor_override", nullptr}},
       {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  // per dimension the windows start at 0, 2, 4 and hold 3, 3, 2 taps inside [0, 6)
  std::vector<std::int64_t> counts;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Einsum && op.einsum().reduce == ir::Reduce::Sum &&
        r.graph.tensor(op.outputs[0]).shape == std::vector<std::int64_t>{3})
      counts.push_back(live_points(op.einsum()));
  EXPECT_EQ(counts, (std::vector<std::int64_t>{3 + 3 + 2, 3 + 3 + 2}));
}

TEST(Aten, RandomOpsAreOpaqueAndCountTheNumbersTheyDraw) {
  Trace t;
  int x = t.tensor({8, 16}, "input"), y = t.tensor({8, 16}, "output"),
      mask = t.tensor({8, 16}, "output", "bool"), z = t.tensor({4, 5}, "output");
  t.op("aten::native_dropout.default", {{"input", T(x)}, {"p", 0.25}, {"train", true}}, {y, mask});
  t.op("aten::randn.default", {{"size", {4, 5}}, {"dtype", nullptr}}, {z});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  std::vector<const ir::OpaqueOp*> rng;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Opaque) rng.push_back(&op.opaque());
  ASSERT_EQ(rng.size(), 2u);
  EXPECT_EQ(rng[0]->function, "random_bernoulli");
  EXPECT_EQ(rng[0]->vector_flops, Count(8 * 16));  // one generator step per mask element
  EXPECT_EQ(rng[0]->bytes, Count(8 * 16));         // the bool mask, one byte each
  EXPECT_EQ(rng[1]->function, "random_normal");
  EXPECT_EQ(rng[1]->special_ops, Count(3 * 4 * 5));  // Box-Muller: log, sqrt, sin/cos each
  EXPECT_EQ(rng[1]->bytes, Count(4 * 4 * 5));        // fp32 numbers written
}

TEST(Aten, IndexPutWithTwoIndexTensorsScattersIntoTheMergedDimensions) {
  Trace t;
  int x = t.tensor({4, 6, 3}, "input"), i = t.tensor({5}, "input", "int64"), j = t.tensor({5}, "input", "int64"),
      v = t.tensor({5, 3}, "input"), y = t.tensor({4, 6, 3}, "output");
  t.op("aten::index_put.default",
       {{"self", T(x)}, {"indices", {T(i), T(j)}}, {"values", T(v)}, {"accumulate", true}}, {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  const ir::Op* scatter = nullptr;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::Scatter) scatter = &op;
  ASSERT_NE(scatter, nullptr);
  EXPECT_EQ(r.graph.tensor(scatter->inputs[0]).shape, (std::vector<std::int64_t>{24, 3}));  // 4*6 merged
  EXPECT_EQ(std::get<std::string>(scatter->move().attrs.at("reduce")), "sum");
  EXPECT_EQ(std::get<std::string>(scatter->move().attrs.at("mode")), "take");
}

TEST(Aten, BooleanMaskIndexingTakesTheCapturedCountFromNonzero) {
  Trace t;
  int x = t.tensor({4, 6}, "input"), m = t.tensor({4, 6}, "input", "bool"), y = t.tensor({7}, "output");
  t.op("aten::index.Tensor", {{"self", T(x)}, {"indices", {T(m)}}}, {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  const ir::Op& nz = r.graph.ops()[0];
  ASSERT_EQ(nz.kind(), ir::OpKind::Opaque);
  EXPECT_EQ(nz.opaque().function, "nonzero_coords");
  EXPECT_EQ(r.graph.tensor(nz.outputs[0]).shape, (std::vector<std::int64_t>{7, 2}));  // K x rank
}

TEST(Aten, NllLossWithClassWeightsAndIgnoreIndexLowers) {
  Trace t;
  int x = t.tensor({4, 5}, "input"), tg = t.tensor({4}, "input", "int64"), w = t.tensor({5}, "parameter"),
      y = t.tensor({}, "output"), tw = t.tensor({});
  t.op("aten::nll_loss_forward.default",
       {{"self", T(x)}, {"target", T(tg)}, {"weight", T(w)}, {"reduction", 1}, {"ignore_index", 2}}, {y, tw});
  LowerResult r = lower_aten(t.build());
  EXPECT_TRUE(r.warnings.empty());
  int gathers = 0;
  for (const ir::Op& op : r.graph.ops())
    gathers += op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::Gather;
  EXPECT_EQ(gathers, 2);  // the picked log-probabilities and the class weights
}

TEST(Aten, ArangeCarriesItsStartAndStepForTheExecutor) {
  Trace t;
  int y = t.tensor({5}, "output", "int64");
  t.op("aten::arange.start_step", {{"start", 3}, {"end", 13}, {"step", 2}}, {y});
  LowerResult r = lower_aten(t.build());
  ASSERT_TRUE(r.warnings.empty());
  const ir::OpaqueOp& o = r.graph.ops()[0].opaque();
  EXPECT_EQ(std::get<double>(o.attrs.at("start")), 3.0);
  EXPECT_EQ(std::get<double>(o.attrs.at("step")), 2.0);
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
