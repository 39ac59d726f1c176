// Tests of the training half of the aten table (src/lower/aten_train.cc): backward ops and
// optimizer updates, lowered from hand-written traces; work is checked by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/trace_builder.h"
#include "solar/ir/verify.h"
#include "solar/lower/aten.h"
#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using nlohmann::json;
using Shape = std::vector<std::int64_t>;

struct Trace : testing::TraceBuilder {};
json T(int id) { return {{"tensor", id}}; }

// Live points of an einsum, by enumerating its box (independent of the cost model's
// closed forms; the tests keep boxes small).
std::int64_t live_points(const ir::EinsumOp& e) {
  const std::size_t n = e.indices.size();
  std::vector<std::int64_t> at(n, 0);
  std::int64_t live = 0;
  while (true) {
    bool ok = true;
    for (const ir::AffineConstraint& c : e.mask) ok = ok && c.expr.evaluate(at.data()) >= 0;
    live += ok;
    std::size_t d = 0;
    for (; d < n; ++d) {
      if (++at[d] < e.indices[d].extent) break;
      at[d] = 0;
    }
    if (d == n) return live;
  }
}

// Multiply-accumulates: live points of every mul+sum contraction.
std::int64_t macs(const ir::Graph& g) {
  std::int64_t total = 0;
  for (const ir::Op& op : g.ops())
    if (op.kind() == ir::OpKind::Einsum && op.einsum().reduce == ir::Reduce::Sum &&
        op.einsum().combine.is_product_of_two_operands())
      total += live_points(op.einsum());
  return total;
}

int count_kind(const ir::Graph& g, ir::OpKind k) {
  int n = 0;
  for (const ir::Op& op : g.ops()) n += op.kind() == k;
  return n;
}

const ir::Op& producer(const ir::Graph& g, int trace_id, const LowerResult& r) {
  for (std::size_t t = 0; t < r.trace_ids.size(); ++t)
    if (r.trace_ids[t] == trace_id)
      return g.op(*g.producer(ir::TensorId{static_cast<std::uint32_t>(t)}));
  throw std::runtime_error("no such trace tensor in the graph");
}

LowerResult lower_ok(const Trace& t) {
  LowerResult r = lower_aten(t.build(), {.strict = true});
  ir::verify(r.graph);
  return r;
}

// Taps (q, r) of one spatial dim whose read position q*s + r*d - pad lies in [0, size).
std::int64_t in_range_taps(std::int64_t q_ext, std::int64_t r_ext, std::int64_t s, std::int64_t d,
                           std::int64_t pad, std::int64_t size) {
  std::int64_t n = 0;
  for (std::int64_t q = 0; q < q_ext; ++q)
    for (std::int64_t r = 0; r < r_ext; ++r)
      n += q * s + r * d - pad >= 0 && q * s + r * d - pad < size;
  return n;
}

TEST(AtenTrain, ThresholdBackwardIsOneSelect) {
  Trace t;
  int g = t.tensor({4, 8}), x = t.tensor({4, 8}, "input"), o = t.tensor({4, 8}, "output");
  t.op("aten::threshold_backward.default",
       {{"grad_output", T(g)}, {"self", T(x)}, {"threshold", 0}}, {o});
  t.tensors[g]["role"] = "input";
  LowerResult r = lower_ok(t);
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(r.graph.ops()[0].einsum().combine.op(), ir::ExprOp::Select);
}

TEST(AtenTrain, GeluTanhBackwardComputesTanhOnce) {
  Trace t;
  int g = t.tensor({4, 8}, "input"), x = t.tensor({4, 8}, "input"), o = t.tensor({4, 8}, "output");
  t.op("aten::gelu_backward.default",
       {{"grad_output", T(g)}, {"self", T(x)}, {"approximate", "tanh"}}, {o});
  LowerResult r = lower_ok(t);
  ASSERT_EQ(r.graph.ops().size(), 2u);  // tanh(inner) once, then the gradient formula
  EXPECT_EQ(r.graph.ops()[0].einsum().combine.op(), ir::ExprOp::Tanh);
}

