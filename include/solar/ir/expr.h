// Combine expressions: the per-point computation of an extended einsum.
//
// An expression is a small tree over the op's operands ($0, $1, ...), constants, unary
// functions and binary/ternary operators. The cost model counts each node once per live
// iteration point (docs/cost.md has the per-function table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
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

// What the parser, the printer and the cost model know of a function: one row per ExprOp.
// Adding a function is one row here and its evaluation in the executor (exec/loop_ops.inc).
struct ExprOpInfo {
  ExprOp op;
  std::string_view name;  // as written in the text form: add, mul, exp, select, ...
  int arity;              // children (0 for leaves)
  bool special;           // a special function (is_special_function)
  bool bitwise;           // an integer bit operation (is_bitwise)
  // Per-live-point cost of one node (docs/cost.md, the function table): vector FLOPs and
  // special-function ops.
  std::uint8_t vector_flops;
  std::uint8_t special_ops;
};

// Indexed by the enum (checked below).
inline constexpr ExprOpInfo kExprOps[] = {
    // leaves are free
    {ExprOp::Operand, "operand", 0, false, false, 0, 0},
    {ExprOp::Const, "const", 0, false, false, 0, 0},
    // arithmetic, comparisons and select: 1 vector FLOP
    {ExprOp::Add, "add", 2, false, false, 1, 0},
    {ExprOp::Sub, "sub", 2, false, false, 1, 0},
    {ExprOp::Mul, "mul", 2, false, false, 1, 0},
    {ExprOp::Div, "div", 2, false, false, 1, 0},
    {ExprOp::Max, "max", 2, false, false, 1, 0},
    {ExprOp::Min, "min", 2, false, false, 1, 0},
    // exp(y * log(x)): log, exp, mul
    {ExprOp::Pow, "pow", 2, false, false, 1, 2},
    {ExprOp::Lt, "lt", 2, false, false, 1, 0},
    {ExprOp::Le, "le", 2, false, false, 1, 0},
    {ExprOp::Gt, "gt", 2, false, false, 1, 0},
    {ExprOp::Ge, "ge", 2, false, false, 1, 0},
    {ExprOp::Eq, "eq", 2, false, false, 1, 0},
    {ExprOp::Ne, "ne", 2, false, false, 1, 0},
    {ExprOp::Select, "select", 3, false, false, 1, 0},
    {ExprOp::Neg, "neg", 1, false, false, 1, 0},
    {ExprOp::Abs, "abs", 1, false, false, 1, 0},
    {ExprOp::Square, "square", 1, false, false, 1, 0},
    {ExprOp::Relu, "relu", 1, false, false, 1, 0},
    // special functions: 1 special op
    {ExprOp::Exp, "exp", 1, true, false, 0, 1},
    {ExprOp::Log, "log", 1, true, false, 0, 1},
    {ExprOp::Tanh, "tanh", 1, true, false, 0, 1},
    {ExprOp::Erf, "erf", 1, true, false, 0, 1},
    {ExprOp::Rsqrt, "rsqrt", 1, true, false, 0, 1},
    {ExprOp::Sqrt, "sqrt", 1, true, false, 0, 1},
    {ExprOp::Recip, "recip", 1, true, false, 0, 1},
    // 1 / (1 + exp(-x)): exp, recip, add
    {ExprOp::Sigmoid, "sigmoid", 1, true, false, 1, 2},
    {ExprOp::Sin, "sin", 1, true, false, 0, 1},
    {ExprOp::Cos, "cos", 1, true, false, 0, 1},
    {ExprOp::Atan, "atan", 1, true, false, 0, 1},
    {ExprOp::Asin, "asin", 1, true, false, 0, 1},
    {ExprOp::Acos, "acos", 1, true, false, 0, 1},
    // atan(y / x) and a quadrant fix-up: div, atan, select
    {ExprOp::Atan2, "atan2", 2, true, false, 2, 1},
    // one instruction each on GPUs and CPUs (frint/cvt rounding modes, sign
    // as two compares folded into one select, integer logic and shifts, popc, clz/lzcnt)
    {ExprOp::Floor, "floor", 1, false, false, 1, 0},
    {ExprOp::Ceil, "ceil", 1, false, false, 1, 0},
    {ExprOp::Trunc, "trunc", 1, false, false, 1, 0},
    {ExprOp::RoundEven, "round_even", 1, false, false, 1, 0},
    {ExprOp::RoundAway, "round_away", 1, false, false, 1, 0},
    {ExprOp::Sign, "sign", 1, false, false, 1, 0},
    // a - trunc(a / b) * b: div, trunc, mul, sub
    {ExprOp::Rem, "rem", 2, false, false, 4, 0},
    // rem, then + b where the signs differ: rem (4), compare, select-add
    {ExprOp::Mod, "mod", 2, false, false, 6, 0},
    {ExprOp::And, "and", 2, false, true, 1, 0},
    {ExprOp::Or, "or", 2, false, true, 1, 0},
    {ExprOp::Xor, "xor", 2, false, true, 1, 0},
    {ExprOp::Not, "not", 1, false, true, 1, 0},
    {ExprOp::Shl, "shl", 2, false, true, 1, 0},
    {ExprOp::Ashr, "ashr", 2, false, true, 1, 0},
    {ExprOp::Lshr, "lshr", 2, false, true, 1, 0},
    {ExprOp::Popcount, "popcount", 1, false, true, 1, 0},
    {ExprOp::Clz, "clz", 1, false, true, 1, 0},
    // reinterprets a register: no instruction
    {ExprOp::F32Bits, "f32_bits", 1, false, false, 0, 0},
    {ExprOp::BitsF32, "bits_f32", 1, false, false, 0, 0},
    {ExprOp::ErfInv, "erfinv", 1, true, false, 0, 1},
    {ExprOp::Lgamma, "lgamma", 1, true, false, 0, 1},
    {ExprOp::Digamma, "digamma", 1, true, false, 0, 1},
    // trunc(a / b): div, trunc
    {ExprOp::IDiv, "idiv", 2, false, false, 2, 0},
};

constexpr const ExprOpInfo& expr_op_info(ExprOp op) {
  return kExprOps[static_cast<std::size_t>(op)];
}

namespace detail {
constexpr bool expr_table_in_enum_order() {
  for (std::size_t i = 0; i < std::size(kExprOps); ++i)
    if (kExprOps[i].op != static_cast<ExprOp>(i)) return false;
  return std::size(kExprOps) == static_cast<std::size_t>(kLastExprOp) + 1;
}
}  // namespace detail
static_assert(detail::expr_table_in_enum_order(), "kExprOps: one row per ExprOp, in enum order");

// Number of children the op takes (0 for leaves).
constexpr int expr_arity(ExprOp op) { return expr_op_info(op).arity; }
// Text name as written in the text form: add, mul, exp, select, ...
constexpr std::string_view expr_op_name(ExprOp op) { return expr_op_info(op).name; }
// The function named `name` (not a leaf), or nullopt.
std::optional<ExprOp> parse_expr_op(std::string_view name);
// True for exp, log, tanh, erf, rsqrt, sqrt, recip, sigmoid, sin, cos, atan, asin, acos,
// atan2, erfinv, lgamma, digamma.
constexpr bool is_special_function(ExprOp op) { return expr_op_info(op).special; }
// True for the bit operations (and, or, xor, not, shl, ashr, lshr, popcount, clz): they
// are defined on integer values only (a float operand is truncated to an integer first).
constexpr bool is_bitwise(ExprOp op) { return expr_op_info(op).bitwise; }

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
