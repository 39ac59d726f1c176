// The jax table's indexing and index-valued primitives: gather and scatter (the op library's
// gather/scatter moves where the dimension numbers have the take or take-along-axis form, a
// box update where the indices were known, else XLA's general kernels), iota, sort and top_k
// (its sort and top-k costs).
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "jax_families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail::jax {

namespace {

// The one axis of a gather/scatter that selects rows "take"-style (index_select, embedding,
// x[idx], .at[idx]) or element-wise (take_along_axis), when the dimension numbers have one
// of these two forms; nullopt otherwise.
struct IndexPattern {
  std::int64_t axis;
  bool elements;
};

std::optional<IndexPattern> gather_pattern(Context& c, const Shape& xs, const Shape& is,
                                           const Shape& os) {
  const auto& dn = c.a("dimension_numbers");
  if (!dn.is_object()) return std::nullopt;
  Shape offset = field(dn, "offset_dims"),
        collapsed = field(dn, "collapsed_slice_dims"),
        smap = field(dn, "start_index_map"),
        obatch = field(dn, "operand_batching_dims"),
        ibatch = int_list(dn.value("start_indices_batching_dims", nlohmann::json()),
                          "start_indices_batching_dims");
  Shape sizes = ints(c, "slice_sizes");
  if (smap.size() != 1 || collapsed != smap || is.empty() || is.back() != 1 ||
      sizes.size() != xs.size())
    return std::nullopt;
  const std::int64_t a = smap[0];
  const std::size_t R = xs.size(), nb = is.size() - 1;
  if (obatch.empty()) {
    for (std::size_t d = 0; d < R; ++d)
      if (sizes[d] != (static_cast<std::int64_t>(d) == a ? 1 : xs[d])) return std::nullopt;
    Shape want;
    for (std::int64_t d = 0; d < a; ++d) want.push_back(d);
    for (std::size_t d = a + 1; d < R; ++d) want.push_back(static_cast<std::int64_t>(d - 1 + nb));
    if (offset != want) return std::nullopt;
    return IndexPattern{a, false};
  }
  Shape others;
  for (std::size_t d = 0; d < R; ++d)
    if (static_cast<std::int64_t>(d) != a) others.push_back(static_cast<std::int64_t>(d));
  if (obatch != others || ibatch != others || !offset.empty() || nb != R) return std::nullopt;
  for (std::int64_t s : sizes)
    if (s != 1) return std::nullopt;
  if (Shape(is.begin(), is.end() - 1) != os) return std::nullopt;
  return IndexPattern{a, true};
}

// The index operand without its trailing index-vector dimension of 1 (a free view).
TensorId index_view(Context& c, TensorId idx) {
  Shape s = c.t(idx).shape;
  s.pop_back();
  TensorId v = c.temp("index", s, c.t(idx).dtype);
  c.move(MoveKind::View, {idx}, v);
  return v;
}

// A gather/scatter with general dimension numbers: the executor's "xla_gather" /
// "xla_scatter" kernel (src/exec/opaque_gather.h) with the dimension numbers, slice sizes
// and mode as attributes; bytes are what it touches.
void opaque_indexing(Context& c, const char* what, std::vector<TensorId> ins, TensorId out,
                     Count bytes, ir::Attrs attrs) {
  ir::OpaqueOp o;
  o.function = what;
  o.vector_flops = Count(0);
  o.special_ops = Count(0);
  o.bytes = bytes;
  o.assumption = fmt::format("{} with general dimension numbers: reads the indices and the "
                             "elements it moves, writes its output once", what);
  o.attrs = std::move(attrs);
  c.opaque(std::move(ins), {out}, std::move(o));
}

// JAX's GatherScatterMode by name (CLIP, FILL_OR_DROP, PROMISE_IN_BOUNDS) in lower case;
// ONE_HOT has no kernel.
std::string index_mode(Context& c, const char* dflt) {
  const auto& m = c.a("mode");
  std::string name = m.is_string() ? m.get<std::string>() : dflt;
  if (auto dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (name != "clip" && name != "fill_or_drop" && name != "promise_in_bounds")
    throw Unsupported(fmt::format("gather/scatter mode {}", name));
  return name;
}

void lower_gather(Context& c) {
  TensorId x = in(c, 0), idx = in(c, 1);
  TensorId out = c.def(0);
  const Shape xs = c.t(x).shape, is = c.t(idx).shape, os = c.t(out).shape;
  // The gather move has PyTorch's index semantics (an index out of range is an error at run
  // time, never a silent value): right for in-range indices, which promise_in_bounds and
  // fill_or_drop programs have as a rule; "clip" asks for clamping, which the kernel does.
  if (auto p = index_mode(c, "clip") != "clip" ? gather_pattern(c, xs, is, os) : std::nullopt) {
    TensorId i = index_view(c, idx);
    return gather(c, x, i, out, p->axis, p->elements ? IndexMode::Elements : IndexMode::Take);
  }
  const auto& dn = c.a("dimension_numbers");
  if (!dn.is_object()) throw Unsupported("gather without dimension numbers");
  ir::Attrs attrs;
  for (const char* k : {"offset_dims", "collapsed_slice_dims", "start_index_map",
                        "operand_batching_dims", "start_indices_batching_dims"})
    attrs[k] = field(dn, k);
  attrs["slice_sizes"] = ints(c, "slice_sizes");
  attrs["mode"] = index_mode(c, "clip");
  if (std::get<std::string>(attrs["mode"]) == "fill_or_drop") {
    std::optional<double> fill = number_value(c.a("fill_value"));
    if (!fill) throw Unsupported("fill_or_drop gather without a fill value");
    attrs["fill_value"] = *fill;
  }
  Count gathered = c.t(out).size_bytes();
  opaque_indexing(c, "xla_gather", {x, idx}, out, gathered + c.t(idx).size_bytes() + gathered,
                  std::move(attrs));
}

// A scatter of one window at indices the recorder knew (`x.at[1:3, 2:5].set(u)`): the
// update of a box, as dynamic_update_slice (reduce "sum": the box read, added, written).
bool box_scatter(Context& c, TensorId x, TensorId u, TensorId out, ScatterReduce reduce) {
  const auto& dn = c.a("dimension_numbers");
  const auto& iv = operands(c)[1];
  if (!dn.is_object() || !iv.contains("values") ||
      (reduce != ScatterReduce::None && reduce != ScatterReduce::Sum))
    return false;
  const Shape xs = c.t(x).shape, us = c.t(u).shape;
  Shape window = field(dn, "update_window_dims"), smap = field(dn, "scatter_dims_to_operand_dims");
  if (!field(dn, "inserted_window_dims").empty() || !field(dn, "operand_batching_dims").empty() ||
      us.size() != xs.size())
    return false;
  for (std::size_t d = 0; d < window.size(); ++d)
    if (window[d] != static_cast<std::int64_t>(d)) return false;
  if (window.size() != xs.size()) return false;
  Shape vals = int_list(iv["values"], "indices");
  if (vals.size() != smap.size()) return false;
  Shape starts(xs.size(), 0);
  for (std::size_t k = 0; k < smap.size(); ++k) starts[norm_dim(smap[k], xs.size())] = vals[k];
  for (std::size_t d = 0; d < xs.size(); ++d)
    if (starts[d] < 0 || starts[d] + us[d] > xs[d]) return false;  // dropped, not clamped
  TensorId src = u;
  if (reduce == ScatterReduce::Sum) {
    Shape ends;
    for (std::size_t d = 0; d < xs.size(); ++d) ends.push_back(starts[d] + us[d]);
    TensorId box = c.temp("box", us, c.t(x).dtype);
    slice_move(c, x, box, starts, ends, Shape(xs.size(), 1));
    src = c.temp("summed", us, c.t(x).dtype);
    c.elementwise({box, u}, src, add(arg(0), arg(1)));
  }
  bool whole = true;
  for (std::size_t d = 0; d < xs.size(); ++d) whole = whole && us[d] == xs[d];
  if (whole) c.move(MoveKind::Copy, {src}, out);
  else update_box(c, x, src, starts, 0, out);
  return true;
}

Fn scatter_op(ScatterReduce reduce) {
  return [=](Context& c) {
    TensorId x = in(c, 0), idx = in(c, 1), u = in(c, 2);
    TensorId out = c.def(0);
    const Shape xs = c.t(x).shape, is = c.t(idx).shape, us = c.t(u).shape;
    const auto& dn = c.a("dimension_numbers");
    std::optional<IndexPattern> p;
    if (dn.is_object() && index_mode(c, "fill_or_drop") != "clip") {
      Shape window = field(dn, "update_window_dims"),
            inserted = field(dn, "inserted_window_dims"),
            smap = field(dn, "scatter_dims_to_operand_dims"),
            obatch = field(dn, "operand_batching_dims"),
            ibatch = field(dn, "scatter_indices_batching_dims");
      if (smap.size() == 1 && inserted == smap && !is.empty() && is.back() == 1) {
        const std::int64_t a = smap[0];
        const std::size_t R = xs.size(), nb = is.size() - 1;
        if (obatch.empty()) {
          Shape want, ushape;
          for (std::int64_t d = 0; d < a; ++d) want.push_back(d), ushape.push_back(xs[d]);
          for (std::size_t d = 0; d < nb; ++d) ushape.push_back(is[d]);
          for (std::size_t d = a + 1; d < R; ++d)
            want.push_back(static_cast<std::int64_t>(d - 1 + nb)), ushape.push_back(xs[d]);
          if (window == want && us == ushape) p = IndexPattern{a, false};
        } else {
          Shape others;
          for (std::size_t d = 0; d < R; ++d)
            if (static_cast<std::int64_t>(d) != a) others.push_back(static_cast<std::int64_t>(d));
          if (obatch == others && ibatch == others && window.empty() && nb == R &&
              Shape(is.begin(), is.end() - 1) == us)
            p = IndexPattern{a, true};
        }
      }
    }
    if (!p && box_scatter(c, x, u, out, reduce)) return;
    if (p) {
      TensorId i = index_view(c, idx);
      return scatter(c, x, i, u, out, p->axis,
                     p->elements ? IndexMode::Elements : IndexMode::Take, reduce);
    }
    if (!dn.is_object()) throw Unsupported("scatter without dimension numbers");
    ir::Attrs attrs;
    for (const char* k : {"update_window_dims", "inserted_window_dims",
                          "scatter_dims_to_operand_dims", "operand_batching_dims",
                          "scatter_indices_batching_dims"})
      attrs[k] = field(dn, k);
    attrs["mode"] = index_mode(c, "fill_or_drop");
    attrs["combine"] = std::string(scatter_reduce_name(reduce));
    Count moved = c.t(u).size_bytes();
    opaque_indexing(c, "xla_scatter", {x, idx, u}, out,
                    c.t(x).size_bytes() + c.t(idx).size_bytes() + moved + c.t(out).size_bytes(),
                    std::move(attrs));
  };
}

// iota: the executor's "arange" (0, 1, 2, ... along `dimension`) over that dimension alone,
// broadcast to the output's shape by free views; one integer add per element of the line.
void lower_iota(Context& c) {
  TensorId out = c.def(0);
  const Shape os = c.t(out).shape;
  if (os.empty()) throw Unsupported("iota of rank 0");
  const std::int64_t dim = norm_dim(c.int_arg("dimension", 0), os.size());
  TensorId line = out;
  if (os.size() > 1) line = c.temp("line", {os[dim]}, c.t(out).dtype);
  ir::OpaqueOp o;
  o.function = "arange";
  o.vector_flops = Count(os[dim]);
  o.special_ops = Count(0);
  o.bytes = c.t(line).size_bytes();
  o.assumption = "one integer add per element of the index line (0, 1, ..., n-1); writes it "
                 "once; the broadcast to the output's shape is a free view";
  o.attrs["start"] = std::int64_t{0};
  o.attrs["step"] = std::int64_t{1};
  c.opaque({}, {line}, std::move(o));
  if (line == out) return;
  Shape aligned(os.size(), 1);
  aligned[dim] = os[dim];
  TensorId v = c.temp("aligned", aligned, c.t(out).dtype);
  c.move(MoveKind::View, {line}, v);
  c.move(MoveKind::View, {v}, out);
}

// sort of one operand (values), or of (keys, iota) with one key (values and the argsort).
void lower_sort(Context& c) {
  const std::size_t n = n_operands(c);
  const auto& iota = c.a("iota_operands");
  if (n == 2 && !(c.int_arg("num_keys", 1) == 1 && iota.is_array() && iota.size() == 2 &&
                  iota[1].is_boolean() && iota[1].get<bool>()))
    throw Unsupported("sort of several operands other than (keys, iota)");
  if (n != 1 && n != 2) throw Unsupported("sort of more than two operands");
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape;
  std::int64_t axis = norm_dim(c.int_arg("dimension", -1), xs.size());
  std::vector<TensorId> outs;
  Count bytes = c.t(x).size_bytes();
  for (std::size_t k = 0; k < n; ++k) {
    outs.push_back(c.def(k));
    bytes = bytes + c.t(outs.back()).size_bytes();
  }
  // Unsigned keys (random bits in jax.random.permutation) sort by their unsigned values:
  // sorted widened, the values cast back to the held type.
  TensorId values_out = outs[0];
  if (int bits = unsigned_bits(c, 0)) {
    x = unsigned_wide(c, x, bits);
    outs[0] = c.temp("sorted", xs, ir::DType::I64);
  }
  c.opaque({x}, outs, sort_op(xs, axis, bytes, SortWrites::ValuesMaybeIndices));
  if (outs[0] != values_out) c.move(MoveKind::Cast, {outs[0]}, values_out);
}

void lower_top_k(Context& c) {
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape;
  std::int64_t k = c.int_arg("k", 1);
  std::int64_t axis = c.has("axis") ? norm_dim(c.int_arg("axis", -1), xs.size())
                                    : static_cast<std::int64_t>(xs.size()) - 1;
  std::vector<TensorId> outs;
  Count bytes = c.t(x).size_bytes();
  for (std::size_t j = 0; j < c.op().outputs.size(); ++j)
    if (c.out_id(j)) outs.push_back(c.def(j)), bytes = bytes + c.t(outs.back()).size_bytes();
  c.opaque({x}, outs, topk_op(xs, axis, k, true, bytes));
}

}  // namespace

void register_index_ops(const Register& reg) {
  reg("jax::gather", lower_gather);
  // Each scatter under both of its spellings.
  for (auto [dash, underscore, reduce] :
       std::initializer_list<std::tuple<std::string_view, std::string_view, ScatterReduce>>{
           {"jax::scatter-add", "jax::scatter_add", ScatterReduce::Sum},
           {"jax::scatter-mul", "jax::scatter_mul", ScatterReduce::Prod},
           {"jax::scatter-min", "jax::scatter_min", ScatterReduce::Min},
           {"jax::scatter-max", "jax::scatter_max", ScatterReduce::Max}}) {
    reg(dash, scatter_op(reduce));
    reg(underscore, scatter_op(reduce));
  }
  reg("jax::scatter", scatter_op(ScatterReduce::None));
  reg("jax::iota", lower_iota);
  reg("jax::sort", lower_sort);
  reg("jax::top_k", lower_top_k);
}

}  // namespace solar::lower::detail::jax
