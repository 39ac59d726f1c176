#include "syntax.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace solar::ir::syntax {

namespace {

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Errors quote what they found; keep that short and printable.
std::string printable(std::string_view s) {
  constexpr std::size_t kMax = 40;
  std::string out;
  for (char c : s.substr(0, kMax)) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out.push_back(c);
    }
  }
  if (s.size() > kMax) out += "...";
  return out;
}

// Length of the valid UTF-8 sequence at s[i], or 0 (overlong forms, surrogates and code
// points past U+10FFFF are invalid, as in JSON: every name must survive graph_to_json).
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  std::uint32_t cp, min;
  if ((c & 0xE0) == 0xC0) {
    n = 2, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokKind::End: return "end of input";
    case TokKind::Newline: return "end of line";
    case TokKind::String: return printable(t.text);
    case TokKind::Ident: case TokKind::Int: case TokKind::Float: case TokKind::Dollar:
    case TokKind::Punct:
      return "'" + printable(t.text) + "'";
  }
  return "?";
}

Lexer::Lexer(std::string_view src, std::string file, int first_line)
    : src_(src), line_(first_line), file_(std::move(file)) {}

void Lexer::expect(std::string_view p, const Ctx& context) {
  if (accept(p)) return;
  fail_expected("'" + std::string(p) + "'", context, peek());
}

void Lexer::fail(const std::string& message, int line) const {
  throw UserError(UserError::Kind::Parse, message, Origin{file_, line, {}});
}

void Lexer::fail_expected(std::string_view what, const Ctx& context,
                          const Token& found) const {
  std::string msg = "expected " + std::string(what);
  std::string c = context.str();
  if (!c.empty()) msg += " " + c;
  fail(msg + ", found " + describe(found), found.line);
}

Token Lexer::scan() {
  // Skip blanks and comments (not newlines: they end statements).
  while (pos_ < src_.size()) {
    char c = src_[pos_];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '#') {
      while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
  Token t;
  t.line = line_;
  if (pos_ >= src_.size()) return t;
  std::size_t start = pos_;
  char c = src_[pos_];
  auto text = [&] { return src_.substr(start, pos_ - start); };
  if (c == '\n') {
    ++pos_;
    ++line_;
    t.kind = TokKind::Newline;
    t.text = text();
    return t;
  }
  if (is_ident_start(c)) {
    while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
    t.kind = TokKind::Ident;
    t.text = text();
    return t;
  }
  if (is_digit(c)) {
    t.kind = TokKind::Int;
    while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
      t.kind = TokKind::Float;
      ++pos_;
      while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      std::size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && is_digit(src_[p])) {
        t.kind = TokKind::Float;
        pos_ = p;
        while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
      }
    }
    t.text = text();
    return t;
  }
  if (c == '"') {
    ++pos_;
    while (true) {
      if (pos_ >= src_.size() || src_[pos_] == '\n')
        fail("unterminated string (a string ends with '\"' on the same line)", line_);
      char d = src_[pos_];
      if (static_cast<unsigned char>(d) >= 0x80) {
        std::size_t n = utf8_length(src_, pos_);
        if (n == 0) fail("invalid UTF-8 in string (strings are UTF-8 text)", line_);
        pos_ += n;
        continue;
      }
      ++pos_;
      if (d == '"') break;
      if (d == '\\') {
        if (pos_ >= src_.size()) continue;  // reported as unterminated above
        char e = src_[pos_++];
        if (e == 'x') {
          auto hex = [](char h) {
            return is_digit(h) || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F');
          };
          if (pos_ + 2 > src_.size() || !hex(src_[pos_]) || !hex(src_[pos_ + 1]) ||
              src_[pos_] > '7')
            fail("bad escape in string: \\x takes two hex digits, 00 to 7f (write other "
                 "characters as UTF-8)",
                 line_);
          pos_ += 2;
        } else if (e != '"' && e != '\\' && e != 'n' && e != 't' && e != 'r') {
          fail(fmt::format("bad escape '\\{}' in string (use \\\" \\\\ \\n \\t \\r \\xHH)",
                           printable(std::string_view(&e, 1))),
               line_);
        }
      }
    }
    t.kind = TokKind::String;
    t.text = text();
    return t;
  }
  if (c == '$') {
    ++pos_;
    if (pos_ >= src_.size() || !is_digit(src_[pos_]))
      fail("expected an operand number after '$' (e.g. $0)", line_);
    while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
    t.kind = TokKind::Dollar;
    t.text = text();
    return t;
  }
  t.kind = TokKind::Punct;
  if (pos_ + 1 < src_.size()) {
    std::string_view two = src_.substr(pos_, 2);
    if (two == "->" || two == ">=" || two == "<=") {
      pos_ += 2;
      t.text = text();
      return t;
    }
  }
  switch (c) {
    case '=': case ',': case '[': case ']': case '{': case '}': case '(': case ')': case '+':
    case '-': case '*': case ':':
      ++pos_;
      t.text = text();
      return t;
    default:
      break;
  }
  fail(fmt::format("unexpected character '{}'", printable(src_.substr(pos_, 1))), line_);
}

