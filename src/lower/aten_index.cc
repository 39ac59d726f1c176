// The aten table's indexing, sorting and index-valued ops: embedding (and its gradient) and
// index_select, gather/scatter, advanced indexing (index, index_put, masked_select, nonzero),
// index_add/copy/fill, scans, sort/topk, arange/linspace and eye.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "context.h"
#include "families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {

namespace {

void lower_gather_rows(Context& c, const char* data, const char* index, std::int64_t axis) {
  TensorId d = c.use_arg(data), i = c.use_arg(index);
  gather(c, d, i, c.def(0), axis, IndexMode::Take);
}

// The outputs the trace asks for (values, and indices where present).
std::vector<TensorId> defined_outputs(Context& c) {
  std::vector<TensorId> outs;
  for (std::size_t k = 0; k < c.op().outputs.size(); ++k)
    if (c.out_id(k)) outs.push_back(c.def(k));
  return outs;
}

// What an op over `in` writing `outs` moves: each read or written once.
Count bytes_of(Context& c, TensorId in, const std::vector<TensorId>& outs) {
  Count bytes = c.t(in).size_bytes();
  for (TensorId o : outs) bytes = bytes + c.t(o).size_bytes();
  return bytes;
}

std::int64_t axis_of(Context& c, const char* dim_arg, std::int64_t dflt) {
  const auto& shape = c.shape(c.trace_id("self"));
  return norm_dim(c.int_arg(dim_arg, dflt), shape.size());
}

Fn scan_op(const char* function) {
  return [=](Context& c) {
    const std::int64_t axis = axis_of(c, "dim", 0);
    TensorId in = c.use_arg("self");
    scan(c, function, in, defined_outputs(c), axis);
  };
}

void lower_sort(Context& c) {
  const std::int64_t axis = axis_of(c, "dim", -1);
  TensorId in = c.use_arg("self");
  std::vector<TensorId> outs = defined_outputs(c);
  ir::OpaqueOp o =
      sort_op(c.t(in).shape, axis, bytes_of(c, in, outs), SortWrites::ValuesAndIndices);
  o.attrs["descending"] = std::int64_t{c.bool_arg("descending", false)};
  c.opaque({in}, outs, std::move(o));
}

void lower_topk(Context& c) {
  const std::int64_t axis = axis_of(c, "dim", -1);
  TensorId in = c.use_arg("self");
  std::vector<TensorId> outs = defined_outputs(c);
  c.opaque({in}, outs,
           topk_op(c.t(in).shape, axis, c.int_arg("k", 1), c.bool_arg("largest", true),
                   bytes_of(c, in, outs)));
}

// (The output is made before the operands are used, as the lowering always has.)
void lower_gather(Context& c) {
  std::int64_t x = c.trace_id("self");
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), c.shape(x).size());
  TensorId out = c.def(0);
  TensorId data = c.use(x), index = c.use_arg("index");
  gather(c, data, index, out, dim, IndexMode::Elements);
}

// torch.scatter / scatter_add: `reduce` is None (replace) or Sum (scatter_add).
void lower_scatter_with(Context& c, ScatterReduce reduce) {
  std::int64_t x = c.trace_id("self");
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), c.shape(x).size());
  if (c.has("reduce")) throw Unsupported("scatter with a reduce mode");
  TensorId out = c.def(0);
  TensorId data = c.use(x), index = c.use_arg("index"), src = c.use_arg("src");
  scatter(c, data, index, src, out, dim, IndexMode::Elements, reduce);
}

void lower_scatter(Context& c) { lower_scatter_with(c, ScatterReduce::None); }

// scatter.value (a scalar src), scatter.reduce (add/multiply), scatter_reduce.two
// (sum/prod/mean/amax/amin, include_self).
void lower_scatter_general(Context& c) {
  std::int64_t x = c.trace_id("self");
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), c.shape(x).size());
  TensorId index = c.use_arg("index");
  TensorId src;
  if (c.has("src")) {
    src = c.use_arg("src");
  } else {
    src = c.temp("fill", c.t(index).shape, c.t(c.use(x)).dtype);
    std::vector<TensorId> in;
    Expr v = operand(c, "value", in);
    c.elementwise(in, src, v);
  }
  ScatterReduce reduce = ScatterReduce::None;
  if (c.a("reduce").is_string()) {
    const std::string r = c.a("reduce").get<std::string>();
    if (r == "add" || r == "sum") reduce = ScatterReduce::Sum;
    else if (r == "multiply" || r == "prod") reduce = ScatterReduce::Prod;
    else if (r == "mean") reduce = ScatterReduce::Mean;
    else if (r == "amax") reduce = ScatterReduce::Max;
    else if (r == "amin") reduce = ScatterReduce::Min;
    else throw Unsupported(fmt::format("scatter with reduce '{}'", r));
  }
  std::optional<bool> include_self;
  if (c.has("include_self")) include_self = c.bool_arg("include_self", true);
  TensorId out = c.def(0);
  scatter(c, c.use(x), index, src, out, dim, IndexMode::Elements, reduce, include_self);
}

