// The aten table's convolutions: forward and transposed convolutions as affine-subscript
// einsums, and im2col (F.unfold).
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

// Transposed convolution in gather form. Input position i and tap r land on output
// position o when o + pad = i*s + r*d. Per spatial dimension the output position is split
// by its residue modulo the stride, o = s*q + rho, and the input position is written
// i = q + v, so the landing condition becomes r*d = rho + pad - s*v: for d = 1 the tap is
// affine in (rho, v) and each residue class is an ordinary strided correlation,
//   y[n, g*Kg+k, s*q+rho] = sum_{c,v} x[n, g*Cg+c, q+v] * w[g*Cg+c, k, rho+pad-s*v]
// masked to 0 <= q+v < Lin, 0 <= rho+pad-s*v < Kr and s*q+rho < Lout. For d > 1 the tap is
// its own index r with the equality r*d == rho+pad-s*v (two constraints), except when s
// divides d: then every tap lands on one residue and i = q + c0 - r*d/s. Every live point
// is one (input position, tap) pair that lands inside the output, so the MACs are exactly
// N * Cin * Kg * (such pairs): taps that padding crops are not counted. The einsum's output
// covers s*ceil(Lout/s) positions per dimension; when Lout is not a multiple of s the
// output is its leading slice (a free view), and the einsum writes those < s extra
// positions per dimension (zeros).
void lower_transposed_convolution(Context& c, TensorId x, TensorId w) {
  TensorId out = c.def(0);
  const auto xs = c.t(x).shape, ws = c.t(w).shape, os = c.t(out).shape;
  if (xs.size() < 3 || ws.size() != xs.size() || os.size() != xs.size())
    throw Unsupported("transposed convolution needs batched input [N, C, spatial...]");
  const std::size_t nd = xs.size() - 2;
  const std::int64_t G = c.int_arg("groups", 1);
  auto stride = per_dim(c, "stride", nd, 1), pad = per_dim(c, "padding", nd, 0),
       dil = per_dim(c, "dilation", nd, 1);
  const std::int64_t Cin = ws[0], Kg = ws[1];
  if (G < 1 || Cin % G != 0 || xs[1] != Cin || os[1] != Kg * G)
    throw Unsupported("inconsistent transposed-convolution groups");
  for (std::size_t d = 0; d < nd; ++d)
    if (stride[d] < 1 || dil[d] < 1 || pad[d] < 0)
      throw Unsupported("transposed convolution with a stride or dilation below 1");
  const std::int64_t Cg = Cin / G;
  std::vector<std::int64_t> yshape = os;
  bool overhang = false;
  for (std::size_t d = 0; d < nd; ++d) {
    yshape[2 + d] = stride[d] * ceil_div(os[2 + d], stride[d]);
    overhang = overhang || yshape[2 + d] != os[2 + d];
  }
  const bool bias = c.has("bias");
  TensorId y = bias || overhang ? c.temp("convt", yshape, c.t(out).dtype) : out;
  Space s;
  ir::IndexPos n = s.add("n", xs[0]);
  std::optional<ir::IndexPos> g;
  if (G > 1) g = s.add("g", G);
  ir::IndexPos k = s.add("k", Kg), ci = s.add("c", Cg);
  auto grouped = [&](ir::IndexPos i, std::int64_t per) {
    if (!g) return ix(i);
    return AffineExpr::make({AffineTerm{*g, per}, AffineTerm{i, 1}}, 0);
  };
  std::vector<AffineExpr> sx{ix(n), grouped(ci, Cg)}, sw{grouped(ci, Cg), ix(k)},
      so{ix(n), grouped(k, Kg)};
  std::vector<ir::AffineConstraint> mask;
  auto ge0 = [&](std::vector<AffineTerm> terms, std::int64_t constant) {
    mask.push_back({AffineExpr::make(std::move(terms), constant)});
  };
  for (std::size_t d = 0; d < nd; ++d) {
    const std::int64_t st = stride[d], dl = dil[d], p = pad[d], Kr = ws[2 + d], Lin = xs[2 + d],
                       Lout = os[2 + d];
    const std::int64_t v_min = ceil_div(p - dl * (Kr - 1), st), v_max = floor_div(st - 1 + p, st);
    if (v_max < v_min) throw Unsupported("transposed convolution whose taps never land");
    if (dl > 1 && dl % st == 0) {
      // s | d (s = 1 included): every tap lands on the one residue rho0 = -pad mod s, from
      // input position i = q + c0 - r*(d/s): the tap stays an index and the equality goes
      // away (the masked (rho, v, r) form iterates s*V*K points per output position for
      // the K*Lin/Lout that land). The other residues are outside the einsum's image: 0.
      const std::int64_t rho0 = ((-p) % st + st) % st, c0 = (rho0 + p) / st, dd = dl / st;
      ir::IndexPos q = s.add(fmt::format("q{}", d), yshape[2 + d] / st);
      ir::IndexPos r = s.add(fmt::format("r{}", d), Kr);
      sx.push_back(AffineExpr::make({AffineTerm{q, 1}, AffineTerm{r, -dd}}, c0));
      ge0({AffineTerm{q, 1}, AffineTerm{r, -dd}}, c0);
      ge0({AffineTerm{q, -1}, AffineTerm{r, dd}}, Lin - 1 - c0);
      sw.push_back(ix(r));
      so.push_back(AffineExpr::make({AffineTerm{q, st}}, rho0));
      if (yshape[2 + d] != Lout) ge0({AffineTerm{q, -st}}, Lout - 1 - rho0);
      continue;
    }
    ir::IndexPos q = s.add(fmt::format("q{}", d), yshape[2 + d] / st);
    ir::IndexPos rho = s.add(fmt::format("rho{}", d), st);
    ir::IndexPos v = s.add(fmt::format("v{}", d), v_max - v_min + 1);
    // input position q + v + v_min inside [0, Lin)
    sx.push_back(AffineExpr::make({AffineTerm{q, 1}, AffineTerm{v, 1}}, v_min));
    ge0({AffineTerm{q, 1}, AffineTerm{v, 1}}, v_min);
    ge0({AffineTerm{q, -1}, AffineTerm{v, -1}}, Lin - 1 - v_min);
    // tap: rho + pad - s*(v + v_min) (times 1/d), inside [0, Kr)
    const std::int64_t tap0 = p - st * v_min;
    if (dl == 1) {
      sw.push_back(AffineExpr::make({AffineTerm{rho, 1}, AffineTerm{v, -st}}, tap0));
      ge0({AffineTerm{rho, 1}, AffineTerm{v, -st}}, tap0);
      ge0({AffineTerm{rho, -1}, AffineTerm{v, st}}, Kr - 1 - tap0);
    } else {
      ir::IndexPos r = s.add(fmt::format("r{}", d), Kr);
      sw.push_back(ix(r));
      ge0({AffineTerm{rho, 1}, AffineTerm{v, -st}, AffineTerm{r, -dl}}, tap0);
      ge0({AffineTerm{rho, -1}, AffineTerm{v, st}, AffineTerm{r, dl}}, -tap0);
    }
    so.push_back(AffineExpr::make({AffineTerm{q, st}, AffineTerm{rho, 1}}, 0));
    if (yshape[2 + d] != Lout) ge0({AffineTerm{q, -st}, AffineTerm{rho, -1}}, Lout - 1);
  }
  c.einsum({x, w}, y, std::move(s), {sx, sw}, so, mul(arg(0), arg(1)), Reduce::Sum, mask,
           {0.0, 0.0});
  TensorId cropped = y;
  if (overhang) {
    cropped = bias ? c.temp("convt_crop", os, c.t(out).dtype) : out;
    std::vector<std::int64_t> starts(os.size(), 0), steps(os.size(), 1);
    c.move(MoveKind::Slice, {y}, cropped, {{"starts", starts}, {"ends", os}, {"steps", steps}});
  }
  if (bias) c.channelwise({cropped, c.use_arg("bias")}, out, add(arg(0), arg(1)), 1);
}

