// Private to src/ir: the tokenizer and the affine/combine/number grammar shared by the text
// form (text_parse.cc, text_print.cc) and the JSON form (json.cc), and their canonical
// printers.
//
// Both forms write affine subscripts, masks and combine expressions in the same syntax
// (docs/ir-text.md), so both go through these functions: one grammar, one set of errors.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "solar/ir/graph.h"

namespace solar::ir::syntax {

// Combine expressions nest at most this deep; deeper input is a parse error (a clear error,
// not a stack overflow on adversarial input).
inline constexpr int kMaxExprDepth = 256;

// An error-message fragment ("in subscript 2 of operand 'x'") computed only when an error
// is reported: a 10 MB graph has millions of subscripts and formats none of them.
// A Ctx refers to its source (a string or a callable); it lives for one call only.
class Ctx {
 public:
  Ctx(const char* s) : text_(s) {}         // NOLINT: implicit by design
  Ctx(const std::string& s) : text_(s) {}  // NOLINT
  template <class F, class = std::enable_if_t<std::is_invocable_r_v<std::string, const F&>>>
  Ctx(const F& f) : obj_(&f), call_(&invoke<F>) {}  // NOLINT
  std::string str() const { return call_ ? call_(obj_) : std::string(text_); }

 private:
  template <class F>
  static std::string invoke(const void* f) {
    return (*static_cast<const F*>(f))();
  }
  std::string_view text_;
  const void* obj_ = nullptr;
  std::string (*call_)(const void*) = nullptr;
};

template <class T>
using ViewOf = std::conditional_t<std::is_same_v<T, std::string>, std::string_view, T>;

// A deferred fmt::format: the arguments are captured by value (strings as views, so the
// strings must outlive the result), the formatting happens only if an error needs it.
template <class... A>
auto lazy(fmt::format_string<ViewOf<A>...> f, const A&... a) {
  return [f, ... v = ViewOf<A>(a)]() -> std::string {
    return fmt::vformat(fmt::string_view(f), fmt::make_format_args(v...));
  };
}

enum class TokKind { End, Newline, Ident, Int, Float, String, Dollar, Punct };

struct Token {
  TokKind kind = TokKind::End;
  std::string_view text;  // the source text (strings include their quotes; $N includes '$')
  int line = 1;
  bool is(std::string_view punct) const { return kind == TokKind::Punct && text == punct; }
  bool is_ident(std::string_view word) const { return kind == TokKind::Ident && text == word; }
};

// "end of line", "'x'", "\"str\"": how an error message names what it found.
std::string describe(const Token& t);

// A tokenizer with two tokens of look-ahead. Newlines are tokens (they end statements);
// '#' starts a comment that runs to the end of the line. Errors are UserError(Parse) with
// the file and the line.
class Lexer {
 public:
  Lexer(std::string_view src, std::string file, int first_line = 1);

  const Token& peek(int ahead = 0) {
    while (buffered_ <= ahead) buf_[buffered_++] = scan();
    return buf_[ahead];
  }
  Token next() {
    Token t = peek();
    buf_[0] = buf_[1];
    --buffered_;
    return t;
  }
  // Consumes the token when it is the punctuation `p`.
  bool accept(std::string_view p) {
    if (!peek().is(p)) return false;
    next();
    return true;
  }
  bool accept_ident(std::string_view word) {
    if (!peek().is_ident(word)) return false;
    next();
    return true;
  }
  // Consumes punctuation `p` or fails with "expected 'p' CONTEXT, found ...".
  void expect(std::string_view p, const Ctx& context);

  [[noreturn]] void fail(const std::string& message, int line) const;
  [[noreturn]] void fail_expected(std::string_view what, const Ctx& context,
                                  const Token& found) const;
  const std::string& file() const { return file_; }

 private:
  Token scan();

  std::string_view src_;
  std::size_t pos_ = 0;
  int line_;
  std::string file_;
  std::array<Token, 2> buf_;
  int buffered_ = 0;
};

// The text of a string token without quotes, escapes (\" \\ \n \t \r \xHH) decoded.
std::string decode_string(const Token& t);
// A quoted string literal for `s` (the inverse of decode_string).
std::string quote(std::string_view s);
// True when `s` can be written without quotes as a name: [A-Za-z_][A-Za-z0-9_.]*.
bool is_identifier(std::string_view s);
// `s` as an identifier when it is one, quoted otherwise.
std::string name_token(std::string_view s);

// Name lookup for an op's indices (hashing only when there are many, so small ops stay
// cheap and a pathological one stays linear).
class IndexLookup {
 public:
  explicit IndexLookup(const std::vector<IndexDim>& dims);
  std::optional<IndexPos> find(std::string_view name) const;

 private:
  const std::vector<IndexDim>& dims_;
  std::unordered_map<std::string_view, IndexPos> map_;
};

// AFFINE: sums of INT, IDX, INT*IDX, IDX*INT with + and - (a leading sign allowed).
// `context` completes error messages ("in subscript 2 of operand 'x'").
AffineExpr parse_affine(Lexer& lex, const IndexLookup& indices, const Ctx& context);
// A mask constraint `AFFINE >= AFFINE` or `AFFINE <= AFFINE`, as `expr >= 0`.
AffineConstraint parse_constraint(Lexer& lex, const IndexLookup& indices,
                                  const Ctx& context);
// COMBINE: $N, numbers (inf, -inf, nan included) and calls name(args...).
Expr parse_combine(Lexer& lex, const Ctx& context, int depth = 0);
// A floating-point literal with an optional leading '-' (inf and nan included).
double parse_number(Lexer& lex, const Ctx& context);
// An integer literal with an optional leading '-'.
std::int64_t parse_int(Lexer& lex, const Ctx& context);
// A non-negative count: an integer literal or a quoted decimal string (over 64 bits).
Count parse_count(Lexer& lex, const Ctx& context);
// Count from decimal digits; nullopt when it is not a decimal or does not fit in 128 bits.
std::optional<Count> count_from_decimal(std::string_view digits);

// Canonical printers. Index names come from `indices` (a position out of range prints as
// `#N`, which does not parse: only invalid graphs have one).
std::string format_affine(const AffineExpr& e, const std::vector<IndexDim>& indices);
std::string format_constraint(const AffineConstraint& c, const std::vector<IndexDim>& indices);
std::string format_combine(const Expr& e);
// Shortest round-trip form (fmt "{}"): 0.125, 1e-05, inf, -inf, nan.
std::string format_number(double v);

}  // namespace solar::ir::syntax

template <>
struct fmt::formatter<solar::ir::syntax::Ctx> : fmt::formatter<std::string> {
  template <class FormatContext>
  auto format(const solar::ir::syntax::Ctx& c, FormatContext& ctx) const {
    return fmt::formatter<std::string>::format(c.str(), ctx);
  }
};