void lower_scatter_add(Context& c) { lower_scatter_with(c, ScatterReduce::Sum); }

// arange and linspace: their values are index arithmetic (start + i*step), not an einsum
// over data: an opaque op the executor runs ("arange").
void arange_into(Context& c, TensorId out, double start, double step) {
  ir::OpaqueOp o;
  o.function = "arange";
  o.vector_flops = c.t(out).num_elements();
  o.special_ops = Count(0);
  o.bytes = c.t(out).size_bytes();
  o.assumption = "one multiply-add per element (start + i*step); writes the output once";
  o.attrs = {{"start", start}, {"step", step}};
  c.opaque({}, {out}, std::move(o));
}

void lower_arange(Context& c) {
  const double start = c.has("start") ? c.num_arg("start", 0) : 0;
  arange_into(c, c.def(0), start, c.num_arg("step", 1));
}

void lower_linspace(Context& c) {
  const double start = c.num_arg("start", 0), end = c.num_arg("end", 0);
  const std::int64_t steps = c.int_arg("steps", 1);
  if (c.has("start") && !number_value(c.a("start"))) throw Unsupported("linspace with tensor bounds");
  arange_into(c, c.def(0), start, steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0);
}

// eye(n, m): ones on the diagonal as a masked fill (masked points hold 0).
void lower_eye(Context& c) {
  TensorId out = c.def(0);
  if (c.t(out).shape.size() != 2) throw Unsupported("eye of rank != 2");
  AffineExpr d = AffineExpr::make({AffineTerm{0, 1}, AffineTerm{1, -1}}, 0);
  AffineExpr nd = AffineExpr::make({AffineTerm{0, -1}, AffineTerm{1, 1}}, 0);
  c.elementwise({}, out, num(1), {{d}, {nd}});
}

// nonzero(mask): the coordinates (i64 [K, rank]) of its nonzero elements. K depends on the
// data; it is the count of the captured run, and the executor refuses data with another.
void nonzero_into(Context& c, TensorId mask, TensorId out) {
  ir::OpaqueOp o;
  o.function = "nonzero_coords";
  o.vector_flops = c.t(mask).num_elements();
  o.special_ops = Count(0);
  o.bytes = c.t(mask).size_bytes() + c.t(out).size_bytes();
  o.assumption = "one test per element; writes the coordinates of the nonzero ones (their "
                 "count is the captured run's)";
  c.opaque({mask}, {out}, std::move(o));
}

// The advanced (tensor) indices of index / index_put, as one long index per indexed
// dimension of self: a boolean mask over m dimensions becomes the m columns of its nonzero
// coordinates (K of them).
struct Advanced {
  std::vector<std::int64_t> dims;      // indexed dimensions of self, ascending
  std::vector<TensorId> index;         // one long index per indexed dimension
  std::vector<std::int64_t> bshape;    // the broadcast shape of the indices
  bool adjacent = true;
};

std::vector<std::int64_t> broadcast_shapes(const std::vector<std::vector<std::int64_t>>& shapes) {
  std::size_t r = 0;
  for (const auto& s : shapes) r = std::max(r, s.size());
  std::vector<std::int64_t> out(r, 1);
  for (const auto& s : shapes)
    for (std::size_t d = 0; d < s.size(); ++d) {
      std::int64_t& o = out[d + r - s.size()];
      if (s[d] == o || s[d] == 1) continue;
      if (o != 1) throw Unsupported("index tensors that do not broadcast together");
      o = s[d];
    }
  return out;
}

