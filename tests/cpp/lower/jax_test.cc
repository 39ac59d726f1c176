// Tests of the jax dialect table (src/lower/jax.cc): hand-written traces in the recorder's
// encoding (`operands` list + primitive parameters by name), counts as formulas.
#include "lower/trace_builder.h"
#include "solar/lower/jax.h"

#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using nlohmann::json;

struct Trace : testing::TraceBuilder {
  Trace() { frontend = "jax"; }
};
json T(int id) { return {{"tensor", id}}; }

// MACs of unmasked mul+sum einsums: the product of their index extents.
Count macs(const ir::Graph& g) {
  Count total(0);
  for (const ir::Op& op : g.ops()) {
    if (op.kind() != ir::OpKind::Einsum) continue;
    const ir::EinsumOp& e = op.einsum();
    if (e.reduce != ir::Reduce::Sum || !e.combine.is_product_of_two_operands() || !e.mask.empty())
      continue;
    Count n(1);
    for (const ir::IndexDim& d : e.indices) n = n * Count(d.extent);
    total = total + n;
  }
  return total;
}

int count_kind(const ir::Graph& g, ir::OpKind k) {
  int n = 0;
  for (const ir::Op& op : g.ops()) n += op.kind() == k;
  return n;
}

TEST(Jax, DotGeneralWithBatchAndTwoContractedDims) {
  // lhs [B, K1, M, K2], rhs [K2, B, N, K1]: contract (1,3)x(3,0), batch 0x1 -> [B, M, N]
  Trace t;
  int a = t.tensor({2, 3, 4, 5}, "input"), b = t.tensor({5, 2, 6, 3}, "input"),
      c = t.tensor({2, 4, 6}, "output");
  t.op("jax::dot_general",
       {{"operands", {T(a), T(b)}}, {"dimension_numbers", {{{1, 3}, {3, 0}}, {{0}, {1}}}}}, {c});
  LowerResult r = lower_jax(t.build());
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(macs(r.graph), Count(2 * 4 * 6 * 3 * 5));  // B*M*N*K1*K2
}

TEST(Jax, GroupedConvolutionCountsOneGroupsChannels) {
  // NHWC x HWIO, 4 feature groups, SAME padding: MACs = N*H*W*K*(C/G)*R*S
  Trace t;
  int x = t.tensor({2, 8, 8, 16}, "input"), w = t.tensor({3, 3, 4, 32}, "parameter"),
      y = t.tensor({2, 8, 8, 32}, "output");
  json dn = {{"lhs_spec", {0, 3, 1, 2}}, {"rhs_spec", {3, 2, 0, 1}}, {"out_spec", {0, 3, 1, 2}}};
  t.op("jax::conv_general_dilated",
       {{"operands", {T(x), T(w)}}, {"window_strides", {1, 1}}, {"padding", {{1, 1}, {1, 1}}},
        {"lhs_dilation", {1, 1}}, {"rhs_dilation", {1, 1}}, {"dimension_numbers", dn},
        {"feature_group_count", 4}, {"batch_group_count", 1}},
       {y});
  LowerResult r = lower_jax(t.build());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  EXPECT_EQ(macs(r.graph), Count(2 * 8 * 8 * 32 * 4 * 3 * 3));
}

TEST(Jax, LhsDilatedConvolutionIsMasked) {
  Trace t;
  int x = t.tensor({1, 1, 4}, "input"), w = t.tensor({1, 1, 3}, "parameter"),
      y = t.tensor({1, 1, 9}, "output");
  t.op("jax::conv_general_dilated",
       {{"operands", {T(x), T(w)}}, {"window_strides", {1}}, {"padding", {{2, 2}}},
        {"lhs_dilation", {2}}, {"rhs_dilation", {1}}, {"dimension_numbers", nullptr},
        {"feature_group_count", 1}, {"batch_group_count", 1}},
       {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  const ir::Op& op = r.graph.ops().back();
  ASSERT_EQ(op.kind(), ir::OpKind::Einsum);
  EXPECT_EQ(op.einsum().mask.size(), 2u);  // q - 2i == 0 as two inequalities
}

TEST(Jax, ReduceWindowMaxPadsWithMinusInfinity) {
  Trace t;
  int x = t.tensor({1, 6, 6, 3}, "input"), y = t.tensor({1, 3, 3, 3}, "output");
  t.op("jax::reduce_window_max",
       {{"operands", {T(x)}}, {"window_dimensions", {1, 3, 3, 1}}, {"window_strides", {1, 2, 2, 1}},
        {"padding", {{0, 0}, {1, 1}, {1, 1}, {0, 0}}}, {"base_dilation", {1, 1, 1, 1}},
        {"window_dilation", {1, 1, 1, 1}}},
       {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  const ir::EinsumOp& e = r.graph.ops().back().einsum();
  EXPECT_EQ(e.reduce, ir::Reduce::Max);
  ASSERT_TRUE(e.operands[0].pad.has_value());
  EXPECT_TRUE(std::isinf(*e.operands[0].pad) && *e.operands[0].pad < 0);
}

TEST(Jax, ElementwiseWithLiteralAndBroadcastInDim) {
  Trace t;
  int x = t.tensor({4}, "input"), b = t.tensor({3, 4}), y = t.tensor({3, 4}, "output");
  t.op("jax::broadcast_in_dim",
       {{"operands", {T(x)}}, {"shape", {3, 4}}, {"broadcast_dimensions", {1}}}, {b});
  t.op("jax::mul", {{"operands", {T(b), 2.0}}}, {y});
  LowerResult r = lower_jax(t.build());
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Move), 1);
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Einsum), 1);
}

