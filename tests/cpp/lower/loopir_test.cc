// Tests of the loopir table (src/lower/loopir.cc, loopir_nest.cc): hand-written traces in the
// loop recorder's encoding (python/solar/frontends/loopir/record.py), counts as formulas.
#include "solar/lower/loopir.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "solar/cost/work.h"
#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using nlohmann::json;

json V(const char* v) { return {{"var", v}}; }
json F(const char* f, std::vector<json> args) { return {{"fn", f}, {"args", args}}; }
json L(int id, std::vector<json> index) { return {{"load", id}, {"index", index}}; }
json Self(std::vector<json> index) { return {{"self", true}, {"index", index}}; }
json Loop(const char* var, json start, json stop, int line = 2) {
  return {{"var", var}, {"start", start}, {"stop", stop}, {"step", 1}, {"line", line}};
}
json Guard(const char* cmp, json lhs, json rhs) {
  return {{"cmp", cmp}, {"lhs", lhs}, {"rhs", rhs}, {"line", 5}};
}
json Stmt(const char* name, std::vector<json> index, json value, json prior,
          std::vector<json> guards = {}, int line = 6) {
  return {{"line", line},
          {"target", {{"name", name}, {"index", index}, {"prior", prior}}},
          {"value", value},
          {"guards", guards}};
}
json Fill(double v) { return {{"fill", v}}; }
json Prior(int id) { return {{"tensor", id}}; }

struct Trace {
  json tensors = json::array();
  json ops = json::array();
  int tensor(std::vector<std::int64_t> shape, const char* role = "intermediate",
             const char* dtype = "f32", const char* name = "") {
    int id = static_cast<int>(tensors.size());
    json t = {{"id", id}, {"shape", shape}, {"dtype", dtype}, {"role", role}};
    if (*name) t["name"] = name;
    tensors.push_back(t);
    return id;
  }
  void nest(std::vector<json> loops, std::vector<json> statements, std::vector<int> outs) {
    ops.push_back({{"op", "loopir::nest"},
                   {"args", {{"kernel", "k"}, {"loops", loops}, {"statements", statements}}},
                   {"outputs", outs}, {"file", "prog.py"}, {"line", 2}});
  }
  void op(const char* name, json args, std::vector<int> outs) {
    ops.push_back({{"op", name}, {"args", args}, {"outputs", outs}, {"file", "prog.py"},
                   {"line", 9}});
  }
  LowerResult lift() const {
    return lower_loopir(optrace_from_json({{"schema", "solar.optrace.v1"}, {"name", "t"},
                                           {"frontend", "loopir"}, {"tensors", tensors},
                                           {"ops", ops}}));
  }
};

cost::Work work(const ir::Graph& g, std::size_t k) { return cost::op_work(g, g.op(ir::OpId{static_cast<std::uint32_t>(k)})); }

TEST(LoopIr, GemmIsOneContraction) {
  const int M = 8, N = 6, K = 5;
  Trace t;
  int a = t.tensor({M, K}, "input", "bf16"), b = t.tensor({K, N}, "parameter", "bf16"),
      c = t.tensor({M, N}, "output", "bf16");
  t.nest({Loop("m", 0, M), Loop("n", 0, N), Loop("k", 0, K)},
         {Stmt("C", {V("m"), V("n")},
               F("add", {Self({V("m"), V("n")}), F("mul", {L(a, {V("m"), V("k")}),
                                                            L(b, {V("k"), V("n")})})}),
               Fill(0))},
         {c});
  LowerResult r = t.lift();
  ASSERT_EQ(r.graph.ops().size(), 1u);
  const ir::EinsumOp& e = r.graph.op(ir::OpId{0}).einsum();
  EXPECT_EQ(e.reduce, ir::Reduce::Sum);
  EXPECT_TRUE(e.combine.is_product_of_two_operands());
  cost::Work w = work(r.graph, 0);
  EXPECT_EQ(w.total_macs(), Count(M * N * K));
  EXPECT_EQ(w.total_vector_flops(), Count(0));  // the sum is tensor work
  EXPECT_EQ(r.graph.op(ir::OpId{0}).origin.line, 6);  // the statement's line
}