// Convolution as an affine-subscript einsum:
//   out[n, g*Kg+k, p...] = sum_{c,r...} in[n, g*Cg+c, p*stride + r*dilation - pad] * w[g*Kg+k, c, r...]
void lower_convolution(Context& c) {
  TensorId x = c.use_arg("input"), w = c.use_arg("weight");
  if (c.bool_arg("transposed", false)) return lower_transposed_convolution(c, x, w);
  TensorId out = c.def(0);
  const auto xs = c.t(x).shape, ws = c.t(w).shape, os = c.t(out).shape;
  if (xs.size() < 3 || ws.size() != xs.size() || os.size() != xs.size())
    throw Unsupported("convolution needs batched input [N, C, spatial...]");
  const std::size_t nd = xs.size() - 2;
  const std::int64_t G = c.int_arg("groups", 1);
  auto stride = per_dim(c, "stride", nd, 1), pad = per_dim(c, "padding", nd, 0),
       dil = per_dim(c, "dilation", nd, 1);
  const std::int64_t K = ws[0], Cg = ws[1];
  if (G < 1 || K % G != 0 || xs[1] != Cg * G) throw Unsupported("inconsistent convolution groups");
  const std::int64_t Kg = K / G;
  TensorId y = c.has("bias") ? c.temp("conv", os, c.t(out).dtype) : out;
  Space s;
  ir::IndexPos n = s.add("n", xs[0]);
  std::optional<ir::IndexPos> g;
  if (G > 1) g = s.add("g", G);
  ir::IndexPos k = s.add("k", Kg), ci = s.add("c", Cg);
  auto grouped = [&](ir::IndexPos i, std::int64_t per) {
    if (!g) return ix(i);
    return AffineExpr::make({AffineTerm{*g, per}, AffineTerm{i, 1}}, 0);
  };
  std::vector<AffineExpr> sx{ix(n), grouped(ci, Cg)}, sw{grouped(k, Kg), ix(ci)},
      so{ix(n), grouped(k, Kg)};
  bool padded = false;
  std::vector<ir::IndexPos> ps, rs;
  for (std::size_t d = 0; d < nd; ++d) ps.push_back(s.add(fmt::format("p{}", d), os[2 + d]));
  for (std::size_t d = 0; d < nd; ++d) rs.push_back(s.add(fmt::format("r{}", d), ws[2 + d]));
  for (std::size_t d = 0; d < nd; ++d) {
    sx.push_back(AffineExpr::make({AffineTerm{ps[d], stride[d]}, AffineTerm{rs[d], dil[d]}}, -pad[d]));
    sw.push_back(ix(rs[d]));
    so.push_back(ix(ps[d]));
    padded = padded || pad[d] != 0;
  }
  c.einsum({x, w}, y, std::move(s), {sx, sw}, so, mul(arg(0), arg(1)), Reduce::Sum, {},
           {padded ? std::optional<double>(0.0) : std::nullopt, std::nullopt});
  if (c.has("bias")) c.channelwise({y, c.use_arg("bias")}, out, add(arg(0), arg(1)), 1);
}

