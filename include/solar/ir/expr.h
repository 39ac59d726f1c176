// Combine expressions: the per-point computation of an extended einsum.
//
// An expression is a small tree over the op's operands ($0, $1, ...), constants, unary
// functions and binary/ternary operators. The cost model counts each node once per live
// iteration point (docs/cost.md has the per-function table).
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace solar::ir {

enum class ExprOp {
  Operand,  // leaf: operand number `operand`
  Const,    // leaf: `value`
  // binary
  Add, Sub, Mul, Div, Max, Min, Pow,
  // comparisons (result 1 or 0)
  Lt, Le, Gt, Ge, Eq, Ne,
  // ternary: select(cond, a, b)
  Select,
  // unary arithmetic
  Neg, Abs, Square, Relu,
  // unary special functions (counted as special-function ops)
  Exp, Log, Tanh, Erf, Rsqrt, Sqrt, Recip, Sigmoid, Sin, Cos,
};

// Number of children the op takes (0 for leaves).
int expr_arity(ExprOp op);
// Text name as written in the text form: add, mul, exp, select, ...
std::string_view expr_op_name(ExprOp op);
std::optional<ExprOp> parse_expr_op(std::string_view name);
// True for exp, log, tanh, erf, rsqrt, sqrt, recip, sigmoid, sin, cos.
bool is_special_function(ExprOp op);

// An immutable expression node shared by value semantics (copies share the tree).
class Expr {
 public:
  Expr() = default;  // empty: only valid as "no expression"
  static Expr operand(int index);
  static Expr constant(double value);
  static Expr make(ExprOp op, std::vector<Expr> children);  // checks the arity

  bool defined() const { return node_ != nullptr; }
  ExprOp op() const;
  int operand_index() const;  // for ExprOp::Operand
  double value() const;       // for ExprOp::Const
  const std::vector<Expr>& children() const;

  // True when the expression is mul($0, $1): a contraction candidate.
  bool is_product_of_two_operands() const;

  friend bool operator==(const Expr& a, const Expr& b);

 private:
  struct Node {
    ExprOp op;
    int operand = -1;
    double value = 0;
    std::vector<Expr> children;
  };
  std::shared_ptr<const Node> node_;
};

}  // namespace solar::ir
