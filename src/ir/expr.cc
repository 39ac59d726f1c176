#include "solar/ir/expr.h"

#include <string>

#include "solar/util/errors.h"

namespace solar::ir {

std::optional<ExprOp> parse_expr_op(std::string_view name) {
  for (const ExprOpInfo& info : kExprOps)
    if (info.arity > 0 && info.name == name) return info.op;
  return std::nullopt;
}

Expr Expr::operand(int index) {
  SOLAR_CHECK(index >= 0, "negative operand number");
  Expr e;
  e.node_ = std::make_shared<const Node>(Node{ExprOp::Operand, index, 0, {}});
  return e;
}

Expr Expr::constant(double value) {
  Expr e;
  e.node_ = std::make_shared<const Node>(Node{ExprOp::Const, -1, value, {}});
  return e;
}

Expr Expr::make(ExprOp op, std::vector<Expr> children) {
  SOLAR_CHECK(op != ExprOp::Operand && op != ExprOp::Const, "Expr::make cannot build a leaf");
  // The parsers check arity before they build (a parse error with its position): a wrong
  // count here is a bug of the code that built the expression (a lowering, a pass).
  SOLAR_CHECK(static_cast<int>(children.size()) == expr_arity(op),
              std::string(expr_op_name(op)) + " takes " + std::to_string(expr_arity(op)) +
                  " arguments, got " + std::to_string(children.size()));
  for (const Expr& c : children) SOLAR_CHECK(c.defined(), "undefined child expression");
  Expr e;
  e.node_ = std::make_shared<const Node>(Node{op, -1, 0, std::move(children)});
  return e;
}

ExprOp Expr::op() const {
  SOLAR_CHECK(defined(), "op() of an undefined expression");
  return node_->op;
}
int Expr::operand_index() const { return node_->operand; }
double Expr::value() const { return node_->value; }
const std::vector<Expr>& Expr::children() const { return node_->children; }

bool Expr::is_product_of_two_operands() const {
  if (!defined() || op() != ExprOp::Mul) return false;
  const auto& c = children();
  return c[0].op() == ExprOp::Operand && c[1].op() == ExprOp::Operand &&
         c[0].operand_index() != c[1].operand_index();
}

bool operator==(const Expr& a, const Expr& b) {
  if (a.node_ == b.node_) return true;
  if (!a.defined() || !b.defined()) return false;
  const auto& x = *a.node_;
  const auto& y = *b.node_;
  if (x.op != y.op || x.operand != y.operand || x.children != y.children) return false;
  // Constants compare bit-for-bit so NaN == NaN and the text round trip is exact.
  return x.value == y.value || (x.value != x.value && y.value != y.value);
}

}  // namespace solar::ir
