// The aten table's pooling and nearest resampling: max/avg/adaptive pooling as window
// reductions, upsample_nearest, and their gradients.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "context.h"
#include "families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {

namespace {

// The leading (batch and channel) dimensions of a pooling's space: a plain index b<d> each,
// the same in both subscripts.
void lead_indices(Space& s, const Shape& shape, std::size_t lead, std::vector<AffineExpr>& a,
                  std::vector<AffineExpr>& b) {
  for (std::size_t d = 0; d < lead; ++d) {
    AffineExpr i = ix(s.add(fmt::format("b{}", d), shape[d]));
    a.push_back(i);
    b.push_back(i);
  }
}

// A window reduction over the trailing `nd` dimensions (leading ones are batch/channel):
//   out[b.., p..] = REDUCE_{r..} in[b.., p*stride + r*dilation - pad]
// read outside the input yields `pad_value` (-inf for max, 0 for sum). The window builder.
void pool_into(Context& c, TensorId in, TensorId out, std::size_t nd,
               const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& stride,
               const std::vector<std::int64_t>& pad, const std::vector<std::int64_t>& dil,
               Reduce r, double pad_value) {
  const auto is = c.t(in).shape, os = c.t(out).shape;
  if (is.size() < nd || os.size() != is.size()) throw Unsupported("pooling rank mismatch");
  const std::size_t lead = is.size() - nd;
  std::vector<std::int64_t> sizes(lead, 0);
  std::vector<WindowDim> window(lead);
  for (std::size_t d = 0; d < nd; ++d) {
    sizes.push_back(kernel[d]);
    window.push_back({.stride = stride[d], .dilation = dil[d], .pad_lo = pad[d]});
  }
  window_reduce(c, in, out, sizes, window, r, pad_value);
}

Fn max_pool(std::size_t nd) {
  return [=](Context& c) {
    TensorId in = c.use_arg("self");
    auto kernel = per_dim(c, "kernel_size", nd, 1);
    auto stride = c.ints("stride").empty() ? kernel : per_dim(c, "stride", nd, 1);
    auto pad = per_dim(c, "padding", nd, 0), dil = per_dim(c, "dilation", nd, 1);
    pool_into(c, in, c.def(0), nd, kernel, stride, pad, dil, Reduce::Max, -kInf);
    if (c.out_id(1))
      arg_reduce(c, in, c.def(1), "pool_argmax", std::nullopt,
                 {{"kernel", kernel}, {"stride", stride}, {"padding", pad}, {"dilation", dil}});
  };
}

// Window sizes that vary with the output position, per spatial dimension: count[o] = the
// number of taps r in [0, K) that satisfy `mask` (constraints over o = index 0, r = index
// 1), as a masked sum over a vector of ones. Costs O + O*K, next to nothing.
TensorId window_counts(Context& c, std::int64_t O, std::int64_t K,
                       std::vector<ir::AffineConstraint> mask, ir::DType dt) {
  TensorId ones = c.temp("ones", {K}, dt);
  c.elementwise({}, ones, num(1));
  TensorId count = c.temp("count", {O}, dt);
  Space s;
  ir::IndexPos o = s.add("o", O), r = s.add("r", K);
  c.einsum({ones}, count, std::move(s), {{ix(r)}}, {ix(o)}, arg(0), Reduce::Sum, std::move(mask));
  return count;
}

// out[b.., o..] = sum[b.., o..] / (product of the per-dimension counts at o..).
void divide_by_counts(Context& c, TensorId sum, TensorId out, std::size_t nd,
                      const std::vector<TensorId>& counts) {
  const auto os = c.t(out).shape;
  const std::size_t lead = os.size() - nd;
  Space s;
  std::vector<AffineExpr> so;
  for (std::size_t d = 0; d < os.size(); ++d) so.push_back(ix(s.add(fmt::format("i{}", d), os[d])));
  std::vector<TensorId> ins{sum};
  std::vector<std::vector<AffineExpr>> subs{so};
  Expr den;
  for (std::size_t d = 0; d < nd; ++d) {
    ins.push_back(counts[d]);
    subs.push_back({so[lead + d]});
    Expr x = arg(static_cast<int>(ins.size() - 1));
    den = d == 0 ? x : mul(den, x);
  }
  c.einsum(std::move(ins), out, std::move(s), std::move(subs), so, fn(ExprOp::Div, {arg(0), den}),
           Reduce::None);
}

// Average pooling. The divisor is the kernel size, unless a window is cut short: with
// count_include_pad=False it counts the taps inside the input, and with ceil_mode a last
// window that passes the padded end counts only the taps up to it (torch's rule); then the
// divisor is a product of per-dimension window counts.
Fn avg_pool(std::size_t nd) {
  return [=](Context& c) {
    TensorId in = c.use_arg("self");
    auto kernel = per_dim(c, "kernel_size", nd, 1);
    auto stride = c.ints("stride").empty() ? kernel : per_dim(c, "stride", nd, 1);
    auto pad = per_dim(c, "padding", nd, 0);
    const bool include_pad = c.bool_arg("count_include_pad", true);
    TensorId out = c.def(0);
    const auto is = c.t(in).shape, os = c.t(out).shape;
    if (is.size() < nd || os.size() != is.size()) throw Unsupported("pooling rank mismatch");
    TensorId sum = c.temp("sum", c.t(out).shape, c.t(out).dtype);
    pool_into(c, in, sum, nd, kernel, stride, pad, std::vector<std::int64_t>(nd, 1), Reduce::Sum, 0);
    if (c.has("divisor_override"))
      return c.elementwise({sum}, out, mul(arg(0), num(1 / c.num_arg("divisor_override", 1))));
    // Tap r of output o reads o*s - p + r; the divisor counts r with lo <= o*s - p + r <= hi.
    bool uniform = true;
    std::vector<std::pair<std::int64_t, std::int64_t>> range(nd);
    for (std::size_t d = 0; d < nd; ++d) {
      const std::int64_t L = is[is.size() - nd + d];
      range[d] = include_pad ? std::pair{-pad[d], L + pad[d] - 1} : std::pair{std::int64_t{0}, L - 1};
      const std::int64_t O = os[os.size() - nd + d];
      uniform = uniform && -pad[d] >= range[d].first &&
                (O - 1) * stride[d] - pad[d] + kernel[d] - 1 <= range[d].second;
    }
    if (uniform)
      return c.elementwise({sum}, out, mul(arg(0), num(1 / static_cast<double>(numel(kernel)))));
    std::vector<TensorId> counts;
    for (std::size_t d = 0; d < nd; ++d) {
      const std::int64_t O = os[os.size() - nd + d];
      // o*s - p + r - lo >= 0 and hi - (o*s - p + r) >= 0 over (o = 0, r = 1)
      counts.push_back(window_counts(
          c, O, kernel[d],
          {{AffineExpr::make({AffineTerm{0, stride[d]}, AffineTerm{1, 1}}, -pad[d] - range[d].first)},
           {AffineExpr::make({AffineTerm{0, -stride[d]}, AffineTerm{1, -1}}, range[d].second + pad[d])}},
          c.t(out).dtype));
    }
    divide_by_counts(c, sum, out, nd, counts);
  };
}

// Adaptive pooling. Output o of a dimension of length L pooled to O reads
// [floor(o*L/O), ceil((o+1)*L/O)). When O divides L that is a plain window; otherwise the
// window is j = o*a + w (a = floor(L/O), w < W, W the longest reach past o*a) masked to
//   (j+1)*O - o*L - 1 >= 0   and   (o+1)*L - j*O - 1 >= 0,
// so the live points are exactly the windows' elements; averages divide by each window's
// own size (a masked count).
Fn adaptive_pool(std::size_t nd, bool is_max) {
  return [=](Context& c) {
    TensorId in = c.use_arg("self");
    const auto is = c.t(in).shape;
    auto osz = per_dim(c, "output_size", nd, 1);
    if (is.size() < nd) throw Unsupported("adaptive pooling rank mismatch");
    const std::size_t lead = is.size() - nd;
    bool even = true;
    for (std::size_t d = 0; d < nd; ++d) {
      if (osz[d] < 1) throw Unsupported("adaptive pooling to an empty output");
      even = even && is[lead + d] % osz[d] == 0;
    }
    TensorId out = c.def(0);
    const ir::DType dt = c.t(out).dtype;
    if (even) {
      std::vector<std::int64_t> kernel(nd), zeros(nd, 0), ones(nd, 1);
      for (std::size_t d = 0; d < nd; ++d) kernel[d] = is[lead + d] / osz[d];
      if (is_max) {
        pool_into(c, in, out, nd, kernel, kernel, zeros, ones, Reduce::Max, -kInf);
        if (c.out_id(1))
          arg_reduce(c, in, c.def(1), "pool_argmax", std::nullopt,
                     {{"adaptive", std::int64_t{1}}, {"output_size", osz}});
        return;
      }
      TensorId sum = c.temp("sum", c.t(out).shape, dt);
      pool_into(c, in, sum, nd, kernel, kernel, zeros, ones, Reduce::Sum, 0);
      c.elementwise({sum}, out, mul(arg(0), num(1 / static_cast<double>(numel(kernel)))));
      return;
    }
    Space s;
    std::vector<AffineExpr> si, so;
    lead_indices(s, is, lead, si, so);
    std::vector<ir::AffineConstraint> mask;
    std::vector<std::vector<ir::AffineConstraint>> count_masks(nd);
    std::vector<std::int64_t> widths(nd);
    for (std::size_t d = 0; d < nd; ++d) {
      const std::int64_t L = is[lead + d], O = osz[d], a = L / O;
      std::int64_t W = 1;
      for (std::int64_t o = 0; o < O; ++o) W = std::max(W, ceil_div((o + 1) * L, O) - o * a);
      widths[d] = W;
      ir::IndexPos o = s.add(fmt::format("o{}", d), O), w = s.add(fmt::format("w{}", d), W);
      si.push_back(AffineExpr::make({AffineTerm{o, a}, AffineTerm{w, 1}}, 0));
      so.push_back(ix(o));
      // start: (o*a + w + 1)*O - o*L - 1 >= 0; end: (o+1)*L - (o*a + w)*O - 1 >= 0
      auto lo = [&](ir::IndexPos oo, ir::IndexPos ww) {
        return ir::AffineConstraint{AffineExpr::make({AffineTerm{oo, a * O - L}, AffineTerm{ww, O}}, O - 1)};
      };
      auto hi = [&](ir::IndexPos oo, ir::IndexPos ww) {
        return ir::AffineConstraint{AffineExpr::make({AffineTerm{oo, L - a * O}, AffineTerm{ww, -O}}, L - 1)};
      };
      mask.push_back(lo(o, w));
      mask.push_back(hi(o, w));
      count_masks[d] = {lo(0, 1), hi(0, 1)};
    }
    TensorId target = is_max ? out : c.temp("sum", c.t(out).shape, dt);
    c.einsum({in}, target, std::move(s), {si}, so, arg(0), is_max ? Reduce::Max : Reduce::Sum, mask,
             {is_max ? -kInf : 0.0});
    if (is_max) {
      if (c.out_id(1))
        arg_reduce(c, in, c.def(1), "pool_argmax", std::nullopt,
                   {{"adaptive", std::int64_t{1}}, {"output_size", osz}});
      return;
    }
    std::vector<TensorId> counts;
    for (std::size_t d = 0; d < nd; ++d)
      counts.push_back(window_counts(c, osz[d], widths[d], count_masks[d], dt));
    divide_by_counts(c, target, out, nd, counts);
  };
}

// upsample_nearest{1,2,3}d: out[o] = in[floor(o * L / O)] per spatial dimension (torch's
// rule when the scale is the size ratio). An integer ratio s is a copy with output subscript
// s*i + j; otherwise a sum over j masked to the one j with j*O <= o*L < (j+1)*O.
void lower_upsample_nearest(Context& c, std::size_t nd) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  const auto is = c.t(in).shape, os = c.t(out).shape;
  if (is.size() < nd || os.size() != is.size()) throw Unsupported("upsample rank mismatch");
  const std::size_t lead = is.size() - nd;
  // explicit scales must be the size ratios
  const auto& scales = c.a("scales");
  std::vector<std::optional<double>> sc;
  if (scales.is_array()) for (const auto& v : scales) sc.push_back(number_value(v));
  for (const char* key : {"scales_d", "scales_h", "scales_w"})
    if (c.has(key)) sc.push_back(number_value(c.a(key)));
  for (std::size_t k = 0; k < sc.size() && k < nd; ++k) {
    std::size_t d = nd - sc.size() + k;
    if (sc[k] && std::abs(*sc[k] * static_cast<double>(is[lead + d]) - static_cast<double>(os[lead + d])) > 1e-9 * static_cast<double>(os[lead + d]))
      throw Unsupported("nearest upsampling with a scale that is not the size ratio");
  }
  Space s;
  std::vector<AffineExpr> si, so;
  std::vector<ir::AffineConstraint> mask;
  for (std::size_t d = 0; d < lead; ++d)
    if (is[d] != os[d]) throw Unsupported("upsampling changes a batch dimension");
  lead_indices(s, is, lead, si, so);
  bool masked = false;
  for (std::size_t d = 0; d < nd; ++d) {
    const std::int64_t L = is[lead + d], O = os[lead + d];
    if (O % L == 0) {
      const std::int64_t f = O / L;
      ir::IndexPos i = s.add(fmt::format("i{}", d), L), j = s.add(fmt::format("j{}", d), f);
      si.push_back(ix(i));
      so.push_back(AffineExpr::make({AffineTerm{i, f}, AffineTerm{j, 1}}, 0));
      continue;
    }
    masked = true;
    ir::IndexPos o = s.add(fmt::format("o{}", d), O), j = s.add(fmt::format("j{}", d), L);
    si.push_back(ix(j));
    so.push_back(ix(o));
    mask.push_back({AffineExpr::make({AffineTerm{o, L}, AffineTerm{j, -O}}, 0)});
    mask.push_back({AffineExpr::make({AffineTerm{o, -L}, AffineTerm{j, O}}, O - 1)});
  }
  c.einsum({in}, out, std::move(s), {si}, so, arg(0), masked ? Reduce::Sum : Reduce::None, mask);
}

