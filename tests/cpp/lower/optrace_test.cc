#include "solar/lower/optrace.h"

#include <limits>

#include <gtest/gtest.h>

#include "solar/util/errors.h"

namespace solar::lower {
namespace {

constexpr const char* kTrace = R"({
  "schema": "solar.optrace.v1", "name": "mm", "frontend": "torch",
  "tensors": [
    {"id": 0, "shape": [4, 8], "dtype": "float32", "role": "input", "strides": [8, 1], "storage": 0},
    {"id": 1, "shape": [8, 2], "dtype": "float32", "role": "parameter", "name": "w", "storage": 1},
    {"id": 2, "shape": [4, 2], "dtype": "float32", "role": "output", "storage": 2}
  ],
  "ops": [{"op": "aten::mm.default", "args": {"self": {"tensor": 0}, "mat2": {"tensor": 1}},
           "outputs": [2], "file": "model.py", "line": 7}]
})";

TEST(OpTrace, ParsesTensorsAndOps) {
  OpTrace t = parse_optrace(kTrace, "t.json");
  EXPECT_EQ(t.name, "mm");
  ASSERT_EQ(t.tensors.size(), 3u);
  EXPECT_EQ(t.tensor(1).name, "w");
  EXPECT_EQ(t.tensor(1).role, TraceRole::Parameter);
  EXPECT_EQ(t.tensor(0).strides, (std::vector<std::int64_t>{8, 1}));
  ASSERT_EQ(t.ops.size(), 1u);
  EXPECT_EQ(t.ops[0].op, "aten::mm.default");
  EXPECT_EQ(t.ops[0].line, 7);
  EXPECT_EQ(t.ops[0].outputs[0], std::optional<std::int64_t>(2));
}

TEST(OpTrace, RoundTripsThroughJson) {
  OpTrace t = parse_optrace(kTrace, "t.json");
  OpTrace u = optrace_from_json(optrace_to_json(t), "again");
  EXPECT_EQ(optrace_to_json(u), optrace_to_json(t));
}

TEST(OpTrace, ABufferBandRoundTrips) {
  // An additive causal mask buffer's values read at capture: 0 on c - r <= 0 (key <= query),
  // -inf elsewhere, an infinity in the trace's float form.
  OpTrace t = parse_optrace(R"({"schema": "solar.optrace.v1", "ops": [], "tensors": [
    {"id": 0, "shape": [1, 1, 4, 4], "dtype": "float32", "role": "buffer", "name": "bias",
     "band": {"lower": null, "upper": 0, "inside": 0, "outside": {"float": "-inf"}}}]})");
  ASSERT_TRUE(t.tensor(0).band);
  EXPECT_FALSE(t.tensor(0).band->lower);
  EXPECT_EQ(t.tensor(0).band->upper, 0);
  EXPECT_EQ(t.tensor(0).band->outside, -std::numeric_limits<double>::infinity());
  OpTrace u = optrace_from_json(optrace_to_json(t), "again");
  EXPECT_EQ(optrace_to_json(u), optrace_to_json(t));
  try {
    parse_optrace(R"({"schema": "solar.optrace.v1", "ops": [], "tensors": [
      {"id": 0, "shape": [4], "dtype": "float32", "role": "buffer", "band": {"inside": 1}}]})");
    FAIL() << "expected a parse error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(".band must be"), std::string::npos);
  }
}

TEST(OpTrace, RejectsAWrongSchema) {
  try {
    parse_optrace(R"({"schema": "solar.graph.v1", "tensors": [], "ops": []})", "g.json");
    FAIL() << "expected a parse error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Parse);
    EXPECT_NE(std::string(e.what()).find("solar.optrace.v1"), std::string::npos);
  }
}

TEST(OpTrace, RejectsAnUndeclaredOutput) {
  EXPECT_THROW(parse_optrace(R"({"schema": "solar.optrace.v1", "tensors": [],
                                 "ops": [{"op": "aten::relu.default", "args": {}, "outputs": [3]}]})"),
               UserError);
}

TEST(OpTrace, RejectsADuplicateTensorId) {
  try {
    parse_optrace(R"({"schema": "solar.optrace.v1", "ops": [], "tensors": [
      {"id": 0, "shape": [1], "dtype": "float32", "role": "input"},
      {"id": 0, "shape": [1], "dtype": "float32", "role": "input"}]})");
    FAIL() << "expected a parse error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("declared twice"), std::string::npos);
  }
}

}  // namespace
}  // namespace solar::lower