// Conv2d 3x3, stride 2, padding 1, groups 2: grad_input counts the taps that land inside
// the input, grad_weight every tap (padding read as zero, as the forward), grad_bias is a
// reduction.
TEST(AtenTrain, StridedGroupedConvolutionBackward) {
  const std::int64_t N = 2, Cin = 4, K = 6, G = 2, H = 7, W = 6, R = 3, S = 2, P = 1;
  const std::int64_t Ho = (H + 2 * P - R) / S + 1, Wo = (W + 2 * P - R) / S + 1;
  Trace t;
  int gy = t.tensor({N, K, Ho, Wo}, "input"), x = t.tensor({N, Cin, H, W}, "input"),
      w = t.tensor({K, Cin / G, R, R}, "parameter");
  int gx = t.tensor({N, Cin, H, W}, "output"), gw = t.tensor({K, Cin / G, R, R}, "output"),
      gb = t.tensor({K}, "output");
  t.op("aten::convolution_backward.default",
       {{"grad_output", T(gy)},
        {"input", T(x)},
        {"weight", T(w)},
        {"bias_sizes", {K}},
        {"stride", {S, S}},
        {"padding", {P, P}},
        {"dilation", {1, 1}},
        {"transposed", false},
        {"output_padding", {0, 0}},
        {"groups", G},
        {"output_mask", {true, true, true}}},
       {gx, gw, gb});
  LowerResult r = lower_ok(t);
  const std::int64_t taps = in_range_taps(Ho, R, S, 1, P, H) * in_range_taps(Wo, R, S, 1, P, W);
  // per (n, output channel, input channel of its group): the in-range taps
  EXPECT_EQ(live_points(producer(r.graph, gx, r).einsum()), N * K * (Cin / G) * taps);
  EXPECT_EQ(live_points(producer(r.graph, gw, r).einsum()), N * K * (Cin / G) * Ho * Wo * R * R);
  const ir::EinsumOp& bias = producer(r.graph, gb, r).einsum();
  EXPECT_EQ(bias.reduce, ir::Reduce::Sum);
  EXPECT_EQ(live_points(bias), N * K * Ho * Wo);
}

// Stride 1 takes the direct form (no output-position index): same live points.
TEST(AtenTrain, Stride1ConvolutionBackwardHasNoThirdSpatialIndex) {
  const std::int64_t N = 2, C = 3, K = 4, L = 9, R = 3, P = 2, D = 2;
  const std::int64_t Lo = L + 2 * P - D * (R - 1);
  Trace t;
  int gy = t.tensor({N, K, Lo}, "input"), x = t.tensor({N, C, L}, "input"),
      w = t.tensor({K, C, R}, "parameter");
  int gx = t.tensor({N, C, L}, "output");
  t.op("aten::convolution_backward.default",
       {{"grad_output", T(gy)},
        {"input", T(x)},
        {"weight", T(w)},
        {"bias_sizes", nullptr},
        {"stride", {1}},
        {"padding", {P}},
        {"dilation", {D}},
        {"transposed", false},
        {"output_padding", {0}},
        {"groups", 1},
        {"output_mask", {true, false, false}}},
       {gx, nullptr, nullptr});
  LowerResult r = lower_ok(t);
  ASSERT_EQ(r.graph.ops().size(), 1u);
  const ir::EinsumOp& e = r.graph.ops()[0].einsum();
  EXPECT_EQ(e.indices.size(), 5u);  // n, k, c, i, r
  EXPECT_EQ(live_points(e), N * C * K * in_range_taps(Lo, R, 1, D, P, L));
}

