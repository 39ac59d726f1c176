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
  Atan, Asin, Acos,
  // binary special function: atan2(y, x), the angle of (x, y) in (-pi, pi]
  Atan2,
  // rounding to an integral value (identity on integers): floor, ceil, trunc (toward zero),
  // round_even (half to even: torch.round, JAX ROUND_TO_NEAREST_EVEN), round_away (half away
  // from zero: std::round, JAX's default lax.round)
  Floor, Ceil, Trunc, RoundEven, RoundAway,
  // sign(x): -1, 0 or 1 (float: keeps -0, 0 and NaN)
  Sign,
  // remainders: rem(a, b) truncated, the sign of a (C's % and fmod, JAX lax.rem, torch.fmod);
  // mod(a, b) floored, the sign of b (Python's %, torch.remainder). Integer b = 0 gives a.
  Rem, Mod,
  // integer bit operations in the einsum's integer type (see below): and, or, xor, not,
  // shl (shift left), ashr (arithmetic shift right: sign fill), lshr (logical shift right:
  // zero fill), popcount (set bits), clz (leading zero bits)
  And, Or, Xor, Not, Shl, Ashr, Lshr, Popcount, Clz,
  // bit reinterpretation between f32 and a 32-bit integer (JAX's bitcast_convert_type):
  // f32_bits(x) is the IEEE bit pattern of f32 x as a signed int32 value (a uint32 result
  // tensor stores it as the same 32 bits); bits_f32(n) is the f32 whose pattern is n's low
  // 32 bits. Free in the cost model (a register reinterpretation).
  F32Bits, BitsF32,
  // more unary special functions: erfinv (the inverse of erf on (-1, 1); +-inf at +-1),
  // lgamma (log |gamma(x)|), digamma (gamma'/gamma; -inf at 0, NaN at negative integers)
  ErfInv, Lgamma, Digamma,
  // idiv(a, b): division truncated toward zero (C's integer /, lax.div on integers; on
  // floats trunc(a / b)). Integer b = 0 gives -1 (XLA's rule); INT_MIN / -1 wraps to INT_MIN.
  IDiv,
};

// Integer semantics (docs/ir-text.md, "Integer arithmetic"): in an einsum whose operands
// and output are all integer or bool, every combine node works in the einsum's integer
// type, the widest integer dtype among its operands and output: results wrap around to
// it (two's complement) after every node, as C and the frameworks compute. Shift counts
// outside [0, width) give 0 (shl, lshr) or the sign fill (ashr), as torch and XLA define
// them. In a bool-only einsum not(x) is logical not.

// The last ExprOp (for loops over all functions).
inline constexpr ExprOp kLastExprOp = ExprOp::IDiv;

// Number of children the op takes (0 for leaves).
int expr_arity(ExprOp op);
// Text name as written in the text form: add, mul, exp, select, ...
std::string_view expr_op_name(ExprOp op);
std::optional<ExprOp> parse_expr_op(std::string_view name);
// True for exp, log, tanh, erf, rsqrt, sqrt, recip, sigmoid, sin, cos, atan, asin, acos,
// atan2, erfinv, lgamma, digamma.
bool is_special_function(ExprOp op);
// True for the bit operations (and, or, xor, not, shl, ashr, lshr, popcount, clz): they
// are defined on integer values only (a float operand is truncated to an integer first).
bool is_bitwise(ExprOp op);

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
