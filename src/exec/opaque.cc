// Opaque kernels: the non-einsum functions the executor knows, by name (docs/executor.md,
// "Data movement and opaque ops"). Each works along one axis of its first input, line by
// line (a line: the elements that differ only in the axis coordinate), and follows
// PyTorch's CPU semantics: NaN sorts above +inf, sort is stable, cumulative sums of f32
// accumulate in f64.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "solar/exec/kernels.h"
#include "solar/ir/attrs.h"
#include "solar/ir/shape.h"
#include "solar/util/errors.h"
#include "opaque_gather.h"
#include "opaque_index.h"
#include "opaque_pool.h"

namespace solar::exec {
namespace {

constexpr std::int64_t kParallelElements = std::int64_t{1} << 15;

int thread_count(const ExecContext& ctx) {
  return ctx.threads > 0 ? ctx.threads : omp_get_max_threads();
}

using ir::shape_str;

// What one call sees: the op, its buffers and the resolved thread count.
struct Call {
  const ir::OpaqueOp& op;
  std::span<const Buffer* const> inputs;
  std::span<Buffer* const> outputs;
  int threads;

  [[noreturn]] void bad(const std::string& what) const {
    throw UserError(UserError::Kind::InvalidGraph, fmt::format("opaque \"{}\": {}", op.function, what));
  }

  std::int64_t int_attr(const char* key, std::int64_t fallback) const {
    return ir::int_attr(op.attrs, key, fallback, fmt::format("opaque \"{}\": ", op.function));
  }
  bool has(const char* key) const { return op.attrs.contains(key); }

  void need_counts(std::size_t n_in, std::size_t min_out, std::size_t max_out) const {
    if (inputs.size() != n_in)
      bad(fmt::format("takes {} input{}, got {}", n_in, n_in == 1 ? "" : "s", inputs.size()));
    if (outputs.size() < min_out || outputs.size() > max_out)
      bad(min_out == max_out
              ? fmt::format("has {} output{}, got {}", min_out, min_out == 1 ? "" : "s",
                            outputs.size())
              : fmt::format("has {} to {} outputs, got {}", min_out, max_out, outputs.size()));
  }

  // The axis attribute (negative counts from the end, as in PyTorch), in [0, rank); a scalar
  // is treated as one element along axis 0.
  std::int64_t axis(std::int64_t fallback = -1) const {
    std::int64_t rank = std::max<std::int64_t>(1, static_cast<std::int64_t>(x().shape().size()));
    std::int64_t a = int_attr("axis", fallback);
    if (a < -rank || a >= rank)
      bad(fmt::format("axis {} is outside [{}, {}) for input {}", a, -rank, rank,
                      shape_str(x().shape())));
    return a < 0 ? a + rank : a;
  }

  const Buffer& x() const { return *inputs[0]; }

