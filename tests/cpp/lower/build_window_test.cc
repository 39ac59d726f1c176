// The window builders (src/lower/build_window.cc): aten's and jax's convolutions and window
// reductions stage one einsum, and the builders' counts as formulas.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"
#include "lower/staging.h"
#include "solar/lower/jax.h"

namespace solar::lower {
namespace {

using nlohmann::json;
using namespace testing;  // lowering_checks.h, staging.h

// The one einsum of a lowered graph (the last op).
const ir::EinsumOp& last_einsum(const LowerResult& r) {
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  return r.graph.ops().back().einsum();
}

TEST(BuildWindow, AtenAndJaxConvolutionsAreOneEinsum) {
  // x [2, 4, 9, 9], w [6, 2, 3, 3], groups 2, stride 2, padding 1 -> [2, 6, 5, 5]
  TraceBuilder a;
  int x = a.tensor({2, 4, 9, 9}, "input"), w = a.tensor({6, 2, 3, 3}, "parameter"),
      y = a.tensor({2, 6, 5, 5}, "output");
  a.op("aten::convolution.default",
       {{"input", T(x)}, {"weight", T(w)}, {"stride", {2, 2}}, {"padding", {1, 1}},
        {"dilation", {1, 1}}, {"transposed", false}, {"groups", 2}},
       {y});
  TraceBuilder j = a;
  j.frontend = "jax";
  j.ops = json::array();
  j.op("jax::conv_general_dilated",
       {{"operands", {T(x), T(w)}}, {"window_strides", {2, 2}}, {"padding", {{1, 1}, {1, 1}}},
        {"feature_group_count", 2}},
       {y});
  LowerResult ra = lower_ok(a), rj = lower_jax(j.build());
  const ir::EinsumOp& e = last_einsum(ra);
  EXPECT_EQ(e, last_einsum(rj));
  EXPECT_EQ(live_points(e), 2 * 6 * 5 * 5 * 2 * 3 * 3);  // N*K*P*Q * C/G*R*S: every tap
}

TEST(BuildWindow, AtenMaxPoolAndJaxReduceWindowAreOneEinsum) {
  // 3x3 windows, stride 2, padding 1 over the trailing two dimensions of [1, 3, 8, 8]
  TraceBuilder a;
  int x = a.tensor({1, 3, 8, 8}, "input"), y = a.tensor({1, 3, 4, 4}, "output");
  a.op("aten::max_pool2d.default",
       {{"self", T(x)}, {"kernel_size", {3, 3}}, {"stride", {2, 2}}, {"padding", {1, 1}}}, {y});
  TraceBuilder j = a;
  j.frontend = "jax";
  j.ops = json::array();
  j.op("jax::reduce_window_max",
       {{"operands", {T(x)}}, {"window_dimensions", {1, 1, 3, 3}},
        {"window_strides", {1, 1, 2, 2}}, {"padding", {{0, 0}, {0, 0}, {1, 1}, {1, 1}}}},
       {y});
  LowerResult ra = lower_ok(a), rj = lower_jax(j.build());
  const ir::EinsumOp& e = last_einsum(ra);
  EXPECT_EQ(e, last_einsum(rj));
  // batch and channel are plain indices; each window dimension an output and a tap index
  std::vector<std::string> names;
  for (const ir::IndexDim& d : e.indices) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b0", "b1", "p0", "r0", "p1", "r1"}));
}

TEST(BuildWindow, WindowReducePadsOnlyWhatReadsOutsideTheInput) {
  TraceBuilder t;
  int x = t.tensor({4, 6}, "input"), y = t.tensor({4, 3}, "output");
  t.op("test::pool", json::object(), {y});
  Staging s(t);
  // windows of 2, stride 2, over the last dimension: every read is inside
  detail::window_reduce(s.c, s.c.use(x), s.c.def(0), {0, 2}, {{}, {.stride = 2}},
                        ir::Reduce::Sum, 0);
  const ir::EinsumOp& e = s.commit().ops().back().einsum();
  EXPECT_FALSE(e.operands[0].pad.has_value());
  EXPECT_EQ(live_points(e), 4 * 3 * 2);  // one read per output and tap
}

}  // namespace
}  // namespace solar::lower
