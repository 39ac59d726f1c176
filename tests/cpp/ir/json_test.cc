#include "solar/ir/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "graph_equal.h"
#include "solar/ir/text.h"

namespace solar::ir {
namespace {

using nlohmann::json;
using testing::graph_diff;

constexpr const char* kGraph = R"(graph attention_head
q = bf16[2,8,128,64]{dims="B,H,S,D"} input
k = bf16[2,8,128,64] input
w4 = i4[512,512]{sparsity="2:4"} weight
x = f32[2,8,32,32] input
w = f32[16,8,3,3]{zeros=0.25} weight
x2 = f32[2,8,64] input
s = f32[2,8,128,128] einsum "bhqd,bhkd->bhqk" (q, k) hint "attention"
m = f32[2,8,128,128] einsum [b=2,h=8,q=128,k=128] none select(ge($0,-inf),mul($0,0.125),nan) (s[b,h,q,k]) -> [b,h,q,k] where q >= k
y = f32[2,16,16,16]{output} einsum [n=2,k=16,p=16,q=16,c=8,r=3,s=3] sum mul($0,$1) (x[n,c,p*2+r-1,q*2+s-1] pad -inf, w[k,c,r,s]) -> [n,k,p,q] from "aten::conv2d" at "model.py:12"
t = bf16[2,128,8,64] move permute {perm=[0,2,1,3]} (q)
p = bf16[2,128,8,66] move pad {pads=[0,0,0,0,0,0,1,1], value=-inf, scale=1.0} (t)
v, i = f32[2,8], i64[2,8] opaque "topk" {vector_flops="100000000000000000000000", special_ops=0, bytes=16512, assumption="bitonic", k=8} (x2) name "topk_0"
f = f32[2,65]{output} unanalyzed "aten::_fft_r2c" {reason="no lowering for FFT"} (x2)
)";

void expect_parse_error(std::string_view text, std::string_view substr) {
  try {
    parse_graph_json(text, "g.json");
    ADD_FAILURE() << "no error for " << text;
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Parse) << e.what();
    EXPECT_NE(std::string(e.what()).find(substr), std::string::npos)
        << "message: " << e.what() << "\nwanted: " << substr;
    EXPECT_EQ(e.origin().file, "g.json");
  }
}

TEST(GraphJson, RoundTripTextJsonText) {
  Graph g = parse_graph(kGraph, "g.txt");
  json j = graph_to_json(g);
  Graph g2 = graph_from_json(j, "g.json");
  EXPECT_EQ(graph_diff(g, g2), "");
  Graph g3 = parse_graph_json(j.dump(2), "g.json");
  EXPECT_EQ(graph_diff(g, g3), "");
  // Explicit origins survive; "this op of this file" is not written.
  EXPECT_EQ(g3.ops()[2].origin.file, "model.py");
  EXPECT_EQ(g3.ops()[2].origin.line, 12);
  EXPECT_EQ(g3.ops()[2].origin.op, "aten::conv2d");
  EXPECT_FALSE(j["ops"][0].contains("origin"));
  EXPECT_EQ(j["ops"][0]["hint"], "attention");  // carried, and left out when none
  EXPECT_EQ(g3.ops()[0].einsum().hint, ContractionHint::Attention);
  EXPECT_FALSE(j["ops"][1].contains("hint"));
  // text -> graph -> JSON -> graph -> text gives the same text.
  EXPECT_EQ(print_graph(parse_graph(print_graph(g3))), print_graph(g));
  // And JSON -> graph -> JSON is a fixed point.
  EXPECT_EQ(graph_to_json(g3), j);
}

TEST(GraphJson, NewCombineFunctionsRoundTrip) {
  // Every rounding, remainder, bit and bit-reinterpreting function survives text -> JSON ->
  // text unchanged.
  const char* text = R"(
    a = i32[8] input
    f = f32[8] input
    b = i32[8] einsum [i=8] none xor(shl($0,3),or(lshr($0,29),and(ashr($0,1),not($0)))) (a[i]) -> [i]
    c = i32[8] einsum [i=8] none add(popcount($0),clz(rem($0,mod($0,idiv($0,7))))) (b[i]) -> [i]
    d = f32[8] einsum [i=8] none atan2(floor($0),ceil(trunc(round_even(round_away(sign($0)))))) (f[i]) -> [i]
    e = i32[8]{output} einsum [i=8] none f32_bits(bits_f32(add($0,$1))) (c[i], d[i]) -> [i]
    g = f32[8]{output} einsum [i=8] none add(atan($0),add(asin($0),acos($0))) (d[i]) -> [i]
    h = f32[8]{output} einsum [i=8] none add(erfinv($0),add(lgamma($0),digamma($0))) (d[i]) -> [i])";
  Graph g = parse_graph(text, "g.txt");
  json j = graph_to_json(g);
  Graph g2 = graph_from_json(j, "g.json");
  EXPECT_EQ(graph_diff(g, g2), "");
  EXPECT_EQ(print_graph(g2), print_graph(g));
  EXPECT_NE(j.dump().find("xor(shl($0,3),or(lshr($0,29),and(ashr($0,1),not($0))))"), std::string::npos);
}