// ---------------------------------------------------------------- gradients

// The input plane's gradient as zeros scattered with grad_output at flat plane indices
// (max pooling and adaptive max pooling: torch's indices are flat within each plane).
void scatter_to_plane(Context& c, std::size_t nd) {
  TensorId gy = c.use_arg("grad_output"), x = c.use_arg("self"), idx = c.use_arg("indices");
  const Shape xs = c.t(x).shape, ys = c.t(gy).shape;
  if (xs.size() < nd || ys.size() != xs.size() || c.t(idx).shape != ys)
    throw Unsupported("pooling gradient shapes do not match");
  const std::size_t lead = xs.size() - nd;
  Shape plane(xs.begin(), xs.begin() + lead), flat_y = plane;
  std::int64_t in_plane = 1, out_plane = 1;
  for (std::size_t d = lead; d < xs.size(); ++d) in_plane *= xs[d], out_plane *= ys[d];
  plane.push_back(in_plane);
  flat_y.push_back(out_plane);
  TensorId z = zeros(c, plane, c.t(gy).dtype);
  TensorId gv = reshaped(c, gy, flat_y, "grad_flat"), iv = reshaped(c, idx, flat_y, "indices_flat");
  TensorId out = c.def(0);
  TensorId s = c.temp("scattered", plane, c.t(out).dtype);
  scatter(c, z, iv, gv, s, static_cast<std::int64_t>(lead), IndexMode::Elements,
          ScatterReduce::Sum);
  c.move(MoveKind::View, {s}, out);
}

