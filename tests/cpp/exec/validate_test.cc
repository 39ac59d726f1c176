// Validation: dtype tolerances, element comparison, and locating the first divergent op.
#include "solar/exec/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "exec_fixtures.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::DType;
using testing::make;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Tolerance, ByDtype) {
  EXPECT_EQ(tolerance_for(DType::F64).rtol, 1e-9);
  EXPECT_EQ(tolerance_for(DType::F32).rtol, 1e-4);
  EXPECT_EQ(tolerance_for(DType::F32).atol, 1e-5);
  EXPECT_EQ(tolerance_for(DType::F16).rtol, 5e-3);
  EXPECT_EQ(tolerance_for(DType::BF16).rtol, 2e-2);
  EXPECT_EQ(tolerance_for(DType::F8E4M3).rtol, 0.125);  // one ulp of 3 mantissa bits: 2^-3
  EXPECT_EQ(tolerance_for(DType::F8E5M2).rtol, 0.25);   // 2^-2
  for (DType d : {DType::I64, DType::I32, DType::I8, DType::U8, DType::Bool}) {
    EXPECT_EQ(tolerance_for(d).atol, 0) << ir::dtype_name(d);
    EXPECT_EQ(tolerance_for(d).rtol, 0) << ir::dtype_name(d);
  }
  // Looser as precision drops.
  EXPECT_LT(tolerance_for(DType::F64).rtol, tolerance_for(DType::F32).rtol);
  EXPECT_LT(tolerance_for(DType::F32).rtol, tolerance_for(DType::F16).rtol);
  EXPECT_LT(tolerance_for(DType::F16).rtol, tolerance_for(DType::BF16).rtol);
  EXPECT_LT(tolerance_for(DType::BF16).rtol, tolerance_for(DType::F8E4M3).rtol);
}

TEST(Compare, CountsMismatchesAndFindsTheWorst) {
  Buffer want = make(DType::F64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Buffer got = make(DType::F64, {2, 3}, {1, 2.00001, 3, 4.5, 5, 7});
  OutputCheck c = compare("y", got, want, {1e-3, 1e-3});
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.mismatches, 2);     // 4.5 vs 4 and 7 vs 6; 2.00001 is inside 1e-3 * (scale + 2)
  EXPECT_EQ(c.worst_index, 5);    // |7 - 6| exceeds its bound the most
  EXPECT_EQ(c.worst_got, 7);
  EXPECT_EQ(c.worst_want, 6);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(c.max_rel_error, 1.0 / 6);  // |7 - 6| / 6 beats |4.5 - 4| / 4
  EXPECT_DOUBLE_EQ(c.scale, 4);                // median |want| of {1..6}: the upper middle, 4
}

TEST(Compare, AbsoluteToleranceFollowsTheScale) {
  // Values around 1000: an error of 5e-3 on an element near zero passes under f32 tolerance
  // (atol 1e-5 x scale 1000 = 1e-2), which a fixed atol of 1e-5 would fail.
  Buffer want = make(DType::F32, {3}, {1000, -1000, 0.001});
  Buffer got = make(DType::F32, {3}, {1000, -1000, 0.006});
  OutputCheck c = compare("y", got, want, tolerance_for(DType::F32));
  EXPECT_TRUE(c.pass);
  EXPECT_DOUBLE_EQ(c.scale, 1000);
  OutputCheck small = compare("y", make(DType::F32, {1}, {0.006}), make(DType::F32, {1}, {0.001}),
                              tolerance_for(DType::F32));
  EXPECT_FALSE(small.pass);  // scale max(1, 0.001) = 1: atol 1e-5
}

