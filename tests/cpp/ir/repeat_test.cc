// The repeat op in the IR: its text and JSON forms, the verifier's checks, and the flat graph
// ir::unroll writes for it.
#include <fmt/format.h>

#include <string>

#include <gmock/gmock.h>
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include "graph_equal.h"
#include "solar/ir/json.h"
#include "solar/ir/text.h"
#include "solar/ir/unroll.h"
#include "solar/ir/verify.h"

namespace solar::ir {
namespace {

using ::testing::HasSubstr;
using testing::graph_diff;

// An RNN over T steps (batch B, input I, hidden H), run backwards, with a nested repeat in
// its body (a small fixed-point loop on the new state).
std::string rnn(int T, int B, int I, int H, const std::string& body_extra = "") {
  return fmt::format(R"(graph rnn
x = f32[{0},{1},{2}] input
h0 = f32[{1},{3}] input
w = f32[{2},{3}] weight
u = f32[{3},{3}] weight
hT, ys = f32[{1},{3}]{{output}}, f32[{0},{1},{3}]{{output}} repeat {0} reverse (sliced x axis 0 as xt, carried h0 as h next h2, invariant w as wb, invariant u as ub) -> (last h2, stacked h2 axis 0) module "rnn" {{
  xt = f32[{1},{2}] input
  h = f32[{1},{3}] input
  wb = f32[{2},{3}] input
  ub = f32[{3},{3}] input
  a = f32[{1},{3}] einsum "bi,ih->bh" (xt, wb)
  b = f32[{1},{3}] einsum "bk,kh->bh" (h, ub)
  h1 = f32[{1},{3}] einsum [b={1},h={3}] none tanh(add($0,$1)) (a[b,h], b[b,h]) -> [b,h]
  h2 = f32[{1},{3}]{{output}} repeat 3 (carried h1 as p next q) -> (last q) {{
    p = f32[{1},{3}] input
    q = f32[{1},{3}]{{output}} einsum [b={1},h={3}] none mul($0,0.5) (p[b,h]) -> [b,h]
  }}
{4}}}
)",
                     T, B, I, H, body_extra);
}

TEST(RepeatText, PrintsAndParsesBackExactly) {
  Graph g = parse_graph(rnn(5, 2, 3, 4), "rnn.solar");
  ASSERT_EQ(g.ops().size(), 1u);
  const RepeatOp& r = g.ops()[0].repeat();
  EXPECT_EQ(r.trips, 5);
  EXPECT_TRUE(r.reverse);
  EXPECT_EQ(r.body->ops().size(), 4u);
  EXPECT_EQ(r.body->ops()[3].kind(), OpKind::Repeat);
  EXPECT_EQ(g.ops()[0].origin.module, "rnn");
  const std::string text = print_graph(g);
  Graph again = parse_graph(text, "rnn.solar");
  EXPECT_EQ(graph_diff(g, again), "");
  EXPECT_EQ(print_graph(again), text);
  EXPECT_THAT(text, HasSubstr("repeat 5 reverse (sliced x axis 0 as xt, carried h0 as h next h2, "
                              "invariant w as wb, invariant u as ub) -> (last h2, stacked h2 axis 0)"));
  EXPECT_THAT(text, HasSubstr("\n    q = f32[2,4]{output} einsum"));  // two levels deep
}

TEST(RepeatJson, RoundTripsThroughJson) {
  Graph g = parse_graph(rnn(4, 1, 2, 3), "rnn.solar");
  Graph back = graph_from_json(graph_to_json(g), "rnn.solar");
  EXPECT_EQ(graph_diff(g, back), "");
  EXPECT_EQ(print_graph(back), print_graph(g));
  const auto j = graph_to_json(g);
  EXPECT_EQ(j["ops"][0]["kind"], "repeat");
  EXPECT_EQ(j["ops"][0]["trips"], 4);
  EXPECT_EQ(j["ops"][0]["bindings"][1]["how"], "carried");
  EXPECT_EQ(j["ops"][0]["bindings"][1]["next"], "h2");
  EXPECT_EQ(j["ops"][0]["results"][1]["axis"], 0);
}

TEST(RepeatJson, RefusesUnknownBindingsWithTheirPath) {
  auto j = graph_to_json(parse_graph(rnn(4, 1, 2, 3)));
  j["ops"][0]["bindings"][0]["how"] = "scanned";
  try {
    graph_from_json(j, "g.json");
    FAIL() << "accepted";
  } catch (const UserError& e) {
    EXPECT_THAT(e.message(), HasSubstr("ops[0].bindings[0].how"));
    EXPECT_THAT(e.message(), HasSubstr("invariant carried sliced"));
  }
}

std::string invalid(const std::string& text) {
  try {
    parse_graph(text, "bad.solar");
  } catch (const UserError& e) {
    return fmt::format("{}:{}: {}", e.origin().file, e.origin().line, e.message());
  }
  return "";
}

std::string loop(const std::string& head, const std::string& body) {
  return "x = f32[3,2] input\nh0 = f32[2] input\n" + head + " {\n" + body + "}\n";
}

TEST(RepeatVerify, NamesWhatIsWrong) {
  const std::string body = "  xt = f32[2] input\n  h = f32[2] input\n"
                           "  h1 = f32[2]{output} einsum \"i,i->i\" (xt, h)\n";
  EXPECT_THAT(invalid(loop("y = f32[2]{output} repeat 0 (sliced x axis 0 as xt, carried h0 as h "
                           "next h1) -> (last h1)",
                           body)),
              HasSubstr("at least once"));
  EXPECT_THAT(invalid(loop("y = f32[2]{output} repeat 4 (sliced x axis 0 as xt, carried h0 as h "
                           "next h1) -> (last h1)",
                           body)),
              HasSubstr("extent 3, but the body runs 4 times"));
  EXPECT_THAT(invalid(loop("y = f32[2]{output} repeat 2 (sliced x axis 1 as xt, carried h0 as h "
                           "next h1) -> (last h1)",
                           body)),
              HasSubstr("a slice of 'x' along axis 1 is f32[3], but 'xt' is f32[2]"));
  EXPECT_THAT(invalid(loop("y = f32[2]{output} repeat 3 (sliced x axis 0 as xt) -> (last h1)", body)),
              HasSubstr("body tensor 'h' is input but no input binds it"));
  EXPECT_THAT(invalid(loop("y = f32[3,2]{output} repeat 3 (sliced x axis 0 as xt, carried h0 as h "
                           "next h1) -> (last h1)",
                           body)),
              HasSubstr("'y' is f32[3,2], but the last 'h1' gives f32[2]"));
  EXPECT_THAT(invalid(loop("y = f32[2,3]{output} repeat 3 (sliced x axis 0 as xt, carried h0 as h "
                           "next h1) -> (stacked h1 axis 0)",
                           body)),
              HasSubstr("stacking 'h1' gives f32[3,2]"));
  EXPECT_THAT(invalid(loop("y = f32[2]{output} repeat 3 (sliced x axis 0 as xt, carried h0 as h "
                           "next h1) -> (last h1)",
                           "  xt = f32[2] input\n  h = f32[2] input\n"
                           "  h1 = f32[2] einsum \"i,i->i\" (xt, h)\n")),
              HasSubstr("not marked {output} in the body"));
  EXPECT_THAT(invalid(loop("y = f32[2]{output} repeat 3 (sliced x axis 0 as xt, carried h0 as h "
                           "next h1, invariant h0 as xt) -> (last h1)",
                           body)),
              HasSubstr("bound twice"));
  // Inside the body, the ordinary checks, said to be in the body.
  EXPECT_THAT(invalid(loop("y = f32[2]{output} repeat 3 (sliced x axis 0 as xt, carried h0 as h "
                           "next h1) -> (last h1)",
                           "  xt = f32[2] input\n  h = f32[2] input\n"
                           "  h1 = f32[3]{output} einsum \"i,i->i\" (xt, h)\n")),
              HasSubstr("in its body"));
}

TEST(RepeatParse, UnclosedBodiesAndUnknownNamesAreErrorsWithTheirLine) {
  EXPECT_THAT(invalid("x = f32[3,2] input\ny = f32[2]{output} repeat 3 (sliced x axis 0 as xt) -> "
                      "(last xt) {\n  xt = f32[2] input\n"),
              HasSubstr("not closed by '}'"));
  EXPECT_THAT(invalid("x = f32[3,2] input\ny = f32[2]{output} repeat 3 (sliced x axis 0 as xq) -> "
                      "(last xt) {\n  xt = f32[2] input\n}\n"),
              HasSubstr("bad.solar:2"));
  EXPECT_THAT(invalid("x = f32[3,2] input\ny = f32[2]{output} repeat 3 (sliced x axis 0 as xq) -> "
                      "(last xt) {\n  xt = f32[2] input\n}\n"),
              HasSubstr("has no tensor 'xq'"));
  EXPECT_THAT(invalid("x = f32[3,2] input\ny = f32[2]{output} repeat 3 (scanned x as xt) -> "
                      "(last xt) {\n  xt = f32[2] input\n}\n"),
              HasSubstr("unknown binding 'scanned'"));
}

TEST(Unroll, WritesTripsCopiesOfTheBodyInIterationOrder) {
  constexpr int T = 5;
  Graph g = parse_graph(rnn(T, 2, 3, 4), "rnn.solar");
  Graph flat = unroll(g);
  EXPECT_EQ(why_invalid(flat), std::nullopt);
  int repeats = 0, body_ops = 0, concats = 0;
  for (const Op& op : flat.ops()) {
    repeats += op.kind() == OpKind::Repeat;
    body_ops += op.kind() == OpKind::Einsum;
    concats += op.kind() == OpKind::Move && op.move().kind == MoveKind::Concat;
  }
  EXPECT_EQ(repeats, 0);
  EXPECT_EQ(body_ops, T * (3 + 3));  // 3 einsums and a 3-step inner loop per step
  EXPECT_EQ(concats, 1);
  // Reverse: iteration 0 reads the last row of x.
  const Op& first_slice = flat.ops()[0];
  ASSERT_EQ(first_slice.move().kind, MoveKind::Slice);
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(first_slice.move().attrs.at("starts"))[0], T - 1);
  EXPECT_EQ(first_slice.name, "hT#0/xt.row");
  EXPECT_EQ(flat.tensor(*flat.find_tensor("ys")).role, Role::Output);
}

}  // namespace
}  // namespace solar::ir