std::string decode_string(const Token& t) {
  std::string_view s = t.text.substr(1, t.text.size() - 2);
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out.push_back(s[i]);
      continue;
    }
    char e = s[++i];  // the lexer validated every escape
    switch (e) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case 'x': {
        int v = 0;
        std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
        out.push_back(static_cast<char>(v));
        i += 2;
        break;
      }
      default: out.push_back(e); break;
    }
  }
  return out;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out += fmt::format("\\x{:02x}", u);
        } else {
          out.push_back(c);
        }
    }
  }
  return out + "\"";
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  return std::all_of(s.begin(), s.end(), is_ident_char);
}

std::string name_token(std::string_view s) {
  return is_identifier(s) ? std::string(s) : quote(s);
}

IndexLookup::IndexLookup(const std::vector<IndexDim>& dims) : dims_(dims) {
  constexpr std::size_t kLinearLimit = 16;
  if (dims.size() > kLinearLimit)
    for (std::size_t i = 0; i < dims.size(); ++i)
      map_.try_emplace(dims[i].name, static_cast<IndexPos>(i));
}

std::optional<IndexPos> IndexLookup::find(std::string_view name) const {
  if (!map_.empty()) {
    auto it = map_.find(name);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  for (std::size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i].name == name) return static_cast<IndexPos>(i);
  return std::nullopt;
}

namespace {

// An unsigned integer literal's magnitude.
std::uint64_t int_magnitude(Lexer& lex, const Token& t, const Ctx& context) {
  std::uint64_t v = 0;
  auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size())
    lex.fail(fmt::format("integer {} {} does not fit in 64 bits", t.text, context), t.line);
  return v;
}

std::int64_t signed_value(Lexer& lex, const Token& t, bool negative, const Ctx& context) {
  std::uint64_t m = int_magnitude(lex, t, context);
  constexpr std::uint64_t kMaxPos = static_cast<std::uint64_t>(INT64_MAX);
  if (negative) {
    if (m > kMaxPos + 1)
      lex.fail(fmt::format("integer -{} {} is out of range", t.text, context), t.line);
    return m == kMaxPos + 1 ? INT64_MIN : -static_cast<std::int64_t>(m);
  }
  if (m > kMaxPos) lex.fail(fmt::format("integer {} {} is out of range", t.text, context), t.line);
  return static_cast<std::int64_t>(m);
}

struct AffineBuilder {
  std::vector<AffineTerm> terms;
  std::int64_t constant = 0;
  bool overflow = false;

  void add_const(std::int64_t v) { overflow |= __builtin_add_overflow(constant, v, &constant); }
  void add_term(IndexPos i, std::int64_t coef) { terms.push_back({i, coef}); }
  // Merges like terms with overflow checks (AffineExpr::make would treat an overflow as a
  // bug; here it is bad input).
  std::optional<AffineExpr> build() {
    auto by_index = [](const AffineTerm& a, const AffineTerm& b) { return a.index < b.index; };
    if (!std::is_sorted(terms.begin(), terms.end(), by_index))
      std::sort(terms.begin(), terms.end(), by_index);
    std::size_t n = 0;
    for (std::size_t i = 0; i < terms.size(); ++i) {
      if (n > 0 && terms[n - 1].index == terms[i].index) {
        overflow |= __builtin_add_overflow(terms[n - 1].coef, terms[i].coef, &terms[n - 1].coef);
      } else {
        terms[n++] = terms[i];
      }
    }
    terms.resize(n);
    if (overflow) return std::nullopt;
    return AffineExpr::make(std::move(terms), constant);
  }
};

