// The aten table's convolutions: forward and transposed convolutions as affine-subscript
// einsums, im2col (F.unfold), and their gradients (convolution_backward; col2im, nn.Fold).
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

// A convolution's spatial rank, groups and, per spatial dimension, its stride, padding and
// dilation, for operands x, w, y of one rank >= 3 (`what` names the op when they are not).
struct ConvArgs {
  std::size_t nd;
  std::int64_t groups;
  std::vector<std::int64_t> stride, pad, dil;
};
ConvArgs conv_args(Context& c, const Shape& xs, const Shape& ws, const Shape& ys,
                   const char* what) {
  if (xs.size() < 3 || ws.size() != xs.size() || ys.size() != xs.size())
    throw Unsupported(fmt::format("{} needs batched input [N, C, spatial...]", what));
  ConvArgs a;
  const std::size_t nd = a.nd = xs.size() - 2;
  a.groups = c.int_arg("groups", 1);
  a.stride = per_dim(c, "stride", nd, 1);
  a.pad = per_dim(c, "padding", nd, 0);
  a.dil = per_dim(c, "dilation", nd, 1);
  return a;
}

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
  const ConvArgs args = conv_args(c, xs, ws, os, "transposed convolution");
  const std::size_t nd = args.nd;
  const std::int64_t G = args.groups;
  const std::vector<std::int64_t>&stride = args.stride, &pad = args.pad, &dil = args.dil;
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

