// Row-major shape arithmetic and the one way shapes and positions are written in messages:
// element counts, strides, broadcast/tiling checks, "[2,3]" and "f32[2,3]".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "solar/ir/dtype.h"

namespace solar::ir {

using Shape = std::vector<std::int64_t>;

// Elements of a shape: the product of its extents (1 for a scalar). No overflow check: the
// verifier bounds graph shapes (`verify`), and callers with unchecked shapes check first.
std::int64_t numel(const Shape& shape);

// Row-major strides in elements: the last dimension has stride 1.
Shape row_major_strides(const Shape& shape);

// True when `in` broadcasts to `out` (numpy rules, aligned on the right).
bool broadcasts_to(const Shape& in, const Shape& out);

// True when `out` tiles `in` (repeat: each output dimension a multiple of the input's,
// aligned on the right; broadcasting is the special case of size-1 input dimensions).
bool tiles(const Shape& in, const Shape& out);

// "[2,3]" ("[]" for a scalar).
std::string shape_str(const Shape& shape);

// "f32[2,3]": a dtype and a shape as the text form writes a tensor type.
std::string type_str(DType dtype, const Shape& shape);

// The multi-dimensional position of flat element `i` of a row-major shape, as "[1,0,2]".
std::string position_str(std::int64_t i, const Shape& shape);

}  // namespace solar::ir
