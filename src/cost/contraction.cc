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