// A pooling gradient's operands (grad_output, self), of one rank of at least nd.
std::pair<TensorId, TensorId> gradient_operands(Context& c, std::size_t nd) {
  TensorId gy = c.use_arg("grad_output"), x = c.use_arg("self");
  if (c.t(x).shape.size() < nd || c.t(gy).shape.size() != c.t(x).shape.size())
    throw Unsupported("pooling gradient rank mismatch");
  return {gy, x};
}

// avg_pool{1,2,3}d_backward: dx[i] = sum over the windows p holding i of dy[p] / divisor;
// per spatial dim the live (i, p) pairs are 0 <= i + pad - p*s <= kernel - 1.
Fn avg_pool_backward(std::size_t nd) {
  return [=](Context& c) {
    const auto [gy, x] = gradient_operands(c, nd);
    const Shape xs = c.t(x).shape, ys = c.t(gy).shape;
    auto kernel = per_dim(c, "kernel_size", nd, 1);
    auto stride = c.ints("stride").empty() ? kernel : per_dim(c, "stride", nd, 1);
    auto pad = per_dim(c, "padding", nd, 0);
    const std::size_t lead = xs.size() - nd;
    bool padded = false;
    for (std::size_t d = 0; d < nd; ++d) {
      padded = padded || pad[d] != 0;
      if ((xs[lead + d] + 2 * pad[d] - kernel[d]) / stride[d] + 1 != ys[lead + d])
        throw Unsupported("average pooling with ceil_mode windows (divisor varies per window)");
    }
    if (padded && !c.bool_arg("count_include_pad", true))
      throw Unsupported("average pooling that excludes padding from the divisor");
    double divisor = static_cast<double>(numel(kernel));
    if (c.has("divisor_override")) divisor = c.num_arg("divisor_override", divisor);
    Space s;
    std::vector<AffineExpr> sg, so;
    lead_indices(s, xs, lead, sg, so);
    std::vector<AffineConstraint> mask;
    for (std::size_t d = 0; d < nd; ++d) {
      ir::IndexPos i = s.add(fmt::format("i{}", d), xs[lead + d]);
      ir::IndexPos p = s.add(fmt::format("p{}", d), ys[lead + d]);
      within(mask, AffineExpr::make({AffineTerm{i, 1}, AffineTerm{p, -stride[d]}}, pad[d]),
             kernel[d] - 1);
      sg.push_back(ix(p));
      so.push_back(ix(i));
    }
    c.einsum({gy}, c.def(0), std::move(s), {sg}, so, mul(arg(0), num(1 / divisor)), Reduce::Sum,
             mask);
  };
}

