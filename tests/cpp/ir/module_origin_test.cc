// The module path of an op's origin and the graph's module classes survive the text and
// JSON forms (docs/ir-text.md, docs/graph-json.md).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ir/graph_equal.h"
#include "solar/ir/json.h"
#include "solar/ir/text.h"

namespace solar::ir {
namespace {

constexpr const char* kText = R"(graph tree {frontend="torch"}
module "" "Net"
module "blk.0" "Block"
x = f32[8,8] input
w = f32[8,8] weight
a = f32[8,8] einsum "ij,jk->ik" (x, w) from "aten::mm" module "blk.0.fc"
y = f32[8,8]{output} einsum "ij,ij->ij" (a, x)
)";

TEST(ModuleOrigin, TextFormReadsModulesAndClasses) {
  Graph g = parse_graph(kText, "tree.solar");
  EXPECT_EQ(g.ops()[0].origin.module, "blk.0.fc");
  EXPECT_EQ(g.ops()[0].origin.op, "aten::mm");
  EXPECT_EQ(g.ops()[1].origin.module, "");
  EXPECT_EQ(g.module_types.at(""), "Net");
  EXPECT_EQ(g.module_types.at("blk.0"), "Block");
}

TEST(ModuleOrigin, TextFormRoundTrips) {
  Graph g = parse_graph(kText, "tree.solar");
  std::string printed = print_graph(g);
  EXPECT_NE(printed.find("module \"blk.0.fc\""), std::string::npos) << printed;
  Graph again = parse_graph(printed, "tree.solar");
  EXPECT_EQ(testing::graph_diff(g, again), "");
  EXPECT_EQ(again.ops()[0].origin.module, "blk.0.fc");
}

TEST(ModuleOrigin, JsonFormRoundTrips) {
  Graph g = parse_graph(kText, "tree.solar");
  nlohmann::json j = graph_to_json(g);
  EXPECT_EQ(j["ops"][0]["origin"]["module"], "blk.0.fc");
  EXPECT_EQ(j["modules"]["blk.0"], "Block");
  EXPECT_FALSE(j["ops"][1].contains("origin") && j["ops"][1]["origin"].contains("module"));
  Graph again = graph_from_json(j, "tree.json");
  EXPECT_EQ(testing::graph_diff(g, again), "");
  EXPECT_EQ(again.module_types, g.module_types);
}

TEST(ModuleOrigin, JsonRejectsANonStringModule) {
  nlohmann::json j = graph_to_json(parse_graph(kText, "tree.solar"));
  j["ops"][0]["origin"]["module"] = 3;
  EXPECT_THROW(graph_from_json(j, "bad.json"), UserError);
  j = graph_to_json(parse_graph(kText, "tree.solar"));
  j["modules"] = nlohmann::json::array();
  EXPECT_THROW(graph_from_json(j, "bad.json"), UserError);
}

}  // namespace
}  // namespace solar::ir