TEST(LoopIr, PaddedStridedConvIsMaskedAndPadded) {
  // y[o] += x[2*o + r - 1] * w[r] where 0 <= 2*o + r - 1 < W: the guard is a mask and the
  // operand gets a pad (never read); MACs count the taps inside x only.
  const int W = 9, O = 5, R = 3;
  Trace t;
  int x = t.tensor({W}, "input"), w = t.tensor({R}, "parameter"), y = t.tensor({O}, "output");
  json pos = F("sub", {F("add", {F("mul", {2, V("o")}), V("r")}), 1});
  t.nest({Loop("o", 0, O), Loop("r", 0, R)},
         {Stmt("y", {V("o")}, F("add", {Self({V("o")}), F("mul", {L(x, {pos}), L(w, {V("r")})})}),
               Fill(0), {Guard("le", 0, pos), Guard("lt", pos, W)})},
         {y});
  LowerResult r = t.lift();
  ASSERT_EQ(r.graph.ops().size(), 1u);
  const ir::EinsumOp& e = r.graph.op(ir::OpId{0}).einsum();
  EXPECT_EQ(e.mask.size(), 2u);
  EXPECT_TRUE(e.operands[0].pad.has_value());
  std::int64_t taps = 0;
  for (int o = 0; o < O; ++o)
    for (int k = 0; k < R; ++k) taps += (2 * o + k - 1 >= 0 && 2 * o + k - 1 < W);
  EXPECT_EQ(work(r.graph, 0).total_macs(), Count(taps));
}

TEST(LoopIr, TriangularLoopIsACausalMask) {
  // for q in range(S): for k in range(q + 1): s[q, k] = a[q] * b[k]  ->  S(S+1)/2 points
  const int S = 7;
  Trace t;
  int a = t.tensor({S}, "input"), b = t.tensor({S}, "input"), s = t.tensor({S, S}, "output");
  t.nest({Loop("q", 0, S), Loop("k", 0, F("add", {V("q"), 1}))},
         {Stmt("s", {V("q"), V("k")}, F("mul", {L(a, {V("q")}), L(b, {V("k")})}), Fill(0))}, {s});
  LowerResult r = t.lift();
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(work(r.graph, 0).live_points, Count(S * (S + 1) / 2));
}

TEST(LoopIr, ResidualAddIsOneElementwiseOpReadingTheEarlierValue) {
  const int B = 4, D = 6;
  Trace t;
  int x = t.tensor({B, D}, "input"), h0 = t.tensor({B, D}, "input"), h1 = t.tensor({B, D}, "output");
  t.nest({Loop("b", 0, B), Loop("d", 0, D)},
         {Stmt("h", {V("b"), V("d")}, F("add", {Self({V("b"), V("d")}), L(x, {V("b"), V("d")})}),
               Prior(h0))},
         {h1});
  LowerResult r = t.lift();
  ASSERT_EQ(r.graph.ops().size(), 1u);
  const ir::Op& op = r.graph.op(ir::OpId{0});
  EXPECT_EQ(op.inputs.size(), 2u);
  EXPECT_EQ(op.einsum().reduce, ir::Reduce::None);
  EXPECT_EQ(work(r.graph, 0).total_vector_flops(), Count(B * D));  // one add per element
}

TEST(LoopIr, ReductionIntoAnEarlierValueFoldsThePartialResult) {
  const int B = 3, D = 5;
  Trace t;
  int x = t.tensor({B, D}, "input"), s0 = t.tensor({B}, "input"), s1 = t.tensor({B}, "output");
  t.nest({Loop("b", 0, B), Loop("d", 0, D)},
         {Stmt("s", {V("b")}, F("max", {L(x, {V("b"), V("d")}), Self({V("b")})}), Prior(s0))},
         {s1});
  LowerResult r = t.lift();
  ASSERT_EQ(r.graph.ops().size(), 2u);
  EXPECT_EQ(r.graph.op(ir::OpId{0}).einsum().reduce, ir::Reduce::Max);
  EXPECT_EQ(work(r.graph, 0).total_vector_flops(), Count(B * D - B));  // n - m comparisons
  EXPECT_EQ(work(r.graph, 1).total_vector_flops(), Count(B));          // max with the earlier
}