// Transposed forward conv: grad_input is a direct (strided) convolution of grad_output.
TEST(AtenTrain, TransposedConvolutionBackward) {
  const std::int64_t N = 2, Cin = 4, Kg = 3, L = 5, R = 4, S = 3, P = 1, OP = 2;
  const std::int64_t Lo = (L - 1) * S - 2 * P + (R - 1) + OP + 1;
  Trace t;
  int gy = t.tensor({N, Kg, Lo}, "input"), x = t.tensor({N, Cin, L}, "input"),
      w = t.tensor({Cin, Kg, R}, "parameter");
  int gx = t.tensor({N, Cin, L}, "output"), gw = t.tensor({Cin, Kg, R}, "output");
  t.op("aten::convolution_backward.default",
       {{"grad_output", T(gy)},
        {"input", T(x)},
        {"weight", T(w)},
        {"bias_sizes", nullptr},
        {"stride", {S}},
        {"padding", {P}},
        {"dilation", {1}},
        {"transposed", true},
        {"output_padding", {OP}},
        {"groups", 1},
        {"output_mask", {true, true, false}}},
       {gx, gw, nullptr});
  LowerResult r = lower_ok(t);
  const std::int64_t taps = in_range_taps(L, R, S, 1, P, Lo);
  EXPECT_EQ(macs(r.graph), 2 * N * Cin * Kg * taps);  // grad_input + grad_weight
}

TEST(AtenTrain, TrainingBatchNormBackwardSharesItsChannelSums) {
  const std::int64_t N = 3, C = 4, H = 5;
  Trace t;
  int g = t.tensor({N, C, H}, "input"), x = t.tensor({N, C, H}, "input"),
      w = t.tensor({C}, "parameter"), m = t.tensor({C}, "input"), is = t.tensor({C}, "input");
  int gx = t.tensor({N, C, H}, "output"), gw = t.tensor({C}, "output"),
      gb = t.tensor({C}, "output");
  t.op("aten::native_batch_norm_backward.default",
       {{"grad_out", T(g)},
        {"input", T(x)},
        {"weight", T(w)},
        {"running_mean", nullptr},
        {"running_var", nullptr},
        {"save_mean", T(m)},
        {"save_invstd", T(is)},
        {"train", true},
        {"eps", 1e-5},
        {"output_mask", {true, true, true}}},
       {gx, gw, gb});
  LowerResult r = lower_ok(t);
  // x̂, sum(g), sum(g x̂), dx: the weight and bias gradients are the sums dx uses
  EXPECT_EQ(r.graph.ops().size(), 4u);
  EXPECT_EQ(live_points(producer(r.graph, gw, r).einsum()), N * C * H);
}

TEST(AtenTrain, EvalBatchNormBackwardUsesRunningVariance) {
  Trace t;
  int g = t.tensor({2, 3, 4}, "input"), x = t.tensor({2, 3, 4}, "input"),
      rm = t.tensor({3}, "buffer"), rv = t.tensor({3}, "buffer"), e = t.tensor({0}, "input");
  int gx = t.tensor({2, 3, 4}, "output");
  t.op("aten::native_batch_norm_backward.default",
       {{"grad_out", T(g)},
        {"input", T(x)},
        {"weight", nullptr},
        {"running_mean", T(rm)},
        {"running_var", T(rv)},
        {"save_mean", T(e)},
        {"save_invstd", T(e)},
        {"train", false},
        {"eps", 1e-5},
        {"output_mask", {true, false, false}}},
       {gx, nullptr, nullptr});
  LowerResult r = lower_ok(t);
  // rsqrt(var + eps) and dx = g * invstd: no x̂ when no weight gradient is asked for
  ASSERT_EQ(r.graph.ops().size(), 2u);
  EXPECT_EQ(r.graph.ops().back().einsum().combine.op(), ir::ExprOp::Mul);
}

TEST(AtenTrain, LayerNormBackwardReducesOverNormalizedAndBatchDims) {
  const std::int64_t B = 3, T_ = 5, D = 8;
  Trace t;
  int g = t.tensor({B, T_, D}, "input"), x = t.tensor({B, T_, D}, "input"),
      m = t.tensor({B, T_, 1}, "input"), rs = t.tensor({B, T_, 1}, "input"),
      w = t.tensor({D}, "parameter"), b = t.tensor({D}, "parameter");
  int gx = t.tensor({B, T_, D}, "output"), gw = t.tensor({D}, "output"),
      gb = t.tensor({D}, "output");
  t.op("aten::native_layer_norm_backward.default",
       {{"grad_out", T(g)},
        {"input", T(x)},
        {"normalized_shape", {D}},
        {"mean", T(m)},
        {"rstd", T(rs)},
        {"weight", T(w)},
        {"bias", T(b)},
        {"output_mask", {true, true, true}}},
       {gx, gw, gb});
  LowerResult r = lower_ok(t);
  const ir::EinsumOp& dw = producer(r.graph, gw, r).einsum();
  EXPECT_EQ(dw.reduced_indices().size(), 2u);  // batch and time
  EXPECT_EQ(live_points(dw), B * T_ * D);
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Einsum), 7);  // x̂, g·w, two sums, dx, dw, db
}

