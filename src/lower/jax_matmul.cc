// The jax table's contractions: dot_general with any contracting and batch dimensions.
#include <algorithm>

#include <fmt/format.h>

#include "jax_families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail::jax {

namespace {

// dot_general with any dimension numbers ((lhs_contract, rhs_contract), (lhs_batch,
// rhs_batch)): out[batch..., lhs free..., rhs free...] = sum_k lhs * rhs.
void lower_dot_general(Context& c) {
  TensorId a = in(c, 0), b = in(c, 1);
  TensorId out = c.def(0);
  const Shape as = c.t(a).shape, bs = c.t(b).shape;
  const auto& dn = c.a("dimension_numbers");
  if (!dn.is_array() || dn.size() != 2 || !dn[0].is_array() || !dn[1].is_array() ||
      dn[0].size() != 2 || dn[1].size() != 2)
    throw Unsupported("dot_general without ((contract), (batch)) dimension numbers");
  Shape lc = int_list(dn[0][0], "lhs_contract"), rc = int_list(dn[0][1], "rhs_contract"),
        lb = int_list(dn[1][0], "lhs_batch"), rb = int_list(dn[1][1], "rhs_batch");
  if (lc.size() != rc.size() || lb.size() != rb.size())
    throw Unsupported("dot_general dimension numbers of different lengths");
  Space s;
  std::vector<AffineExpr> sa(as.size()), sb(bs.size()), so;
  std::vector<bool> used_a(as.size(), false), used_b(bs.size(), false);
  for (std::size_t k = 0; k < lb.size(); ++k) {
    std::int64_t da = norm_dim(lb[k], as.size()), db = norm_dim(rb[k], bs.size());
    if (as[da] != bs[db]) throw Unsupported("dot_general batch extents differ");
    AffineExpr i = ix(s.add(fmt::format("b{}", k), as[da]));
    sa[da] = i, sb[db] = i, used_a[da] = used_b[db] = true;
    so.push_back(i);
  }
  for (std::size_t d = 0; d < as.size(); ++d) {
    if (used_a[d] || std::count(lc.begin(), lc.end(), static_cast<std::int64_t>(d))) continue;
    AffineExpr i = ix(s.add(fmt::format("m{}", d), as[d]));
    sa[d] = i;
    so.push_back(i);
  }
  for (std::size_t d = 0; d < bs.size(); ++d) {
    if (used_b[d] || std::count(rc.begin(), rc.end(), static_cast<std::int64_t>(d))) continue;
    AffineExpr i = ix(s.add(fmt::format("n{}", d), bs[d]));
    sb[d] = i;
    so.push_back(i);
  }
  for (std::size_t k = 0; k < lc.size(); ++k) {
    std::int64_t da = norm_dim(lc[k], as.size()), db = norm_dim(rc[k], bs.size());
    if (as[da] != bs[db]) throw Unsupported("dot_general contracted extents differ");
    AffineExpr i = ix(s.add(fmt::format("k{}", k), as[da]));
    sa[da] = i, sb[db] = i;
  }
  if (so.size() != c.t(out).shape.size()) throw Unsupported("dot_general output rank mismatch");
  c.einsum({a, b}, out, std::move(s), {sa, sb}, so, mul(arg(0), arg(1)), Reduce::Sum);
}

}  // namespace

void register_matmul_ops(const Register& reg) { reg("jax::dot_general", lower_dot_general); }

}  // namespace solar::lower::detail::jax