TEST(LoopIr, FillThatIsNotTheIdentityIsFoldedIn) {
  // s[b] = max(s[b], x[b, d]) from a fill of 0 (not max's identity): max(partial, 0)
  Trace t;
  int x = t.tensor({3, 4}, "input"), s = t.tensor({3}, "output");
  t.nest({Loop("b", 0, 3), Loop("d", 0, 4)},
         {Stmt("s", {V("b")}, F("max", {Self({V("b")}), L(x, {V("b"), V("d")})}), Fill(0))}, {s});
  LowerResult r = t.lift();
  ASSERT_EQ(r.graph.ops().size(), 2u);
  EXPECT_EQ(r.graph.op(ir::OpId{1}).einsum().combine.op(), ir::ExprOp::Max);
}

TEST(LoopIr, PlainLoopOverPartOfADimensionReadsASliceView) {
  // d[i] = x[i + 1] - x[i] for i < N - 1: x[i] reads a free view of x[0:N-1]
  const int N = 8;
  Trace t;
  int x = t.tensor({N}, "input"), d = t.tensor({N - 1}, "output");
  t.nest({Loop("i", 0, N - 1)},
         {Stmt("d", {V("i")}, F("sub", {L(x, {F("add", {V("i"), 1})}), L(x, {V("i")})}), Fill(0))},
         {d});
  LowerResult r = t.lift();
  ASSERT_EQ(r.graph.ops().size(), 2u);
  EXPECT_EQ(r.graph.op(ir::OpId{0}).kind(), ir::OpKind::Move);
  EXPECT_EQ(work(r.graph, 0).bytes(), Count(0));  // a view
  EXPECT_EQ(work(r.graph, 1).total_vector_flops(), Count(N - 1));
}

TEST(LoopIr, ApplyMaskCarriesTheMasksSparsity) {
  Trace t;
  int w = t.tensor({4, 8}, "parameter"), m = t.tensor({4, 8}, "constant"),
      y = t.tensor({4, 8}, "intermediate");
  t.tensors[m]["sparsity"] = {{"zero_fraction", 0.5}, {"structured_2_4", true}};
  t.tensors[y]["sparsity"] = {{"zero_fraction", 0.5}, {"structured_2_4", true}};
  t.tensors[y]["role"] = "output";
  t.op("loopir::apply_mask", {{"self", {{"tensor", w}}}, {"mask", {{"tensor", m}}}}, {y});
  LowerResult r = t.lift();
  const ir::Tensor& out = r.graph.tensor(r.graph.op(ir::OpId{0}).outputs[0]);
  ASSERT_TRUE(out.sparsity.has_value());
  EXPECT_TRUE(out.sparsity->structured_2_4);
}

TEST(LoopIr, StackIsConcatOfUnsqueezedViews) {
  Trace t;
  int a = t.tensor({2, 3}, "input"), b = t.tensor({2, 3}, "input"), s = t.tensor({2, 2, 3}, "output");
  t.op("loopir::stack", {{"tensors", {{{"tensor", a}}, {{"tensor", b}}}}, {"dim", 1}}, {s});
  LowerResult r = t.lift();
  ASSERT_EQ(r.graph.ops().size(), 3u);
  EXPECT_EQ(r.graph.op(ir::OpId{2}).move().kind, ir::MoveKind::Concat);
}

TEST(LoopIr, AssignmentAtACompositeSubscriptThatWritesEachElementOnce) {
  // e[g*G + r] = exp(x[g, r]): a mixed-radix subscript (r over G values) writes each element
  // once, so it is an assignment, one exp per element
  const int NG = 3, G = 4;
  Trace t;
  int x = t.tensor({NG, G}, "input"), e = t.tensor({NG * G}, "output");
  json pos = F("add", {F("mul", {V("g"), G}), V("r")});
  t.nest({Loop("g", 0, NG), Loop("r", 0, G)},
         {Stmt("e", {pos}, F("exp", {L(x, {V("g"), V("r")})}), Fill(0))}, {e});
  LowerResult r = t.lift();
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(r.graph.op(ir::OpId{0}).einsum().reduce, ir::Reduce::None);
  EXPECT_EQ(work(r.graph, 0).special_ops, Count(NG * G));
}