// _adaptive_avg_pool{2,3}d_backward with windows that divide the input: each input element
// gets its window's gradient / window size, a broadcast over [.., O, k, ..] viewed back.
Fn adaptive_avg_pool_backward(std::size_t nd) {
  return [=](Context& c) {
    const auto [gy, x] = gradient_operands(c, nd);
    const Shape xs = c.t(x).shape, ys = c.t(gy).shape;
    const std::size_t lead = xs.size() - nd;
    Shape split(xs.begin(), xs.begin() + lead), gshape = split;
    std::int64_t window = 1;
    for (std::size_t d = lead; d < xs.size(); ++d) {
      if (ys[d] < 1 || xs[d] % ys[d] != 0)
        throw Unsupported(
            fmt::format("adaptive pooling from {} to {} (uneven windows)", xs[d], ys[d]));
      split.insert(split.end(), {ys[d], xs[d] / ys[d]});
      gshape.insert(gshape.end(), {ys[d], 1});
      window *= xs[d] / ys[d];
    }
    TensorId gv = reshaped(c, gy, gshape, "grad_windows");
    TensorId out = c.def(0);
    TensorId spread = c.temp("spread", split, c.t(out).dtype);
    c.elementwise({gv}, spread, mul(arg(0), num(1 / static_cast<double>(window))));
    c.move(MoveKind::View, {spread}, out);
  };
}

