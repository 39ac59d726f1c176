// The index-valued builders (src/lower/build_index.cc): aten's and jax's arg-reductions and
// scans are one opaque op, and the sort and top-k costs as formulas.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"
#include "lower/staging.h"
#include "solar/lower/jax.h"

namespace solar::lower {
namespace {

using nlohmann::json;
using namespace testing;  // lowering_checks.h, staging.h

// The opaque op of a lowered graph (the last op).
const ir::OpaqueOp& last_opaque(const LowerResult& r) {
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  return r.graph.ops().back().opaque();
}

// The same op as aten writes it and as jax writes it, lowered each by its table.
std::pair<LowerResult, LowerResult> both(const char* aten_op, json aten_args, const char* jax_op,
                                         json jax_args, const char* out_dtype = "float32") {
  TraceBuilder a;
  a.tensor({4, 7}, "input");
  a.tensor({4, 7}, "output", out_dtype);
  TraceBuilder j = a;
  j.frontend = "jax";
  a.op(aten_op, std::move(aten_args), {1});
  j.op(jax_op, std::move(jax_args), {1});
  return {lower_ok(a), lower_jax(j.build())};
}

TEST(BuildIndex, AtenAndJaxCumsumAreOneScan) {
  auto [a, j] = both("aten::cumsum.default", {{"self", T(0)}, {"dim", 1}}, "jax::cumsum",
                     {{"operands", {T(0)}}, {"axis", 1}});
  const ir::OpaqueOp& o = last_opaque(a);
  EXPECT_EQ(o, last_opaque(j));
  EXPECT_EQ(o.vector_flops, Count(4 * 7));  // one combine per element
  EXPECT_EQ(o.bytes, Count(2 * 4 * 7 * 4));  // read once, written once, f32
}

TEST(BuildIndex, AtenAndJaxArgmaxAreOneArgReduction) {
  TraceBuilder a;
  int x = a.tensor({4, 7}, "input"), y = a.tensor({4}, "output", "int64");
  TraceBuilder j = a;
  j.frontend = "jax";
  a.op("aten::argmax.default", {{"self", T(x)}, {"dim", 1}}, {y});
  j.op("jax::argmax", {{"operands", {T(x)}}, {"axes", {1}}}, {y});
  LowerResult ra = lower_ok(a), rj = lower_jax(j.build());
  const ir::OpaqueOp& o = last_opaque(ra);
  EXPECT_EQ(o, last_opaque(rj));
  EXPECT_EQ(o.vector_flops, Count(4 * 7));  // one compare per element
  EXPECT_EQ(o.bytes, Count(4 * 7 * 4 + 4 * 8));
}

TEST(BuildIndex, SortAndTopKCountCompares) {
  // sort: n*ceil(log2 n) per row; top-k: n*ceil(log2 k) per row, k at least 2
  ir::OpaqueOp s = detail::sort_op({4, 8}, 1, Count(0), detail::SortWrites::ValuesAndIndices);
  EXPECT_EQ(s.vector_flops, Count(4 * 8 * 3));
  EXPECT_NE(s.assumption.find("writes values and indices once"), std::string::npos);
  s = detail::sort_op({4, 8}, 1, Count(0), detail::SortWrites::ValuesMaybeIndices);
  EXPECT_NE(s.assumption.find("writes values (and indices) once"), std::string::npos);
  EXPECT_EQ(detail::topk_op({4, 100}, 1, 5, true, Count(0)).vector_flops, Count(4 * 100 * 3));
  EXPECT_EQ(detail::topk_op({4, 100}, 1, 1, true, Count(0)).vector_flops, Count(4 * 100 * 1));
  EXPECT_EQ(detail::ceil_log2(1), 0);
  EXPECT_EQ(detail::ceil_log2(8), 3);
  EXPECT_EQ(detail::ceil_log2(9), 4);
}

TEST(BuildIndex, AtenAndJaxSortCountTheSameCompares) {
  TraceBuilder a;
  int x = a.tensor({4, 7}, "input"), v = a.tensor({4, 7}, "output"),
      i = a.tensor({4, 7}, "output", "int64");
  TraceBuilder j = a;
  j.frontend = "jax";
  int io = j.tensor({4, 7}, "input", "int64");
  a.op("aten::sort.default", {{"self", T(x)}, {"dim", 1}}, {v, i});
  j.op("jax::sort",
       {{"operands", {T(x), T(io)}}, {"dimension", 1}, {"num_keys", 1},
        {"iota_operands", {false, true}}},
       {v, i});
  LowerResult ra = lower_ok(a), rj = lower_jax(j.build());
  const ir::OpaqueOp &s = last_opaque(ra), &t = last_opaque(rj);
  EXPECT_EQ(s.vector_flops, Count(4 * 7 * 3));
  EXPECT_EQ(s.vector_flops, t.vector_flops);
  EXPECT_EQ(s.bytes, t.bytes);
}

TEST(BuildIndex, GatherAndScatterSpellTheirAttributesOnce) {
  TraceBuilder t;
  int d = t.tensor({5, 3}, "input"), i = t.tensor({4}, "input", "int64"),
      u = t.tensor({4, 3}, "input"), g = t.tensor({4, 3}, "output");
  t.tensor({5, 3}, "output");
  t.op("test::index", json::object(), {g, 4});
  Staging s(t);
  detail::gather(s.c, s.c.use(d), s.c.use(i), s.c.def(0), 0, detail::IndexMode::Take);
  detail::scatter(s.c, s.c.use(d), s.c.use(i), s.c.use(u), s.c.def(1), 0,
                  detail::IndexMode::Take, detail::ScatterReduce::Sum, true);
  const ir::Graph& graph = s.commit();
  const ir::Attrs gathered{{"axis", std::int64_t{0}}, {"mode", std::string("take")}};
  EXPECT_TRUE(ir::attrs_equal(graph.ops()[0].move().attrs, gathered));
  const ir::Attrs scattered{{"axis", std::int64_t{0}},
                            {"mode", std::string("take")},
                            {"reduce", std::string("sum")},
                            {"include_self", std::int64_t{1}}};
  EXPECT_TRUE(ir::attrs_equal(graph.ops()[1].move().attrs, scattered));
  for (const char* r : {"none", "sum", "prod", "mean", "max", "min"})
    EXPECT_STREQ(detail::scatter_reduce_name(*detail::parse_scatter_reduce(r)), r);
  EXPECT_FALSE(detail::parse_scatter_reduce("amax"));  // torch's name: the aten table's to map
  EXPECT_FALSE(detail::parse_index_mode("clip"));
}

}  // namespace
}  // namespace solar::lower