TEST(LoopIr, GuardKeepsAPlainReadInsideItsTensor) {
  // for i in range(N + 1): if i < N: y[i] = x[i]: the guard narrows i to [0, N), and the
  // guard, true on every point left, is dropped
  const int N = 5;
  Trace t;
  int x = t.tensor({N}, "input"), y = t.tensor({N}, "output");
  t.nest({Loop("i", 0, N + 1)},
         {Stmt("y", {V("i")}, F("mul", {L(x, {V("i")}), 2}), Fill(0), {Guard("lt", V("i"), N)})},
         {y});
  LowerResult r = t.lift();
  ASSERT_EQ(r.graph.ops().size(), 1u);
  const ir::EinsumOp& e = r.graph.op(ir::OpId{0}).einsum();
  EXPECT_EQ(e.indices[0].extent, N);
  EXPECT_TRUE(e.mask.empty());
  EXPECT_EQ(work(r.graph, 0).total_vector_flops(), Count(N));
}

TEST(LoopIr, GuardOnTheLoopVariableNarrowsAWrite) {
  // for i in range(N + 1): if i >= 1: y[i - 1] = x[i - 1]: i shifts to i' + 1, the write's
  // subscript becomes plain, over [0, N)
  const int N = 5;
  Trace t;
  int x = t.tensor({N}, "input"), y = t.tensor({N}, "output");
  json before = F("sub", {V("i"), 1});
  t.nest({Loop("i", 0, N + 1)},
         {Stmt("y", {before}, F("add", {L(x, {before}), 1}), Fill(0), {Guard("ge", V("i"), 1)})},
         {y});
  LowerResult r = t.lift();
  ASSERT_EQ(r.graph.ops().size(), 1u);
  const ir::EinsumOp& e = r.graph.op(ir::OpId{0}).einsum();
  EXPECT_EQ(e.indices[0].extent, N);
  EXPECT_TRUE(e.output[0].as_plain_index().has_value());
  EXPECT_TRUE(e.mask.empty());
  EXPECT_EQ(work(r.graph, 0).total_vector_flops(), Count(N));
}

// ---------------------------------------------------------------- refusals

void expect_refused(const Trace& t, UserError::Kind kind, const std::string& words, int line) {
  try {
    t.lift();
    FAIL() << "lifted: " << words;
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    EXPECT_EQ(e.origin().file, "prog.py");
    EXPECT_EQ(e.origin().line, line) << e.what();
  }
}

TEST(LoopIrRefusal, ProductOfLoopVariablesIsNotAffine) {
  Trace t;
  int x = t.tensor({16}, "input"), y = t.tensor({4, 4}, "output");
  t.nest({Loop("i", 0, 4), Loop("j", 0, 4)},
         {Stmt("y", {V("i"), V("j")}, L(x, {F("mul", {V("i"), V("j")})}), Fill(0))}, {y});
  expect_refused(t, UserError::Kind::NotAffine, "not affine", 6);
}

TEST(LoopIrRefusal, UnguardedReadOutsideTheTensor) {
  Trace t;
  int x = t.tensor({4}, "input"), y = t.tensor({4}, "output");
  t.nest({Loop("i", 0, 4)}, {Stmt("y", {V("i")}, L(x, {F("add", {V("i"), 1})}), Fill(0))}, {y});
  expect_refused(t, UserError::Kind::ShapeMismatch, "no guard excludes", 6);
}

TEST(LoopIrRefusal, GuardThatLeavesPointsOutsideIsNotEnough) {
  // the guard i >= 1 does not keep x[i + 1] inside a tensor of 4
  Trace t;
  int x = t.tensor({4}, "input"), y = t.tensor({4}, "output");
  t.nest({Loop("i", 0, 4)},
         {Stmt("y", {V("i")}, L(x, {F("add", {V("i"), 1})}), Fill(0), {Guard("ge", V("i"), 1)})},
         {y});
  expect_refused(t, UserError::Kind::ShapeMismatch, "outside its size 4", 6);
}

TEST(LoopIrRefusal, AssignmentThatRepeats) {
  Trace t;
  int x = t.tensor({4, 3}, "input"), y = t.tensor({4}, "output");
  t.nest({Loop("i", 0, 4), Loop("j", 0, 3)},
         {Stmt("y", {V("i")}, L(x, {V("i"), V("j")}), Fill(0))}, {y});
  expect_refused(t, UserError::Kind::OutsideLanguage, "repeats over `j`", 6);
}