TEST(AtenTrain, GroupNormBackwardGivesPerChannelGradients) {
  Trace t;
  int g = t.tensor({2, 6, 4}, "input"), x = t.tensor({2, 6, 4}, "input"),
      m = t.tensor({2, 3}, "input"), rs = t.tensor({2, 3}, "input"), w = t.tensor({6}, "parameter");
  int gx = t.tensor({2, 6, 4}, "output"), gw = t.tensor({6}, "output"),
      gb = t.tensor({6}, "output");
  t.op("aten::native_group_norm_backward.default",
       {{"grad_out", T(g)},
        {"input", T(x)},
        {"mean", T(m)},
        {"rstd", T(rs)},
        {"weight", T(w)},
        {"N", 2},
        {"C", 6},
        {"HxW", 4},
        {"group", 3},
        {"output_mask", {true, true, true}}},
       {gx, gw, gb});
  LowerResult r = lower_ok(t);
  EXPECT_EQ(producer(r.graph, gw, r).kind(), ir::OpKind::Move);  // [G, Cg] viewed as [C]
}

TEST(AtenTrain, MaxPoolBackwardScattersIntoThePlane) {
  Trace t;
  int g = t.tensor({2, 3, 4, 4}, "input"), x = t.tensor({2, 3, 8, 8}, "input"),
      idx = t.tensor({2, 3, 4, 4}, "input", "int64"), o = t.tensor({2, 3, 8, 8}, "output");
  t.op("aten::max_pool2d_with_indices_backward.default",
       {{"grad_output", T(g)},
        {"self", T(x)},
        {"kernel_size", {2, 2}},
        {"stride", {2, 2}},
        {"padding", {0, 0}},
        {"dilation", {1, 1}},
        {"ceil_mode", false},
        {"indices", T(idx)}},
       {o});
  LowerResult r = lower_ok(t);
  int scatters = 0;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::Scatter) {
      ++scatters;
      EXPECT_EQ(std::get<std::string>(op.move().attrs.at("reduce")), "sum");
      EXPECT_EQ(std::get<std::int64_t>(op.move().attrs.at("axis")), 2);
      EXPECT_EQ(r.graph.tensor(op.outputs[0]).shape, (Shape{2, 3, 64}));
    }
  EXPECT_EQ(scatters, 1);
}

// Each output window spreads to its kernel taps: live (i, p) pairs = outputs x taps when
// no window reaches padding.
TEST(AtenTrain, AvgPoolBackwardSpreadsEachWindow) {
  const std::int64_t N = 2, C = 3, H = 9, W = 8, k = 3, s = 2;
  const std::int64_t Ho = (H - k) / s + 1, Wo = (W - k) / s + 1;
  Trace t;
  int g = t.tensor({N, C, Ho, Wo}, "input"), x = t.tensor({N, C, H, W}, "input"),
      o = t.tensor({N, C, H, W}, "output");
  t.op("aten::avg_pool2d_backward.default",
       {{"grad_output", T(g)},
        {"self", T(x)},
        {"kernel_size", {k, k}},
        {"stride", {s, s}},
        {"padding", {0, 0}},
        {"ceil_mode", false},
        {"count_include_pad", true},
        {"divisor_override", nullptr}},
       {o});
  LowerResult r = lower_ok(t);
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(live_points(r.graph.ops()[0].einsum()), N * C * Ho * Wo * k * k);
}

