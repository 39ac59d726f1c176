// The aten table's rounding, remainder, bitwise and inverse-trigonometric elementwise ops,
// linear/bilinear/trilinear/bicubic upsampling, k-th value selection (median, kthvalue) and
// embedding_bag: forward ops whose lowering needs the combine functions floor, ceil, trunc,
// round_even, rem, mod, atan2, and, or, xor, shl, ashr, lshr and f32_bits (ir/expr.h).
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "context.h"
#include "families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {
namespace {

using ir::DType;
using Dts = std::vector<DType>;  // the dtypes binary_fn gives its builder

Expr bin(ExprOp op, Expr a, Expr b) { return fn(op, {std::move(a), std::move(b)}); }
Expr select(Expr c, Expr a, Expr b) {
  return fn(ExprOp::Select, {std::move(c), std::move(a), std::move(b)});
}

// f(a, b) elementwise over two tensor-or-number arguments (`a_name`, `b_name`); f is given
// the dtypes of the tensor arguments, then the output's.
using BinaryBuilder = std::function<Expr(Context&, Expr, Expr, const Dts&)>;
Fn binary_fn(const char* a_name, const char* b_name, BinaryBuilder f) {
  return [=](Context& c) {
    std::vector<TensorId> in;
    Expr a = operand(c, a_name, in);
    Expr b = operand(c, b_name, in);
    if (in.empty()) throw Unsupported("no tensor operand");
    TensorId out = c.def(0);
    std::vector<DType> dts;
    for (TensorId t : in) dts.push_back(c.t(t).dtype);
    dts.push_back(c.t(out).dtype);
    c.elementwise(in, out, f(c, a, b, dts));
  };
}

bool all_of_dtype(const Dts& dts, const std::function<bool(DType)>& p) {
  for (DType d : dts)
    if (!p(d)) return false;
  return true;
}

// The sign bit of a float value (true for -0.0 and negative NaNs as well): the sign of its
// f32 bit pattern (a float64 keeps its sign when rounded to f32). Integers: x < 0.
Expr sign_bit(Expr x, bool is_float) {
  if (!is_float) return bin(ExprOp::Lt, std::move(x), num(0));
  return bin(ExprOp::Lt, un(ExprOp::F32Bits, std::move(x)), num(0));
}

// torch's floor division of floats (div_floor_floating): the quotient of a - fmod(a, b),
// one less where the remainder's sign differs from b's, then floored with a correction of
// its rounding; a / b where b is 0. This is what makes 0.6 // 0.2 equal to 2, as in Python.
Expr floor_divide_float(Expr a, Expr b) {
  Expr m = bin(ExprOp::Rem, a, b);
  Expr d = bin(ExprOp::Div, sub(a, m), b);
  Expr fix = mul(bin(ExprOp::Ne, m, num(0)),
                 bin(ExprOp::Ne, bin(ExprOp::Lt, b, num(0)), bin(ExprOp::Lt, m, num(0))));
  d = select(fix, sub(d, num(1)), d);
  Expr f = un(ExprOp::Floor, d);
  Expr rounded = select(bin(ExprOp::Gt, sub(d, f), num(0.5)), add(f, num(1)), f);
  Expr q = bin(ExprOp::Div, a, b);
  // a zero quotient takes the sign of a / b
  Expr zero = select(bin(ExprOp::Lt, q, num(0)), num(-0.0), num(0.0));
  return select(bin(ExprOp::Eq, b, num(0)), q, select(bin(ExprOp::Ne, d, num(0)), rounded, zero));
}

// a // b on integers, exact in integer arithmetic: the truncated quotient, one less where
// the remainder is nonzero and its sign differs from b's (Python's floor).
Expr floor_divide_int(Expr a, Expr b) {
  Expr r = bin(ExprOp::Rem, a, b);
  Expr fix = mul(bin(ExprOp::Ne, r, num(0)),
                 bin(ExprOp::Ne, bin(ExprOp::Lt, r, num(0)), bin(ExprOp::Lt, b, num(0))));
  return sub(bin(ExprOp::IDiv, a, b), fix);
}
Expr trunc_divide_int(Expr a, Expr b) { return bin(ExprOp::IDiv, a, b); }

// div with rounding_mode None, "trunc" or "floor" (Tensor and Scalar overloads), and
// floor_divide.
Fn divide(std::optional<const char*> fixed_mode) {
  return binary_fn("self", "other", [fixed_mode](Context& c, Expr a, Expr b,
                                                 const Dts& dts) {
    std::string mode;
    if (fixed_mode) {
      mode = *fixed_mode;
    } else if (c.a("rounding_mode").is_string()) {
      mode = c.a("rounding_mode").get<std::string>();
    }
    const bool ints = all_of_dtype(dts, [](DType d) { return !ir::is_float(d); });
    if (mode.empty()) return bin(ExprOp::Div, a, b);
    if (mode == "trunc")
      return ints ? trunc_divide_int(a, b) : un(ExprOp::Trunc, bin(ExprOp::Div, a, b));
    if (mode == "floor") return ints ? floor_divide_int(a, b) : floor_divide_float(a, b);
    throw Unsupported(fmt::format("division with rounding mode '{}'", mode));
  });
}

// round(x, decimals): torch scales by 10^decimals (divides by 10^-decimals when negative),
// rounds half to even and scales back.
Expr round_decimals(Expr x, std::int64_t decimals) {
  if (decimals == 0) return un(ExprOp::RoundEven, x);
  if (decimals > 0) {
    const double p = std::pow(10.0, static_cast<double>(decimals));
    return bin(ExprOp::Div, un(ExprOp::RoundEven, mul(x, num(p))), num(p));
  }
  const double p = std::pow(10.0, static_cast<double>(-decimals));
  return mul(un(ExprOp::RoundEven, bin(ExprOp::Div, x, num(p))), num(p));
}

// Bitwise and/or/xor: integers bit by bit; bools as truth values (x != 0) with mul/max/ne.
Fn bitwise(ExprOp int_op, ExprOp bool_op) {
  return binary_fn("self", "other", [=](Context&, Expr a, Expr b, const Dts& dts) {
    if (all_of_dtype(dts, [](DType d) { return d == DType::Bool; }))
      return bin(bool_op, bin(ExprOp::Ne, a, num(0)), bin(ExprOp::Ne, b, num(0)));
    if (!all_of_dtype(dts, [](DType d) { return !ir::is_float(d); }))
      throw Unsupported("a bitwise op on a float tensor");
    return bin(int_op, a, b);
  });
}

// Shifts: left; right is arithmetic on signed types and logical on unsigned (u8), as torch
// computes `>>` in the tensor's type. Counts outside [0, width) are defined in ir/expr.h.
Fn shift(bool left, const char* a_name, const char* b_name) {
  return binary_fn(a_name, b_name, [left](Context&, Expr a, Expr b, const Dts& dts) {
    const DType dt = dts.back();  // the output's
    if (!ir::is_integer(dt)) throw Unsupported("a shift of a float or bool tensor");
    ExprOp op = left ? ExprOp::Shl : dt == DType::U8 ? ExprOp::Lshr : ExprOp::Ashr;
    return bin(op, std::move(a), std::move(b));
  });
}

// ---------------------------------------------------------------- upsampling

enum class Interp { Linear, Cubic };

// The source position of output index o along one dimension (torch's
// area_pixel_compute_source_index): scale * o with align_corners, else scale * (o + 0.5) -
// 0.5, floored at 0 for linear interpolation. scale is (L-1)/(O-1) with align_corners (0
// when O is 1), else 1/scale_factor when the op was given one, else L/O.
struct SourceMap {
  double scale = 0;
  double offset = 0;
  bool clamp_at_zero = false;
};

SourceMap source_map(std::int64_t L, std::int64_t O, bool align_corners,
                     std::optional<double> scale_factor, Interp mode) {
  SourceMap m;
  if (align_corners) {
    m.scale = O > 1 ? static_cast<double>(L - 1) / static_cast<double>(O - 1) : 0.0;
    return m;
  }
  m.scale = scale_factor && *scale_factor > 0 ? 1.0 / *scale_factor
                                              : static_cast<double>(L) / static_cast<double>(O);
  m.offset = 0.5 * m.scale - 0.5;
  m.clamp_at_zero = mode == Interp::Linear;
  return m;
}

// torch's cubic convolution weights (A = -0.75) of the four taps at distance t in [0, 1)
// past the floor of the source position: taps floor-1 .. floor+2.
Expr cubic_weight(Expr t, int tap) {
  constexpr double A = -0.75;
  auto near = [&](Expr x) {  // ((A + 2) x - (A + 3)) x^2 + 1, |x| <= 1
    return add(mul(sub(mul(num(A + 2), x), num(A + 3)), un(ExprOp::Square, x)), num(1));
  };
  auto far = [&](Expr x) {  // ((A x - 5A) x + 8A) x - 4A, 1 < |x| < 2
    return sub(mul(add(mul(sub(mul(num(A), x), num(5 * A)), x), num(8 * A)), x), num(4 * A));
  };
  switch (tap) {
    case 0: return far(add(t, num(1)));
    case 1: return near(t);
    case 2: return near(sub(num(1), t));
    default: return far(sub(num(2), t));
  }
}

// Resamples `cur` along `dim` from L to O positions into `out`: taps gathered by index
// (data movement: their indices are not affine in o) and blended with per-position weights.
// The index and weight vectors are computed from arange(O) by elementwise einsums (O and O*taps
// work); the blend costs one multiply per tap and taps - 1 adds per output element.
void resample_dim(Context& c, TensorId cur, TensorId out, std::size_t dim, const SourceMap& m,
                  Interp mode) {
  const Shape is = c.t(cur).shape;
  const std::int64_t L = is[dim], O = c.t(out).shape[dim];
  const DType wdt = c.t(cur).dtype == DType::F64 ? DType::F64 : DType::F32;  // torch's opmath type
  TensorId pos = c.temp("position", {O}, wdt);
  {
    ir::OpaqueOp o;
    o.function = "arange";
    o.vector_flops = Count(O);
    o.special_ops = Count(0);
    o.bytes = c.t(pos).size_bytes();
    o.assumption = "one multiply-add per element (start + i*step); writes the output once";
    o.attrs = {{"start", 0.0}, {"step", 1.0}};
    c.opaque({}, {pos}, std::move(o));
  }
  // as torch writes it: scale * (o + 0.5) - 0.5, or scale * o
  Expr src = m.offset == 0 ? mul(arg(0), num(m.scale))
                           : sub(mul(add(arg(0), num(0.5)), num(m.scale)), num(0.5));
  if (m.clamp_at_zero) src = fn(ExprOp::Max, {src, num(0)});
  TensorId source = c.temp("source", {O}, wdt);
  c.elementwise({pos}, source, src);
  const double last = static_cast<double>(L - 1);
  // floor of the source position (linear: at most L-1, as torch guards it)
  TensorId base = c.temp("base", {O}, DType::I64);
  Expr fl = un(ExprOp::Floor, arg(0));
  if (mode == Interp::Linear) fl = fn(ExprOp::Min, {fl, num(last)});
  c.elementwise({source}, base, fl);
  // fraction t = source - base (linear: clamped to [0, 1])
  TensorId frac = c.temp("fraction", {O}, wdt);
  Expr t = sub(arg(0), arg(1));
  if (mode == Interp::Linear) t = fn(ExprOp::Min, {fn(ExprOp::Max, {t, num(0)}), num(1)});
  c.elementwise({source, base}, frac, t);

  const int taps = mode == Interp::Linear ? 2 : 4;
  std::vector<TensorId> gathered, weights;
  for (int k = 0; k < taps; ++k) {
    // tap index: base + k (linear: min(base + 1, L-1)); cubic: base - 1 + k clamped to [0, L-1]
    TensorId idx = base;
    if (mode == Interp::Linear && k == 1) {
      idx = c.temp("index", {O}, DType::I64);
      c.elementwise({base}, idx, fn(ExprOp::Min, {add(arg(0), num(1)), num(last)}));
    } else if (mode == Interp::Cubic) {
      idx = c.temp("index", {O}, DType::I64);
      c.elementwise({base}, idx,
                    fn(ExprOp::Min,
                       {fn(ExprOp::Max, {add(arg(0), num(k - 1)), num(0)}), num(last)}));
    }
    Shape gs = is;
    gs[dim] = O;
    TensorId g = c.temp("tap", gs, c.t(cur).dtype);
    c.move(MoveKind::Gather, {cur, idx}, g, {{"axis", static_cast<std::int64_t>(dim)}});
    gathered.push_back(g);
    TensorId w = c.temp("weight", {O}, wdt);
    Expr we = mode == Interp::Cubic ? cubic_weight(arg(0), k)
              : k == 0               ? sub(num(1), arg(0))
                                     : arg(0);
    c.elementwise({frac}, w, we);
    weights.push_back(w);
  }
  // out = sum_k tap_k * weight_k[o]
  std::vector<TensorId> ins = gathered;
  ins.insert(ins.end(), weights.begin(), weights.end());
  Expr blend = mul(arg(0), arg(taps));
  for (int k = 1; k < taps; ++k) blend = add(blend, mul(arg(k), arg(taps + k)));
  c.channelwise(ins, out, blend, dim);
}

// upsample_{linear1d, bilinear2d, trilinear3d, bicubic2d} (.default and .vec): one dimension
// at a time (separable), the last spatial dimension first.
Fn upsample(std::size_t nd, Interp mode) {
  return [=](Context& c) {
    TensorId in = c.use_arg(c.has("self") ? "self" : "input");
    TensorId out = c.def(0);
    const Shape is = c.t(in).shape, os = c.t(out).shape;
    if (is.size() != nd + 2 || os.size() != is.size()) throw Unsupported("upsample rank mismatch");
    if (!ir::is_float(c.t(in).dtype)) throw Unsupported("interpolation of a non-float tensor");
    for (std::size_t d = 0; d < 2; ++d)
      if (is[d] != os[d]) throw Unsupported("upsampling changes a batch or channel dimension");
    const bool align = c.bool_arg("align_corners", false);
    // explicit scale factors: `scale_factors` (.vec) or scales_d/scales_h/scales_w/scales
    std::vector<std::optional<double>> sc(nd);
    const auto& v = c.a("scale_factors");
    if (v.is_array()) {
      if (v.size() != nd) throw Unsupported("scale_factors do not match the spatial dimensions");
      for (std::size_t k = 0; k < nd; ++k) sc[k] = number_value(v[k]);
    } else {
      static const char* const k1[] = {"scales"};
      static const char* const k2[] = {"scales_h", "scales_w"};
      static const char* const k3[] = {"scales_d", "scales_h", "scales_w"};
      const char* const* keys = nd == 1 ? k1 : nd == 2 ? k2 : k3;
      for (std::size_t k = 0; k < nd; ++k)
        if (c.has(keys[k])) sc[k] = number_value(c.a(keys[k]));
    }
    TensorId cur = in;
    std::vector<std::size_t> todo;
    // A dimension with the same size and no explicit scale maps o to o (weight 1 on it).
    for (std::size_t k = nd; k-- > 0;)
      if (is[2 + k] != os[2 + k] || sc[k]) todo.push_back(k);
    if (todo.empty()) {
      c.move(MoveKind::Copy, {in}, out);
      return;
    }
    for (std::size_t j = 0; j < todo.size(); ++j) {
      const std::size_t k = todo[j], dim = 2 + k;
      Shape ns = c.t(cur).shape;
      ns[dim] = os[dim];
      TensorId next = j + 1 == todo.size() ? out : c.temp("resampled", ns, c.t(in).dtype);
      resample_dim(c, cur, next, dim, source_map(is[dim], os[dim], align, sc[k], mode), mode);
      cur = next;
    }
  };
}

// ---------------------------------------------------------------- k-th value selection

// The k-th smallest along `axis` (values, and indices when wanted), as the k smallest in
// ascending order (the executor's "topk" with largest=0) and their last column. The stated
// work is a selection's, not a sort's: Floyd and Rivest's expected n + min(k, n - k)
// compares per row; the bytes are the row read once and one value and index written.
void kth_smallest(Context& c, TensorId in, std::int64_t axis, std::int64_t k, bool keepdim,
                  TensorId values, std::optional<TensorId> indices) {
  const Shape is = c.t(in).shape;
  const std::int64_t n = is[static_cast<std::size_t>(axis)];
  if (k < 1 || k > n) throw Unsupported(fmt::format("k = {} outside [1, {}]", k, n));
  Shape ks = is;
  ks[static_cast<std::size_t>(axis)] = k;
  TensorId kv = c.temp("smallest", ks, c.t(in).dtype);
  TensorId ki = c.temp("smallest_index", ks, DType::I64);
  const std::int64_t rows = n > 0 ? numel(is) / n : 0;
  ir::OpaqueOp o;
  o.function = "topk";
  o.vector_flops = Count(rows) * Count(n + std::min(k, n - k));
  o.special_ops = Count(0);
  Shape one = is;
  one[static_cast<std::size_t>(axis)] = 1;
  o.bytes = c.t(in).size_bytes() + Count(numel(one)) * Count(ir::dtype_bits(c.t(in).dtype) / 8 + 8);
  o.assumption =
      "selection (Floyd-Rivest): n + min(k, n-k) compares per row expected; reads each row once, "
      "writes one value and its index";
  o.attrs = {{"axis", axis}, {"k", k}, {"largest", std::int64_t{0}}};
  c.opaque({in}, {kv, ki}, std::move(o));
  // the k-th: the last of the k (a slice of one column), viewed without the axis unless keepdim
  auto pick = [&](TensorId from, TensorId to) {
    Shape starts(is.size(), 0), ends = ks;
    starts[static_cast<std::size_t>(axis)] = k - 1;
    TensorId col = keepdim && c.t(to).shape == one ? to : c.temp("kth", one, c.t(from).dtype);
    c.move(MoveKind::Slice, {from}, col, {{"starts", starts}, {"ends", ends}});
    if (col != to) c.move(MoveKind::View, {col}, to);
  };
  pick(kv, values);
  if (indices) pick(ki, *indices);
}

// kthvalue(k, dim, keepdim) and median(dim, keepdim): the lower median is the k-th smallest
// for k = (n + 1) / 2 (rounded down), torch's choice for even n. median() of the whole
// tensor selects over its flattened elements.
Fn kth_value(bool median, bool whole) {
  return [=](Context& c) {
    std::int64_t x = c.trace_id("self");
    TensorId in = c.use(x);
    if (!ir::is_float(c.t(in).dtype) && !ir::is_integer(c.t(in).dtype))
      throw Unsupported("selection over a bool tensor");
    std::int64_t axis = 0;
    if (whole) {
      const std::int64_t n = numel(c.t(in).shape);
      if (n == 0) throw Unsupported("median of an empty tensor");
      TensorId flat = c.temp("flat", {n}, c.t(in).dtype);
      in = c.materialize(in);
      c.move(MoveKind::View, {in}, flat);
      in = flat;
    } else {
      if (c.t(in).shape.empty()) throw Unsupported("selection over a 0-d tensor");
      axis = norm_dim(c.int_arg("dim", -1), c.t(in).shape.size());
      in = c.materialize(in);
    }
    const std::int64_t n = c.t(in).shape[static_cast<std::size_t>(axis)];
    const std::int64_t k = median ? (n + 1) / 2 : c.int_arg("k", 1);
    TensorId values = c.def(0);
    std::optional<TensorId> indices;
    if (!whole && c.out_id(1)) indices = c.def(1);
    kth_smallest(c, in, axis, k, c.bool_arg("keepdim", false), values, indices);
  };
}

// ---------------------------------------------------------------- embedding_bag

// _embedding_bag(_forward_only)(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
// per_sample_weights, include_last_offset, padding_idx): the rows of `weight` picked by
// `indices` (a gather), reduced per bag (a scatter with sum, mean or max into the bag rows).
// The bag of each index (offset2bag) comes from the offsets: a 1 scattered at each bag's
// start and a running sum (cumsum) minus one. Entries equal to padding_idx go to an extra
// bag row that is dropped. Empty bags are 0, as in torch.
void lower_embedding_bag(Context& c) {
  TensorId weight = c.use_arg("weight"), idx = c.use_arg("indices"), offsets = c.use_arg("offsets");
  if (c.t(idx).shape.size() != 1 || c.t(offsets).shape.size() != 1 || c.t(weight).shape.size() != 2)
    throw Unsupported("embedding_bag with indices or offsets that are not 1-D");
  if (c.bool_arg("scale_grad_by_freq", false))
    throw Unsupported("embedding_bag with scale_grad_by_freq");
  const std::int64_t mode = c.int_arg("mode", 0);
  const char* reduce = mode == 0 ? "sum" : mode == 1 ? "mean" : mode == 2 ? "max" : nullptr;
  if (!reduce) throw Unsupported(fmt::format("embedding_bag mode {}", mode));
  const std::int64_t N = c.t(idx).shape[0], D = c.t(weight).shape[1];
  const bool last = c.bool_arg("include_last_offset", false);
  const std::int64_t B = c.t(offsets).shape[0] - (last ? 1 : 0);
  const std::int64_t pad = c.has("padding_idx") ? c.int_arg("padding_idx", -1) : -1;
  if (B < 1 || N < 1) throw Unsupported("embedding_bag without bags or indices");
  const DType odt = c.t(offsets).dtype;
  TensorId starts = offsets;
  if (last) {
    starts = c.temp("bag_starts", {B}, odt);
    c.move(MoveKind::Slice, {offsets}, starts, {{"starts", Shape{0}}, {"ends", Shape{B}}});
  }
  // offset2bag[n] = (number of bag starts <= n) - 1. The marks have N + 1 places: trailing
  // empty bags start at N.
  TensorId zeros = c.temp("zeros", {N + 1}, DType::I64), ones = c.temp("ones", {B}, DType::I64);
  c.elementwise({}, zeros, num(0));
  c.elementwise({}, ones, num(1));
  TensorId marks = c.temp("bag_marks", {N + 1}, DType::I64);
  c.move(MoveKind::Scatter, {zeros, starts, ones}, marks,
         {{"axis", std::int64_t{0}}, {"mode", std::string("take")},
          {"reduce", std::string("sum")}});
  TensorId counted = c.temp("bag_count", {N + 1}, DType::I64);
  {
    ir::OpaqueOp o;
    o.function = "cumsum";
    o.vector_flops = Count(N + 1);
    o.special_ops = Count(0);
    o.bytes = c.t(marks).size_bytes() + c.t(counted).size_bytes();
    o.assumption =
        "sequential scan: one add per element; reads the input once, writes the output once";
    o.attrs = {{"axis", std::int64_t{0}}};
    c.opaque({marks}, {counted}, std::move(o));
  }
  TensorId running = c.temp("bag_count_head", {N}, DType::I64);
  c.move(MoveKind::Slice, {counted}, running, {{"starts", Shape{0}}, {"ends", Shape{N}}});
  TensorId bag = c.temp("offset2bag", {N}, DType::I64);
  if (pad >= 0)  // padding entries go to the extra bag row B
    c.elementwise({running, idx}, bag,
                  select(bin(ExprOp::Eq, arg(1), num(static_cast<double>(pad))),
                                              num(static_cast<double>(B)), sub(arg(0), num(1))));
  else
    c.elementwise({running}, bag, sub(arg(0), num(1)));
  // the picked rows, weighted per sample (sum mode)
  TensorId rows = c.temp("rows", {N, D}, c.t(weight).dtype);
  c.move(MoveKind::Gather, {weight, idx}, rows, {{"axis", std::int64_t{0}}});
  if (c.has("per_sample_weights")) {
    if (mode != 0) throw Unsupported("per_sample_weights outside sum mode");
    TensorId psw = c.use_arg("per_sample_weights");
    TensorId weighted = c.temp("weighted_rows", {N, D}, c.t(weight).dtype);
    c.channelwise({rows, psw}, weighted, mul(arg(0), arg(1)), 0);
    rows = weighted;
  }
  TensorId out = c.def(0);
  const std::int64_t bags = pad >= 0 ? B + 1 : B;
  TensorId base = c.temp("empty_bags", {bags, D}, c.t(out).dtype);
  c.elementwise({}, base, num(0));
  TensorId reduced = pad >= 0 ? c.temp("bags", {bags, D}, c.t(out).dtype) : out;
  c.move(MoveKind::Scatter, {base, bag, rows}, reduced,
         {{"axis", std::int64_t{0}}, {"mode", std::string("take")}, {"reduce", std::string(reduce)},
          {"include_self", std::int64_t{0}}});
  if (pad >= 0)
    c.move(MoveKind::Slice, {reduced}, out, {{"starts", Shape{0, 0}}, {"ends", Shape{B, D}}});
}

}  // namespace

