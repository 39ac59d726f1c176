// Tests of `jax::scan_repeat` (src/lower/jax.cc): a loop the JAX recorder kept as a loop,
// its nested trace lowered with the jax table into the body of one repeat op. Counts are
// formulas, and equal the unrolled graph's (ir::unroll).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lower/trace_builder.h"
#include "solar/cost/graph_cost.h"
#include "solar/ir/unroll.h"
#include "solar/ir/verify.h"
#include "solar/lower/jax.h"

namespace solar::lower {
namespace {

using nlohmann::json;

struct Trace : testing::TraceBuilder {
  Trace() { frontend = "jax"; }
};
json T(int id) { return {{"tensor", id}}; }

// ((lhs contracting, rhs contracting), (lhs batch, rhs batch)): a plain matmul.
json matmul_dims() { return {{{1}, {0}}, {json::array(), json::array()}}; }

// h' = tanh(x W + h U) over T steps of x[T, B, D]: last h and every h stacked.
constexpr std::int64_t kT = 7, kB = 2, kD = 8, kH = 16;

json rnn_body() {
  Trace b;
  int w = b.tensor({kD, kH}, "input"), u = b.tensor({kH, kH}, "input");
  int h = b.tensor({kB, kH}, "input"), x = b.tensor({kB, kD}, "input");
  int xw = b.tensor({kB, kH}), hu = b.tensor({kB, kH}), s = b.tensor({kB, kH});
  int h1 = b.tensor({kB, kH}, "output");
  b.op("jax::dot_general", {{"operands", {T(x), T(w)}}, {"dimension_numbers", matmul_dims()}},
       {xw});
  b.op("jax::dot_general", {{"operands", {T(h), T(u)}}, {"dimension_numbers", matmul_dims()}},
       {hu});
  b.op("jax::add", {{"operands", {T(xw), T(hu)}}}, {s});
  b.op("jax::tanh", {{"operands", {T(s)}}}, {h1});
  return b.body();
}

OpTrace rnn_trace(bool reverse = false) {
  Trace t;
  int x = t.tensor({kT, kB, kD}, "input"), h0 = t.tensor({kB, kH}, "input");
  int w = t.tensor({kD, kH}, "parameter"), u = t.tensor({kH, kH}, "parameter");
  int hT = t.tensor({kB, kH}, "output"), ys = t.tensor({kT, kB, kH}, "output");
  t.op("jax::scan_repeat",
       {{"operands", {T(w), T(u), T(h0), T(x)}},
        {"trips", kT},
        {"reverse", reverse},
        {"inputs",
         {{{"how", "invariant"}, {"param", 0}},
          {{"how", "invariant"}, {"param", 1}},
          {{"how", "carried"}, {"param", 2}, {"next", 7}},
          {{"how", "sliced"}, {"param", 3}, {"axis", 0}}}},
        {"outputs",
         {{{"how", "last"}, {"value", 7}}, {{"how", "stacked"}, {"value", 7}, {"axis", 0}}}},
        {"body", rnn_body()}},
       {hT, ys});
  return t.build();
}

void expect_same_totals(const cost::GraphCost& a, const cost::GraphCost& b) {
  EXPECT_EQ(a.total.macs, b.total.macs);
  EXPECT_EQ(a.total.vector_flops, b.total.vector_flops);
  EXPECT_EQ(a.total.special_ops, b.total.special_ops);
  EXPECT_EQ(a.total.bytes_read, b.total.bytes_read);
  EXPECT_EQ(a.total.bytes_written, b.total.bytes_written);
  EXPECT_EQ(a.compulsory_bytes(), b.compulsory_bytes());
}

TEST(JaxLoop, ScanRepeatIsOneRepeatOpCountedAsItsUnrolledGraph) {
  for (bool reverse : {false, true}) {
    LowerResult r = lower_jax(rnn_trace(reverse), {.strict = true});
    ASSERT_EQ(r.graph.ops().size(), 1u);
    const ir::Op& op = r.graph.ops()[0];
    ASSERT_EQ(op.kind(), ir::OpKind::Repeat);
    const ir::RepeatOp& rep = op.repeat();
    EXPECT_EQ(rep.trips, kT);
    EXPECT_EQ(rep.reverse, reverse);
    EXPECT_EQ(rep.body->ops().size(), 4u);
    EXPECT_EQ(rep.inputs[2].how, ir::LoopInput::Carried);
    EXPECT_EQ(rep.inputs[3].how, ir::LoopInput::Sliced);
    EXPECT_EQ(rep.outputs[1].how, ir::LoopOutput::Stacked);
    const cost::GraphCost c = cost::graph_cost(r.graph);
    EXPECT_EQ(c.total.total_macs(), Count(kT * (kB * kD * kH + kB * kH * kH)));
    EXPECT_EQ(c.total.special_ops, Count(kT * kB * kH));
    expect_same_totals(c, cost::graph_cost(ir::unroll(r.graph)));
  }
}

TEST(JaxLoop, ParamTheBodyNeverReadsIsStillBound) {
  // A while_loop's (counter, x) with x passed through unchanged: x's param is never read by
  // a body op, and it is its own next value. (The final count is a program output: a carried
  // chain that reaches no output is dead in the unrolled graph.)
  Trace b;
  int i = b.tensor({}, "input", "int32"), x = b.tensor({4}, "input");
  int i1 = b.tensor({}, "output", "int32");
  b.op("jax::add", {{"operands", {T(i), 1}}}, {i1});
  Trace t;
  int i0 = t.tensor({}, "constant", "int32"), x0 = t.tensor({4}, "input");
  int iN = t.tensor({}, "output", "int32"), xN = t.tensor({4}, "output");
  t.op("jax::scan_repeat",
       {{"operands", {T(i0), T(x0)}},
        {"trips", 3},
        {"inputs", {{{"how", "carried"}, {"param", i}, {"next", i1}},
                    {{"how", "carried"}, {"param", x}, {"next", x}}}},
        {"outputs", {{{"how", "last"}, {"value", i1}}, {{"how", "last"}, {"value", x}}}},
        {"body", b.body()}},
       {iN, xN});
  LowerResult r = lower_jax(t.build(), {.strict = true});
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(r.graph.ops()[0].repeat().body->tensors().size(), 3u);
  EXPECT_FALSE(ir::why_invalid(r.graph));
  const cost::GraphCost c = cost::graph_cost(r.graph);
  EXPECT_EQ(c.total.vector_flops.at(ir::DType::I32), Count(3));  // the counter's adds
  expect_same_totals(cost::graph_cost(r.graph), cost::graph_cost(ir::unroll(r.graph)));
}

TEST(JaxLoop, RepeatBesideAnIotaPassesMaskRecognition) {
  // An iota (an arange: what starts mask recognition) next to a loop: the recognizer meets
  // the repeat op among the ops whose outputs it follows.
  Trace b;
  int x = b.tensor({4}, "input"), y = b.tensor({4}, "output");
  b.op("jax::tanh", {{"operands", {T(x)}}}, {y});
  Trace t;
  int io = t.tensor({4}, "output", "int32");
  int x0 = t.tensor({4}, "input"), xN = t.tensor({4}, "output");
  t.op("jax::iota", {{"operands", json::array()}, {"dtype", {{"dtype", "int32"}}},
                     {"shape", {4}}, {"dimension", 0}}, {io});
  t.op("jax::scan_repeat",
       {{"operands", {T(x0)}},
        {"trips", 3},
        {"inputs", {{{"how", "carried"}, {"param", x}, {"next", y}}}},
        {"outputs", {{{"how", "last"}, {"value", y}}}},
        {"body", b.body()}},
       {xN});
  LowerResult r = lower_jax(t.build(), {.strict = true});
  EXPECT_EQ(cost::graph_cost(r.graph).total.special_ops, Count(3 * 4));
}

TEST(JaxLoop, BodyOpWithoutLoweringLeavesTheLoopUnanalyzed) {
  Trace b;
  int x = b.tensor({4}, "input"), y = b.tensor({4}, "output");
  b.op("jax::digamma", {{"operands", {T(x)}}}, {y});
  Trace t;
  int x0 = t.tensor({4}, "input"), xN = t.tensor({4}, "output");
  t.op("jax::scan_repeat",
       {{"operands", {T(x0)}},
        {"trips", 2},
        {"inputs", {{{"how", "carried"}, {"param", x}, {"next", y}}}},
        {"outputs", {{{"how", "last"}, {"value", y}}}},
        {"body", b.body()}},
       {xN});
  LowerResult r = lower_jax(t.build());
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(r.graph.ops()[0].kind(), ir::OpKind::Unanalyzed);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("jax::digamma"), std::string::npos) << r.warnings[0];
  EXPECT_TRUE(jax_op_known("jax::scan_repeat"));
}

}  // namespace
}  // namespace solar::lower