// Nearest upsampling by a power-of-two factor k per dim (torch's source index floor(o / k)
// is then exact in its float arithmetic): out viewed as [.., in, k, ..] is x broadcast over
// the k dims; the gradient sums grad_output over them. Other factors: unanalyzed.
struct Upsample {
  Shape split;           // [lead.., in0, k0, in1, k1, ..]
  Shape narrow;          // [lead.., in0, 1, in1, 1, ..]
  std::vector<bool> ks;  // the k dims of split
};
Upsample nearest_split(Context& c, const Shape& in, const Shape& out, std::size_t nd,
                       const std::vector<const char*>& scale_args) {
  if (in.size() != out.size() || in.size() < nd) throw Unsupported("upsampling rank mismatch");
  const std::size_t lead = in.size() - nd;
  Upsample u;
  u.split.assign(in.begin(), in.begin() + lead);
  u.narrow = u.split;
  u.ks.assign(lead, false);
  std::vector<double> given =
      c.has("scale_factors") ? std::vector<double>() : std::vector<double>(nd, 0);
  if (c.has("scale_factors"))
    for (const auto& v : c.a("scale_factors")) given.push_back(number_value(v).value_or(0));
  else
    for (std::size_t d = 0; d < nd && d < scale_args.size(); ++d)
      given[d] = c.num_arg(scale_args[d], 0);
  for (std::size_t d = 0; d < nd; ++d) {
    const std::int64_t i = in[lead + d], o = out[lead + d];
    const std::int64_t k = i > 0 && o % i == 0 ? o / i : 0;
    if (k < 1 || (k & (k - 1)) != 0 ||
        (d < given.size() && given[d] != 0 && given[d] != static_cast<double>(k)))
      throw Unsupported(
          fmt::format("nearest upsampling from {} to {} (not a power-of-two factor)", i, o));
    u.split.insert(u.split.end(), {i, k});
    u.narrow.insert(u.narrow.end(), {i, 1});
    u.ks.insert(u.ks.end(), {false, true});
  }
  return u;
}