TEST(LoopIrRefusal, ReadOfTheTargetAtAnotherElementIsALoopCarriedDependence) {
  // y[i] = y[i - 1] + x[i]: a prefix sum
  Trace t;
  int x = t.tensor({4}, "input"), y = t.tensor({4}, "output");
  t.nest({Loop("i", 1, 4)},
         {Stmt("y", {V("i")}, F("add", {Self({F("sub", {V("i"), 1})}), L(x, {V("i")})}), Fill(0))},
         {y});
  expect_refused(t, UserError::Kind::OutsideLanguage, "loop-carried", 6);
}

TEST(LoopIrRefusal, AssignmentAtAnOverlappingCompositeSubscript) {
  // e[2*g + r] with r over 4 values: g = 0 and g = 1 both write e[2], e[3]
  Trace t;
  int x = t.tensor({3, 4}, "input"), e = t.tensor({8}, "output");
  json pos = F("add", {F("mul", {V("g"), 2}), V("r")});
  t.nest({Loop("g", 0, 3), Loop("r", 0, 4)},
         {Stmt("e", {pos}, L(x, {V("g"), V("r")}), Fill(0))}, {e});
  expect_refused(t, UserError::Kind::OutsideLanguage, "writes each element once", 6);
}

TEST(LoopIrRefusal, GuardThatLeavesAPlainReadOutside) {
  // i over [0, 6) reads x of 5; the guard i < 6 keeps nothing out
  Trace t;
  int x = t.tensor({5}, "input"), y = t.tensor({6}, "output");
  t.nest({Loop("i", 0, 6)},
         {Stmt("y", {V("i")}, L(x, {V("i")}), Fill(0), {Guard("lt", V("i"), 6)})}, {y});
  expect_refused(t, UserError::Kind::ShapeMismatch, "runs past it", 6);
}

TEST(LoopIrRefusal, PartialOverwriteOfAnEarlierValue) {
  Trace t;
  int x = t.tensor({4}, "input"), y0 = t.tensor({4}, "input"), y1 = t.tensor({4}, "output");
  t.nest({Loop("i", 0, 4)},
         {Stmt("y", {V("i")}, L(x, {V("i")}), Prior(y0), {Guard("lt", V("i"), 2)})}, {y1});
  expect_refused(t, UserError::Kind::OutsideLanguage, "writes only part", 6);
}

TEST(LoopIrRefusal, BoundThatIsNotAffine) {
  Trace t;
  int x = t.tensor({4, 16}, "input"), y = t.tensor({4, 16}, "output");
  t.nest({Loop("i", 0, 4), Loop("j", 0, F("mul", {V("i"), V("i")}), 3)},
         {Stmt("y", {V("i"), V("j")}, L(x, {V("i"), V("j")}), Fill(0))}, {y});
  expect_refused(t, UserError::Kind::NonConstantBound, "not constants", 3);
}

TEST(LoopIrRefusal, UnknownFunction) {
  Trace t;
  int x = t.tensor({4}, "input"), y = t.tensor({4}, "output");
  t.nest({Loop("i", 0, 4)}, {Stmt("y", {V("i")}, F("gelu", {L(x, {V("i")})}), Fill(0))}, {y});
  expect_refused(t, UserError::Kind::UnknownIntrinsic, "`gelu`", 6);
}

TEST(LoopIrRefusal, SubscriptCountDiffersFromRank) {
  Trace t;
  int x = t.tensor({4, 4}, "input"), y = t.tensor({4}, "output");
  t.nest({Loop("i", 0, 4)}, {Stmt("y", {V("i")}, L(x, {V("i")}), Fill(0))}, {y});
  expect_refused(t, UserError::Kind::ShapeMismatch, "2 dimensions but 1 subscripts", 6);
}

TEST(LoopIrRefusal, OpOfAnotherDialect) {
  Trace t;
  int x = t.tensor({4}, "input"), y = t.tensor({4}, "output");
  t.op("aten::relu.default", {{"self", {{"tensor", x}}}}, {y});
  expect_refused(t, UserError::Kind::OutsideLanguage, "not an op of a loop program", 9);
}

}  // namespace
}  // namespace solar::lower
