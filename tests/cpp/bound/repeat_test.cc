// A repeat op counts and bounds exactly as its unrolled graph (ir/unroll.h; docs/cost.md,
// "Repeat"), on random bodies: work, unfused and compulsory bytes, the unfused and fused
// levels; and its cache-aware level stays between the fused level and the unrolled graph's
// no-fusion schedule.
#include <fmt/format.h>

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "solar/bound/cache_aware.h"
#include "solar/bound/sol.h"
#include "solar/cost/graph_cost.h"
#include "solar/hw/database.h"
#include "solar/ir/text.h"
#include "solar/ir/unroll.h"
#include "solar/ir/verify.h"

namespace solar::bound {
namespace {

// A random recurrence: a sequence x (sliced along its time axis), one or two carried states,
// weights, a body of matmuls, gates and an optional reduction; random trips, direction,
// dtype, stacked and last results, and an outer graph that reads some of them.
struct RandomLoop {
  std::string text;
  int trips = 0;
};

RandomLoop random_loop(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int T = pick(1, 6), B = pick(1, 3), I = pick(1, 5), H = pick(2, 6);
  const bool batch_major = pick(0, 1), reverse = pick(0, 1), two_states = pick(0, 1);
  const bool reduce = pick(0, 1), use_stack = pick(0, 1), use_last = pick(0, 1);
  // A running sum carried through the loop whose final value the graph may not read: then
  // its update is dead in the last iteration only. The stacked reduction may be unread too.
  const bool acc = pick(0, 1), use_acc = pick(0, 1), use_reduce = pick(0, 1);
  const std::string dt = pick(0, 1) ? "bf16" : "f32";
  std::string s = "graph loop\n";
  s += batch_major ? fmt::format("x = {}[{},{},{}] input\n", dt, B, T, I)
                   : fmt::format("x = {}[{},{},{}] input\n", dt, T, B, I);
  s += fmt::format("h0 = {}[{},{}] input\n", dt, B, H);
  if (two_states) s += fmt::format("c0 = {}[{},{}] input\n", dt, B, H);
  if (acc) s += fmt::format("s0 = f32[{}] input\n", H);
  s += fmt::format("w = {}[{},{}] weight\nu = {}[{},{}] weight\n", dt, I, H, dt, H, H);
  std::vector<std::string> types = {fmt::format("{}[{},{}]", dt, B, H),
                                    batch_major ? fmt::format("{}[{},{},{}]", dt, B, T, H)
                                                : fmt::format("{}[{},{},{}]", dt, T, B, H)};
  std::vector<std::string> names = {"hT", "ys"};
  std::vector<std::string> results = {"last h1", fmt::format("stacked h1 axis {}", batch_major ? 1 : 0)};
  if (two_states) {
    names.push_back("cT");
    types.push_back(fmt::format("{}[{},{}]", dt, B, H));
    results.push_back("last c1");
  }
  if (reduce) {
    names.push_back("rs");
    types.push_back(fmt::format("f32[{}]", T));
    results.push_back("stacked r axis 0");
  }
  if (acc) {
    names.push_back("sT");
    types.push_back(fmt::format("f32[{}]", H));
    results.push_back("last s1");
  }
  std::string ins = fmt::format("sliced x axis {} as xt, carried h0 as h next h1", batch_major ? 1 : 0);
  if (two_states) ins += ", carried c0 as c next c1";
  if (acc) ins += ", carried s0 as s next s1";
  ins += ", invariant w as wb, invariant u as ub";
  // Which results the outer graph reads: a final op over them, or they are outputs.
  for (std::size_t k = 0; k < names.size(); ++k) {
    const std::string& n = names[k];
    const bool output = (n == "hT" && use_last) || (n == "ys" && use_stack) || n == "cT" ||
                        (n == "rs" && use_reduce) || (n == "sT" && use_acc);
    types[k] += output ? "{output}" : "";
  }
  s += fmt::format("{} = {} repeat {}{} ({}) -> ({}) {{\n", fmt::join(names, ", "),
                   fmt::join(types, ", "), T, reverse ? " reverse" : "", ins,
                   fmt::join(results, ", "));
  s += fmt::format("  xt = {}[{},{}] input\n  h = {}[{},{}] input\n", dt, B, I, dt, B, H);
  if (two_states) s += fmt::format("  c = {}[{},{}] input\n", dt, B, H);
  if (acc) s += fmt::format("  s = f32[{}] input\n", H);
  s += fmt::format("  wb = {}[{},{}] input\n  ub = {}[{},{}] input\n", dt, I, H, dt, H, H);
  s += fmt::format("  a = f32[{},{}] einsum \"bi,ih->bh\" (xt, wb)\n", B, H);
  s += fmt::format("  b = f32[{},{}] einsum \"bk,kh->bh\" (h, ub)\n", B, H);
  const std::string gate = pick(0, 1) ? "tanh" : "sigmoid";
  if (two_states) {
    s += fmt::format("  c1 = {}[{},{}]{{output}} einsum [b={},h={}] none add(mul($0,0.5),{}(add($1,$2))) "
                     "(c[b,h], a[b,h], b[b,h]) -> [b,h]\n",
                     dt, B, H, B, H, gate);
    s += fmt::format("  h1 = {}[{},{}]{{output}} einsum [b={},h={}] none mul(tanh($0),sigmoid($1)) "
                     "(c1[b,h], a[b,h]) -> [b,h]\n",
                     dt, B, H, B, H);
  } else {
    s += fmt::format("  h1 = {}[{},{}]{{output}} einsum [b={},h={}] none {}(add($0,$1)) "
                     "(a[b,h], b[b,h]) -> [b,h]\n",
                     dt, B, H, B, H, gate);
  }
  if (reduce)
    s += fmt::format("  r = f32[]{{output}} einsum [b={},h={}] sum mul($0,$0) (h1[b,h]) -> []\n", B, H);
  if (acc)
    s += fmt::format("  s1 = f32[{0}]{{output}} einsum [h={0},b={1}] sum add($0,$1) (s[h], h1[b,h]) "
                     "-> [h]\n",
                     H, B);
  s += "}\n";
  // Something downstream always reads the final state.
  s += fmt::format("z = f32[{},{}]{{output}} einsum [b={},h={}] none exp($0) (hT[b,h]) -> [b,h]\n",
                   B, H, B, H);
  return {s, T};
}

void expect_same_bounds(const DeviceBounds& a, const DeviceBounds& b, const std::string& what) {
  EXPECT_NEAR(a.unfused.seconds, b.unfused.seconds, 1e-9 * b.unfused.seconds) << what;
  EXPECT_NEAR(a.fused.seconds, b.fused.seconds, 1e-9 * b.fused.seconds) << what;
  EXPECT_EQ(a.unfused.bottleneck, b.unfused.bottleneck) << what;
  EXPECT_EQ(a.fused.bottleneck, b.fused.bottleneck) << what;
  ASSERT_EQ(a.fused.terms.size(), b.fused.terms.size()) << what;
  for (std::size_t i = 0; i < a.fused.terms.size(); ++i) {
    EXPECT_EQ(a.fused.terms[i].resource, b.fused.terms[i].resource) << what;
    EXPECT_NEAR(a.fused.terms[i].seconds, b.fused.terms[i].seconds,
                1e-9 * b.fused.terms[i].seconds)
        << what;
  }
}

TEST(Repeat, RandomBodiesCountAndBoundAsTheirUnrolledGraph) {
  hw::DeviceDb db = hw::DeviceDb::load_default();
  std::mt19937 rng(20261202);
  int looped_ops = 0, unrolled_ops = 0;
  for (int seed = 0; seed < 150; ++seed) {
    RandomLoop loop = random_loop(rng);
    SCOPED_TRACE(loop.text);
    ir::Graph g = ir::parse_graph(loop.text, "random.solar");
    ir::Graph flat = ir::unroll(g);
    ASSERT_EQ(ir::why_invalid(flat), std::nullopt);
    looped_ops += static_cast<int>(g.ops().size());
    unrolled_ops += static_cast<int>(flat.ops().size());
    const cost::GraphCost a = cost::graph_cost(g), b = cost::graph_cost(flat);
    EXPECT_EQ(a.total.macs, b.total.macs);
    EXPECT_EQ(a.total.vector_flops, b.total.vector_flops);
    EXPECT_EQ(a.total.special_ops, b.total.special_ops);
    EXPECT_EQ(a.total.bytes_read, b.total.bytes_read);
    EXPECT_EQ(a.total.bytes_written, b.total.bytes_written);
    EXPECT_EQ(a.total.live_points, b.total.live_points);
    EXPECT_EQ(a.compulsory_bytes_read, b.compulsory_bytes_read);
    EXPECT_EQ(a.compulsory_bytes_written, b.compulsory_bytes_written);
    for (const char* device : {"H100_SXM", "B200", "MI300X"}) {
      const hw::Device& d = db.get(device);
      for (CacheState state : {CacheState::Cold, CacheState::Warm}) {
        const Options options{MathPolicy::PytorchDefault, state};
        expect_same_bounds(compute_bounds(g, a, d, options), compute_bounds(flat, b, d, options),
                           fmt::format("{} {}", device, state == CacheState::Cold ? "cold" : "warm"));
      }
      // The body as a unit: between the fused level and the unfused one, and no worse than
      // the unrolled graph run op by op at the same capacity.
      const DeviceBounds bounds = compute_bounds(g, a, d, {});
      tiling::GraphTrafficModel model(g, a), flat_model(flat, b);
      const CacheAwareBound level =
          cache_aware_bound(g, a, d, bounds, model, tiling::TrafficMode::Attainable);
      ASSERT_TRUE(level.available);
      EXPECT_GE(level.traffic_bytes, a.compulsory_bytes());
      EXPECT_LE(level.traffic_bytes, a.total.bytes());
      tiling::GraphCurveOptions no_fusion;
      no_fusion.fuse = false;
      tiling::GraphTrafficModel flat_alone(flat, b, no_fusion);
      EXPECT_LE(level.traffic_bytes,
                flat_alone.at(*level.capacity.bytes, tiling::TrafficMode::Attainable).traffic_bytes);
      const CacheAwareBound provable =
          cache_aware_bound(g, a, d, bounds, model, tiling::TrafficMode::Provable);
      if (provable.available) {
        EXPECT_LE(provable.traffic_bytes, level.traffic_bytes);
        EXPECT_GE(provable.traffic_bytes, a.compulsory_bytes());
      }
    }
  }
  EXPECT_LT(looped_ops, unrolled_ops);
}

// The streamed and resident schedules of a long recurrence with weights that fit on chip:
// the weights and state are read once, not once per step.
TEST(Repeat, WeightsAndStateStayOnChipAcrossIterations) {
  constexpr int T = 64, B = 2, I = 32, H = 64;
  ir::Graph g = ir::parse_graph(fmt::format(R"(
x = f32[{0},{1},{2}] input
h0 = f32[{1},{3}] input
w = f32[{2},{3}] weight
u = f32[{3},{3}] weight
hT, ys = f32[{1},{3}]{{output}}, f32[{0},{1},{3}]{{output}} repeat {0} (sliced x axis 0 as xt, carried h0 as h next h1, invariant w as wb, invariant u as ub) -> (last h1, stacked h1 axis 0) {{
  xt = f32[{1},{2}] input
  h = f32[{1},{3}] input
  wb = f32[{2},{3}] input
  ub = f32[{3},{3}] input
  a = f32[{1},{3}] einsum "bi,ih->bh" (xt, wb)
  b = f32[{1},{3}] einsum "bk,kh->bh" (h, ub)
  h1 = f32[{1},{3}]{{output}} einsum [b={1},h={3}] none tanh(add($0,$1)) (a[b,h], b[b,h]) -> [b,h]
}}
)",
                                            T, B, I, H));
  const cost::GraphCost c = cost::graph_cost(g);
  tiling::GraphTrafficModel model(g, c);
  // With room for everything the loop moves only its compulsory bytes: x, h0, the weights
  // read once, ys and hT written once.
  const Count f32 = 4;
  const Count compulsory = f32 * (T * B * I + B * H + I * H + H * H + T * B * H + B * H);
  EXPECT_EQ(c.compulsory_bytes(), compulsory);
  EXPECT_EQ(model.at(Count(1u << 30), tiling::TrafficMode::Attainable).traffic_bytes, compulsory);
  // Too small to keep the weights: every step reads them again.
  const Count tiny = model.at(Count(256), tiling::TrafficMode::Attainable).traffic_bytes;
  EXPECT_GE(tiny, Count(T) * f32 * (I * H + H * H));
}

}  // namespace
}  // namespace solar::bound
