// Tests of the recurrent family (src/lower/aten_rnn.cc): aten::lstm/gru/rnn_*.input lowered
// from hand-written traces to one repeat op per layer and direction; counts by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/trace_builder.h"
#include "solar/cost/graph_cost.h"
#include "solar/ir/graph.h"
#include "solar/ir/unroll.h"
#include "solar/ir/verify.h"
#include "solar/lower/aten.h"

namespace solar::lower {
namespace {

using nlohmann::json;
using Shape = std::vector<std::int64_t>;

struct Trace : testing::TraceBuilder {};
json T(int id) { return {{"tensor", id}}; }

struct Rnn {
  const char* op = "aten::lstm.input";
  std::int64_t G = 4, T = 5, B = 2, I = 3, H = 4, L = 1, D = 1;
  bool bias = true;
  bool train = false;
  double dropout = 0;
};

// A trace of one recurrent op whose output (T, B, D*H) is the program's output.
OpTrace rnn_trace(const Rnn& r) {
  Trace t;
  int x = t.tensor({r.T, r.B, r.I}, "input");
  json hx = json::array();
  const int n_state = r.G == 4 ? 2 : 1;
  for (int k = 0; k < n_state; ++k) hx.push_back(T(t.tensor({r.L * r.D, r.B, r.H}, "input")));
  json params = json::array();
  for (std::int64_t l = 0; l < r.L; ++l)
    for (std::int64_t d = 0; d < r.D; ++d) {
      params.push_back(T(t.tensor({r.G * r.H, l == 0 ? r.I : r.D * r.H}, "parameter")));
      params.push_back(T(t.tensor({r.G * r.H, r.H}, "parameter")));
      if (r.bias) {
        params.push_back(T(t.tensor({r.G * r.H}, "parameter")));
        params.push_back(T(t.tensor({r.G * r.H}, "parameter")));
      }
    }
  json outs = json::array();
  outs.push_back(t.tensor({r.T, r.B, r.D * r.H}, "output"));
  for (int k = 0; k < n_state; ++k) outs.push_back(t.tensor({r.L * r.D, r.B, r.H}));
  t.ops.push_back({{"op", r.op},
                   {"args",
                    {{"input", T(x)},
                     {"hx", r.G == 4 ? hx : hx[0]},
                     {"params", params},
                     {"has_biases", r.bias},
                     {"num_layers", r.L},
                     {"dropout", r.dropout},
                     {"train", r.train},
                     {"bidirectional", r.D == 2},
                     {"batch_first", false}}},
                   {"outputs", outs}});
  return t.build();
}

std::int64_t macs(const cost::GraphCost& c) {
  std::int64_t m = 0;
  for (const auto& [dt, n] : c.total.macs) m += static_cast<std::int64_t>(n.to_u64());
  return m;
}
std::int64_t flops(const cost::GraphCost& c) {
  std::int64_t f = 0;
  for (const auto& [dt, n] : c.total.vector_flops) f += static_cast<std::int64_t>(n.to_u64());
  return f;
}

std::vector<const ir::Op*> repeats(const ir::Graph& g) {
  std::vector<const ir::Op*> r;
  for (const ir::Op& op : g.ops())
    if (op.kind() == ir::OpKind::Repeat) r.push_back(&op);
  return r;
}

TEST(AtenRnn, LstmIsOneRepeatWithFormulaCounts) {
  Rnn r;
  LowerResult lr = lower_aten(rnn_trace(r));
  EXPECT_TRUE(lr.warnings.empty()) << lr.warnings[0];
  ir::verify(lr.graph);
  auto reps = repeats(lr.graph);
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_EQ(reps[0]->repeat().trips, r.T);
  EXPECT_FALSE(reps[0]->repeat().reverse);
  const auto c = cost::graph_cost(lr.graph);
  const std::int64_t T = r.T, B = r.B, I = r.I, H = r.H;
  // MACs per layer = T*B*4H*(I+H): the input projection of all steps plus one hidden
  // projection per step.
  EXPECT_EQ(macs(c), T * B * 4 * H * (I + H));
  // Vector FLOPs: the input bias once per step (T*B*4H); per step the hidden bias and the add
  // of the input gates (2 * B*4H), three sigmoids (1 add each), f*c, i*g, c', o*tanh(c')
  // (7 * B*H).
  EXPECT_EQ(flops(c), T * B * 4 * H + T * (2 * B * 4 * H + 7 * B * H));
  // Special functions: three sigmoids (exp + reciprocal each), tanh(g), tanh(c').
  EXPECT_EQ(static_cast<std::int64_t>(c.total.special_ops.to_u64()), T * B * H * (3 * 2 + 2));
  // The repeat counts as its unrolled graph.
  const auto u = cost::graph_cost(ir::unroll(lr.graph));
  EXPECT_EQ(macs(u), macs(c));
  EXPECT_EQ(flops(u), flops(c));
  EXPECT_EQ(u.total.bytes_read, c.total.bytes_read);
  EXPECT_EQ(u.total.bytes_written, c.total.bytes_written);
  EXPECT_EQ(u.compulsory_bytes(), c.compulsory_bytes());
}

TEST(AtenRnn, BidirectionalTwoLayersOneRepeatPerLayerAndDirection) {
  for (const char* op : {"aten::lstm.input", "aten::gru.input", "aten::rnn_tanh.input",
                         "aten::rnn_relu.input"}) {
    Rnn r;
    r.op = op;
    r.G = std::string(op) == "aten::lstm.input" ? 4 : std::string(op) == "aten::gru.input" ? 3 : 1;
    r.L = 2;
    r.D = 2;
    LowerResult lr = lower_aten(rnn_trace(r));
    EXPECT_TRUE(lr.warnings.empty()) << op << ": " << lr.warnings[0];
    ir::verify(lr.graph);
    auto reps = repeats(lr.graph);
    ASSERT_EQ(reps.size(), 4u) << op;
    for (std::size_t k = 0; k < reps.size(); ++k) {
      EXPECT_EQ(reps[k]->repeat().trips, r.T);
      EXPECT_EQ(reps[k]->repeat().reverse, k % 2 == 1) << op << " repeat " << k;
    }
    const std::int64_t T = r.T, B = r.B, I = r.I, H = r.H, G = r.G;
    // Per direction: layer 0 T*B*GH*(I+H), layer 1 T*B*GH*(2H+H).
    const auto c = cost::graph_cost(lr.graph);
    EXPECT_EQ(macs(c), 2 * T * B * G * H * (I + H) + 2 * T * B * G * H * (2 * H + H)) << op;
    const auto u = cost::graph_cost(ir::unroll(lr.graph));
    EXPECT_EQ(macs(u), macs(c)) << op;
    EXPECT_EQ(flops(u), flops(c)) << op;
    EXPECT_EQ(u.total.bytes_read + u.total.bytes_written, c.total.bytes_read + c.total.bytes_written)
        << op;
  }
}

TEST(AtenRnn, DropoutBetweenLayersInTrainingIsUnanalyzed) {
  Rnn r;
  r.L = 2;
  r.train = true;
  r.dropout = 0.5;
  LowerResult lr = lower_aten(rnn_trace(r));
  ASSERT_EQ(lr.warnings.size(), 1u);
  EXPECT_NE(lr.warnings[0].find("dropout"), std::string::npos) << lr.warnings[0];
  EXPECT_TRUE(repeats(lr.graph).empty());
  r.train = false;  // eval mode: dropout is the identity
  EXPECT_TRUE(lower_aten(rnn_trace(r)).warnings.empty());
}

}  // namespace
}  // namespace solar::lower
