#include "solar/ir/integer_type.h"

namespace solar::ir {

IntegerType integer_type(const std::vector<DType>& operand_dtypes, DType output_dtype) {
  IntegerType t;
  bool any_int = false, any_bool = false;
  auto consider = [&](DType d) {
    if (d == DType::Bool) {
      any_bool = true;
      return;
    }
    if (!is_integer(d)) return;
    const int bits = dtype_bits(d);
    const bool is_unsigned = d == DType::U8;
    if (!any_int || bits > t.bits || (bits == t.bits && !is_unsigned)) {
      t.bits = bits;
      t.is_unsigned = is_unsigned;
    }
    any_int = true;
  };
  for (DType d : operand_dtypes) consider(d);
  consider(output_dtype);
  if (!any_int && any_bool) return IntegerType{1, true, true};
  if (!any_int) return IntegerType{};
  return t;
}

}  // namespace solar::ir