TEST(GraphJson, FieldEncoding) {
  json j = graph_to_json(parse_graph(kGraph, "g.txt"));
  EXPECT_EQ(j["schema"], "solar.graph.v1");
  EXPECT_EQ(j["tensors"][0]["dims"], json({"B", "H", "S", "D"}));
  EXPECT_EQ(j["tensors"][2]["sparsity"], json({{"zero_fraction", 0.5}, {"structured_2_4", true}}));
  const json& y = j["ops"][2];
  EXPECT_EQ(y["kind"], "einsum");
  EXPECT_EQ(y["operands"][0]["subscript"], json({"n", "c", "p*2+r-1", "q*2+s-1"}));
  EXPECT_EQ(y["operands"][0]["pad"], "-inf");  // JSON has no infinity literal
  EXPECT_EQ(y["combine"], "mul($0,$1)");
  EXPECT_EQ(y["reduce"], "sum");
  EXPECT_EQ(j["ops"][1]["mask"], json({"q-k >= 0"}));
  EXPECT_EQ(j["ops"][1]["combine"], "select(ge($0,-inf),mul($0,0.125),nan)");
  const json& p = j["ops"][4];
  EXPECT_EQ(p["move"], "pad");
  EXPECT_EQ(p["attrs"]["value"], json({{"float", "-inf"}}));
  EXPECT_TRUE(p["attrs"]["scale"].is_number_float());
  const json& v = j["ops"][5];
  EXPECT_EQ(v["name"], "topk_0");
  EXPECT_EQ(v["vector_flops"], "100000000000000000000000");  // over 64 bits: a string
  EXPECT_EQ(v["bytes"], 16512);
  EXPECT_EQ(v["attrs"]["k"], 8);
  EXPECT_EQ(j["ops"][6]["framework_op"], "aten::_fft_r2c");
}

TEST(GraphJson, Errors) {
  const std::string ok = graph_to_json(parse_graph(kGraph)).dump();
  expect_parse_error(R"({"name": "g", "tensors": [], "ops": []})",
                     "schema: missing; this version of Solar reads \"schema\": \"solar.graph.v1\"");
  expect_parse_error(R"({"schema": "solar.graph.v9", "tensors": [], "ops": []})",
                     "unsupported schema \"solar.graph.v9\"; this version of Solar reads");
  expect_parse_error("{\"schema\": \"solar.graph.v1\",\n \"tensors\": [}",
                     "malformed JSON at byte");
  expect_parse_error("[1, 2]", "expected a graph object, found an array");
  expect_parse_error(R"({"schema": "solar.graph.v1", "tensors": [], "ops": [], "extra": 1})",
                     "unknown field \"extra\"");
  expect_parse_error(R"({"schema": "solar.graph.v1", "tensors": [1e999999], "ops": []})",
                     "malformed JSON: [json.exception.out_of_range.406] number overflow");
  std::string deep(100, '[');
  expect_parse_error(deep, "JSON nests deeper than 64 levels");

  auto edit = [&](const std::function<void(json&)>& f) {
    json j = json::parse(ok);
    f(j);
    return j.dump();
  };
  expect_parse_error(edit([](json& j) { j["ops"][2]["operands"][0]["subscript"][2] = "p*2+,r"; }),
                     "ops[2].operands[0].subscript[2]: expected an affine term");
  expect_parse_error(edit([](json& j) { j["ops"][2]["operands"][0]["subscript"][2] = "p*2 r"; }),
                     "ops[2].operands[0].subscript[2]: expected the end of the string, found 'r'");
  expect_parse_error(edit([](json& j) { j["ops"][2]["operands"][0]["subscript"][2] = "zz"; }),
                     "ops[2].operands[0].subscript[2]: unknown index 'zz'");
  expect_parse_error(edit([](json& j) { j["ops"][2]["inputs"][1] = "nope"; }),
                     "ops[2].inputs[1]: unknown tensor 'nope'");
  expect_parse_error(edit([](json& j) { j["ops"][2]["combine"] = "mul($0)"; }),
                     "ops[2].combine: 'mul' takes 2 arguments, got 1");
  expect_parse_error(edit([](json& j) { j["ops"][1]["mask"][0] = "q"; }),
                     "ops[1].mask[0]: expected '>=' or '<='");
  expect_parse_error(edit([](json& j) { j["tensors"][1]["shape"][0] = "8"; }),
                     "tensors[1].shape[0]: expected a 64-bit integer, found a string");
  expect_parse_error(edit([](json& j) { j["tensors"][1]["dtype"] = "f33"; }),
                     "tensors[1].dtype: unknown dtype \"f33\"");
  expect_parse_error(edit([](json& j) { j["tensors"][1]["name"] = "q"; }),
                     "tensors[1].name: tensor 'q' is defined twice");
  expect_parse_error(edit([](json& j) { j["ops"][5]["bytes"] = -1; }),
                     "ops[5].bytes: expected a count");
  expect_parse_error(edit([](json& j) { j["ops"][5]["bytes"] = "12x"; }),
                     "ops[5].bytes: expected a count");
  expect_parse_error(edit([](json& j) { j["ops"][5].erase("assumption"); }),
                     "ops[5]: missing field \"assumption\"");
  expect_parse_error(edit([](json& j) { j["ops"][3]["kind"] = "shuffle"; }),
                     "ops[3].kind: unknown op kind \"shuffle\"");
  expect_parse_error(edit([](json& j) { j["ops"][3]["attrs"]["perm"] = json::array({0, "1"}); }),
                     "ops[3].attrs.perm[1]: expected a 64-bit integer");
  expect_parse_error(edit([](json& j) { j["ops"][2]["indices"][1]["name"] = "n"; }),
                     "ops[2].indices[1].name: index 'n' is declared twice");
  expect_parse_error(edit([](json& j) { j["ops"][2]["typo"] = 1; }),
                     "ops[2]: unknown field \"typo\"");
}

