// Collective ops: their text and JSON forms round-trip, the result's shape follows the
// frameworks, and the verifier names what is wrong.
#include "solar/ir/collective.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "graph_equal.h"
#include "solar/ir/json.h"
#include "solar/ir/text.h"

namespace solar::ir {
namespace {

using testing::graph_diff;

// Every kind, with and without a group name and a layout.
constexpr const char* kEveryKind = R"(graph ranks
x = bf16[4,16] input
a = bf16[4,16] collective all_reduce sum {size=8, group="tp", ranks_per_domain=8} (x)
b = bf16[8,16] collective all_gather {size=2, group="sp", axis=0} (x)
c = bf16[4,8] collective reduce_scatter avg {size=2, axis=1} (x)
d = bf16[2,32] collective all_to_all {size=2, group="ep", split_axis=0, concat_axis=1} (x)
e = bf16[4,16]{output} collective send {group="pp", peer=1} (x)
f = bf16[4,16] collective recv {peer=1} ()
g = bf16[4,16] collective broadcast {size=4, ranks_per_domain=2, root=3} (f)
h = bf16[4,16] collective all_reduce max {size=16, ranks_per_domain=16, torus_extent=[4,4]} (g)
)";

TEST(Collective, TextRoundTripsEveryKind) {
  Graph g = parse_graph(kEveryKind);
  ASSERT_EQ(g.ops().size(), 8u);
  const CollectiveOp& a = g.ops()[0].collective();
  EXPECT_EQ(a.kind, CollectiveKind::AllReduce);
  EXPECT_EQ(a.reduction, CollectiveReduction::Sum);
  EXPECT_EQ(a.group.size, 8);
  EXPECT_EQ(a.group.name, "tp");
  EXPECT_EQ(a.group.ranks_per_domain, 8);
  EXPECT_EQ(g.ops()[2].collective().reduction, CollectiveReduction::Avg);
  EXPECT_EQ(g.ops()[3].collective().axis, 0);
  EXPECT_EQ(g.ops()[3].collective().concat_axis, 1);
  EXPECT_EQ(g.ops()[4].collective().group.size, 2);  // a send is a pair
  EXPECT_EQ(g.ops()[5].inputs.size(), 0u);
  EXPECT_EQ(g.ops()[6].collective().root, 3);
  EXPECT_EQ(g.ops()[7].collective().group.torus_extent, (std::vector<std::int64_t>{4, 4}));
  EXPECT_EQ(g.ops()[0].kind(), OpKind::Collective);
  EXPECT_EQ(op_kind_name(OpKind::Collective), "collective");
  // The canonical text is what was written, and reads back to the same graph.
  EXPECT_EQ(print_graph(g), kEveryKind);
  EXPECT_EQ(graph_diff(g, parse_graph(print_graph(g))), "");
}

TEST(Collective, JsonRoundTripsEveryKind) {
  Graph g = parse_graph(kEveryKind);
  nlohmann::json j = graph_to_json(g);
  EXPECT_EQ(j["ops"][0]["kind"], "collective");
  EXPECT_EQ(j["ops"][0]["collective"], "all_reduce");
  EXPECT_EQ(j["ops"][0]["reduction"], "sum");
  EXPECT_EQ(j["ops"][0]["group"], (nlohmann::json{{"size", 8}, {"name", "tp"},
                                                   {"ranks_per_domain", 8}}));
  EXPECT_EQ(j["ops"][3]["split_axis"], 0);
  EXPECT_EQ(j["ops"][3]["concat_axis"], 1);
  EXPECT_FALSE(j["ops"][1].contains("reduction"));  // all_gather does not reduce
  EXPECT_EQ(j["ops"][4]["peer"], 1);
  EXPECT_EQ(j["ops"][6]["root"], 3);
  EXPECT_EQ(graph_diff(g, parse_graph_json(j.dump(), "g.json")), "");
  EXPECT_EQ(print_graph(parse_graph_json(j.dump(), "g.json")), kEveryKind);
}

TEST(Collective, ShapesFollowTheFrameworks) {
  CollectiveOp c;
  c.group.size = 4;
  c.kind = CollectiveKind::AllGather;
  c.axis = 1;
  EXPECT_EQ(collective_output_shape(c, {3, 5}).shape, (Shape{3, 5 * 4}));  // axis 1 times n
  c.kind = CollectiveKind::ReduceScatter;
  c.axis = 0;
  EXPECT_EQ(collective_output_shape(c, {8, 5}).shape, (Shape{8 / 4, 5}));  // axis 0 over n
  EXPECT_NE(collective_output_shape(c, {6, 5}).why_not.find("do not divide axis 0"),
            std::string::npos);
  c.kind = CollectiveKind::AllToAll;
  c.axis = 0;
  c.concat_axis = 1;
  EXPECT_EQ(collective_output_shape(c, {8, 5}).shape, (Shape{8 / 4, 5 * 4}));
  c.concat_axis = 0;  // torch's all_to_all_single: the shape is kept
  EXPECT_EQ(collective_output_shape(c, {8, 5}).shape, (Shape{8, 5}));
  c.concat_axis = 2;
  EXPECT_NE(collective_output_shape(c, {8, 5}).why_not.find("concat_axis 2 is out of range"),
            std::string::npos);
  for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::Broadcast,
                           CollectiveKind::Send}) {
    c.kind = k;
    EXPECT_EQ(collective_output_shape(c, {8, 5}).shape, (Shape{8, 5}));
  }
}