const std::vector<const char*>& scale_names(std::size_t nd) {
  static const std::vector<const char*> n1{"scales"}, n2{"scales_h", "scales_w"},
      n3{"scales_d", "scales_h", "scales_w"};
  return nd == 1 ? n1 : nd == 2 ? n2 : n3;
}

Fn upsample_nearest(std::size_t nd) {
  return [=](Context& c) {
    TensorId x = c.use_arg(c.has("self") ? "self" : "input");
    TensorId out = c.def(0);
    Upsample u = nearest_split(c, c.t(x).shape, c.t(out).shape, nd, scale_names(nd));
    TensorId spread = c.temp("spread", u.split, c.t(out).dtype);
    c.elementwise({reshaped(c, x, u.narrow, "narrow")}, spread, arg(0));
    c.move(MoveKind::View, {spread}, out);
  };
}

Fn upsample_nearest_backward(std::size_t nd) {
  return [=](Context& c) {
    TensorId g = c.use_arg("grad_output");
    TensorId out = c.def(0);
    Upsample u = nearest_split(c, c.t(out).shape, c.t(g).shape, nd, scale_names(nd));
    bcast(c, {reshaped(c, g, u.split, "grad_blocks")}, out, u.split, u.ks, arg(0), Reduce::Sum);
  };
}

}  // namespace

