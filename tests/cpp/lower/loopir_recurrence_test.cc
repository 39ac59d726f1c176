// Tests of the lifting of a loop-language recurrence (src/lower/loopir_recurrence.cc):
// hand-written `loopir::recurrence` ops in the recorder's encoding
// (python/solar/frontends/loopir/recurrence.py), counts as formulas.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "solar/cost/graph_cost.h"
#include "solar/ir/text.h"
#include "solar/lower/loopir.h"
#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using nlohmann::json;

json V(const char* v) { return {{"var", v}}; }
json F(const char* f, std::vector<json> args) { return {{"fn", f}, {"args", args}}; }
json L(int id, std::vector<json> index) { return {{"load", id}, {"index", index}}; }
json Loop(const char* var, json start, json stop, int line = 2) {
  return {{"var", var}, {"start", start}, {"stop", stop}, {"step", 1}, {"line", line}};
}
json Guard(const char* cmp, json lhs, json rhs) {
  return {{"cmp", cmp}, {"lhs", lhs}, {"rhs", rhs}, {"line", 5}};
}
json Stmt(int nest, const char* name, std::vector<json> index, json value, json prior,
          std::vector<json> guards = {}, int line = 6) {
  return {{"line", line},
          {"nest", nest},
          {"target", {{"name", name}, {"index", index}, {"prior", prior}}},
          {"value", value},
          {"guards", guards}};
}
json Prior(int id) { return {{"tensor", id}}; }

struct Trace {
  json tensors = json::array();
  json ops = json::array();
  int tensor(std::vector<std::int64_t> shape, const char* role = "intermediate") {
    int id = static_cast<int>(tensors.size());
    tensors.push_back({{"id", id}, {"shape", shape}, {"dtype", "f32"}, {"role", role}});
    return id;
  }
  void recurrence(json step, std::vector<json> nests, std::vector<json> statements,
                  std::vector<int> outs) {
    json ns = json::array();
    for (json& loops : nests) ns.push_back({{"loops", loops}});
    ops.push_back({{"op", "loopir::recurrence"},
                   {"args", {{"kernel", "k"}, {"step", step}, {"nests", ns},
                             {"statements", statements}}},
                   {"outputs", outs}, {"file", "prog.py"}, {"line", 2}});
  }
  LowerResult lift() const {
    return lower_loopir(optrace_from_json({{"schema", "solar.optrace.v1"}, {"name", "t"},
                                           {"frontend", "loopir"}, {"tensors", tensors},
                                           {"ops", ops}}));
  }
};

std::vector<const ir::Op*> repeats(const ir::Graph& g) {
  std::vector<const ir::Op*> out;
  for (const ir::Op& op : g.ops())
    if (op.kind() == ir::OpKind::Repeat) out.push_back(&op);
  return out;
}

// y[b, i] = y[b, i - 1] + x[b, i] for i >= 1, the recurrence along i (b its nest's loop),
// into a y whose earlier version (an input here) holds the first column.
Trace prefix_sum(int B, int N, json guard_or_null = nullptr) {
  Trace t;
  int x = t.tensor({B, N}, "input"), y0 = t.tensor({B, N}, "input"), y = t.tensor({B, N}, "output");
  json step = Loop("i", guard_or_null.is_null() ? 1 : 0, N);
  std::vector<json> guards;
  if (!guard_or_null.is_null()) guards.push_back(guard_or_null);
  t.recurrence(step, {json::array({Loop("b", 0, B)})},
               {Stmt(0, "y", {V("b"), V("i")},
                     F("add", {L(y, {V("b"), F("sub", {V("i"), 1})}), L(x, {V("b"), V("i")})}),
                     Prior(y0), guards)},
               {y});
  return t;
}

TEST(LoopIrRecurrence, PrefixSumIsOneRepeatWithLinearWork) {
  const int B = 3, N = 9;
  for (json guard : {json(nullptr), Guard("ge", V("i"), 1)}) {  // range(1, N) or the guard
    LowerResult r = prefix_sum(B, N, guard).lift();
    std::vector<const ir::Op*> reps = repeats(r.graph);
    ASSERT_EQ(reps.size(), 1u) << ir::print_graph(r.graph);
    EXPECT_EQ(reps[0]->repeat().trips, N - 1);
    // one add per element after the first of each row
    EXPECT_EQ(cost::graph_cost(r.graph).total.total_vector_flops(), Count(B * (N - 1)));
  }
}

TEST(LoopIrRecurrence, StepBeforeTheFirstStepIsRefused) {
  // i over [0, N) without a guard: step 0 reads y[b, -1]
  Trace t = prefix_sum(3, 9);
  t.ops[0]["args"]["step"]["start"] = 0;
  try {
    t.lift();
    FAIL() << "lifted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::ShapeMismatch) << e.what();
    EXPECT_NE(std::string(e.what()).find("the step before the first one"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.origin().line, 6) << e.what();
  }
}

TEST(LoopIrRecurrence, ReadTwoStepsBeforeIsRefused) {
  Trace t = prefix_sum(3, 9);
  t.ops[0]["args"]["step"]["start"] = 2;
  t.ops[0]["args"]["statements"][0]["value"]["args"][0]["index"][1]["args"][1] = 2;
  try {
    t.lift();
    FAIL() << "lifted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::OutsideLanguage) << e.what();
    EXPECT_NE(std::string(e.what()).find("at the step before"), std::string::npos) << e.what();
  }
}

TEST(LoopIrRecurrence, WriteWithoutTheStepIsRefused) {
  Trace t = prefix_sum(3, 9);
  t.ops[0]["args"]["statements"][0]["target"]["index"][1] = 0;  // y[b, 0] at every step
  try {
    t.lift();
    FAIL() << "lifted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::OutsideLanguage) << e.what();
    EXPECT_NE(std::string(e.what()).find("its step's element"), std::string::npos) << e.what();
  }
}

TEST(LoopIrRecurrence, MalformedNestIsAParseError) {
  Trace t = prefix_sum(3, 9);
  t.ops[0]["args"]["statements"][0]["nest"] = 4;
  try {
    t.lift();
    FAIL() << "lifted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Parse) << e.what();
  }
}

TEST(LoopIrRecurrence, WriteOutsideTheTargetOnItsStepsIsRefused) {
  // y has 6 columns; the steps i = 1 .. 8 write columns 1 .. 8
  Trace t = prefix_sum(3, 9);
  for (int id : {1, 2}) t.tensors[id]["shape"] = {3, 6};
  try {
    t.lift();
    FAIL() << "lifted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::ShapeMismatch) << e.what();
    EXPECT_NE(std::string(e.what()).find("outside its size 6"), std::string::npos) << e.what();
    EXPECT_EQ(e.origin().line, 6) << e.what();
  }
}

// The recorder's versions of a tensor share its shape and dtype: a trace whose do not is
// malformed (libFuzzer found one whose slice of the earlier version changed the dtype).
TEST(LoopIrRecurrence, EarlierVersionOfAnotherDtypeOrShapeIsAParseError) {
  for (const char* field : {"dtype", "shape"}) {
    Trace t = prefix_sum(3, 9);
    if (std::string(field) == "dtype") t.tensors[1]["dtype"] = "f64";
    else t.tensors[1]["shape"] = {3, 10};
    try {
      t.lift();
      FAIL() << "lifted: " << field;
    } catch (const UserError& e) {
      EXPECT_EQ(e.kind(), UserError::Kind::Parse) << e.what();
      EXPECT_NE(std::string(e.what()).find("another shape or dtype"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace solar::lower
