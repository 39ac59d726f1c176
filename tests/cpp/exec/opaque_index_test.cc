// The index-arithmetic opaque kernels (src/exec/opaque_index.cc): nonzero against known
// coordinates and its refusal of a count other than the declared one; arange in integers
// and floats, with no input.
#include <gtest/gtest.h>

#include "exec_fixtures.h"
#include "solar/exec/kernels.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::DType;
using testing::make;
using testing::run_text;
using testing::values;

std::string opaque(const std::string& outs, const std::string& fn, const std::string& attrs,
                   const std::string& ins) {
  return fmt::format("{} opaque \"{}\" {{vector_flops=0, special_ops=0, bytes=0, "
                     "assumption=\"test\"{}{}}} ({})",
                     outs, fn, attrs.empty() ? "" : ", ", attrs, ins);
}

TEST(OpaqueIndex, NonzeroListsCoordinatesInRowMajorOrder) {
  Buffer x = make(DType::F32, {2, 3}, {0, 1.5, 0, -2, 0, 3});
  TensorMap r = run_text("x = f32[2,3] input\n" + opaque("i = i64[3,2]{output}", "nonzero_coords", "", "x"),
                         {{"x", x}});
  EXPECT_EQ(values(r["i"]), (std::vector<double>{0, 1, 1, 0, 1, 2}));  // (0,1) (1,0) (1,2)
}

TEST(OpaqueIndex, NonzeroRefusesAnotherCountThanTheGraphDeclares) {
  Buffer x = make(DType::F32, {4}, {1, 1, 0, 1});  // three nonzero, the graph declares two
  try {
    run_text("x = f32[4] input\n" + opaque("i = i64[2,1]{output}", "nonzero_coords", "", "x"), {{"x", x}});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("has 3 nonzero elements but the graph declares 2"),
              std::string::npos);
  }
}

TEST(OpaqueIndex, ArangeNeedsNoInput) {
  TensorMap r = run_text(opaque("a = i64[4]{output}", "arange", "start=3.0, step=-2.0", ""), {});
  EXPECT_EQ(values(r["a"]), (std::vector<double>{3, 1, -1, -3}));  // 3 + i*(-2)
  TensorMap f = run_text(opaque("a = f32[3]{output}", "arange", "start=0.5, step=0.25", ""), {});
  EXPECT_EQ(values(f["a"]), (std::vector<double>{0.5, 0.75, 1.0}));
}

}  // namespace
}  // namespace solar::exec
