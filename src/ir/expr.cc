#include "solar/ir/expr.h"

#include <string>

#include "solar/util/errors.h"

namespace solar::ir {

int expr_arity(ExprOp op) {
  switch (op) {
    case ExprOp::Operand: case ExprOp::Const: return 0;
    case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Div: case ExprOp::Max:
    case ExprOp::Min: case ExprOp::Pow: case ExprOp::Lt: case ExprOp::Le: case ExprOp::Gt:
    case ExprOp::Ge: case ExprOp::Eq: case ExprOp::Ne: case ExprOp::Atan2: case ExprOp::Rem:
    case ExprOp::Mod: case ExprOp::And: case ExprOp::Or: case ExprOp::Xor: case ExprOp::Shl:
    case ExprOp::Ashr: case ExprOp::Lshr: case ExprOp::IDiv:
      return 2;
    case ExprOp::Select: return 3;
    case ExprOp::Neg: case ExprOp::Abs: case ExprOp::Square: case ExprOp::Relu: case ExprOp::Exp:
    case ExprOp::Log: case ExprOp::Tanh: case ExprOp::Erf: case ExprOp::Rsqrt: case ExprOp::Sqrt:
    case ExprOp::Recip: case ExprOp::Sigmoid: case ExprOp::Sin: case ExprOp::Cos:
    case ExprOp::Atan: case ExprOp::Asin: case ExprOp::Acos: case ExprOp::Floor:
    case ExprOp::Ceil: case ExprOp::Trunc: case ExprOp::RoundEven: case ExprOp::RoundAway:
    case ExprOp::Sign: case ExprOp::Not: case ExprOp::Popcount: case ExprOp::Clz:
    case ExprOp::F32Bits: case ExprOp::BitsF32: case ExprOp::ErfInv: case ExprOp::Lgamma:
    case ExprOp::Digamma:
      return 1;
  }
  return 0;
}

std::string_view expr_op_name(ExprOp op) {
  switch (op) {
    case ExprOp::Operand: return "operand";
    case ExprOp::Const: return "const";
    case ExprOp::Add: return "add";
    case ExprOp::Sub: return "sub";
    case ExprOp::Mul: return "mul";
    case ExprOp::Div: return "div";
    case ExprOp::Max: return "max";
    case ExprOp::Min: return "min";
    case ExprOp::Pow: return "pow";
    case ExprOp::Lt: return "lt";
    case ExprOp::Le: return "le";
    case ExprOp::Gt: return "gt";
    case ExprOp::Ge: return "ge";
    case ExprOp::Eq: return "eq";
    case ExprOp::Ne: return "ne";
    case ExprOp::Select: return "select";
    case ExprOp::Neg: return "neg";
    case ExprOp::Abs: return "abs";
    case ExprOp::Square: return "square";
    case ExprOp::Relu: return "relu";
    case ExprOp::Exp: return "exp";
    case ExprOp::Log: return "log";
    case ExprOp::Tanh: return "tanh";
    case ExprOp::Erf: return "erf";
    case ExprOp::Rsqrt: return "rsqrt";
    case ExprOp::Sqrt: return "sqrt";
    case ExprOp::Recip: return "recip";
    case ExprOp::Sigmoid: return "sigmoid";
    case ExprOp::Sin: return "sin";
    case ExprOp::Cos: return "cos";
    case ExprOp::Atan: return "atan";
    case ExprOp::Asin: return "asin";
    case ExprOp::Acos: return "acos";
    case ExprOp::Atan2: return "atan2";
    case ExprOp::Floor: return "floor";
    case ExprOp::Ceil: return "ceil";
    case ExprOp::Trunc: return "trunc";
    case ExprOp::RoundEven: return "round_even";
    case ExprOp::RoundAway: return "round_away";
    case ExprOp::Sign: return "sign";
    case ExprOp::Rem: return "rem";
    case ExprOp::Mod: return "mod";
    case ExprOp::And: return "and";
    case ExprOp::Or: return "or";
    case ExprOp::Xor: return "xor";
    case ExprOp::Not: return "not";
    case ExprOp::Shl: return "shl";
    case ExprOp::Ashr: return "ashr";
    case ExprOp::Lshr: return "lshr";
    case ExprOp::Popcount: return "popcount";
    case ExprOp::Clz: return "clz";
    case ExprOp::F32Bits: return "f32_bits";
    case ExprOp::BitsF32: return "bits_f32";
    case ExprOp::ErfInv: return "erfinv";
    case ExprOp::Lgamma: return "lgamma";
    case ExprOp::Digamma: return "digamma";
    case ExprOp::IDiv: return "idiv";
  }
  return "?";
}

std::optional<ExprOp> parse_expr_op(std::string_view name) {
  for (int i = static_cast<int>(ExprOp::Add); i <= static_cast<int>(kLastExprOp); ++i) {
    auto op = static_cast<ExprOp>(i);
    if (expr_op_name(op) == name) return op;
  }
  return std::nullopt;
}

bool is_special_function(ExprOp op) {
  switch (op) {
    case ExprOp::Exp: case ExprOp::Log: case ExprOp::Tanh: case ExprOp::Erf: case ExprOp::Rsqrt:
    case ExprOp::Sqrt: case ExprOp::Recip: case ExprOp::Sigmoid: case ExprOp::Sin: case ExprOp::Cos:
    case ExprOp::Atan: case ExprOp::Asin: case ExprOp::Acos: case ExprOp::Atan2:
    case ExprOp::ErfInv: case ExprOp::Lgamma: case ExprOp::Digamma:
      return true;
    case ExprOp::Operand: case ExprOp::Const: case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul:
    case ExprOp::Div: case ExprOp::Max: case ExprOp::Min: case ExprOp::Pow: case ExprOp::Lt:
    case ExprOp::Le: case ExprOp::Gt: case ExprOp::Ge: case ExprOp::Eq: case ExprOp::Ne:
    case ExprOp::Select: case ExprOp::Neg: case ExprOp::Abs: case ExprOp::Square: case ExprOp::Relu:
    case ExprOp::Floor: case ExprOp::Ceil: case ExprOp::Trunc: case ExprOp::RoundEven:
    case ExprOp::RoundAway: case ExprOp::Sign: case ExprOp::Rem: case ExprOp::Mod: case ExprOp::And:
    case ExprOp::Or: case ExprOp::Xor: case ExprOp::Not: case ExprOp::Shl: case ExprOp::Ashr:
    case ExprOp::Lshr: case ExprOp::Popcount: case ExprOp::Clz: case ExprOp::F32Bits:
    case ExprOp::BitsF32: case ExprOp::IDiv:
      return false;
  }
  return false;
}

bool is_bitwise(ExprOp op) {
  switch (op) {
    case ExprOp::And: case ExprOp::Or: case ExprOp::Xor: case ExprOp::Not: case ExprOp::Shl:
    case ExprOp::Ashr: case ExprOp::Lshr: case ExprOp::Popcount: case ExprOp::Clz:
      return true;
    case ExprOp::Operand: case ExprOp::Const: case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul:
    case ExprOp::Div: case ExprOp::Max: case ExprOp::Min: case ExprOp::Pow: case ExprOp::Lt:
    case ExprOp::Le: case ExprOp::Gt: case ExprOp::Ge: case ExprOp::Eq: case ExprOp::Ne:
    case ExprOp::Select: case ExprOp::Neg: case ExprOp::Abs: case ExprOp::Square: case ExprOp::Relu:
    case ExprOp::Exp: case ExprOp::Log: case ExprOp::Tanh: case ExprOp::Erf: case ExprOp::Rsqrt:
    case ExprOp::Sqrt: case ExprOp::Recip: case ExprOp::Sigmoid: case ExprOp::Sin: case ExprOp::Cos:
    case ExprOp::Atan: case ExprOp::Asin: case ExprOp::Acos: case ExprOp::Atan2:
    case ExprOp::Floor: case ExprOp::Ceil: case ExprOp::Trunc: case ExprOp::RoundEven:
    case ExprOp::RoundAway: case ExprOp::Sign: case ExprOp::Rem: case ExprOp::Mod:
    case ExprOp::F32Bits: case ExprOp::BitsF32: case ExprOp::ErfInv: case ExprOp::Lgamma:
    case ExprOp::Digamma: case ExprOp::IDiv:
      return false;
  }
  return false;
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
  if (op == ExprOp::Operand || op == ExprOp::Const)
    throw InternalError("Expr::make cannot build a leaf", __FILE__, __LINE__);
  if (static_cast<int>(children.size()) != expr_arity(op))
    throw UserError(UserError::Kind::Parse,
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