TEST(AtenTrain, AvgPoolBackwardExcludingPaddingIsUnanalyzed) {
  Trace t;
  int g = t.tensor({1, 1, 4, 4}, "input"), x = t.tensor({1, 1, 8, 8}, "input"),
      o = t.tensor({1, 1, 8, 8}, "output");
  t.op("aten::avg_pool2d_backward.default",
       {{"grad_output", T(g)},
        {"self", T(x)},
        {"kernel_size", {3, 3}},
        {"stride", {2, 2}},
        {"padding", {1, 1}},
        {"ceil_mode", false},
        {"count_include_pad", false},
        {"divisor_override", nullptr}},
       {o});
  LowerResult r = lower_aten(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("excludes padding"), std::string::npos);
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Unanalyzed), 1);
  try {
    lower_aten(t.build(), {.strict = true});
    FAIL() << "strict lowering accepted an unmodeled divisor";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("excludes padding"), std::string::npos);
  }
}

TEST(AtenTrain, AdaptiveAvgPoolBackwardIsABroadcast) {
  Trace t;
  int g = t.tensor({2, 3, 2, 3}, "input"), x = t.tensor({2, 3, 8, 9}, "input"),
      o = t.tensor({2, 3, 8, 9}, "output");
  t.op("aten::_adaptive_avg_pool2d_backward.default", {{"grad_output", T(g)}, {"self", T(x)}}, {o});
  LowerResult r = lower_ok(t);
  EXPECT_EQ(macs(r.graph), 0);
  const ir::EinsumOp* spread = nullptr;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Einsum) spread = &op.einsum();
  ASSERT_NE(spread, nullptr);
  EXPECT_EQ(live_points(*spread), 2 * 3 * 8 * 9);  // one multiply per input element
}

TEST(AtenTrain, EmbeddingBackwardIsATakeScatterAdd) {
  Trace t;
  int g = t.tensor({2, 5, 16}, "input"), idx = t.tensor({2, 5}, "input", "int64"),
      o = t.tensor({50, 16}, "output");
  t.op("aten::embedding_dense_backward.default",
       {{"grad_output", T(g)},
        {"indices", T(idx)},
        {"num_weights", 50},
        {"padding_idx", 3},
        {"scale_grad_by_freq", false}},
       {o});
  LowerResult r = lower_ok(t);
  const ir::Op& s = producer(r.graph, o, r);
  ASSERT_EQ(s.kind(), ir::OpKind::Move);
  EXPECT_EQ(s.move().kind, ir::MoveKind::Scatter);
  EXPECT_EQ(std::get<std::string>(s.move().attrs.at("mode")), "take");
}

TEST(AtenTrain, NllLossBackwardScattersMinusGradAtTheTarget) {
  Trace t;
  int g = t.tensor({}, "input"), x = t.tensor({8, 10}, "input"),
      tg = t.tensor({8}, "input", "int64"), tw = t.tensor({}, "input"),
      o = t.tensor({8, 10}, "output");
  t.op("aten::nll_loss_backward.default",
       {{"grad_output", T(g)},
        {"self", T(x)},
        {"target", T(tg)},
        {"weight", nullptr},
        {"reduction", 1},
        {"ignore_index", -100},
        {"total_weight", T(tw)}},
       {o});
  LowerResult r = lower_ok(t);
  EXPECT_EQ(macs(r.graph), 0);
  int scatters = 0;
  for (const ir::Op& op : r.graph.ops())
    scatters += op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::Scatter;
  EXPECT_EQ(scatters, 1);
}

// The forward's lowering may leave total_weight (nll_loss_forward's output 1) unproduced:
// the mean's divisor is then the count of rows whose target is not ignored, recomputed.
TEST(AtenTrain, NllLossBackwardRecomputesAnUnproducedTotalWeight) {
  Trace t;
  int g = t.tensor({}, "input"), x = t.tensor({8, 10}, "input"),
      tg = t.tensor({8}, "input", "int64"), tw = t.tensor({}), o = t.tensor({8, 10}, "output");
  t.op("aten::nll_loss_backward.default",
       {{"grad_output", T(g)},
        {"self", T(x)},
        {"target", T(tg)},
        {"weight", nullptr},
        {"reduction", 1},
        {"ignore_index", -100},
        {"total_weight", T(tw)}},
       {o});
  LowerResult r = lower_ok(t);
  int full_sums = 0;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Einsum && op.einsum().reduce == ir::Reduce::Sum &&
        r.graph.tensor(op.outputs[0]).shape.empty()) {
      ++full_sums;
      EXPECT_EQ(live_points(op.einsum()), 8);  // one term per row
    }
  EXPECT_EQ(full_sums, 1);
}