void expect_invalid(std::string_view text, std::string_view substr) {
  try {
    parse_graph(text);
    ADD_FAILURE() << "no error for " << text;
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph) << e.what();
    EXPECT_NE(std::string(e.what()).find(substr), std::string::npos)
        << "message: " << e.what() << "\nwanted: " << substr;
  }
}

TEST(Collective, VerifierNamesWhatIsWrong) {
  expect_invalid("x = f32[4] input\ny = f32[8]{output} collective all_reduce sum {size=2} (x)",
                 "op 'y': result 'y' has shape [8], but all_reduce over 2 ranks of 'x' [4] "
                 "gives [4]");
  expect_invalid("x = f32[4,6] input\ny = f32[4,12]{output} collective all_gather {size=2, "
                 "axis=0} (x)",
                 "all_gather over 2 ranks of 'x' [4,6] gives [8,6]");
  expect_invalid("x = f32[5] input\ny = f32[1]{output} collective reduce_scatter sum {size=4, "
                 "axis=0} (x)",
                 "the group's 4 ranks do not divide axis 0 of the input [5] (extent 5)");
  expect_invalid("x = f32[4] input\ny = f32[4]{output} collective all_gather {size=2, axis=1} (x)",
                 "axis 1 is out of range for a rank-1 input (0 to 0)");
  expect_invalid("x = f32[4] input\ny = bf16[4]{output} collective all_reduce sum {size=2} (x)",
                 "result 'y' is bf16 but the input 'x' is f32: a collective keeps the dtype");
  expect_invalid("x = f32[4] input\ny = f32[4]{output} collective all_reduce sum {size=0} (x)",
                 "group size 0 is not a number of ranks (>= 1)");
  expect_invalid("x = f32[4] input\ny = f32[4]{output} collective all_reduce sum {size=6, "
                 "ranks_per_domain=4} (x)",
                 "ranks_per_domain 4 does not divide the group's 6 ranks");
  expect_invalid("x = f32[4] input\ny = f32[4]{output} collective all_reduce sum {size=8, "
                 "ranks_per_domain=8, torus_extent=[2,2]} (x)",
                 "torus_extent [2,2] multiplies to 4, not ranks_per_domain 8");
  expect_invalid("x = f32[4] input\ny = f32[4]{output} collective all_reduce sum {size=4, "
                 "torus_extent=[2,2]} (x)",
                 "torus_extent [2,2] needs ranks_per_domain");
  expect_invalid("x = f32[4] input\ny = f32[4]{output} collective broadcast {size=4, root=4} (x)",
                 "root 4 is not a rank of the group (0 to 3)");
  expect_invalid("x = f32[4] input\ny = f32[4]{output} collective send {peer=-1} (x)",
                 "peer -1 is not a rank (>= 0)");
  expect_invalid("x = f32[4] input\ny = f32[4]{output} collective recv {peer=0} (x)",
                 "recv takes 0 inputs, not 1");
}