// `bool_count`: K for a boolean mask (the number of its true elements in the captured run).
Advanced advanced_indices(Context& c, std::optional<std::int64_t> bool_count) {
  const auto& list = c.a("indices");
  if (!list.is_array()) throw Unsupported("index without an index list");
  Advanced a;
  std::int64_t pos = 0;
  std::vector<std::vector<std::int64_t>> shapes;
  for (const auto& entry : list) {
    if (entry.is_null()) {
      ++pos;
      continue;
    }
    if (!entry.is_object() || !entry.contains("tensor")) throw Unsupported("a non-tensor index");
    const std::int64_t id = entry["tensor"].get<std::int64_t>();
    const std::string& dt = c.tt(id).dtype;
    TensorId t = c.use(id);
    if (dt == "bool" || dt == "uint8") {
      if (!bool_count) throw Unsupported("a boolean mask beside other index tensors");
      const std::int64_t m = static_cast<std::int64_t>(c.t(t).shape.size()), K = *bool_count;
      TensorId nz = c.temp("nonzero", {K, m}, ir::DType::I64);
      nonzero_into(c, t, nz);
      for (std::int64_t j = 0; j < m; ++j) {
        TensorId col = c.temp("col", {K, 1}, ir::DType::I64);
        slice_into(c, nz, col, 1, j, j + 1, 1);
        TensorId v = c.temp("index", {K}, ir::DType::I64);
        c.move(MoveKind::View, {col}, v);
        a.dims.push_back(pos + j);
        a.index.push_back(v);
        shapes.push_back({K});
      }
      pos += m;
      continue;
    }
    if (dt != "int64" && dt != "int32" && dt != "int16" && dt != "int8")
      throw Unsupported(fmt::format("an index tensor of dtype {}", dt));
    a.dims.push_back(pos++);
    a.index.push_back(t);
    shapes.push_back(c.t(t).shape);
  }
  if (a.dims.empty()) throw Unsupported("index without an index tensor");
  for (std::size_t k = 1; k < a.dims.size(); ++k) a.adjacent = a.adjacent && a.dims[k] == a.dims[k - 1] + 1;
  a.bshape = broadcast_shapes(shapes);
  return a;
}

// One boolean mask as the only advanced index: its position in self and its rank.
std::optional<std::pair<std::int64_t, std::int64_t>> sole_mask(Context& c) {
  const auto& list = c.a("indices");
  if (!list.is_array()) return std::nullopt;
  std::optional<std::pair<std::int64_t, std::int64_t>> found;
  std::int64_t tensors = 0;
  for (std::size_t k = 0; k < list.size(); ++k) {
    if (list[k].is_null()) continue;
    ++tensors;
    if (!list[k].is_object() || !list[k].contains("tensor")) return std::nullopt;
    const auto& t = c.tt(list[k]["tensor"].get<std::int64_t>());
    if (t.dtype == "bool" || t.dtype == "uint8")
      found = std::pair{static_cast<std::int64_t>(k), static_cast<std::int64_t>(t.shape.size())};
  }
  if (tensors != 1) return std::nullopt;
  return found;
}

// self with the indexed dimensions (adjacent, from a.dims[0]) merged into one, and the
// linear index into that merged dimension: sum_j idx_j * stride_j, each index taken modulo
// its size when negative (one index alone is left to the gather, which does that itself).
std::pair<TensorId, TensorId> merged(Context& c, TensorId self, const Advanced& a) {
  const auto S = c.t(self).shape;
  const std::size_t m = a.dims.size(), p0 = static_cast<std::size_t>(a.dims[0]);
  if (m == 1) return {self, a.index[0]};
  std::vector<std::int64_t> fs(S.begin(), S.begin() + p0);
  std::int64_t prod = 1;
  for (std::size_t j = 0; j < m; ++j) prod *= S[p0 + j];
  fs.push_back(prod);
  fs.insert(fs.end(), S.begin() + p0 + m, S.end());
  TensorId flat = c.temp("merged", fs, c.t(self).dtype);
  c.move(MoveKind::View, {self}, flat);
  TensorId lin = c.temp("linear_index", a.bshape, ir::DType::I64);
  Expr sum;
  std::int64_t stride = prod;
  for (std::size_t j = 0; j < m; ++j) {
    const std::int64_t size = S[p0 + j];
    stride /= size;
    Expr x = arg(static_cast<int>(j));
    Expr term = fn(ExprOp::Select, {fn(ExprOp::Lt, {x, num(0)}), add(x, num(static_cast<double>(size))), x});
    if (stride != 1) term = mul(term, num(static_cast<double>(stride)));
    sum = j == 0 ? term : add(sum, term);
  }
  c.elementwise(a.index, lin, sum);
  return {flat, lin};
}

