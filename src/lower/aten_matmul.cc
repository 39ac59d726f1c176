// The aten table's matrix products: mm, bmm, matmul (numpy semantics), mv, dot, the
// addmm/baddbmm/addmv family and linear.
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

// out = a @ b with numpy matmul semantics: 1-D operands, broadcast batch dimensions.
void matmul_into(Context& c, TensorId a, TensorId b, TensorId out) {
  const auto as = c.t(a).shape, bs = c.t(b).shape, os = c.t(out).shape;
  if (as.empty() || bs.empty()) throw Unsupported("matmul of a scalar");
  const bool has_m = as.size() >= 2, has_n = bs.size() >= 2;
  const std::int64_t K = as.back();
  if ((has_n ? bs[bs.size() - 2] : bs[0]) != K)
    throw Unsupported("matmul operands disagree on the contracted extent");
  const std::size_t nb = os.size() - has_m - has_n;
  Space s;
  std::vector<AffineExpr> batch;
  for (std::size_t d = 0; d < nb; ++d) batch.push_back(ix(s.add(fmt::format("b{}", d), os[d])));
  auto batch_sub = [&](const std::vector<std::int64_t>& sh, std::size_t nmat) {
    std::vector<AffineExpr> sub;
    std::size_t k = sh.size() - nmat;
    if (k > nb) throw Unsupported("matmul operand has more batch dimensions than the output");
    for (std::size_t d = 0; d < k; ++d) {
      std::size_t od = d + nb - k;
      if (sh[d] == os[od]) sub.push_back(batch[od]);
      else if (sh[d] == 1) sub.push_back(zero());
      else throw Unsupported("matmul batch dimensions do not broadcast");
    }
    return sub;
  };
  std::vector<AffineExpr> sa = batch_sub(as, has_m ? 2 : 1), sb = batch_sub(bs, has_n ? 2 : 1);
  std::vector<AffineExpr> so = batch;
  if (has_m) {
    AffineExpr m = ix(s.add("m", as[as.size() - 2]));
    sa.push_back(m);
    so.push_back(m);
  }
  AffineExpr k = ix(s.add("k", K));
  sa.push_back(k);
  sb.push_back(k);
  if (has_n) {
    AffineExpr n = ix(s.add("n", bs.back()));
    sb.push_back(n);
    so.push_back(n);
  }
  c.einsum({a, b}, out, std::move(s), {sa, sb}, so, mul(arg(0), arg(1)), Reduce::Sum);
}

Fn matmul(const char* a, const char* b) {
  return [=](Context& c) { matmul_into(c, c.use_arg(a), c.use_arg(b), c.def(0)); };
}

// beta * self + alpha * (a @ b): addmm, baddbmm, addmv.
Fn add_matmul(const char* a, const char* b) {
  return [=](Context& c) {
    TensorId out = c.def(0);
    double alpha = c.num_arg("alpha", 1), beta = c.num_arg("beta", 1);
    TensorId prod = c.temp("mm", c.t(out).shape, c.t(out).dtype);
    matmul_into(c, c.use_arg(a), c.use_arg(b), prod);
    if (beta == 0) return c.elementwise({prod}, out, scaled(alpha, arg(0)));
    c.elementwise({c.use_arg("self"), prod}, out, add(scaled(beta, arg(0)), scaled(alpha, arg(1))));
  };
}

void lower_linear(Context& c) {
  TensorId x = c.use_arg("input"), w = c.use_arg("weight");
  TensorId out = c.def(0);
  const auto xs = c.t(x).shape, ws = c.t(w).shape;
  if (ws.size() != 2 || xs.empty()) throw Unsupported("linear with a weight of rank != 2");
  TensorId y = c.has("bias") ? c.temp("mm", c.t(out).shape, c.t(out).dtype) : out;
  Space s;
  std::vector<AffineExpr> sx, so;
  for (std::size_t d = 0; d + 1 < xs.size(); ++d) {
    AffineExpr i = ix(s.add(fmt::format("b{}", d), xs[d]));
    sx.push_back(i);
    so.push_back(i);
  }
  AffineExpr n = ix(s.add("n", ws[0])), k = ix(s.add("k", ws[1]));
  sx.push_back(k);
  so.push_back(n);
  c.einsum({x, w}, y, std::move(s), {sx, {n, k}}, so, mul(arg(0), arg(1)), Reduce::Sum);
  if (c.has("bias")) c.elementwise({y, c.use_arg("bias")}, out, add(arg(0), arg(1)));
}

}  // namespace

void register_matmul_ops(const Register& reg) {
  // Contractions.
  reg("aten::mm.default", matmul("self", "mat2"));
  reg("aten::bmm.default", matmul("self", "mat2"));
  reg("aten::matmul.default", matmul("self", "other"));
  reg("aten::mv.default", matmul("self", "vec"));
  reg("aten::dot.default", matmul("self", "tensor"));
  reg("aten::addmm.default", add_matmul("mat1", "mat2"));
  reg("aten::baddbmm.default", add_matmul("batch1", "batch2"));
  reg("aten::addmv.default", add_matmul("mat", "vec"));
  reg("aten::linear.default", lower_linear);
}

}  // namespace solar::lower::detail