  void need_shape(std::size_t k, const std::vector<std::int64_t>& want, const char* what) const {
    if (outputs[k]->shape() != want)
      bad(fmt::format("output {} ({}) has shape {} but must be {}", k, what,
                      shape_str(outputs[k]->shape()), shape_str(want)));
  }
  void need_index_dtype(std::size_t k) const {
    if (outputs[k]->storage() != Storage::I64 || outputs[k]->dtype() == ir::DType::Bool)
      bad(fmt::format("output {} holds indices and needs an integer dtype, not {}", k,
                      ir::dtype_name(outputs[k]->dtype())));
  }
  void need_same_dtype(std::size_t k) const {
    if (outputs[k]->dtype() != x().dtype())
      bad(fmt::format("output {} holds input values and needs the input's dtype {}, not {}", k,
                      ir::dtype_name(x().dtype()), ir::dtype_name(outputs[k]->dtype())));
  }
};

// The input seen as lines along `axis`: outer * inner lines of n elements, stride inner.
struct Lines {
  std::int64_t outer = 1, n = 1, inner = 1;
  Lines(const std::vector<std::int64_t>& shape, std::int64_t axis) {
    if (shape.empty()) return;
    for (std::int64_t d = 0; d < axis; ++d) outer *= shape[d];
    n = shape[axis];
    for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  std::int64_t count() const { return outer * inner; }
  // Offset of element 0 of line `l` in a tensor whose axis has `extent` elements.
  std::int64_t base(std::int64_t l, std::int64_t extent) const {
    return (l / inner) * extent * inner + l % inner;
  }
};

template <class F>
void for_lines(const Lines& lines, std::int64_t work, int threads, F&& f) {
  const std::int64_t count = lines.count();
  const bool parallel = count > 1 && work >= kParallelElements;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16) if (parallel)
  for (std::int64_t l = 0; l < count; ++l) f(l);
}

// Order of PyTorch's sort: NaN above everything (last ascending, first descending).
template <class T>
bool less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// Writes value v (of compute type T) to element i of an output of any dtype.
template <class T>
void store(Buffer& out, std::int64_t i, T v) {
  switch (out.storage()) {
    case Storage::F32: out.data<float>()[i] = static_cast<float>(v); return;
    case Storage::F64: out.data<double>()[i] = static_cast<double>(v); return;
    case Storage::I64: out.data<std::int64_t>()[i] = static_cast<std::int64_t>(v); return;
  }
}

// ---- sort, argsort, topk -------------------------------------------------------------------

// For each line: the first `k` positions of the line in sorted order (stable; ties keep their
// input order), descending or ascending; values and/or indices written to the outputs.
void sorted_prefix(const Call& c, std::int64_t axis, std::int64_t k, bool descending,
                   Buffer* values, Buffer* indices) {
  const Buffer& x = c.x();
  Lines lines(x.shape(), axis);
  with_type(x.storage(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    for_lines(lines, x.num_elements(), c.threads, [&](std::int64_t l) {
      const std::int64_t b = lines.base(l, lines.n), ob = lines.base(l, k);
      std::vector<std::int64_t> order(static_cast<std::size_t>(lines.n));
      std::iota(order.begin(), order.end(), 0);
      auto at = [&](std::int64_t i) { return in[b + i * lines.inner]; };
      auto cmp = [&](std::int64_t i, std::int64_t j) {
        return descending ? less(at(j), at(i)) : less(at(i), at(j));
      };
      if (k < lines.n) {
        // Ties broken by position, so the partial sort is as stable as the full one.
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](std::int64_t i, std::int64_t j) {
                            if (cmp(i, j)) return true;
                            if (cmp(j, i)) return false;
                            return i < j;
                          });
      } else {
        std::stable_sort(order.begin(), order.end(), cmp);
      }
      for (std::int64_t r = 0; r < k; ++r) {
        const std::int64_t o = ob + r * lines.inner;
        if (values) values->data<T>()[o] = at(order[r]);
        if (indices) indices->data<std::int64_t>()[o] = order[r];
      }
    });
  });
  if (indices) bring_to_dtype(*indices);
}

void run_sort(const Call& c) {
  c.need_counts(1, 1, 2);
  const std::int64_t axis = c.axis();
  c.need_same_dtype(0);
  c.need_shape(0, c.x().shape(), "values");
  if (c.outputs.size() == 2) {
    c.need_shape(1, c.x().shape(), "indices");
    c.need_index_dtype(1);
  }
  Lines lines(c.x().shape(), axis);
  sorted_prefix(c, axis, lines.n, c.int_attr("descending", 0) != 0, c.outputs[0],
                c.outputs.size() == 2 ? c.outputs[1] : nullptr);
}

void run_argsort(const Call& c) {
  c.need_counts(1, 1, 1);
  const std::int64_t axis = c.axis();
  c.need_shape(0, c.x().shape(), "indices");
  c.need_index_dtype(0);
  Lines lines(c.x().shape(), axis);
  sorted_prefix(c, axis, lines.n, c.int_attr("descending", 0) != 0, nullptr, c.outputs[0]);
}

