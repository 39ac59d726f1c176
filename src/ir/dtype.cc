#include "solar/ir/dtype.h"

#include <string>

namespace solar::ir {

int dtype_bits(DType d) {
  switch (d) {
    case DType::F64: case DType::I64: return 64;
    case DType::F32: case DType::TF32: case DType::I32: return 32;  // tf32 is stored in 32 bits
    case DType::BF16: case DType::F16: case DType::I16: return 16;
    case DType::F8E4M3: case DType::F8E5M2: case DType::I8: case DType::U8: case DType::Bool: return 8;
    case DType::F6: return 6;
    case DType::F4: case DType::I4: return 4;
  }
  return 0;  // unreachable: the switch is exhaustive
}

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::F64: return "f64";
    case DType::F32: return "f32";
    case DType::TF32: return "tf32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    case DType::F8E4M3: return "f8e4m3";
    case DType::F8E5M2: return "f8e5m2";
    case DType::F6: return "f6";
    case DType::F4: return "f4";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
    case DType::I16: return "i16";
    case DType::I8: return "i8";
    case DType::I4: return "i4";
    case DType::U8: return "u8";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType d : kAllDTypes)
    if (dtype_name(d) == name) return d;
  struct Alias { std::string_view name; DType d; };
  static constexpr Alias kAliases[] = {
      {"fp64", DType::F64},     {"float64", DType::F64},    {"double", DType::F64},
      {"fp32", DType::F32},     {"float32", DType::F32},    {"float", DType::F32},
      {"fp16", DType::F16},     {"float16", DType::F16},    {"half", DType::F16},
      {"bfloat16", DType::BF16},{"fp8", DType::F8E4M3},     {"fp8e4m3", DType::F8E4M3},
      {"float8_e4m3fn", DType::F8E4M3}, {"fp8e5m2", DType::F8E5M2}, {"float8_e5m2", DType::F8E5M2},
      {"fp6", DType::F6},       {"fp4", DType::F4},         {"nvfp4", DType::F4},
      {"int64", DType::I64},    {"long", DType::I64},       {"int32", DType::I32},
      {"int", DType::I32},      {"int16", DType::I16},      {"int8", DType::I8},
      {"int4", DType::I4},      {"uint8", DType::U8},
  };
  for (const Alias& a : kAliases)
    if (a.name == name) return a.d;
  return std::nullopt;
}

bool is_float(DType d) {
  switch (d) {
    case DType::F64: case DType::F32: case DType::TF32: case DType::BF16: case DType::F16:
    case DType::F8E4M3: case DType::F8E5M2: case DType::F6: case DType::F4:
      return true;
    case DType::I64: case DType::I32: case DType::I16: case DType::I8: case DType::I4:
    case DType::U8: case DType::Bool:
      return false;
  }
  return false;
}

bool is_integer(DType d) { return !is_float(d) && d != DType::Bool; }

}  // namespace solar::ir