// Parses `a - b` into the builder with the given overall sign (+1 or -1).
void parse_affine_into(Lexer& lex, const IndexLookup& indices, const Ctx& context,
                       int sign, AffineBuilder& b) {
  bool first = true;
  while (true) {
    bool negative = sign < 0;
    if (lex.peek().is("-")) {
      lex.next();
      negative = !negative;
    } else if (lex.peek().is("+")) {
      lex.next();
    } else if (!first) {
      return;
    }
    first = false;
    Token t = lex.next();
    auto index_of = [&](const Token& id) {
      std::optional<IndexPos> p = indices.find(id.text);
      if (!p)
        lex.fail(fmt::format("unknown index '{}' {} (declare it in the op's [...] list)",
                             id.text, context),
                 id.line);
      return *p;
    };
    auto checked_neg = [&](std::int64_t v) {
      if (v == INT64_MIN) b.overflow = true;
      return v == INT64_MIN ? v : -v;
    };
    if (t.kind == TokKind::Int) {
      if (lex.accept("*")) {
        Token id = lex.next();
        if (id.kind != TokKind::Ident)
          lex.fail_expected("an index name after '*'", context, id);
        std::int64_t coef = signed_value(lex, t, false, context);
        b.add_term(index_of(id), negative ? checked_neg(coef) : coef);
      } else {
        b.add_const(signed_value(lex, t, negative, context));
      }
    } else if (t.kind == TokKind::Ident) {
      IndexPos p = index_of(t);
      std::int64_t coef = 1;
      if (lex.accept("*")) {
        Token n = lex.next();
        if (n.kind != TokKind::Int) lex.fail_expected("an integer after '*'", context, n);
        coef = signed_value(lex, n, false, context);
      }
      b.add_term(p, negative ? checked_neg(coef) : coef);
    } else {
      lex.fail_expected("an affine term (INT, INDEX, INT*INDEX or INDEX*INT)", context, t);
    }
  }
}

}  // namespace

AffineExpr parse_affine(Lexer& lex, const IndexLookup& indices, const Ctx& context) {
  int line = lex.peek().line;
  AffineBuilder b;
  parse_affine_into(lex, indices, context, 1, b);
  std::optional<AffineExpr> e = b.build();
  if (!e) lex.fail(fmt::format("affine expression {} overflows 64-bit integers", context), line);
  return *e;
}

AffineConstraint parse_constraint(Lexer& lex, const IndexLookup& indices,
                                  const Ctx& context) {
  int line = lex.peek().line;
  AffineBuilder b;
  parse_affine_into(lex, indices, context, 1, b);
  int sign;
  if (lex.accept(">=")) {
    sign = -1;  // lhs - rhs >= 0
  } else if (lex.accept("<=")) {
    sign = 1;  // rhs - lhs >= 0: negate what was parsed so far, then add the rhs
    for (AffineTerm& t : b.terms) {
      if (t.coef == INT64_MIN) b.overflow = true;
      t.coef = -t.coef;
    }
    if (b.constant == INT64_MIN) b.overflow = true;
    b.constant = -b.constant;
  } else {
    lex.fail_expected("'>=' or '<='", context, lex.peek());
  }
  parse_affine_into(lex, indices, context, sign, b);
  std::optional<AffineExpr> e = b.build();
  if (!e) lex.fail(fmt::format("mask constraint {} overflows 64-bit integers", context), line);
  return AffineConstraint{*e};
}

double parse_number(Lexer& lex, const Ctx& context) {
  bool negative = lex.accept("-");
  Token t = lex.next();
  double v = 0;
  if (t.kind == TokKind::Int || t.kind == TokKind::Float) {
    auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (r.ec == std::errc::result_out_of_range) {
      // Underflow to a subnormal or zero is a legitimate value; overflow is not.
      double approx = std::strtod(std::string(t.text).c_str(), nullptr);
      if (std::isinf(approx))
        lex.fail(fmt::format("number {} {} is out of range (write inf)", t.text, context),
                 t.line);
      v = approx;
    } else if (r.ec != std::errc()) {
      lex.fail_expected("a number", context, t);
    }
  } else if (t.is_ident("inf")) {
    v = INFINITY;
  } else if (t.is_ident("nan")) {
    v = NAN;
  } else {
    lex.fail_expected("a number", context, t);
  }
  return negative ? -v : v;
}

std::int64_t parse_int(Lexer& lex, const Ctx& context) {
  bool negative = lex.accept("-");
  Token t = lex.next();
  if (t.kind != TokKind::Int) lex.fail_expected("an integer", context, t);
  return signed_value(lex, t, negative, context);
}

std::optional<Count> count_from_decimal(std::string_view digits) {
  if (digits.empty() || digits.size() > 39) return std::nullopt;
  unsigned __int128 v = 0;
  for (char c : digits) {
    if (!is_digit(c)) return std::nullopt;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v))
      return std::nullopt;
  }
  auto hi = static_cast<std::uint64_t>(v >> 64);
  auto lo = static_cast<std::uint64_t>(v);
  return Count(hi) * Count(std::uint64_t{1} << 32) * Count(std::uint64_t{1} << 32) + Count(lo);
}