// self with its indexed dimensions moved to the front (torch's rule for non-adjacent
// advanced indices: the indexed result dimensions come first). A copy.
TensorId indexed_dims_first(Context& c, TensorId self, Advanced& a) {
  const auto S = c.t(self).shape;
  std::vector<std::int64_t> perm = a.dims, shape;
  for (std::size_t d = 0; d < S.size(); ++d)
    if (std::find(a.dims.begin(), a.dims.end(), static_cast<std::int64_t>(d)) == a.dims.end())
      perm.push_back(static_cast<std::int64_t>(d));
  for (std::int64_t d : perm) shape.push_back(S[d]);
  TensorId t = c.temp("indexed_first", shape, c.t(self).dtype);
  c.move(MoveKind::Permute, {self}, t, {{"perm", perm}});
  for (std::size_t j = 0; j < a.dims.size(); ++j) a.dims[j] = static_cast<std::int64_t>(j);
  a.adjacent = true;
  return t;
}

// index.Tensor: x[i], x[i, j], x[:, i], x[mask]: a take-mode gather over the indexed
// dimensions merged into one, with the linear index.
void lower_index(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId self = c.use(x);
  const auto& os = c.tt(*c.out_id(0)).shape;
  std::optional<std::int64_t> K;
  if (auto m = sole_mask(c)) {
    if (m->first >= static_cast<std::int64_t>(os.size())) throw Unsupported("mask index rank");
    K = os[m->first];
  }
  Advanced a = advanced_indices(c, K);
  if (!a.adjacent) self = indexed_dims_first(c, self, a);
  auto [data, lin] = merged(c, self, a);
  gather(c, data, lin, c.def(0), a.dims[0], IndexMode::Take);
}

// index_put(self, indices, values, accumulate) and x[...] = v: a take-mode scatter (sum when
// accumulating) into the merged indexed dimensions; x[mask] = scalar is a select.
void lower_index_put(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId self = c.use(x);
  TensorId values = c.use_arg("values");
  const bool accumulate = c.bool_arg("accumulate", false);
  const auto S = c.t(self).shape;
  if (c.t(values).dtype != c.t(self).dtype) {
    TensorId cast = c.temp("values", c.t(values).shape, c.t(self).dtype);
    c.move(MoveKind::Cast, {values}, cast);
    values = cast;
  }
  if (auto m = sole_mask(c); m && numel(c.t(values).shape) == 1) {
    const auto& list = c.a("indices");
    TensorId mask = c.use(list[m->first]["tensor"].get<std::int64_t>());
    std::vector<std::int64_t> ms = c.t(mask).shape;
    const std::size_t trailing = S.size() - static_cast<std::size_t>(m->first + m->second);
    if (trailing > 0) {
      ms.insert(ms.end(), trailing, 1);
      TensorId v = c.temp("mask", ms, c.t(mask).dtype);
      c.move(MoveKind::View, {mask}, v);
      mask = v;
    }
    TensorId scalar = values;
    if (!c.t(values).shape.empty()) {
      scalar = c.temp("value", {}, c.t(values).dtype);
      c.move(MoveKind::View, {values}, scalar);
    }
    Expr y = accumulate ? add(arg(0), fn(ExprOp::Select, {arg(1), arg(2), num(0)}))
                        : fn(ExprOp::Select, {arg(1), arg(2), arg(0)});
    c.elementwise({self, mask, scalar}, c.def(0), y);
    return;
  }
  if (sole_mask(c)) throw Unsupported("x[mask] = tensor (values of a data-dependent count)");
  Advanced a = advanced_indices(c, std::nullopt);
  if (!a.adjacent) throw Unsupported("index_put with non-adjacent index tensors");
  auto [data, lin] = merged(c, self, a);
  // src: values broadcast to data.shape[:p0] + bshape + data.shape[p0+1:]
  const auto ds = c.t(data).shape;
  const std::size_t p0 = static_cast<std::size_t>(a.dims[0]);
  std::vector<std::int64_t> ss(ds.begin(), ds.begin() + p0);
  ss.insert(ss.end(), a.bshape.begin(), a.bshape.end());
  ss.insert(ss.end(), ds.begin() + p0 + 1, ds.end());
  TensorId src = values;
  if (c.t(values).shape != ss) {
    src = c.temp("src", ss, c.t(values).dtype);
    c.move(MoveKind::View, {values}, src);
  }
  TensorId out = c.def(0);
  TensorId target = data == self ? out : c.temp("scattered", ds, c.t(self).dtype);
  scatter(c, data, lin, src, target, a.dims[0], IndexMode::Take,
          accumulate ? ScatterReduce::Sum : ScatterReduce::None);
  if (target != out) c.move(MoveKind::View, {target}, out);
}

