#include "solar/ir/region.h"

#include <gtest/gtest.h>

namespace solar::ir {
namespace {

AffineConstraint ge0(AffineExpr e) { return {std::move(e)}; }

const AffineExpr i = AffineExpr::index(0), j = AffineExpr::index(1);

TEST(Region, NormalizedDividesTheCoefficientsAndRoundsTheConstantDown) {
  // 2i - 2j - 1 >= 0 holds at the same integers as i - j - 1 >= 0.
  EXPECT_EQ(normalized_constraint(2 * i - 2 * j - 1), ge0(i - j - 1));
  EXPECT_EQ(normalized_constraint(3 * i + 4), ge0(i + 1));  // 3i >= -4: i >= -1
  EXPECT_EQ(normalized_constraint(i - 5), ge0(i - 5));
}

TEST(Region, NegatedIsTheComplementOverTheIntegers) {
  // not (i - j >= 0) is j - i - 1 >= 0.
  EXPECT_EQ(negated(ge0(i - j)), ge0(j - i - 1));
  EXPECT_EQ(negated(negated(ge0(i - j))), ge0(i - j));
}

TEST(Region, CanonicalDropsWhatHoldsEverywhereAndSorts) {
  const std::vector<std::int64_t> box = {8, 8};
  // i >= 0 holds on the whole box; the duplicate goes; the rest is sorted.
  const Region r = canonical_region({ge0(j - i), ge0(i), ge0(2 * i - 2 * j), ge0(j - i)}, box);
  EXPECT_EQ(r, (Region{ge0(j - i), ge0(i - j)}));  // by index, then coefficient
  // A region that holds nowhere keeps its constraints.
  EXPECT_EQ(canonical_region({ge0(i - 9)}, box), (Region{ge0(i - 9)}));
}

TEST(Region, SubstitutionMapsOrDrops) {
  // Over a view's dimensions: i -> d1, j has no image.
  const Substitution repl = {AffineExpr::index(1), std::nullopt};
  EXPECT_EQ(substitute_region({ge0(i - 1)}, repl), (Region{ge0(AffineExpr::index(1) - 1)}));
  EXPECT_EQ(substitute_region({ge0(i - 1), ge0(j)}, repl), std::nullopt);
  EXPECT_EQ(substitute_region_part({ge0(i - 1), ge0(j)}, repl),
            (Region{ge0(AffineExpr::index(1) - 1)}));
  // An image past 64 bits is no image.
  const Substitution huge = {(std::int64_t{1} << 62) * AffineExpr::index(0)};
  EXPECT_EQ(image_of(8 * i, huge), std::nullopt);
  EXPECT_EQ(common_constraints({ge0(i), ge0(j)}, {ge0(j), ge0(i - j)}), (Region{ge0(j)}));
}

TEST(Region, CoversEveryAssignment) {
  const std::vector<std::int64_t> box = {8, 8};
  // Causal j <= i: every row i has a key j (j = 0); every key j has a row (i = 7).
  EXPECT_TRUE(covers_every_assignment({ge0(i - j)}, box, {true, false}));
  EXPECT_TRUE(covers_every_assignment({ge0(i - j)}, box, {false, true}));
  // j <= i - 1: row 0 has no key.
  EXPECT_FALSE(covers_every_assignment({ge0(i - j - 1)}, box, {true, false}));
  // Two free variables: not shown.
  EXPECT_FALSE(covers_every_assignment({ge0(i - j)}, box, {false, false}));
}

}  // namespace
}  // namespace solar::ir