Count parse_count(Lexer& lex, const Ctx& context) {
  Token t = lex.next();
  std::string digits;
  if (t.kind == TokKind::Int) {
    digits = std::string(t.text);
  } else if (t.kind == TokKind::String) {
    digits = decode_string(t);
  } else {
    lex.fail_expected("a count (a non-negative integer, or a quoted decimal over 64 bits)",
                      context, t);
  }
  std::optional<Count> c = count_from_decimal(digits);
  if (!c)
    lex.fail(fmt::format("{} {} is not a non-negative decimal count below 2^128", describe(t),
                         context),
             t.line);
  return *c;
}

// The function names the parser knows, space-separated (for the unknown-function error).
static std::string known_functions() {
  std::string names;
  for (const ir::ExprOpInfo& info : ir::kExprOps) {
    if (info.arity == 0) continue;  // leaves are written $N and numbers
    if (!names.empty()) names += " ";
    names += info.name;
  }
  return names;
}

Expr parse_combine(Lexer& lex, const Ctx& context, int depth) {
  if (depth >= kMaxExprDepth)
    lex.fail(fmt::format("combine expression {} nests deeper than {} levels", context,
                         kMaxExprDepth),
             lex.peek().line);
  const Token& t = lex.peek();
  if (t.kind == TokKind::Dollar) {
    Token d = lex.next();
    int n = 0;
    auto r = std::from_chars(d.text.data() + 1, d.text.data() + d.text.size(), n);
    if (r.ec != std::errc() || r.ptr != d.text.data() + d.text.size())
      lex.fail(fmt::format("operand number {} {} is out of range", d.text, context), d.line);
    return Expr::operand(n);
  }
  if (t.kind == TokKind::Int || t.kind == TokKind::Float || t.is("-") || t.is_ident("inf") ||
      t.is_ident("nan"))
    return Expr::constant(parse_number(lex, context));
  if (t.kind != TokKind::Ident)
    lex.fail_expected("a combine expression ($N, a number or a call like mul($0,$1))", context,
                      t);
  Token name = lex.next();
  std::optional<ExprOp> op = parse_expr_op(name.text);
  if (!op)
    lex.fail(fmt::format("unknown combine function '{}' {} (known: {})", name.text, context,
                         known_functions()),
             name.line);
  lex.expect("(", [&] { return fmt::format("after '{}' {}", name.text, context); });
  std::vector<Expr> args;
  if (!lex.peek().is(")")) {
    while (true) {
      args.push_back(parse_combine(lex, context, depth + 1));
      if (!lex.accept(",")) break;
    }
  }
  lex.expect(")", [&] {
    return fmt::format("closing the arguments of '{}' {}", name.text, context);
  });
  if (static_cast<int>(args.size()) != expr_arity(*op))
    lex.fail(fmt::format("'{}' takes {} argument{}, got {} {}", name.text, expr_arity(*op),
                         expr_arity(*op) == 1 ? "" : "s", args.size(), context),
             name.line);
  return Expr::make(*op, std::move(args));
}

std::string format_number(double v) { return fmt::format("{}", v); }

std::string format_affine(const AffineExpr& e, const std::vector<IndexDim>& indices) {
  std::string out;
  for (const AffineTerm& t : e.terms()) {
    std::string name = t.index >= 0 && static_cast<std::size_t>(t.index) < indices.size()
                           ? indices[t.index].name
                           : fmt::format("#{}", t.index);
    // The magnitude as unsigned: -INT64_MIN does not fit in int64.
    std::uint64_t mag = t.coef < 0 ? 0 - static_cast<std::uint64_t>(t.coef)
                                   : static_cast<std::uint64_t>(t.coef);
    if (t.coef < 0) {
      out += "-";
    } else if (!out.empty()) {
      out += "+";
    }
    out += name;
    if (mag != 1) out += fmt::format("*{}", mag);
  }
  std::int64_t c = e.constant_term();
  if (c != 0 || out.empty()) {
    if (c >= 0 && !out.empty()) out += "+";
    out += fmt::format("{}", c);
  }
  return out;
}

std::string format_constraint(const AffineConstraint& c, const std::vector<IndexDim>& indices) {
  return format_affine(c.expr, indices) + " >= 0";
}

std::string format_combine(const Expr& e) {
  if (!e.defined()) return "<undefined>";
  if (e.op() == ExprOp::Operand) return fmt::format("${}", e.operand_index());
  if (e.op() == ExprOp::Const) return format_number(e.value());
  std::string out(expr_op_name(e.op()));
  out += "(";
  for (std::size_t i = 0; i < e.children().size(); ++i) {
    if (i) out += ",";
    out += format_combine(e.children()[i]);
  }
  return out + ")";
}

}  // namespace solar::ir::syntax