// Without a produced logsumexp (the forward's lowering defines only the attention output),
// the probabilities are a full softmax of the recomputed scores.
TEST(AtenTrain, AttentionBackwardRecomputesSoftmaxWithoutLogsumexp) {
  Trace t;
  int q = t.tensor({1, 2, 4, 8}, "input"), lse = t.tensor({1, 2, 4}),
      gq = t.tensor({1, 2, 4, 8}, "output");
  t.op("aten::_scaled_dot_product_flash_attention_for_cpu_backward.default",
       {{"grad_out", T(q)},
        {"query", T(q)},
        {"key", T(q)},
        {"value", T(q)},
        {"out", T(q)},
        {"logsumexp", T(lse)},
        {"dropout_p", 0.0},
        {"is_causal", false}},
       {gq, nullptr, nullptr});
  LowerResult r = lower_ok(t);
  int maxes = 0;
  for (const ir::Op& op : r.graph.ops())
    maxes += op.kind() == ir::OpKind::Einsum && op.einsum().reduce == ir::Reduce::Max;
  EXPECT_EQ(maxes, 1);  // the softmax's row max
}

// Causal attention backward: QKᵀ (recomputed), dV, dP, dQ, dK are contractions over the
// live (l, s) pairs, L(L+1)/2 per head; with GQA, dK and dV sum the group's query heads.
TEST(AtenTrain, CausalGqaAttentionBackwardCountsLivePairs) {
  const std::int64_t B = 2, Hq = 4, Hk = 2, L = 6, E = 8;
  Trace t;
  int q = t.tensor({B, Hq, L, E}, "input"), k = t.tensor({B, Hk, L, E}, "input"),
      v = t.tensor({B, Hk, L, E}, "input"), o = t.tensor({B, Hq, L, E}, "input"),
      go = t.tensor({B, Hq, L, E}, "input"), lse = t.tensor({B, Hq, L}, "input");
  int gq = t.tensor({B, Hq, L, E}, "output"), gk = t.tensor({B, Hk, L, E}, "output"),
      gv = t.tensor({B, Hk, L, E}, "output");
  t.op("aten::_scaled_dot_product_flash_attention_for_cpu_backward.default",
       {{"grad_out", T(go)},
        {"query", T(q)},
        {"key", T(k)},
        {"value", T(v)},
        {"out", T(o)},
        {"logsumexp", T(lse)},
        {"dropout_p", 0.0},
        {"is_causal", true},
        {"attn_mask", nullptr},
        {"scale", nullptr}},
       {gq, gk, gv});
  LowerResult r = lower_ok(t);
  const std::int64_t pairs = L * (L + 1) / 2;
  // every query head does each of the five products once, plus D = rowsum(dO ∘ O), a dot
  // product per query row
  EXPECT_EQ(macs(r.graph), 5 * B * Hq * pairs * E + B * Hq * L * E);
  EXPECT_EQ(producer(r.graph, gk, r).einsum().reduced_indices().size(), 2u);  // j and l
}