// im2col (F.unfold): out[n, (c, ki, kj), (oh, ow)] = x[n, c, oh*s + ki*d - p, ow*s + kj*d - p]
// (pad 0), a copy with mixed-radix output subscripts.
void lower_im2col(Context& c) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  const auto xs = c.t(in).shape;
  if (xs.size() != 4 && xs.size() != 3) throw Unsupported("im2col of rank other than 3 or 4");
  const bool batched = xs.size() == 4;
  auto k = per_dim(c, "kernel_size", 2, 1), d = per_dim(c, "dilation", 2, 1), p = per_dim(c, "padding", 2, 0),
       st = per_dim(c, "stride", 2, 1);
  const std::int64_t C = xs[batched ? 1 : 0], H = xs[xs.size() - 2], W = xs[xs.size() - 1];
  const std::int64_t OH = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) / st[0] + 1,
                     OW = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) / st[1] + 1;
  Space s;
  std::vector<AffineExpr> sx, so;
  if (batched) {
    AffineExpr n = ix(s.add("n", xs[0]));
    sx.push_back(n), so.push_back(n);
  }
  ir::IndexPos ci = s.add("c", C), ki = s.add("ki", k[0]), kj = s.add("kj", k[1]), oh = s.add("oh", OH),
               ow = s.add("ow", OW);
  sx.insert(sx.end(), {ix(ci), AffineExpr::make({AffineTerm{oh, st[0]}, AffineTerm{ki, d[0]}}, -p[0]),
                       AffineExpr::make({AffineTerm{ow, st[1]}, AffineTerm{kj, d[1]}}, -p[1])});
  so.insert(so.end(), {AffineExpr::make({AffineTerm{ci, k[0] * k[1]}, AffineTerm{ki, k[1]}, AffineTerm{kj, 1}}, 0),
                       AffineExpr::make({AffineTerm{oh, OW}, AffineTerm{ow, 1}}, 0)});
  c.einsum({in}, out, std::move(s), {sx}, so, arg(0), Reduce::None, {}, {0.0});
}

}  // namespace

std::vector<std::int64_t> per_dim(Context& c, const char* name, std::size_t n, std::int64_t dflt) {
  std::vector<std::int64_t> v = c.ints(name);
  if (v.empty()) v.assign(n, dflt);
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) throw Unsupported(fmt::format("'{}' has {} entries for {} spatial dims", name, v.size(), n));
  return v;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

void register_conv_ops(const Register& reg) {
  reg("aten::convolution.default", lower_convolution);
  reg("aten::_convolution.default", lower_convolution);
  reg("aten::im2col.default", lower_im2col);
}

}  // namespace solar::lower::detail
