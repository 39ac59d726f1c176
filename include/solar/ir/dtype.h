// Element types of EinsumGraph tensors, their storage widths and their text names.
#pragma once

#include <optional>
#include <string_view>

namespace solar::ir {

enum class DType {
  F64, F32, TF32, BF16, F16, F8E4M3, F8E5M2, F6, F4,
  I64, I32, I16, I8, I4, U8, Bool,
};

inline constexpr DType kAllDTypes[] = {
    DType::F64,  DType::F32,    DType::TF32, DType::BF16, DType::F16, DType::F8E4M3,
    DType::F8E5M2, DType::F6,   DType::F4,   DType::I64,  DType::I32, DType::I16,
    DType::I8,   DType::I4,     DType::U8,   DType::Bool};

// Storage width in bits (fp4 and int4 are 4, fp6 is 6, bool is 8: one byte per element as
// frameworks store it).
int dtype_bits(DType d);

// The text name used in the text form, JSON and reports: f64 f32 tf32 bf16 f16 f8e4m3
// f8e5m2 f6 f4 i64 i32 i16 i8 i4 u8 bool.
std::string_view dtype_name(DType d);

// Parses a text name; also accepts common aliases (fp32, float32, float16, half, int8, ...).
std::optional<DType> parse_dtype(std::string_view name);

bool is_float(DType d);    // floating point (incl. tf32/fp8/fp6/fp4)
bool is_integer(DType d);  // signed or unsigned integer (not bool)

}  // namespace solar::ir
