// Tests of the aten table's convolutions (src/lower/aten_conv.cc): convolution_backward and col2im, lowered from hand-written traces; work is checked
// by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h
using Trace = TraceBuilder;

// Conv2d 3x3, stride 2, padding 1, groups 2: grad_input counts the taps that land inside
// the input, grad_weight every tap (padding read as zero, as the forward), grad_bias is a
// reduction.
TEST(AtenConv, StridedGroupedConvolutionBackward) {
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
TEST(AtenConv, Stride1ConvolutionBackwardHasNoThirdSpatialIndex) {
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
TEST(AtenConv, TransposedConvolutionBackward) {
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

// col2im (Fold / the gradient of Unfold) with stride 2 and padding: each column element
// adds into the image once when its (block, tap) position lands inside the image.
TEST(AtenConv, Col2imCountsTheTapsInsideTheImage) {
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

}  // namespace
}  // namespace solar::lower