void expect_parse_error(std::string_view text, std::string_view substr) {
  try {
    parse_graph(text);
    ADD_FAILURE() << "no error for " << text;
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Parse) << e.what();
    EXPECT_NE(std::string(e.what()).find(substr), std::string::npos)
        << "message: " << e.what() << "\nwanted: " << substr;
  }
}

TEST(Collective, TextErrors) {
  expect_parse_error("x = f32[4] input\ny = f32[4] collective all_sum {size=2} (x)",
                     "a collective kind (all_reduce all_gather");
  expect_parse_error("x = f32[4] input\ny = f32[4] collective all_reduce {size=2} (x)",
                     "a reduction (sum prod max min avg)");
  expect_parse_error("x = f32[4] input\ny = f32[4] collective all_reduce sum {group=\"tp\"} (x)",
                     "'y': all_reduce needs size=N, the number of ranks in its group");
  expect_parse_error("x = f32[4] input\ny = f32[4] collective all_reduce sum {size=2, axis=0} (x)",
                     "all_reduce takes no attribute 'axis'");
  expect_parse_error("x = f32[4] input\ny = f32[4] collective send {size=2, peer=1} (x)",
                     "send takes no attribute 'size'");
  expect_parse_error("x = f32[4] input\ny = f32[4] collective recv {} ()",
                     "recv needs peer=R, the rank it receives from");
  expect_parse_error("x = f32[4] input\ny = f32[4] collective all_reduce sum {size=\"8\"} (x)",
                     "all_reduce attribute 'size' must be an integer");
}

void expect_json_error(const nlohmann::json& op, std::string_view substr) {
  nlohmann::json j = {{"schema", "solar.graph.v1"},
                      {"tensors", {{{"name", "x"}, {"shape", {4}}, {"dtype", "f32"},
                                    {"role", "input"}},
                                   {{"name", "y"}, {"shape", {4}}, {"dtype", "f32"},
                                    {"role", "output"}}}},
                      {"ops", {op}}};
  try {
    parse_graph_json(j.dump(), "g.json");
    ADD_FAILURE() << "no error for " << op.dump();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(substr), std::string::npos)
        << "message: " << e.what() << "\nwanted: " << substr;
  }
}

TEST(Collective, JsonErrors) {
  nlohmann::json op = {{"kind", "collective"}, {"collective", "all_reduce"},
                       {"reduction", "sum"}, {"group", {{"size", 2}}},
                       {"inputs", {"x"}}, {"outputs", {"y"}}};
  nlohmann::json bad = op;
  bad["collective"] = "all_sum";
  expect_json_error(bad, "unknown collective \"all_sum\"");
  bad = op;
  bad.erase("reduction");
  expect_json_error(bad, "missing field \"reduction\"");
  bad = op;
  bad["reduction"] = "mean";
  expect_json_error(bad, "unknown reduction \"mean\" (sum prod max min avg)");
  bad = op;
  bad["axis"] = 0;
  expect_json_error(bad, "all_reduce has no \"axis\"");
  bad = op;
  bad["group"] = {{"size", 2}, {"ranks", 2}};
  expect_json_error(bad, "unknown field \"ranks\"");
  bad = op;
  bad.erase("group");
  expect_json_error(bad, "missing field \"group\"");
  bad = op;
  bad["collective"] = "broadcast";
  expect_json_error(bad, "broadcast does not reduce: no \"reduction\"");
  bad = op;
  bad["group"] = {{"size", 3}};
  bad["collective"] = "send";
  bad.erase("reduction");
  expect_json_error(bad, "missing field \"peer\"");
}

}  // namespace
}  // namespace solar::ir