void run_topk(const Call& c) {
  c.need_counts(1, 1, 2);
  const std::int64_t axis = c.axis();
  if (!c.has("k")) c.bad("needs the integer attribute k");
  const std::int64_t k = c.int_attr("k", 0);
  std::vector<std::int64_t> shape = c.x().shape();
  if (shape.empty()) shape = {1};
  if (k < 0 || k > shape[axis])
    c.bad(fmt::format("k = {} is outside [0, {}] (axis {} of input {})", k, shape[axis], axis,
                      shape_str(c.x().shape())));
  shape[axis] = k;
  if (c.x().shape().empty()) shape.clear();
  c.need_same_dtype(0);
  c.need_shape(0, shape, "values");
  if (c.outputs.size() == 2) {
    c.need_shape(1, shape, "indices");
    c.need_index_dtype(1);
  }
  // sorted=0 leaves the order to the implementation in PyTorch; this one always sorts.
  sorted_prefix(c, axis, k, c.int_attr("largest", 1) != 0, c.outputs[0],
                c.outputs.size() == 2 ? c.outputs[1] : nullptr);
}

// ---- argmax / argmin -----------------------------------------------------------------------

// The first position of the maximum (minimum) along the axis, NaN counting as the extreme
// (PyTorch). Without an axis attribute: over the flattened input, a scalar output.
void run_arg_extreme(const Call& c, bool max) {
  c.need_counts(1, 1, 1);
  c.need_index_dtype(0);
  const Buffer& x = c.x();
  Buffer& out = *c.outputs[0];
  const bool flat = !c.has("axis");
  std::int64_t axis = 0;
  Lines lines(std::vector<std::int64_t>{x.num_elements()}, 0);
  if (!flat) {
    axis = c.axis();
    lines = Lines(x.shape(), axis);
    std::vector<std::int64_t> drop = x.shape(), keep = x.shape();
    if (!drop.empty()) {
      drop.erase(drop.begin() + axis);
      keep[axis] = 1;
    }
    if (out.shape() != drop) c.need_shape(0, keep, "indices (keepdim)");
  } else {
    bool scalar = true;
    for (std::int64_t d : out.shape()) scalar = scalar && d == 1;
    if (!scalar) c.need_shape(0, {}, "index of the flattened input");
  }
  if (lines.n == 0) c.bad("cannot take the arg-extreme of an empty axis");
  with_type(x.storage(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    std::int64_t* o = out.data<std::int64_t>();
    for_lines(lines, x.num_elements(), c.threads, [&](std::int64_t l) {
      const std::int64_t b = lines.base(l, lines.n);
      std::int64_t best = 0;
      T bv = in[b];
      for (std::int64_t i = 1; i < lines.n; ++i) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(bv)) break;
        }
        T v = in[b + i * lines.inner];
        bool better = max ? less(bv, v) : less(v, bv);
        if constexpr (std::is_floating_point_v<T>) better = better || std::isnan(v);
        if (better) {
          best = i;
          bv = v;
        }
      }
      o[l] = best;
    });
  });
  bring_to_dtype(out);
}

// ---- cumulative ops ------------------------------------------------------------------------

enum class Cumulative { Sum, Prod, Max, Min };

// Running sums/products accumulate in f64 for floats (PyTorch's CPU accumulator for f32) and
// wrap in i64 for integers; the output's dtype rounds or wraps the result. cummax/cummin
// follow PyTorch: a value equal to the running extreme moves the index to it, NaN sticks.
void run_cumulative(const Call& c, Cumulative kind) {
  const bool extreme = kind == Cumulative::Max || kind == Cumulative::Min;
  c.need_counts(1, 1, extreme ? 2 : 1);
  const std::int64_t axis = c.axis();
  c.need_shape(0, c.x().shape(), "values");
  if (extreme) {
    c.need_same_dtype(0);
    if (c.outputs.size() == 2) {
      c.need_shape(1, c.x().shape(), "indices");
      c.need_index_dtype(1);
    }
  }
  const Buffer& x = c.x();
  Buffer& out = *c.outputs[0];
  Buffer* idx = c.outputs.size() == 2 ? c.outputs[1] : nullptr;
  Lines lines(x.shape(), axis);
  with_type(x.storage(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_integral_v<T>, std::int64_t, double>;
    const T* in = x.data<T>();
    for_lines(lines, x.num_elements(), c.threads, [&](std::int64_t l) {
      const std::int64_t b = lines.base(l, lines.n);
      Acc acc = kind == Cumulative::Prod ? Acc(1) : Acc(0);
      std::int64_t at = 0;
      for (std::int64_t i = 0; i < lines.n; ++i) {
        const std::int64_t e = b + i * lines.inner;
        const Acc v = static_cast<Acc>(in[e]);
        switch (kind) {
          case Cumulative::Sum:
            if constexpr (std::is_integral_v<Acc>) {
              acc = static_cast<Acc>(static_cast<std::uint64_t>(acc) + static_cast<std::uint64_t>(v));
            } else {
              acc += v;
            }
            break;
          case Cumulative::Prod:
            if constexpr (std::is_integral_v<Acc>) {
              acc = static_cast<Acc>(static_cast<std::uint64_t>(acc) * static_cast<std::uint64_t>(v));
            } else {
              acc *= v;
            }
            break;
          case Cumulative::Max: case Cumulative::Min: {
            bool take = i == 0;
            if constexpr (std::is_floating_point_v<Acc>) {
              take = take || std::isnan(v) ||
                     (!std::isnan(acc) && (kind == Cumulative::Max ? v >= acc : v <= acc));
            } else {
              take = take || (kind == Cumulative::Max ? v >= acc : v <= acc);
            }
            if (take) {
              acc = v;
              at = i;
            }
            break;
          }
        }
        store(out, e, acc);
        if (idx) idx->data<std::int64_t>()[e] = at;
      }
    });
  });
  bring_to_dtype(out);
  if (idx) bring_to_dtype(*idx);
}