// index_add / index_copy / index_fill along one dimension: take-mode scatters.
void lower_index_scatter(Context& c, ScatterReduce reduce, bool fill) {
  std::int64_t x = c.trace_id("self");
  TensorId self = c.use(x);
  const auto S = c.t(self).shape;
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), S.size());
  TensorId index = c.use_arg("index");
  TensorId src;
  if (fill) {
    std::vector<std::int64_t> ss(S.begin(), S.begin() + dim);
    const auto& is = c.t(index).shape;
    ss.insert(ss.end(), is.begin(), is.end());
    if (!S.empty()) ss.insert(ss.end(), S.begin() + dim + 1, S.end());
    src = c.temp("fill", ss, c.t(self).dtype);
    std::vector<TensorId> in;
    Expr v = operand(c, "value", in);
    c.elementwise(in, src, v);
  } else {
    src = c.use_arg("source");
    double alpha = c.num_arg("alpha", 1);
    if (alpha != 1) {
      TensorId scaled_src = c.temp("scaled", c.t(src).shape, c.t(src).dtype);
      c.elementwise({src}, scaled_src, mul(arg(0), num(alpha)));
      src = scaled_src;
    }
  }
  scatter(c, self, index, src, c.def(0), dim, IndexMode::Take, reduce);
}

// masked_select(self, mask): the elements where mask holds, in row-major order.
void lower_masked_select(Context& c) {
  TensorId self = c.use_arg("self"), mask = c.use_arg("mask");
  const auto S = c.t(self).shape;
  if (c.t(mask).shape != S) throw Unsupported("masked_select with a broadcast mask");
  TensorId out = c.def(0);
  const std::int64_t K = c.t(out).shape.at(0);
  const std::int64_t R = static_cast<std::int64_t>(S.size());
  TensorId nz = c.temp("nonzero", {K, R}, ir::DType::I64);
  nonzero_into(c, mask, nz);
  // linear index = nz @ row-major strides
  TensorId lin = c.temp("linear_index", {K}, ir::DType::I64);
  Space s;
  ir::IndexPos k = s.add("k", K);
  std::vector<std::vector<AffineExpr>> subs;
  std::vector<TensorId> ins;
  Expr sum;
  std::int64_t stride = numel(S);
  for (std::int64_t d = 0; d < R; ++d) {
    stride /= S[d];
    ins.push_back(nz);
    subs.push_back({ix(k), AffineExpr::constant(d)});
    Expr term = stride == 1 ? arg(static_cast<int>(d)) : mul(arg(static_cast<int>(d)), num(static_cast<double>(stride)));
    sum = d == 0 ? term : add(sum, term);
  }
  if (R == 0) throw Unsupported("masked_select of a scalar");
  c.einsum(ins, lin, std::move(s), std::move(subs), {ix(k)}, sum, Reduce::None);
  TensorId flat = c.temp("flat", {numel(S)}, c.t(self).dtype);
  c.move(MoveKind::View, {self}, flat);
  gather(c, flat, lin, out, 0, IndexMode::Take);
}

void lower_nonzero(Context& c) { nonzero_into(c, c.use_arg("self"), c.def(0)); }

// ---------------------------------------------------------------- gradients