// The CUDA memory-efficient kernel's backward: an additive bias, its gradient dS / scale,
// and a logsumexp padded to a multiple of 32 rows (not [.., L]: the softmax is recomputed).
TEST(AtenTrain, EfficientAttentionBackwardGivesTheBiasGradient) {
  const std::int64_t B = 1, H = 2, L = 5, E = 4;
  Trace t;
  int q = t.tensor({B, H, L, E}, "input"), bias = t.tensor({B, H, L, L}, "input"),
      lse = t.tensor({B, H, 32}, "input"), seed = t.tensor({}, "input", "int64");
  int gq = t.tensor({B, H, L, E}, "output"), gk = t.tensor({B, H, L, E}, "output"),
      gv = t.tensor({B, H, L, E}, "output"), gb = t.tensor({B, H, L, L}, "output");
  t.op("aten::_scaled_dot_product_efficient_attention_backward.default",
       {{"grad_out_", T(q)},
        {"query", T(q)},
        {"key", T(q)},
        {"value", T(q)},
        {"attn_bias", T(bias)},
        {"out", T(q)},
        {"logsumexp", T(lse)},
        {"philox_seed", T(seed)},
        {"philox_offset", T(seed)},
        {"dropout_p", 0.0},
        {"grad_input_mask", {true, true, true, true}},
        {"is_causal", false},
        {"scale", 0.5}},
       {gq, gk, gv, gb});
  LowerResult r = lower_ok(t);
  const ir::EinsumOp& db = producer(r.graph, gb, r).einsum();
  EXPECT_EQ(db.reduce, ir::Reduce::None);
  EXPECT_EQ(db.combine.children()[1].value(), 2.0);  // 1 / scale
  EXPECT_EQ(macs(r.graph), 5 * B * H * L * L * E + B * H * L * E);
}

TEST(AtenTrain, AttentionBackwardWithDropoutIsUnanalyzed) {
  Trace t;
  int q = t.tensor({1, 1, 4, 8}, "input"), o = t.tensor({1, 1, 4, 8}, "output");
  t.op("aten::_scaled_dot_product_flash_attention_for_cpu_backward.default",
       {{"grad_out", T(q)},
        {"query", T(q)},
        {"key", T(q)},
        {"value", T(q)},
        {"out", T(q)},
        {"logsumexp", T(q)},
        {"dropout_p", 0.1},
        {"is_causal", false}},
       {o, nullptr, nullptr});
  LowerResult r = lower_aten(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("dropout inside attention"), std::string::npos);
}

TEST(AtenTrain, StridedSliceBackwardIsAMaskedPlacement) {
  Trace t;
  int g = t.tensor({3, 4}, "input"), o = t.tensor({3, 9}, "output");
  t.op("aten::slice_backward.default",
       {{"grad_output", T(g)},
        {"input_sizes", {3, 9}},
        {"dim", 1},
        {"start", 1},
        {"end", 9},
        {"step", 2}},
       {o});
  LowerResult r = lower_ok(t);
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(live_points(r.graph.ops()[0].einsum()), 3 * 4);  // each grad element placed once
}

// Nearest upsampling by 2: the gradient sums each 2x2 block of grad_output, one reduction
// over [N, C, H, 2, W, 2].
TEST(AtenTrain, NearestUpsampleBackwardSumsBlocks) {
  Trace t;
  int g = t.tensor({2, 3, 8, 6}, "input"), o = t.tensor({2, 3, 4, 3}, "output");
  t.op("aten::upsample_nearest2d_backward.default",
       {{"grad_output", T(g)},
        {"output_size", {8, 6}},
        {"input_size", {2, 3, 4, 3}},
        {"scales_h", 2.0},
        {"scales_w", 2.0}},
       {o});
  LowerResult r = lower_ok(t);
  const ir::EinsumOp& e = producer(r.graph, o, r).einsum();
  EXPECT_EQ(e.reduce, ir::Reduce::Sum);
  EXPECT_EQ(e.reduced_indices().size(), 2u);
  EXPECT_EQ(live_points(e), 2 * 3 * 8 * 6);  // every grad element read once
}

TEST(AtenTrain, NearestUpsampleByThreeIsUnanalyzed) {
  Trace t;
  int g = t.tensor({1, 1, 9}, "input"), o = t.tensor({1, 1, 3}, "output");
  t.op(
      "aten::upsample_nearest1d_backward.default",
      {{"grad_output", T(g)}, {"output_size", {9}}, {"input_size", {1, 1, 3}}, {"scales", nullptr}},
      {o});
  LowerResult r = lower_aten(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("not a power-of-two factor"), std::string::npos);
}

