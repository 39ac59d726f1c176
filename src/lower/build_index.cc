// The index-valued builders: arg-reductions, scans, sorts and top-k as opaque ops with their
// stated work, and gather/scatter moves (builders.h).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "builders.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {

void arg_reduce(Context& c, TensorId in, TensorId out, const char* what,
                std::optional<std::int64_t> axis, ir::Attrs attrs) {
  const ir::Tensor& t = c.t(in);
  ir::OpaqueOp o;
  o.function = what;
  o.attrs = std::move(attrs);  // pool_argmax: its windows, so the executor can run it
  o.vector_flops = Count(numel(t.shape));
  o.special_ops = Count(0);
  o.bytes = t.size_bytes() + c.t(out).size_bytes();
  o.assumption = "one compare per input element; reads the input once, writes the indices once";
  if (axis) o.attrs["axis"] = *axis;
  c.opaque({in}, {out}, std::move(o));
}

void scan(Context& c, const char* function, TensorId in, std::vector<TensorId> outs,
          std::int64_t axis) {
  Count bytes = c.t(in).size_bytes();
  for (TensorId o : outs) bytes = bytes + c.t(o).size_bytes();
  ir::OpaqueOp o;
  o.function = function;
  o.vector_flops = c.t(in).num_elements();
  o.special_ops = Count(0);
  o.bytes = bytes;
  o.assumption = "sequential scan: one combine per element; reads the input once, writes each "
                 "output once";
  o.attrs["axis"] = axis;
  c.opaque({in}, std::move(outs), std::move(o));
}

std::int64_t ceil_log2(std::int64_t n) {
  std::int64_t k = 0;
  while ((std::int64_t{1} << k) < n) ++k;
  return k;
}

namespace {

// The rows of a tensor of `shape` along `axis`, and a row's length.
std::pair<std::int64_t, std::int64_t> rows_of(const Shape& shape, std::int64_t axis) {
  const std::int64_t len = shape.empty() ? 1 : shape[axis];
  return {numel(shape) / std::max<std::int64_t>(len, 1), len};
}

}  // namespace

ir::OpaqueOp sort_op(const Shape& shape, std::int64_t axis, Count bytes, SortWrites writes) {
  auto [rows, n] = rows_of(shape, axis);
  ir::OpaqueOp o;
  o.function = "sort";
  o.vector_flops = Count(rows) * Count(n * std::max<std::int64_t>(ceil_log2(n), 1));
  o.special_ops = Count(0);
  o.bytes = bytes;
  switch (writes) {
    case SortWrites::ValuesAndIndices:
      o.assumption = "comparison sort: n*ceil(log2 n) compares per row; reads the input once, "
                     "writes values and indices once";
      break;
    case SortWrites::ValuesMaybeIndices:
      o.assumption = "comparison sort: n*ceil(log2 n) compares per row; reads the input once, "
                     "writes values (and indices) once";
      break;
  }
  o.attrs["axis"] = axis;
  return o;
}

ir::OpaqueOp topk_op(const Shape& shape, std::int64_t axis, std::int64_t k, bool largest,
                     Count bytes) {
  auto [rows, n] = rows_of(shape, axis);
  ir::OpaqueOp o;
  o.function = "topk";
  o.vector_flops =
      Count(rows) * Count(n * std::max<std::int64_t>(ceil_log2(std::max<std::int64_t>(k, 2)), 1));
  o.special_ops = Count(0);
  o.bytes = bytes;
  o.assumption = "heap selection: n*ceil(log2 k) compares per row; reads the input once, writes k "
                 "values and indices per row";
  o.attrs = {{"axis", axis}, {"k", k}, {"largest", std::int64_t{largest}}};
  return o;
}

const char* scatter_reduce_name(ScatterReduce r) {
  switch (r) {
    case ScatterReduce::None:
      return "none";
    case ScatterReduce::Sum:
      return "sum";
    case ScatterReduce::Prod:
      return "prod";
    case ScatterReduce::Mean:
      return "mean";
    case ScatterReduce::Max:
      return "max";
    case ScatterReduce::Min:
      return "min";
  }
  return "none";
}

std::optional<ScatterReduce> parse_scatter_reduce(std::string_view name) {
  for (ScatterReduce r : {ScatterReduce::None, ScatterReduce::Sum, ScatterReduce::Prod,
                          ScatterReduce::Mean, ScatterReduce::Max, ScatterReduce::Min})
    if (name == scatter_reduce_name(r)) return r;
  return std::nullopt;
}

std::optional<IndexMode> parse_index_mode(std::string_view name) {
  if (name == "take") return IndexMode::Take;
  if (name == "elements") return IndexMode::Elements;
  return std::nullopt;
}

namespace {

std::string mode_name(IndexMode m) {
  switch (m) {
    case IndexMode::Take:
      return "take";
    case IndexMode::Elements:
      return "elements";
  }
  return "take";
}

}  // namespace

void gather(Context& c, TensorId data, TensorId index, TensorId out, std::int64_t axis,
            IndexMode mode) {
  c.move(MoveKind::Gather, {data, index}, out, {{"axis", axis}, {"mode", mode_name(mode)}});
}

void scatter(Context& c, TensorId data, TensorId index, TensorId src, TensorId out,
             std::int64_t axis, IndexMode mode, ScatterReduce reduce,
             std::optional<bool> include_self) {
  ir::Attrs attrs{{"axis", axis},
                  {"mode", mode_name(mode)},
                  {"reduce", std::string(scatter_reduce_name(reduce))}};
  if (include_self) attrs["include_self"] = std::int64_t{*include_self};
  c.move(MoveKind::Scatter, {data, index, src}, out, std::move(attrs));
}

}  // namespace solar::lower::detail