// embedding_dense_backward: zeros [num_weights, D] with each grad row added at its index
// (a take-mode scatter-add); rows of padding_idx get nothing; scale_grad_by_freq divides
// each row by its index's count.
void lower_embedding_backward(Context& c) {
  TensorId gy = c.use_arg("grad_output"), idx = c.use_arg("indices");
  const Shape is = c.t(idx).shape, gs = c.t(gy).shape;
  if (gs.size() != is.size() + 1)
    throw Unsupported("embedding gradient rank does not match its indices");
  const std::int64_t W = c.int_arg("num_weights", 0), D = gs.back(),
                     pidx = c.int_arg("padding_idx", -1);
  TensorId out = c.def(0);
  ir::DType dt = c.t(out).dtype;
  Shape col = is;
  col.push_back(1);
  TensorId src = gy;
  if (pidx >= 0 || c.bool_arg("scale_grad_by_freq", false)) {
    TensorId ic = reshaped(c, idx, col, "indices_col");
    std::vector<TensorId> ins{gy, ic};
    Expr e = arg(0);
    if (c.bool_arg("scale_grad_by_freq", false)) {
      TensorId ones = c.temp("ones", is, dt);
      c.elementwise({}, ones, num(1));
      TensorId counts = c.temp("counts", {W}, dt);
      scatter(c, zeros(c, {W}, dt), idx, ones, counts, 0, IndexMode::Take, ScatterReduce::Sum);
      TensorId per = c.temp("count_of", is, dt);
      gather(c, counts, idx, per, 0, IndexMode::Take);
      ins.push_back(reshaped(c, per, col, "count_col"));
      e = divide(e, arg(2));
    }
    if (pidx >= 0) e = sel(cmp(ExprOp::Eq, arg(1), num(static_cast<double>(pidx))), num(0), e);
    src = c.temp("rows", gs, dt);
    c.elementwise(ins, src, e);
  }
  if (c.t(out).shape != Shape{W, D})
    throw Unsupported("embedding gradient is not [num_weights, D]");
  scatter(c, zeros(c, {W, D}, dt), idx, src, out, 0, IndexMode::Take, ScatterReduce::Sum);
}


}  // namespace

void register_index_ops(const Register& reg) {
  reg("aten::embedding.default", [](Context& c) { lower_gather_rows(c, "weight", "indices", 0); });
  reg("aten::embedding_dense_backward.default", lower_embedding_backward);
  reg("aten::index_select.default",
      [](Context& c) { lower_gather_rows(c, "self", "index", norm_dim(c.int_arg("dim", 0), c.shape(c.trace_id("self")).size())); });
  reg("aten::cumsum.default", scan_op("cumsum"));
  reg("aten::index.Tensor", lower_index);
  reg("aten::_unsafe_index.Tensor", lower_index);
  reg("aten::index_put.default", lower_index_put);
  reg("aten::index_put_.default", lower_index_put);
  reg("aten::_index_put_impl_.default", lower_index_put);
  reg("aten::_unsafe_index_put.default", lower_index_put);
  reg("aten::index_add.default", [](Context& c) { lower_index_scatter(c, ScatterReduce::Sum, false); });
  reg("aten::index_add_.default", [](Context& c) { lower_index_scatter(c, ScatterReduce::Sum, false); });
  reg("aten::index_copy.default", [](Context& c) { lower_index_scatter(c, ScatterReduce::None, false); });
  reg("aten::index_copy_.default", [](Context& c) { lower_index_scatter(c, ScatterReduce::None, false); });
  for (std::string_view name : {"aten::index_fill.int_Scalar", "aten::index_fill_.int_Scalar",
                                "aten::index_fill.int_Tensor", "aten::index_fill_.int_Tensor"})
    reg(name, [](Context& c) { lower_index_scatter(c, ScatterReduce::None, true); });
  reg("aten::masked_select.default", lower_masked_select);
  reg("aten::nonzero.default", lower_nonzero);
  for (std::string_view name : {"aten::scatter.value", "aten::scatter_.value", "aten::scatter.reduce",
                                "aten::scatter_.reduce", "aten::scatter.value_reduce",
                                "aten::scatter_.value_reduce", "aten::scatter_reduce.two",
                                "aten::scatter_reduce_.two"})
    reg(name, lower_scatter_general);
  reg("aten::arange.default", lower_arange);
  reg("aten::arange.start", lower_arange);
  reg("aten::arange.start_step", lower_arange);
  reg("aten::linspace.default", lower_linspace);
  reg("aten::eye.default", lower_eye);
  reg("aten::eye.m", lower_eye);
  reg("aten::cumprod.default", scan_op("cumprod"));
  reg("aten::cummax.default", scan_op("cummax"));
  reg("aten::cummin.default", scan_op("cummin"));
  reg("aten::sort.default", lower_sort);
  reg("aten::sort.stable", lower_sort);
  reg("aten::topk.default", lower_topk);
  reg("aten::gather.default", lower_gather);
  reg("aten::scatter.src", lower_scatter);
  reg("aten::scatter_.src", lower_scatter);
  reg("aten::scatter_add.default", lower_scatter_add);
  reg("aten::scatter_add_.default", lower_scatter_add);
}

}  // namespace solar::lower::detail
