#include "solar/ir/shape.h"

#include <fmt/format.h>

namespace solar::ir {

std::int64_t numel(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t x : shape) n *= x;
  return n;
}

Shape row_major_strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

bool broadcasts_to(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return false;
  const std::size_t off = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1 && in[i] != out[off + i]) return false;
  return true;
}

bool tiles(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return false;
  const std::size_t off = out.size() - in.size();
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::int64_t a = in[i], b = out[off + i];
    if (a == 0 ? b != 0 : b % a != 0) return false;
  }
  return true;
}

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

std::string type_str(DType dtype, const Shape& shape) {
  return fmt::format("{}{}", dtype_name(dtype), shape_str(shape));
}

std::string position_str(std::int64_t i, const Shape& shape) {
  Shape pos(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    pos[d] = shape[d] == 0 ? 0 : i % shape[d];
    if (shape[d] != 0) i /= shape[d];
  }
  return shape_str(pos);
}

}  // namespace solar::ir