TEST(AtenTrain, GluBackwardConcatenatesTheHalvesGradients) {
  Trace t;
  int g = t.tensor({4, 3}, "input"), x = t.tensor({4, 6}, "input"), o = t.tensor({4, 6}, "output");
  t.op("aten::glu_backward.default", {{"grad_output", T(g)}, {"self", T(x)}, {"dim", -1}}, {o});
  LowerResult r = lower_ok(t);
  const ir::Op& cat = producer(r.graph, o, r);
  ASSERT_EQ(cat.kind(), ir::OpKind::Move);
  EXPECT_EQ(cat.move().kind, ir::MoveKind::Concat);
  EXPECT_EQ(std::get<std::int64_t>(cat.move().attrs.at("axis")), 1);
}

// col2im (Fold / the gradient of Unfold) with stride 2 and padding: each column element
// adds into the image once when its (block, tap) position lands inside the image.
TEST(AtenTrain, Col2imCountsTheTapsInsideTheImage) {
  const std::int64_t N = 2, C = 3, H = 7, W = 8, kh = 3, kw = 2, dh = 1, dw = 2, ph = 1, pw = 0,
                     sh = 2, sw = 3;
  const std::int64_t OH = (H + 2 * ph - dh * (kh - 1) - 1) / sh + 1,
                     OW = (W + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  Trace t;
  int x = t.tensor({N, C * kh * kw, OH * OW}, "input"), o = t.tensor({N, C, H, W}, "output");
  t.op("aten::col2im.default",
       {{"self", T(x)},
        {"output_size", {H, W}},
        {"kernel_size", {kh, kw}},
        {"dilation", {dh, dw}},
        {"padding", {ph, pw}},
        {"stride", {sh, sw}}},
       {o});
  LowerResult r = lower_ok(t);
  const ir::EinsumOp& e = producer(r.graph, o, r).einsum();
  EXPECT_EQ(live_points(e),
            N * C * in_range_taps(OH, kh, sh, dh, ph, H) * in_range_taps(OW, kw, sw, dw, pw, W));
}

// Replication padding's gradient adds each edge region into the edge position: per dim, the
// centre, plus one masked reduction per padded side.
TEST(AtenTrain, ReplicationPadBackwardSumsTheEdges) {
  const std::int64_t N = 2, C = 3, L = 4, I = 5, R = 2;
  Trace t;
  int g = t.tensor({N, C, L + I + R}, "input"), x = t.tensor({N, C, I}, "input"),
      o = t.tensor({N, C, I}, "output");
  t.op("aten::replication_pad1d_backward.default",
       {{"grad_output", T(g)}, {"self", T(x)}, {"padding", {L, R}}}, {o});
  LowerResult r = lower_ok(t);
  std::vector<std::int64_t> sums;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Einsum && op.einsum().reduce == ir::Reduce::Sum)
      sums.push_back(live_points(op.einsum()));
  EXPECT_EQ(sums, (std::vector<std::int64_t>{N * C * L, N * C * R}));  // every edge element once
}

TEST(AtenTrain, AdamUpdateOpsLower) {
  Trace t;
  int p = t.tensor({10}, "parameter"), m = t.tensor({10}, "input"), v = t.tensor({10}, "input"),
      g = t.tensor({10}, "input"), d = t.tensor({10}, "input");
  int m2 = t.tensor({10}), v2 = t.tensor({10}), p2 = t.tensor({10}, "output");
  t.op("aten::lerp_.Scalar", {{"self", T(m)}, {"end", T(g)}, {"weight", 0.1}}, {m2});
  t.op("aten::addcmul_.default",
       {{"self", T(v)}, {"tensor1", T(g)}, {"tensor2", T(g)}, {"value", 0.001}}, {v2});
  t.op("aten::addcdiv_.default",
       {{"self", T(p)}, {"tensor1", T(m2)}, {"tensor2", T(d)}, {"value", -0.001}}, {p2});
  LowerResult r = lower_ok(t);
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Einsum), 3);
  EXPECT_TRUE(r.warnings.empty());
}

}  // namespace
}  // namespace solar::lower
