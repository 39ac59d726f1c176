#include "solar/cost/contraction.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "solar/util/errors.h"

namespace solar::cost {

using ir::AffineExpr;
using ir::EinsumOp;
using ir::IndexPos;
using ir::Operand;

namespace {

// Whether `b` is `-a`, so that the constraints a >= 0 and b >= 0 together say a == 0
// (compared in 128 bits: negating INT64_MIN does not fit 64).
bool negates(const AffineExpr& a, const AffineExpr& b) {
  if (a.terms().size() != b.terms().size()) return false;
  if (static_cast<__int128>(a.constant_term()) + b.constant_term() != 0) return false;
  for (std::size_t k = 0; k < a.terms().size(); ++k) {
    const ir::AffineTerm& x = a.terms()[k];
    const ir::AffineTerm& y = b.terms()[k];
    if (x.index != y.index || static_cast<__int128>(x.coef) + y.coef != 0) return false;
  }
  return true;
}

// A window written as a mask: an equality (a constraint and its negation) that ties an
// index kept in the output to two or more reduced ones, `p - s*i - kh + pad == 0`: every
// output position reads the input positions its taps reach, which a substitution would
// write as the affine subscript `w[..., p - s*i + pad]`. One reduced index is a diagonal
// (`k == n`), not a window; bands (`q - W < k <= q`, sliding-window attention) are
// inequalities and stay what their subscripts say.
bool window_equality(const EinsumOp& e, const std::vector<IndexPos>& reduced) {
  for (std::size_t a = 0; a < e.mask.size(); ++a) {
    const AffineExpr& x = e.mask[a].expr;
    int kept = 0, summed = 0;
    for (const ir::AffineTerm& t : x.terms()) {
      if (std::find(reduced.begin(), reduced.end(), t.index) != reduced.end())
        ++summed;
      else
        ++kept;
    }
    if (kept == 0 || summed < 2) continue;
    for (std::size_t b = a + 1; b < e.mask.size(); ++b)
      if (negates(x, e.mask[b].expr)) return true;
  }
  return false;
}

}  // namespace

ContractionClass classify_contraction(const EinsumOp& e) {
  if (e.reduce != ir::Reduce::Sum || !e.combine.is_product_of_two_operands()) {
    return ContractionClass::None;
  }
  const std::vector<IndexPos> reduced = e.reduced_indices();
  if (reduced.empty()) return ContractionClass::None;  // outer product
  // A sliding window slides a reduced index (the tap) against another index: `p*s + r*d`
  // (a 1x1 convolution too: its tap has extent 1). An affine subscript without a reduced
  // index is a reshape of one dimension into several kept in the output (the grouped-query
  // head `hk*grp + j` of attention): a matmul.
  auto windowed = [&](const AffineExpr& x) {
    if (x.terms().size() < 2) return false;
    for (const ir::AffineTerm& t : x.terms())
      if (std::find(reduced.begin(), reduced.end(), t.index) != reduced.end()) return true;
    return false;
  };
  for (const Operand& o : e.operands)
    for (const AffineExpr& x : o.subscript)
      if (windowed(x)) return ContractionClass::Convolution;
  // A transposed convolution in scatter form has its window on the output subscript.
  for (const AffineExpr& x : e.output)
    if (windowed(x)) return ContractionClass::Convolution;
  // In gather form every subscript may be plain and the window a mask equality instead,
  // `p == s*i + kh - pad`: an output position tied to an input position and a tap.
  if (window_equality(e, reduced)) return ContractionClass::Convolution;
  return ContractionClass::Matmul;
}

ContractionClass classify_contraction(const ir::Graph& g, const ir::Op& op) {
  if (op.kind() != ir::OpKind::Einsum) return ContractionClass::None;
  const EinsumOp& e = op.einsum();
  ContractionClass c = classify_contraction(e);
  if (c == ContractionClass::None) return c;
  if (e.hint == ir::ContractionHint::Attention) c = ContractionClass::Attention;
  for (const ir::Expr& child : e.combine.children()) {
    const int k = child.operand_index();
    if (k < 0 || static_cast<std::size_t>(k) >= op.inputs.size())
      throw UserError(UserError::Kind::InvalidGraph,
                      fmt::format("combine uses ${} but the einsum has {} inputs", k,
                                  op.inputs.size()),
                      ir::op_origin(op));
    if (g.tensor(op.inputs[k]).dtype == ir::DType::Bool) return ContractionClass::None;
  }
  return c;
}

}  // namespace solar::cost
