#include "solar/util/count.h"

#include <gtest/gtest.h>

#include "solar/util/errors.h"

namespace solar {
namespace {

TEST(Count, HoldsATrillionParameterTrainingStep) {
  // 6 * params * tokens for 1e12 parameters and 4e6 tokens: 2.4e19, past 64 bits.
  Count flops = Count(6) * Count(1'000'000'000'000ULL) * Count(4'000'000ULL);
  EXPECT_FALSE(flops.fits_u64());
  EXPECT_EQ(flops.str(), "24000000000000000000");
}

TEST(Count, OverflowThrowsInsteadOfWrapping) {
  Count big = Count(UINT64_MAX) * Count(UINT64_MAX);
  EXPECT_THROW(big * Count(UINT64_MAX), InternalError);
  EXPECT_THROW(Count(1) - Count(2), InternalError);
}

TEST(Count, CeilDivRoundsBitsUpToBytes) {
  EXPECT_EQ(Count(9).ceil_div(8), Count(2));
  EXPECT_EQ(Count(16).ceil_div(8), Count(2));
}

TEST(Count, NegativeSignedIsAUserError) {
  EXPECT_THROW(Count::from_signed(-1), UserError);
}

}  // namespace
}  // namespace solar