TEST(GraphJson, VerifiesTheGraph) {
  json j = graph_to_json(parse_graph(kGraph));
  j["tensors"][6]["shape"][3] = 129;  // s is [2,8,128,128]; the einsum says k=128
  try {
    graph_from_json(j, "g.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph);
    EXPECT_NE(e.message().find("op 's': index 'k' has extent 128 but output 's' dimension 3 has "
                               "size 129"),
              std::string::npos)
        << e.what();
  }
}

class GraphFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("solar_json_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(GraphFiles, LoadsJsonOrText) {
  Graph g = parse_graph(kGraph);
  Graph from_text = load_graph_file(write("g.txt", kGraph));
  Graph from_json = load_graph_file(write("g.json", "\n  " + graph_to_json(g).dump(1)));
  EXPECT_EQ(graph_diff(g, from_text), "");
  EXPECT_EQ(graph_diff(g, from_json), "");
  EXPECT_EQ(from_json.source, (dir_ / "g.json").string());
}

TEST_F(GraphFiles, MissingFileIsAnIoError) {
  std::string path = (dir_ / "missing.json").string();
  try {
    load_graph_file(path);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Io);
    EXPECT_NE(e.message().find("cannot read graph file '" + path + "'"), std::string::npos);
  }
  try {
    load_graph_file(dir_.string());
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Io);
    EXPECT_NE(e.message().find("it is a directory"), std::string::npos);
  }
}

TEST_F(GraphFiles, ParseErrorsNameTheFile) {
  std::string path =
      write("bad.txt", "x = f32[4] input\ny = f32[4] einsum [i] none $0 (x[i) -> [i]\n");
  try {
    load_graph_file(path);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Parse);
    EXPECT_EQ(e.origin().file, path);
    EXPECT_EQ(e.origin().line, 2);
  }
}

TEST(GraphJson, DocExampleParses) {
  // The example in docs/graph-json.md is the first ```json block.
  std::ifstream f(std::string(SOLAR_SOURCE_DIR) + "/docs/graph-json.md");
  ASSERT_TRUE(f) << "docs/graph-json.md";
  std::string doc((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::size_t start = doc.find("```json\n");
  ASSERT_NE(start, std::string::npos);
  start += 8;
  std::size_t end = doc.find("```", start);
  Graph g = parse_graph_json(doc.substr(start, end - start), "graph-json.md");
  EXPECT_GE(g.ops().size(), 4u);
  // Its text form is the one the doc shows next to it (the first ``` block after the JSON).
  std::size_t t0 = doc.find("```\n", end + 3);
  ASSERT_NE(t0, std::string::npos);
  t0 += 4;
  std::size_t t1 = doc.find("```", t0);
  EXPECT_EQ(print_graph(g), doc.substr(t0, t1 - t0));
}

}  // namespace
}  // namespace solar::ir
