// Opaque kernels of index arithmetic. "nonzero_coords": torch.nonzero, and the index lists that
// boolean-mask indexing (x[mask], x[mask] = v, masked_select) turns into; its output shape
// depends on the data, so the graph declares the count the framework's run found, and a run
// that finds another count is refused rather than given a tensor of another shape.
// "arange": torch.arange / linspace values, and "strided_offsets": the element offsets of a
// strided view (a write through a view, as_strided_scatter), the opaque functions without an
// input.
#include "opaque_index.h"

#include <cmath>

#include <fmt/format.h>

#include "solar/ir/attrs.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

[[noreturn]] void fail(const ir::OpaqueOp& op, const std::string& what) {
  throw UserError(UserError::Kind::InvalidGraph, fmt::format("opaque \"{}\": {}", op.function, what));
}

}  // namespace

void run_nonzero(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                 std::span<Buffer* const> outputs) {
  auto bad = [&](const std::string& what) { fail(op, what); };
  if (inputs.size() != 1 || outputs.size() != 1) bad("takes one input and has one output");
  const Buffer& x = *inputs[0];
  Buffer& out = *outputs[0];
  const std::vector<std::int64_t>& shape = x.shape();
  const auto rank = static_cast<std::int64_t>(shape.size());
  if (out.shape().size() != 2 || out.shape()[1] != rank)
    bad(fmt::format("output has shape [{}] but must be [K, {}]", fmt::join(out.shape(), ","), rank));
  if (out.storage() != Storage::I64 || out.dtype() == ir::DType::Bool) bad("output needs an integer dtype");
  const std::int64_t n = x.num_elements(), want = out.shape()[0];
  std::int64_t found = 0;
  for (std::int64_t i = 0; i < n; ++i) found += x.value(i) != 0;  // NaN counts as nonzero
  if (found != want)
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("opaque \"{}\": the input has {} nonzero elements but the graph "
                                "declares {} (its shape was fixed by the run it was lowered from)",
                                op.function, found, want));
  std::int64_t* o = out.data<std::int64_t>();
  std::vector<std::int64_t> coord(static_cast<std::size_t>(rank), 0);
  std::int64_t row = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (x.value(i) != 0) {
      for (std::int64_t d = 0; d < rank; ++d) o[row * rank + d] = coord[static_cast<std::size_t>(d)];
      ++row;
    }
    for (std::int64_t d = rank - 1; d >= 0; --d) {  // next row-major coordinate
      if (++coord[static_cast<std::size_t>(d)] < shape[static_cast<std::size_t>(d)]) break;
      coord[static_cast<std::size_t>(d)] = 0;
    }
  }
}

void run_arange(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                std::span<Buffer* const> outputs) {
  auto bad = [&](const std::string& what) { fail(op, what); };
  if (!inputs.empty() || outputs.size() != 1) bad("takes no input and has one output");
  auto number = [&](const char* key) {
    if (!ir::find_attr(op.attrs, key)) fail(op, fmt::format("needs the number attribute '{}'", key));
    return ir::number_attr(op.attrs, key, 0, fmt::format("opaque \"{}\": ", op.function));
  };
  const double start = number("start"), step = number("step");
  Buffer& out = *outputs[0];
  const std::int64_t n = out.num_elements();
  switch (out.storage()) {
    case Storage::I64: {
      if (start != std::floor(start) || step != std::floor(step))
        bad("an integer output needs an integral start and step");
      const auto s0 = static_cast<std::int64_t>(start), st = static_cast<std::int64_t>(step);
      std::int64_t* o = out.data<std::int64_t>();
      for (std::int64_t i = 0; i < n; ++i) o[i] = s0 + i * st;
      break;
    }
    case Storage::F32: {
      float* o = out.data<float>();
      for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(start + static_cast<double>(i) * step);
      break;
    }
    case Storage::F64: {
      double* o = out.data<double>();
      for (std::int64_t i = 0; i < n; ++i) o[i] = start + static_cast<double>(i) * step;
      break;
    }
  }
}

void run_strided_offsets(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                         std::span<Buffer* const> outputs) {
  auto bad = [&](const std::string& what) { fail(op, what); };
  if (!inputs.empty() || outputs.size() != 1) bad("takes no input and has one output");
  Buffer& out = *outputs[0];
  if (out.storage() != Storage::I64 || out.dtype() == ir::DType::Bool)
    bad("the output holds offsets and needs an integer dtype");
  const std::vector<std::int64_t>& shape = out.shape();
  const std::string where = fmt::format("opaque \"{}\": ", op.function);
  const std::vector<std::int64_t> strides = ir::int_list_attr(op.attrs, "strides", where);
  if (strides.size() != shape.size())
    bad(fmt::format("needs one stride per output dimension ({}), got {}", shape.size(),
                    strides.size()));
  const std::int64_t offset = ir::int_attr(op.attrs, "offset", 0, where);
  std::int64_t* o = out.data<std::int64_t>();
  const std::int64_t n = out.num_elements();
  std::vector<std::int64_t> coord(shape.size(), 0);
  std::int64_t at = offset;
  for (std::int64_t i = 0; i < n; ++i) {
    o[i] = at;
    for (std::size_t d = shape.size(); d-- > 0;) {  // next row-major coordinate
      at += strides[d];
      if (++coord[d] < shape[d]) break;
      at -= coord[d] * strides[d];
      coord[d] = 0;
    }
  }
}

}  // namespace solar::exec