void register_pool_ops(const Register& reg) {
  for (std::size_t nd : {1, 2, 3}) {
    static const char* const mp[] = {"aten::max_pool1d_with_indices.default",
                                     "aten::max_pool2d_with_indices.default",
                                     "aten::max_pool3d_with_indices.default"};
    static const char* const mpp[] = {"aten::max_pool1d.default", "aten::max_pool2d.default",
                                      "aten::max_pool3d.default"};
    static const char* const ap[] = {"aten::avg_pool1d.default", "aten::avg_pool2d.default",
                                     "aten::avg_pool3d.default"};
    static const char* const aap[] = {"aten::adaptive_avg_pool1d.default",
                                      "aten::_adaptive_avg_pool2d.default",
                                      "aten::_adaptive_avg_pool3d.default"};
    static const char* const amp[] = {"aten::adaptive_max_pool1d.default",
                                      "aten::adaptive_max_pool2d.default",
                                      "aten::adaptive_max_pool3d.default"};
    reg(mp[nd - 1], max_pool(nd));
    reg(mpp[nd - 1], max_pool(nd));
    reg(ap[nd - 1], avg_pool(nd));
    reg(aap[nd - 1], adaptive_pool(nd, false));
    reg(amp[nd - 1], adaptive_pool(nd, true));
  }
  reg("aten::adaptive_avg_pool2d.default", adaptive_pool(2, false));
  for (std::size_t nd : {1, 2, 3}) {
    static const char* const un_[] = {"aten::upsample_nearest1d.default", "aten::upsample_nearest2d.default",
                                      "aten::upsample_nearest3d.default"};
    reg(un_[nd - 1], [nd](Context& c) { lower_upsample_nearest(c, nd); });
  }
  // Gradients.
  reg("aten::max_pool2d_with_indices_backward.default", [](Context& c) { scatter_to_plane(c, 2); });
  reg("aten::max_pool3d_with_indices_backward.default", [](Context& c) { scatter_to_plane(c, 3); });
  reg("aten::adaptive_max_pool2d_backward.default", [](Context& c) { scatter_to_plane(c, 2); });
  reg("aten::adaptive_max_pool3d_backward.default", [](Context& c) { scatter_to_plane(c, 3); });
  reg("aten::avg_pool2d_backward.default", avg_pool_backward(2));
  reg("aten::avg_pool3d_backward.default", avg_pool_backward(3));
  reg("aten::_adaptive_avg_pool2d_backward.default", adaptive_avg_pool_backward(2));
  reg("aten::_adaptive_avg_pool3d_backward.default", adaptive_avg_pool_backward(3));
  // Nearest upsampling (integer power-of-two factors) and its gradient.
  // (the table keys are string_views: the names are literals)
  static const char* const up[3][2][3] = {
      {{"aten::upsample_nearest1d.default", "aten::upsample_nearest1d.vec",
        "aten::upsample_nearest1d_backward.default"},
       {"aten::_upsample_nearest_exact1d.default", "aten::_upsample_nearest_exact1d.vec",
        "aten::_upsample_nearest_exact1d_backward.default"}},
      {{"aten::upsample_nearest2d.default", "aten::upsample_nearest2d.vec",
        "aten::upsample_nearest2d_backward.default"},
       {"aten::_upsample_nearest_exact2d.default", "aten::_upsample_nearest_exact2d.vec",
        "aten::_upsample_nearest_exact2d_backward.default"}},
      {{"aten::upsample_nearest3d.default", "aten::upsample_nearest3d.vec",
        "aten::upsample_nearest3d_backward.default"},
       {"aten::_upsample_nearest_exact3d.default", "aten::_upsample_nearest_exact3d.vec",
        "aten::_upsample_nearest_exact3d_backward.default"}}};
  for (std::size_t nd = 1; nd <= 3; ++nd)
    for (std::size_t exact = 0; exact < 2; ++exact) {
      const auto& names = up[nd - 1][exact];
      // upsample_nearest{1,2,3}d.default (any size ratio) is registered above
      if (exact) reg(names[0], upsample_nearest(nd));
      reg(names[1], upsample_nearest(nd));
      reg(names[2], upsample_nearest_backward(nd));
    }
}

}  // namespace solar::lower::detail