void register_math_ops(const Register& reg) {
  // Rounding (the identity on integers).
  for (auto [name, op] : std::initializer_list<std::pair<std::string_view, ExprOp>>{
           {"aten::floor.default", ExprOp::Floor}, {"aten::floor_.default", ExprOp::Floor},
           {"aten::ceil.default", ExprOp::Ceil}, {"aten::ceil_.default", ExprOp::Ceil},
           {"aten::trunc.default", ExprOp::Trunc}, {"aten::trunc_.default", ExprOp::Trunc},
           {"aten::fix.default", ExprOp::Trunc}, {"aten::fix_.default", ExprOp::Trunc},
           {"aten::round.default", ExprOp::RoundEven}, {"aten::round_.default", ExprOp::RoundEven},
           {"aten::atan.default", ExprOp::Atan}, {"aten::atan_.default", ExprOp::Atan},
           {"aten::arctan.default", ExprOp::Atan}, {"aten::asin.default", ExprOp::Asin},
           {"aten::asin_.default", ExprOp::Asin}, {"aten::arcsin.default", ExprOp::Asin},
           {"aten::acos.default", ExprOp::Acos}, {"aten::acos_.default", ExprOp::Acos},
           {"aten::arccos.default", ExprOp::Acos}})
    reg(name, unary(op));
  for (std::string_view name : {"aten::round.decimals", "aten::round_.decimals"})
    reg(name, unary([](Context& c, Expr x) {
          return round_decimals(x, c.int_arg("decimals", 0));
        }));
  for (std::string_view name : {"aten::frac.default", "aten::frac_.default"})  // x - trunc(x)
    reg(name, unary([](Context&, Expr x) { return sub(x, un(ExprOp::Trunc, x)); }));
  for (std::string_view name : {"aten::signbit.default"})
    reg(name, unary([](Context& c, Expr x) {
          return sign_bit(x, ir::is_float(c.t(c.use_arg("self")).dtype));
        }));
  // Remainders: torch.remainder is floored (Python's %), torch.fmod truncated (C's).
  for (std::string_view name : {"aten::remainder.Tensor", "aten::remainder.Scalar",
                                "aten::remainder_.Tensor",
                                "aten::remainder_.Scalar", "aten::remainder.Scalar_Tensor"})
    reg(name, binary_fn("self", "other", [](Context&, Expr a, Expr b, const Dts&) {
          return bin(ExprOp::Mod, a, b);
        }));
  for (std::string_view name : {"aten::fmod.Tensor", "aten::fmod.Scalar", "aten::fmod_.Tensor",
                                "aten::fmod_.Scalar"})
    reg(name, binary_fn("self", "other", [](Context&, Expr a, Expr b, const Dts&) {
          return bin(ExprOp::Rem, a, b);
        }));
  // Division with a rounding mode, and floor_divide.
  for (std::string_view name : {"aten::div.Tensor_mode", "aten::div_.Tensor_mode",
                                "aten::div.Scalar_mode",
                                "aten::div_.Scalar_mode"})
    reg(name, divide(std::nullopt));
  for (std::string_view name : {"aten::floor_divide.default", "aten::floor_divide_.Tensor",
                                "aten::floor_divide.Scalar", "aten::floor_divide_.Scalar"})
    reg(name, divide("floor"));
  // Two-argument functions.
  for (std::string_view name : {"aten::atan2.default", "aten::atan2_.default",
                                "aten::arctan2.default"})
    reg(name, binary_fn("self", "other", [](Context&, Expr a, Expr b, const Dts&) {
          return bin(ExprOp::Atan2, a, b);
        }));
  for (std::string_view name : {"aten::hypot.default", "aten::hypot_.default"})
    reg(name, binary_fn("self", "other", [](Context&, Expr a, Expr b, const Dts&) {
          return un(ExprOp::Sqrt, add(un(ExprOp::Square, a), un(ExprOp::Square, b)));
        }));
  for (std::string_view name : {"aten::copysign.Tensor", "aten::copysign.Scalar",
                                "aten::copysign_.Tensor",
                                "aten::copysign_.Scalar"})
    reg(name, [](Context& c) {
      std::vector<TensorId> in;
      Expr a = operand(c, "self", in);
      const bool b_tensor = c.a("other").is_object();
      Expr b = operand(c, "other", in);
      if (in.empty()) throw Unsupported("no tensor operand");
      const bool b_float = !b_tensor || ir::is_float(c.t(in.back()).dtype);
      Expr mag = un(ExprOp::Abs, a);
      c.elementwise(in, c.def(0), select(sign_bit(b, b_float), un(ExprOp::Neg, mag), mag));
    });
  // Bitwise logic: integers bit by bit, bools as truth values.
  using BitwiseEntry = std::tuple<std::string_view, ExprOp, ExprOp>;
  for (auto [name, int_op, bool_op] : std::initializer_list<BitwiseEntry>{
           {"aten::bitwise_and.Tensor", ExprOp::And, ExprOp::Mul},
           {"aten::bitwise_and.Scalar", ExprOp::And, ExprOp::Mul},
           {"aten::bitwise_and_.Tensor", ExprOp::And, ExprOp::Mul},
           {"aten::bitwise_and_.Scalar", ExprOp::And, ExprOp::Mul},
           {"aten::__and__.Tensor", ExprOp::And, ExprOp::Mul},
           {"aten::__and__.Scalar", ExprOp::And, ExprOp::Mul},
           {"aten::__iand__.Tensor", ExprOp::And, ExprOp::Mul},
           {"aten::__iand__.Scalar", ExprOp::And, ExprOp::Mul},
           {"aten::bitwise_or.Tensor", ExprOp::Or, ExprOp::Max},
           {"aten::bitwise_or.Scalar", ExprOp::Or, ExprOp::Max},
           {"aten::bitwise_or_.Tensor", ExprOp::Or, ExprOp::Max},
           {"aten::bitwise_or_.Scalar", ExprOp::Or, ExprOp::Max},
           {"aten::__or__.Tensor", ExprOp::Or, ExprOp::Max},
           {"aten::__or__.Scalar", ExprOp::Or, ExprOp::Max},
           {"aten::__ior__.Tensor", ExprOp::Or, ExprOp::Max},
           {"aten::__ior__.Scalar", ExprOp::Or, ExprOp::Max},
           {"aten::bitwise_xor.Tensor", ExprOp::Xor, ExprOp::Ne},
           {"aten::bitwise_xor.Scalar", ExprOp::Xor, ExprOp::Ne},
           {"aten::bitwise_xor_.Tensor", ExprOp::Xor, ExprOp::Ne},
           {"aten::bitwise_xor_.Scalar", ExprOp::Xor, ExprOp::Ne},
           {"aten::__xor__.Tensor", ExprOp::Xor, ExprOp::Ne},
           {"aten::__xor__.Scalar", ExprOp::Xor, ExprOp::Ne},
           {"aten::__ixor__.Tensor", ExprOp::Xor, ExprOp::Ne},
           {"aten::__ixor__.Scalar", ExprOp::Xor, ExprOp::Ne}})
    reg(name, bitwise(int_op, bool_op));
  using ShiftEntry = std::tuple<std::string_view, bool, const char*, const char*>;
  for (auto [name, left, a, b] : std::initializer_list<ShiftEntry>{
           {"aten::bitwise_left_shift.Tensor", true, "self", "other"},
           {"aten::bitwise_left_shift.Tensor_Scalar", true, "self", "other"},
           {"aten::bitwise_left_shift.Scalar_Tensor", true, "self", "other"},
           {"aten::bitwise_left_shift_.Tensor", true, "self", "other"},
           {"aten::bitwise_left_shift_.Tensor_Scalar", true, "self", "other"},
           {"aten::__lshift__.Tensor", true, "self", "other"},
           {"aten::__lshift__.Scalar", true, "self", "other"},
           {"aten::__ilshift__.Tensor", true, "self", "other"},
           {"aten::__ilshift__.Scalar", true, "self", "other"},
           {"aten::bitwise_right_shift.Tensor", false, "self", "other"},
           {"aten::bitwise_right_shift.Tensor_Scalar", false, "self", "other"},
           {"aten::bitwise_right_shift.Scalar_Tensor", false, "self", "other"},
           {"aten::bitwise_right_shift_.Tensor", false, "self", "other"},
           {"aten::bitwise_right_shift_.Tensor_Scalar", false, "self", "other"},
           {"aten::__rshift__.Tensor", false, "self", "other"},
           {"aten::__rshift__.Scalar", false, "self", "other"},
           {"aten::__irshift__.Tensor", false, "self", "other"},
           {"aten::__irshift__.Scalar", false, "self", "other"}})
    reg(name, shift(left, a, b));
  // Interpolation.
  using Names = std::pair<std::string_view, std::string_view>;
  for (auto [names, nd, mode] : std::initializer_list<std::tuple<Names,
                                                                 std::size_t, Interp>>{
           {{"aten::upsample_linear1d.default", "aten::upsample_linear1d.vec"}, 1, Interp::Linear},
           {{"aten::upsample_bilinear2d.default", "aten::upsample_bilinear2d.vec"}, 2, Interp::Linear},
           {{"aten::upsample_trilinear3d.default", "aten::upsample_trilinear3d.vec"}, 3, Interp::Linear},
           {{"aten::upsample_bicubic2d.default", "aten::upsample_bicubic2d.vec"}, 2, Interp::Cubic}}) {
    reg(names.first, upsample(nd, mode));
    reg(names.second, upsample(nd, mode));
  }
  for (std::string_view name :
       {"aten::_upsample_bilinear2d_aa.default", "aten::_upsample_bilinear2d_aa.vec",
        "aten::_upsample_bicubic2d_aa.default", "aten::_upsample_bicubic2d_aa.vec"})
    reg(name, [](Context&) -> void {
      throw Unsupported(
          "antialiased interpolation (its filter width depends on the scale; not modeled)");
    });
  // Selection.
  reg("aten::kthvalue.default", kth_value(false, false));
  reg("aten::median.dim", kth_value(true, false));
  reg("aten::median.default", kth_value(true, true));
  for (std::string_view name : {"aten::nanmedian.default", "aten::nanmedian.dim"})
    reg(name, [](Context&) -> void {
      throw Unsupported(
          "nanmedian (which element is the median depends on the NaNs found at run time)");
    });
  // Special functions with a combine function of their own, and compositions.
  for (auto [name, op] : std::initializer_list<std::pair<std::string_view, ExprOp>>{
           {"aten::erfinv.default", ExprOp::ErfInv}, {"aten::erfinv_.default", ExprOp::ErfInv},
           {"aten::lgamma.default", ExprOp::Lgamma}, {"aten::lgamma_.default", ExprOp::Lgamma},
           {"aten::digamma.default", ExprOp::Digamma}, {"aten::digamma_.default", ExprOp::Digamma},
           {"aten::special_digamma.default", ExprOp::Digamma},
           {"aten::special_psi.default", ExprOp::Digamma},
           {"aten::special_erfinv.default", ExprOp::ErfInv},
           {"aten::special_gammaln.default", ExprOp::Lgamma}})
    reg(name, unary(op));
  constexpr double kPi = 3.14159265358979323846, kLn2 = 0.69314718055994530942;
  for (std::string_view name : {"aten::erfc.default", "aten::erfc_.default",
                                "aten::special_erfc.default"})
    reg(name, unary([](Context&, Expr x) { return sub(num(1), un(ExprOp::Erf, x)); }));
  for (std::string_view name : {"aten::deg2rad.default", "aten::deg2rad_.default"})
    reg(name, unary([=](Context&, Expr x) { return mul(x, num(kPi / 180)); }));
  for (std::string_view name : {"aten::rad2deg.default", "aten::rad2deg_.default"})
    reg(name, unary([=](Context&, Expr x) { return mul(x, num(180 / kPi)); }));
  for (std::string_view name : {"aten::sinc.default", "aten::sinc_.default",
                                "aten::special_sinc.default"})
    reg(name, unary([=](Context&, Expr x) {  // sin(pi x) / (pi x), 1 at 0
          Expr px = mul(x, num(kPi));
          Expr ratio = bin(ExprOp::Div, un(ExprOp::Sin, px), px);
          return select(bin(ExprOp::Eq, x, num(0)), num(1), ratio);
        }));
  reg("aten::angle.default", unary([=](Context& c, Expr x) {  // of a real tensor: pi below 0
        Expr below = select(bin(ExprOp::Lt, x, num(0)), num(kPi), num(0));
        if (!ir::is_float(c.t(c.use_arg("self")).dtype)) return below;
        return select(bin(ExprOp::Ne, x, x), x, below);
      }));
  // logaddexp(a, b) = max + log(1 + exp(-|a - b|)); equal infinities give themselves (torch).
  for (auto [name, base2] : std::initializer_list<std::pair<std::string_view, bool>>{
           {"aten::logaddexp.default", false}, {"aten::logaddexp2.default", true}})
    reg(name, binary_fn("self", "other", [=, base2 = base2](Context&, Expr a, Expr b, const Dts&) {
          Expr d = un(ExprOp::Abs, sub(a, b));
          if (base2) d = mul(d, num(kLn2));
          Expr tail = un(ExprOp::Log, add(num(1), un(ExprOp::Exp, un(ExprOp::Neg, d))));
          if (base2) tail = mul(tail, num(1 / kLn2));
          Expr same_inf =
              mul(bin(ExprOp::Eq, a, b), bin(ExprOp::Eq, un(ExprOp::Abs, a), num(kInf)));
          return select(same_inf, a, add(bin(ExprOp::Max, a, b), tail));
        }));
  reg("aten::heaviside.default", binary_fn("self", "values", [](Context&, Expr x, Expr v, const Dts&) {
        return select(bin(ExprOp::Eq, x, num(0)), v, bin(ExprOp::Gt, x, num(0)));
      }));
  for (std::string_view name : {"aten::fmax.default", "aten::fmin.default"}) {
    const ExprOp op = name == "aten::fmax.default" ? ExprOp::Max : ExprOp::Min;
    reg(name, binary_fn("self", "other", [op](Context&, Expr a, Expr b, const Dts&) {
          // NaN-ignoring: the other value where one is NaN
          return select(bin(ExprOp::Ne, a, a), b, select(bin(ExprOp::Ne, b, b), a, bin(op, a, b)));
        }));
  }
  // base ** x for a number base (pow.Scalar); ldexp(x, e) = x * 2^e as torch computes it.
  reg("aten::pow.Scalar", binary_fn("self", "exponent", [](Context&, Expr b, Expr x, const Dts&) {
        return bin(ExprOp::Pow, b, x);
      }));
  for (std::string_view name : {"aten::ldexp.Tensor", "aten::ldexp_.default"})
    reg(name, binary_fn("self", "other", [](Context&, Expr x, Expr e, const Dts&) {
          return mul(x, bin(ExprOp::Pow, num(2), e));
        }));
  for (std::string_view name : {"aten::special_xlog1py.default", "aten::xlog1py.default"})
    reg(name, binary_fn("self", "other", [](Context&, Expr x, Expr y, const Dts&) {
          Expr v = mul(x, un(ExprOp::Log, add(num(1), y)));  // 0 where x is 0 (unless y is NaN)
          return select(mul(bin(ExprOp::Eq, x, num(0)), bin(ExprOp::Eq, y, y)), num(0), v);
        }));
  // Embedding bags.
  reg("aten::_embedding_bag_forward_only.default", lower_embedding_bag);
  reg("aten::_embedding_bag.default", lower_embedding_bag);
}

}  // namespace solar::lower::detail
