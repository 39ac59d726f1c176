// The attention builder (src/lower/build_attention.cc): causal attention counts its live
// (query, key) pairs, every einsum carries the attention hint, and operands that do not fit
// are refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "builders.h"
#include "lower/lowering_checks.h"
#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h

TEST(BuildAttention, CausalAttentionCountsLivePairs) {
  const std::int64_t B = 1, H = 2, L = 6, E = 4;
  TraceBuilder t;
  int q = t.tensor({B, H, L, E}, "input"), k = t.tensor({B, H, L, E}, "input"),
      v = t.tensor({B, H, L, E}, "input"), y = t.tensor({B, H, L, E}, "output");
  t.op("aten::scaled_dot_product_attention.default",
       {{"query", T(q)}, {"key", T(k)}, {"value", T(v)}, {"is_causal", true}}, {y});
  LowerResult r = lower_ok(t);
  // Q K^T and P V over the L(L+1)/2 pairs with key <= query, E MACs each
  EXPECT_EQ(macs(r.graph), 2 * B * H * (L * (L + 1) / 2) * E);
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Einsum)
      EXPECT_EQ(op.einsum().hint, ir::ContractionHint::Attention);
}

TEST(BuildAttention, HeadsThatDoNotGroupAreRefused) {
  try {
    detail::attention_dims({1, 3, 4, 8}, {1, 2, 4, 8}, {1, 2, 4, 8});
    FAIL() << "3 query heads over 2 key heads";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of key heads"), std::string::npos);
  }
  detail::AttentionDims a = detail::attention_dims({1, 4, 5, 8}, {1, 2, 6, 8}, {1, 2, 6, 3});
  EXPECT_EQ(a.grp, 2);  // two query heads per key head
  EXPECT_EQ(a.S, 6);
  EXPECT_EQ(a.Ev, 3);
}

}  // namespace
}  // namespace solar::lower