TEST(Jax, DynamicSliceNeedsKnownStarts) {
  Trace t;
  int x = t.tensor({8, 4}, "input"), i = t.tensor({}, "input", "int32"), y = t.tensor({2, 4}, "output");
  t.op("jax::dynamic_slice", {{"operands", {T(x), T(i), 0}}, {"slice_sizes", {2, 4}}}, {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("known only at run time"), std::string::npos);
  Trace k;
  x = k.tensor({8, 4}, "input"), i = k.tensor({}, "input", "int32"), y = k.tensor({2, 4}, "output");
  k.op("jax::dynamic_slice",
       {{"operands", {T(x), {{"tensor", i}, {"value", 7}}, 0}}, {"slice_sizes", {2, 4}}}, {y});
  LowerResult ok = lower_jax(k.build());
  ASSERT_TRUE(ok.warnings.empty());
  const ir::MoveOp& m = ok.graph.ops().back().move();
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(m.attrs.at("starts"))[0], 6);  // clamped: 8 - 2
}

TEST(Jax, UnknownPrimitiveIsUnanalyzedNeverSilent) {
  Trace t;
  int x = t.tensor({4}, "input"), y = t.tensor({4}, "output");
  t.op("jax::digamma", {{"operands", {T(x)}}}, {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("no lowering in the jax table"), std::string::npos);
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Unanalyzed), 1);
  EXPECT_THROW(lower_jax(t.build(), {.strict = true}), Unsupported);
}