// Convolution as one einsum (the convolution builder, builders.h):
//   out[n, g*Kg+k, p...] = sum_{c,r...} in[n, g*Cg+c, p*stride + r*dilation - pad] * w[g*Kg+k, c, r...]
void lower_convolution(Context& c) {
  TensorId x = c.use_arg("input"), w = c.use_arg("weight");
  if (c.bool_arg("transposed", false)) return lower_transposed_convolution(c, x, w);
  TensorId out = c.def(0);
  const auto xs = c.t(x).shape, ws = c.t(w).shape, os = c.t(out).shape;
  const ConvArgs a = conv_args(c, xs, ws, os, "convolution");
  const std::int64_t K = ws[0], Cg = ws[1];
  if (a.groups < 1 || K % a.groups != 0 || xs[1] != Cg * a.groups)
    throw Unsupported("inconsistent convolution groups");
  TensorId y = c.has("bias") ? c.temp("conv", os, c.t(out).dtype) : out;
  std::vector<WindowDim> window;
  for (std::size_t d = 0; d < a.nd; ++d)
    window.push_back({.stride = a.stride[d], .dilation = a.dil[d], .pad_lo = a.pad[d]});
  convolution(c, x, w, y, ConvLayout::identity(xs.size()), window, a.groups, 1);
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

// ---------------------------------------------------------------- gradients

// convolution_backward. With the forward
//   y[n, g*Kg+k, p] = sum_{c, r} x[n, g*Cg+c, p*s + r*d - pad] * w[g*Kg+k, c, r]
// (transposed: y[n, g*Kg+k, o] = sum_{c, r, i : o = i*s + r*d - pad} x[n, g*Cg+c, i] * w[g*Cg+c, k,
// r]):
//   grad_input  = the transposed (resp. direct) convolution of grad_output with the weight,
//   grad_weight = the correlation of the input with grad_output,
//   grad_bias   = grad_output summed over batch and space.
// Work: grad_input counts exactly the taps that land inside the input (a mask, as the
// transposed forward): a tap whose input position padding crops has no element to add to.
// grad_weight of a convolution reads the zero padding of the input as the forward does (its
// MACs equal the forward's); of a transposed convolution it counts the taps landing inside
// grad_output, as the transposed forward counts those landing inside its output.
void lower_convolution_backward(Context& c) {
  TensorId gy = c.use_arg("grad_output"), x = c.use_arg("input"), w = c.use_arg("weight");
  const Shape ys = c.t(gy).shape, xs = c.t(x).shape, ws = c.t(w).shape;
  const ConvArgs args = conv_args(c, xs, ws, ys, "convolution backward");
  const std::size_t nd = args.nd;
  const bool transposed = c.bool_arg("transposed", false);
  const std::int64_t G = args.groups;
  const std::vector<std::int64_t>&stride = args.stride, &pad = args.pad, &dil = args.dil;
  // Channels: the "small" side (the einsum operand with the c index) and the "big" side.
  const std::int64_t Cin = xs[1], K = ys[1];
  if (G < 1 || Cin % G != 0 || K % G != 0) throw Unsupported("inconsistent convolution groups");
  const std::int64_t Cg = Cin / G, Kg = K / G;
  if (transposed ? (ws[0] != Cin || ws[1] != Kg) : (ws[0] != K || ws[1] != Cg))
    throw Unsupported("convolution weight shape does not match its channels");
  for (std::size_t d = 0; d < nd; ++d)
    if (stride[d] < 1 || dil[d] < 1) throw Unsupported("non-positive stride or dilation");

  // The index space shared by the three contractions: n, (g), k, c, and per spatial dim the
  // position of the tensor that is read through a plain index.
  struct Builder {
    Space s;
    ir::IndexPos n = -1, k = -1, ci = -1;
    std::optional<ir::IndexPos> g;
    AffineExpr grouped(ir::IndexPos i, std::int64_t per) const {
      if (!g) return ix(i);
      return AffineExpr::make({AffineTerm{*g, per}, AffineTerm{i, 1}}, 0);
    }
  };
  auto start = [&](bool with_n) {
    Builder b;
    if (with_n) b.n = b.s.add("n", xs[0]);
    if (G > 1) b.g = b.s.add("g", G);
    b.k = b.s.add("k", Kg);
    b.ci = b.s.add("c", Cg);
    return b;
  };
  // The weight's subscript in channel dims.
  auto wsub = [&](const Builder& b) {
    return transposed ? std::vector<AffineExpr>{b.grouped(b.ci, Cg), ix(b.k)}
                      : std::vector<AffineExpr>{b.grouped(b.k, Kg), ix(b.ci)};
  };
  // The "direct" relation: big[q] is read at small position q*s + r*d - pad where (small,
  // big) is (x, y) for a forward conv and (y, x) for a transposed one.
  const Shape& small_sp = transposed ? ys : xs;  // read through the affine subscript
  const Shape& big_sp = transposed ? xs : ys;    // iterated by a plain index

  if (wants(c, 0)) {
    TensorId out = c.def(0);
    Builder b = start(true);
    std::vector<AffineExpr> sg{ix(b.n), b.grouped(b.k, Kg)}, sw = wsub(b),
                                                             so{ix(b.n), b.grouped(b.ci, Cg)};
    std::vector<AffineConstraint> mask;
    bool padded = false;
    for (std::size_t d = 0; d < nd; ++d) {
      if (transposed) {
        // dx[i] = sum_{k, r} dy[i*s + r*d - pad] * w[r]
        ir::IndexPos i = b.s.add(fmt::format("i{}", d), xs[2 + d]);
        ir::IndexPos r = b.s.add(fmt::format("r{}", d), ws[2 + d]);
        AffineExpr at =
            AffineExpr::make({AffineTerm{i, stride[d]}, AffineTerm{r, dil[d]}}, -pad[d]);
        within(mask, at, ys[2 + d] - 1);
        sg.push_back(at);
        sw.push_back(ix(r));
        so.push_back(ix(i));
        padded = true;
      } else if (stride[d] == 1) {
        // dx[i] = sum_{k, r} dy[i + pad - r*d] * w[r]: no division, so a direct subscript
        ir::IndexPos i = b.s.add(fmt::format("i{}", d), xs[2 + d]);
        ir::IndexPos r = b.s.add(fmt::format("r{}", d), ws[2 + d]);
        AffineExpr at = AffineExpr::make({AffineTerm{i, 1}, AffineTerm{r, -dil[d]}}, pad[d]);
        within(mask, at, ys[2 + d] - 1);
        sg.push_back(at);
        sw.push_back(ix(r));
        so.push_back(ix(i));
        padded = true;
      } else {
        // dx[i] = sum_{k, r, p : p*s + r*d - pad == i} dy[p] * w[r] (two inequalities)
        ir::IndexPos i = b.s.add(fmt::format("i{}", d), xs[2 + d]);
        ir::IndexPos r = b.s.add(fmt::format("r{}", d), ws[2 + d]);
        ir::IndexPos p = b.s.add(fmt::format("p{}", d), ys[2 + d]);
        AffineExpr eq = AffineExpr::make(
            {AffineTerm{i, 1}, AffineTerm{r, -dil[d]}, AffineTerm{p, -stride[d]}}, pad[d]);
        within(mask, eq, 0);
        sg.push_back(ix(p));
        sw.push_back(ix(r));
        so.push_back(ix(i));
      }
    }
    c.einsum({gy, w}, out, std::move(b.s), {sg, sw}, so, mul(arg(0), arg(1)), Reduce::Sum, mask,
             {padded ? std::optional<double>(0.0) : std::nullopt, std::nullopt});
  }
  if (wants(c, 1)) {
    // dw[r] = sum_{n, q} small[q*s + r*d - pad] * big[q]
    TensorId out = c.def(1);
    Builder b = start(true);
    std::vector<AffineExpr> sx{ix(b.n), b.grouped(b.ci, Cg)}, sg{ix(b.n), b.grouped(b.k, Kg)};
    std::vector<AffineExpr> so = wsub(b);
    std::vector<AffineConstraint> mask;
    for (std::size_t d = 0; d < nd; ++d) {
      ir::IndexPos q = b.s.add(fmt::format("q{}", d), big_sp[2 + d]);
      ir::IndexPos r = b.s.add(fmt::format("r{}", d), ws[2 + d]);
      AffineExpr at = AffineExpr::make({AffineTerm{q, stride[d]}, AffineTerm{r, dil[d]}}, -pad[d]);
      if (transposed) within(mask, at, small_sp[2 + d] - 1);
      (transposed ? sg : sx).push_back(at);
      (transposed ? sx : sg).push_back(ix(q));
      so.push_back(ix(r));
    }
    // operand 0 is the input, operand 1 grad_output; the affine one reads with pad 0
    c.einsum({x, gy}, out, std::move(b.s), {sx, sg}, so, mul(arg(0), arg(1)), Reduce::Sum, mask,
             {transposed ? std::nullopt : std::optional<double>(0.0),
              transposed ? std::optional<double>(0.0) : std::nullopt});
  }
  if (wants(c, 2)) {
    TensorId out = c.def(2);
    if (c.t(out).shape != Shape{K}) throw Unsupported("bias gradient is not a per-channel vector");
    bcast(c, {gy}, out, ys, all_but(ys.size(), 1), arg(0), Reduce::Sum);
  }
}

// col2im (nn.Fold, and the gradient of im2col / nn.Unfold): columns [N, C*kh*kw, L] with
// L = OH*OW block positions, viewed as [N, C, kh, kw, OH, OW], summed into the image:
//   out[n, c, y, x] = sum over (tap, block) pairs with y = oh*s + kh*d - pad (and for x),
// as a convolution's input gradient without the weight: stride 1 reads the block directly
// at y + pad - kh*d, other strides mask (y, kh, oh) to the equality.
void lower_col2im(Context& c) {
  TensorId cols = c.use_arg("self");
  TensorId out = c.def(0);
  const Shape cs = c.t(cols).shape, os = c.t(out).shape;
  const bool batched = cs.size() == 3;
  if (!batched && cs.size() != 2) throw Unsupported("col2im of other than [N, C*kh*kw, L] columns");
  auto size = per_dim(c, "output_size", 2, 1), kernel = per_dim(c, "kernel_size", 2, 1),
       dil = per_dim(c, "dilation", 2, 1), pad = per_dim(c, "padding", 2, 0),
       stride = per_dim(c, "stride", 2, 1);
  const std::int64_t N = batched ? cs[0] : 1, CK = cs[cs.size() - 2], L = cs.back();
  const std::int64_t K = kernel[0] * kernel[1];
  Shape blocks(2);
  for (std::size_t d = 0; d < 2; ++d) {
    if (stride[d] < 1 || dil[d] < 1)
      throw Unsupported("col2im with a non-positive stride or dilation");
    blocks[d] = (size[d] + 2 * pad[d] - dil[d] * (kernel[d] - 1) - 1) / stride[d] + 1;
  }
  if (K < 1 || CK % K != 0 || blocks[0] * blocks[1] != L)
    throw Unsupported("col2im sizes do not match its columns");
  const std::int64_t C = CK / K;
  TensorId cv = reshaped(c, cols, {N, C, kernel[0], kernel[1], blocks[0], blocks[1]}, "columns");
  const Shape ishape{N, C, size[0], size[1]};
  if (numel(os) != numel(ishape)) throw Unsupported("col2im output does not match its sizes");
  TensorId img = os == ishape ? out : c.temp("image", ishape, c.t(out).dtype);
  Space s;
  ir::IndexPos n = s.add("n", N), ci = s.add("c", C);
  std::vector<AffineExpr> sub_cols{ix(n), ix(ci)}, sub_taps, sub_blocks, so{ix(n), ix(ci)};
  std::vector<AffineConstraint> mask;
  bool padded = false;
  for (std::size_t d = 0; d < 2; ++d) {
    ir::IndexPos y = s.add(fmt::format("y{}", d), size[d]);
    ir::IndexPos k = s.add(fmt::format("k{}", d), kernel[d]);
    sub_taps.push_back(ix(k));
    so.push_back(ix(y));
    if (stride[d] == 1) {
      AffineExpr at = AffineExpr::make({AffineTerm{y, 1}, AffineTerm{k, -dil[d]}}, pad[d]);
      within(mask, at, blocks[d] - 1);
      sub_blocks.push_back(at);
      padded = true;
    } else {
      ir::IndexPos b = s.add(fmt::format("b{}", d), blocks[d]);
      within(mask,
             AffineExpr::make({AffineTerm{y, 1}, AffineTerm{k, -dil[d]}, AffineTerm{b, -stride[d]}},
                              pad[d]),
             0);
      sub_blocks.push_back(ix(b));
    }
  }
  sub_cols.insert(sub_cols.end(), sub_taps.begin(), sub_taps.end());
  sub_cols.insert(sub_cols.end(), sub_blocks.begin(), sub_blocks.end());
  c.einsum({cv}, img, std::move(s), {sub_cols}, so, arg(0), Reduce::Sum, mask,
           {padded ? std::optional<double>(0.0) : std::nullopt});
  if (img != out) c.move(MoveKind::View, {img}, out);
}

}  // namespace

std::vector<std::int64_t> per_dim(Context& c, const char* name, std::size_t n, std::int64_t dflt) {
  std::vector<std::int64_t> v = c.ints(name);
  if (v.empty()) v.assign(n, dflt);
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) throw Unsupported(fmt::format("'{}' has {} entries for {} spatial dims", name, v.size(), n));
  return v;
}

void register_conv_ops(const Register& reg) {
  reg("aten::convolution.default", lower_convolution);
  reg("aten::_convolution.default", lower_convolution);
  reg("aten::im2col.default", lower_im2col);
  reg("aten::convolution_backward.default", lower_convolution_backward);
  reg("aten::col2im.default", lower_col2im);
}

}  // namespace solar::lower::detail
