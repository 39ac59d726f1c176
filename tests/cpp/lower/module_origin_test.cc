// Module paths from the trace to the graph: each op lowered from a traced op carries the
// traced op's module; the trace's module classes become the graph's.
#include <gtest/gtest.h>

#include "solar/lower/aten.h"
#include "solar/lower/optrace.h"

namespace solar::lower {
namespace {

// x @ w0 in "h.0.fc", then gelu in "h.0" (lowered as several graph ops), then a residual
// add with no module.
constexpr const char* kTrace = R"({
  "schema": "solar.optrace.v1", "name": "two", "frontend": "torch",
  "modules": {"": "Net", "h": "ModuleList", "h.0": "Block", "h.0.fc": "Linear"},
  "tensors": [
    {"id": 0, "shape": [4, 8], "dtype": "float32", "role": "input", "storage": 0},
    {"id": 1, "shape": [8, 8], "dtype": "float32", "role": "parameter", "name": "w", "storage": 1},
    {"id": 2, "shape": [4, 8], "dtype": "float32", "role": "intermediate", "storage": 2},
    {"id": 3, "shape": [4, 8], "dtype": "float32", "role": "intermediate", "storage": 3},
    {"id": 4, "shape": [4, 8], "dtype": "float32", "role": "output", "storage": 4}
  ],
  "ops": [
    {"op": "aten::mm.default", "args": {"self": {"tensor": 0}, "mat2": {"tensor": 1}},
     "outputs": [2], "file": "model.py", "line": 7, "module": "h.0.fc"},
    {"op": "aten::gelu.default", "args": {"self": {"tensor": 2}, "approximate": "tanh"},
     "outputs": [3], "file": "model.py", "line": 8, "module": "h.0"},
    {"op": "aten::add.Tensor", "args": {"self": {"tensor": 3}, "other": {"tensor": 0}, "alpha": 1},
     "outputs": [4], "file": "model.py", "line": 9}
  ]
})";

TEST(ModuleOrigin, TraceKeepsModulesThroughJson) {
  OpTrace t = parse_optrace(kTrace, "t.json");
  ASSERT_EQ(t.ops.size(), 3u);
  EXPECT_EQ(t.ops[0].module, "h.0.fc");
  EXPECT_EQ(t.ops[2].module, "");
  EXPECT_EQ(t.modules.at("h.0"), "Block");
  OpTrace u = optrace_from_json(optrace_to_json(t), "again");
  EXPECT_EQ(u.ops[1].module, "h.0");
  EXPECT_EQ(u.modules, t.modules);
}

TEST(ModuleOrigin, EveryLoweredOpInheritsItsTracedOpsModule) {
  LowerResult r = lower_aten(parse_optrace(kTrace, "t.json"));
  EXPECT_EQ(r.graph.module_types.at(""), "Net");
  EXPECT_EQ(r.graph.module_types.at("h.0.fc"), "Linear");
  std::size_t in_fc = 0, in_block = 0, outside = 0;
  for (const ir::Op& op : r.graph.ops()) {
    const char* expected = op.origin.line == 7 ? "h.0.fc" : op.origin.line == 8 ? "h.0" : "";
    EXPECT_EQ(op.origin.module, expected) << op.name << " at line " << op.origin.line;
    in_fc += op.origin.module == "h.0.fc";
    in_block += op.origin.module == "h.0";
    outside += op.origin.module.empty();
  }
  EXPECT_GE(in_fc, 1u);
  EXPECT_GE(in_block, 1u);  // gelu-tanh lowers to one or more ops, each in h.0
  EXPECT_GE(outside, 1u);
}

TEST(ModuleOrigin, RejectsANonStringModule) {
  std::string bad = kTrace;
  bad.replace(bad.find("\"h.0.fc\"}"), 8, "7}");
  EXPECT_THROW(parse_optrace(bad, "t.json"), UserError);
}

}  // namespace
}  // namespace solar::lower