TEST(Jax, UnrolledLoopLeftoverCarriesTheRecordersReason) {
  Trace t;
  int x = t.tensor({4}, "input"), y = t.tensor({4}, "output");
  t.op("jax::while", {{"operands", {T(x)}}, {"reason", "while_loop whose trip count is known "
                                                        "only at run time"}}, {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("trip count"), std::string::npos);
  EXPECT_FALSE(jax_op_known("jax::while"));
  EXPECT_TRUE(jax_op_known("jax::dot_general"));
}

TEST(Jax, TakeGatherBecomesAGatherMove) {
  // table[ids]: offset_dims (2,), collapsed (0,), start_index_map (0,), ids [B, S, 1]
  Trace t;
  int tab = t.tensor({10, 4}, "parameter"), ids = t.tensor({2, 3, 1}, "input", "int32"),
      y = t.tensor({2, 3, 4}, "output");
  json dn = {{"offset_dims", {2}}, {"collapsed_slice_dims", {0}}, {"start_index_map", {0}},
             {"operand_batching_dims", json::array()}, {"start_indices_batching_dims", json::array()}};
  t.op("jax::gather", {{"operands", {T(tab), T(ids)}}, {"dimension_numbers", dn},
                       {"slice_sizes", {1, 4}}, {"mode", "PROMISE_IN_BOUNDS"}},
       {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  EXPECT_EQ(r.graph.ops().back().move().kind, ir::MoveKind::Gather);
}

TEST(Jax, ScatterAtKnownIndicesIsABoxUpdate) {
  // x.at[1:3, 2:5].set(u): one window at indices (1, 2) the recorder knew
  Trace t;
  int x = t.tensor({5, 7}, "input"), i = t.tensor({2}, "intermediate", "int32"),
      u = t.tensor({2, 3}, "input"), y = t.tensor({5, 7}, "output");
  t.tensors[i]["role"] = "constant";
  json dn = {{"update_window_dims", {0, 1}}, {"inserted_window_dims", json::array()},
             {"scatter_dims_to_operand_dims", {0, 1}}, {"operand_batching_dims", json::array()},
             {"scatter_indices_batching_dims", json::array()}};
  t.op("jax::scatter", {{"operands", {T(x), {{"tensor", i}, {"values", {1, 2}}}, T(u)}},
                        {"dimension_numbers", dn}},
       {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Opaque), 0);
  EXPECT_EQ(r.graph.ops().back().move().kind, ir::MoveKind::Concat);
}

TEST(Jax, SortOfKeysAndIotaIsAnArgsort) {
  Trace t;
  int k = t.tensor({4, 8}, "input"), io = t.tensor({4, 8}, "input", "int32"),
      v = t.tensor({4, 8}, "output"), i = t.tensor({4, 8}, "output", "int32");
  t.op("jax::sort", {{"operands", {T(k), T(io)}}, {"dimension", 1}, {"num_keys", 1},
                     {"iota_operands", {false, true}}},
       {v, i});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  const ir::OpaqueOp& o = r.graph.ops().back().opaque();
  EXPECT_EQ(o.function, "sort");
  EXPECT_EQ(o.vector_flops, Count(4 * 8 * 3));  // rows * n * ceil(log2 n)
  Trace bad;
  k = bad.tensor({4, 8}, "input"), io = bad.tensor({4, 8}, "input"),
  v = bad.tensor({4, 8}, "output"), i = bad.tensor({4, 8}, "output");
  bad.op("jax::sort", {{"operands", {T(k), T(io)}}, {"dimension", 1}, {"num_keys", 1},
                       {"iota_operands", {false, false}}},
         {v, i});
  LowerResult u = lower_jax(bad.build());
  ASSERT_EQ(u.warnings.size(), 1u);
  EXPECT_NE(u.warnings[0].find("keys, iota"), std::string::npos);
}

TEST(Jax, PointGatherIsAnExecutableXlaGather) {
  // x[i, j]: two collapsed dimensions indexed together, no take/elements form
  Trace t;
  int x = t.tensor({5, 7}, "input"), idx = t.tensor({4, 2}, "input", "int32"),
      y = t.tensor({4}, "output");
  json dn = {{"offset_dims", json::array()}, {"collapsed_slice_dims", {0, 1}},
             {"start_index_map", {0, 1}}, {"operand_batching_dims", json::array()},
             {"start_indices_batching_dims", json::array()}};
  t.op("jax::gather", {{"operands", {T(x), T(idx)}}, {"dimension_numbers", dn},
                       {"slice_sizes", {1, 1}}, {"mode", "GatherScatterMode.FILL_OR_DROP"},
                       {"fill_value", {{"float", "nan"}}}},
       {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  const ir::OpaqueOp& o = r.graph.ops().back().opaque();
  EXPECT_EQ(o.function, "xla_gather");
  EXPECT_EQ(std::get<std::string>(o.attrs.at("mode")), "fill_or_drop");
  EXPECT_TRUE(std::isnan(std::get<double>(o.attrs.at("fill_value"))));
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(o.attrs.at("start_index_map")),
            (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(o.bytes, Count(4 * 4 + 4 * 4 * 2 + 4 * 4));  // gathered + index pairs + output
}

TEST(Jax, InteriorPaddingIsSpreadByPlainMoves) {
  // lax.pad(x, 0, ((1, 0, 2),)): 3 elements with 2 zeros between neighbours, one before
  Trace t;
  int x = t.tensor({3}, "input"), y = t.tensor({1 + 3 + (3 - 1) * 2}, "output");
  t.op("jax::pad", {{"operands", {T(x), 0.0}}, {"padding_config", {{1, 0, 2}}}}, {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Move), static_cast<int>(r.graph.ops().size()));
  const ir::Op& last = r.graph.ops().back();
  EXPECT_EQ(last.move().kind, ir::MoveKind::Pad);
  EXPECT_EQ(r.graph.tensor(last.inputs[0]).shape, (std::vector<std::int64_t>{(3 - 1) * 3 + 1}));
}

TEST(Jax, Uint32ComparisonReadsTheBitsAsUnsigned) {
  // uint32 is held as i32: lt widens both operands to i64 (adding 2^32 to negative readings)
  Trace t;
  int a = t.tensor({4}, "input", "uint32"), b = t.tensor({4}, "input", "uint32"),
      y = t.tensor({4}, "output", "bool");
  t.op("jax::lt", {{"operands", {T(a), T(b)}}}, {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  ASSERT_EQ(r.graph.ops().size(), 3u);  // widen a, widen b, compare
  const ir::Op& cmp = r.graph.ops().back();
  for (ir::TensorId in : cmp.inputs) EXPECT_EQ(r.graph.tensor(in).dtype, ir::DType::I64);
}

TEST(Jax, IotaIsAnArangeLineBroadcast) {
  Trace t;
  int y = t.tensor({3, 5}, "output", "int32");
  t.op("jax::iota", {{"operands", json::array()}, {"dimension", 1}}, {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  const ir::OpaqueOp& o = r.graph.ops().front().opaque();
  EXPECT_EQ(o.function, "arange");
  EXPECT_EQ(o.vector_flops, Count(5));  // one add per element of the line along dimension 1
  EXPECT_EQ(r.graph.ops().back().move().kind, ir::MoveKind::View);
}

TEST(Jax, IntegerShiftOnFloatsIsRefused) {
  Trace t;
  int x = t.tensor({4}, "input"), y = t.tensor({4}, "output");
  t.op("jax::shift_left", {{"operands", {T(x), 1}}}, {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("non-integer"), std::string::npos);
}

}  // namespace
}  // namespace solar::lower