TEST(Compare, TheTightestElementIsTheLargestErrorAgainstItsAllowance) {
  // atol 1e-3 x scale 4 (median |want|) + rtol 1e-3 x |want|: element 0 (want 1) may differ
  // by 5e-3 and differs by 4e-3 (80%); element 5 (want 6) may differ by 1e-2 and differs by
  // 5e-3 (50%), a larger error but a smaller share of its allowance.
  Buffer want = make(DType::F64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Buffer got = make(DType::F64, {2, 3}, {1.004, 2, 3, 4, 5, 6.005});
  OutputCheck c = compare("y", got, want, {1e-3, 1e-3});
  EXPECT_TRUE(c.pass);
  EXPECT_NEAR(c.tightest_error, 0.004, 1e-12);
  EXPECT_DOUBLE_EQ(c.tightest_allowance, 1e-3 * 4 + 1e-3 * 1);
  OutputCheck equal = compare("y", want, want, {1e-3, 1e-3});
  EXPECT_EQ(equal.tightest_error, 0);  // no element differs
  EXPECT_EQ(equal.tightest_allowance, 0);
}

TEST(Compare, NaNAndInfinities) {
  Buffer want = make(DType::F32, {4}, {kNaN, kInf, -kInf, 1});
  EXPECT_TRUE(compare("y", make(DType::F32, {4}, {kNaN, kInf, -kInf, 1}), want, {0, 0}).pass);
  OutputCheck c = compare("y", make(DType::F32, {4}, {1, kInf, kInf, 1}), want, {1, 1});
  EXPECT_EQ(c.mismatches, 2);  // NaN vs 1, -inf vs +inf
  EXPECT_EQ(c.max_abs_error, kInf);
}

TEST(Compare, IntegersAreExact) {
  OutputCheck c = compare("i", make(DType::I64, {3}, {1, 2, 3}), make(DType::I64, {3}, {1, 2, 4}),
                          tolerance_for(DType::I64));
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.worst_index, 2);
}

TEST(Compare, ShapeMismatchNamesTheTensor) {
  try {
    compare("y", make(DType::F32, {2}, {1, 2}), make(DType::F32, {1, 2}, {1, 2}), {});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("reference for 'y' has shape [1,2] but the tensor has shape [2]"),
              std::string::npos);
  }
}

// x -> p (pad) -> y (permute). The graph pads with 1 where the framework padded with 0: a
// planted wrong op.
constexpr const char* kPlanted = R"(
x = f32[2,3] input
p = f32[2,4] move pad {pads=[0,0,1,0], value=1} (x)
y = f32[4,2]{output} move permute {perm=[1,0]} (p)
)";

struct Planted {
  TensorMap sources{{"x", make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}};
  // What the framework computed (pad with 0), written out by hand.
  Buffer p = make(DType::F32, {2, 4}, {0, 1, 2, 3, 0, 4, 5, 6});
  Buffer y = make(DType::F32, {4, 2}, {0, 0, 1, 4, 2, 5, 3, 6});
};

TEST(Validate, NamesFirstDivergentOp) {
  Planted t;
  ir::Graph g = ir::parse_graph(kPlanted);
  ValidationResult r = validate(g, t.sources, {{"y", t.y}}, {{"p", t.p}});
  EXPECT_FALSE(r.pass);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_FALSE(r.outputs[0].pass);
  EXPECT_EQ(r.outputs[0].mismatches, 2);  // the two padded elements
  ASSERT_TRUE(r.first_divergent_op);
  EXPECT_EQ(*r.first_divergent_op, "p");
  EXPECT_EQ(r.first_divergent_check->name, "p");
  ASSERT_EQ(r.intermediates.size(), 1u);
  std::string text = describe(r);
  EXPECT_NE(text.find("FAIL y [4,2]: 2 of 8 elements outside tolerance, worst at [0,0]"),
            std::string::npos) << text;
  EXPECT_NE(text.find("first divergent op: 'p'"), std::string::npos) << text;
}

TEST(Validate, WithoutIntermediatesNoOpIsNamed) {
  Planted t;
  ValidationResult r = validate(ir::parse_graph(kPlanted), t.sources, {{"y", t.y}});
  EXPECT_FALSE(r.pass);
  EXPECT_FALSE(r.first_divergent_op);
}

TEST(Validate, PassesWhenTheGraphMatches) {
  Planted t;
  std::string fixed = kPlanted;
  fixed.replace(fixed.find("value=1"), 7, "value=0");
  ValidationResult r = validate(ir::parse_graph(fixed), t.sources, {{"y", t.y}}, {{"p", t.p}});
  EXPECT_TRUE(r.pass) << describe(r);
  EXPECT_FALSE(r.first_divergent_op);
  EXPECT_EQ(r.outputs[0].worst_index, -1);
}

TEST(Validate, ReferencesAreChecked) {
  Planted t;
  ir::Graph g = ir::parse_graph(kPlanted);
  try {
    validate(g, t.sources, {});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("no reference for output 'y'"), std::string::npos);
  }
  try {
    validate(g, t.sources, {{"y", t.y}, {"p", t.p}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("reference 'p' is not an output"), std::string::npos);
  }
  try {
    validate(g, t.sources, {{"y", t.y}}, {{"x", t.p}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("intermediate reference 'x' is a graph input"), std::string::npos);
  }
}

}  // namespace
}  // namespace solar::exec