// ---- the registry --------------------------------------------------------------------------

struct Entry {
  const char* name;
  std::function<void(const Call&)> run;
  bool sourceless = false;  // takes no input (arange)
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      {"arange", [](const Call& c) { run_arange(c.op, c.inputs, c.outputs); }, true},
      {"argmax", [](const Call& c) { run_arg_extreme(c, true); }},
      {"argmin", [](const Call& c) { run_arg_extreme(c, false); }},
      {"argsort", run_argsort},
      {"cummax", [](const Call& c) { run_cumulative(c, Cumulative::Max); }},
      {"cummin", [](const Call& c) { run_cumulative(c, Cumulative::Min); }},
      {"cumprod", [](const Call& c) { run_cumulative(c, Cumulative::Prod); }},
      {"cumsum", [](const Call& c) { run_cumulative(c, Cumulative::Sum); }},
      {"nonzero_coords", [](const Call& c) { run_nonzero(c.op, c.inputs, c.outputs); }},
      {"pool_argmax", [](const Call& c) { run_pool_argmax(c.op, c.inputs, c.outputs); }},
      {"sort", run_sort},
      {"strided_offsets", [](const Call& c) { run_strided_offsets(c.op, c.inputs, c.outputs); },
       true},
      {"topk", run_topk},
      // torch.empty's memory: any values are right; zeros keep runs reproducible
      {"uninitialized",
       [](const Call& c) {
         for (Buffer* out : c.outputs) {
           std::size_t n = storage_bytes(out->storage());
           for (std::int64_t d : out->shape()) n *= static_cast<std::size_t>(d);
           std::memset(out->raw_data(), 0, n);
         }
       },
       true},
      {"xla_gather", [](const Call& c) { run_xla_gather(c.op, c.inputs, c.outputs); }},
      {"xla_scatter", [](const Call& c) { run_xla_scatter(c.op, c.inputs, c.outputs); }},
  };
  return entries;
}

const Entry* find(std::string_view name) {
  for (const Entry& e : registry())
    if (name == e.name) return &e;
  return nullptr;
}

}  // namespace

std::vector<std::string> opaque_functions() {
  std::vector<std::string> names;
  for (const Entry& e : registry()) names.emplace_back(e.name);
  return names;
}

bool knows_opaque(std::string_view function) { return find(function) != nullptr; }

void run_opaque(const ir::OpaqueOp& o, std::span<const Buffer* const> inputs,
                std::span<Buffer* const> outputs, const ExecContext& ctx) {
  const Entry* e = find(o.function);
  if (!e)
    throw Unsupported(fmt::format("the executor cannot run opaque function \"{}\" (it runs: {})",
                                  o.function, fmt::join(opaque_functions(), ", ")));
  Call c{o, inputs, outputs, thread_count(ctx)};
  if (inputs.empty() && !e->sourceless) c.bad("needs an input");
  e->run(c);
}

}  // namespace solar::exec
