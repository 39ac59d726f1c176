#include "op_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "solar/lower/aten.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {
namespace {

TEST(TableBuilder, CollectsEveryFamilysEntries) {
  TableBuilder b("test");
  b.add("a.cc", [](const Register& reg) { reg("x::one", [](Context&) {}); });
  b.add("b.cc", [](const Register& reg) { reg("x::two", [](Context&) {}); });
  Table t = b.take();
  EXPECT_EQ(t.size(), 2u);
  EXPECT_TRUE(t.contains("x::one"));
  EXPECT_TRUE(t.contains("x::two"));
}

TEST(TableBuilder, AnOpRegisteredTwiceIsAnInternalErrorNamingBothRegistrants) {
  TableBuilder b("test");
  b.add("a.cc", [](const Register& reg) { reg("x::one", [](Context&) {}); });
  try {
    b.add("b.cc", [](const Register& reg) { reg("x::one", [](Context&) {}); });
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("the test table registers op 'x::one' twice: in a.cc "
                                             "and in b.cc"));
  }
}

TEST(TableBuilder, TheAtenTableRegistersEachOpOnce) {
  // Building the table throws on a duplicate; it is built on first use.
  EXPECT_NO_THROW(aten_op_known("aten::mm.default"));
  EXPECT_TRUE(aten_op_known("aten::mm.default"));
  EXPECT_TRUE(aten_op_known("aten::div.Tensor_mode"));      // aten_math.cc's
  EXPECT_TRUE(aten_op_known("aten::clamp_min.Tensor"));     // aten_pointwise.cc's
  EXPECT_TRUE(aten_op_known("aten::logical_not_.default"));  // aten_train.cc's
}

}  // namespace
}  // namespace solar::lower::detail
