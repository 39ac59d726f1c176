// The text form's parser: a verified graph from its text (docs/ir-text.md); every error
// names the file and line it was found at.
#include "solar/ir/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <unordered_set>

#include "solar/ir/collective.h"
#include "solar/ir/verify.h"
#include "syntax.h"

namespace solar::ir {

namespace {

using syntax::Lexer;
using syntax::Token;
using syntax::TokKind;

// A tensor type as written before the op: DTYPE[DIMS]{ANNOTATIONS}.
struct TypeSpec {
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::optional<Sparsity> sparsity;
  std::vector<std::string> dim_names;
  bool output = false;
  int line = 0;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view file)
      : own_(std::in_place, text, std::string(file)), lex_(*own_) {
    g_.source = std::string(file);
  }
  // The body of a repeat op: statements up to a `}` alone on its line, read from the
  // enclosing graph's lexer so that error lines stay those of the file.
  Parser(syntax::Lexer& lex, std::string source, int depth) : lex_(lex), depth_(depth) {
    g_.source = std::move(source);
    g_.name = "body";
  }

  Graph run() {
    bool first = true;
    while (true) {
      while (lex_.peek().kind == TokKind::Newline) lex_.next();
      if (lex_.peek().kind == TokKind::End) {
        if (depth_ > 0) lex_.fail("a repeat body is not closed by '}'", lex_.peek().line);
        break;
      }
      const Token& t = lex_.peek();
      if (depth_ > 0 && t.is("}")) {
        lex_.next();
        break;
      }
      if (t.is_ident("graph") && !lex_.peek(1).is("=") && !lex_.peek(1).is(",")) {
        if (!first) lex_.fail("'graph NAME' must be the first statement", t.line);
        parse_graph_header();
      } else if (t.is_ident("module") && lex_.peek(1).kind == TokKind::String) {
        parse_module_type();
      } else {
        parse_statement();
      }
      first = false;
    }
    return std::move(g_);
  }

 private:
  // ---- small helpers ----

  void end_of_statement(const syntax::Ctx& context) {
    const Token& t = lex_.peek();
    if (t.kind == TokKind::Newline || t.kind == TokKind::End) return;
    lex_.fail_expected("end of line", context, t);
  }

  // A comma-separated list: item() once per element, none when `close` comes first (which the
  // caller then expects). No trailing comma: an element follows every comma.
  template <class F>
  void comma_list(std::string_view close, F&& item) {
    if (lex_.peek().is(close)) return;
    do {
      item();
    } while (lex_.accept(","));
  }

  // A name: an identifier or a quoted string.
  std::string parse_name(std::string_view what, const syntax::Ctx& context) {
    Token t = lex_.next();
    if (t.kind == TokKind::Ident) return std::string(t.text);
    if (t.kind == TokKind::String) {
      std::string s = syntax::decode_string(t);
      if (s.empty()) lex_.fail(fmt::format("empty {} {}", what, context), t.line);
      return s;
    }
    lex_.fail_expected(std::string(what), context, t);
  }

  std::string parse_string(std::string_view what, const syntax::Ctx& context) {
    Token t = lex_.next();
    if (t.kind != TokKind::String) lex_.fail_expected(what, context, t);
    return syntax::decode_string(t);
  }

  TensorId lookup(const std::string& name, int line, const syntax::Ctx& context) {
    std::optional<TensorId> id = g_.find_tensor(name);
    if (!id)
      lex_.fail(fmt::format("unknown tensor '{}' {} (tensors must be defined before use)", name,
                            context),
                line);
    return *id;
  }

  // ---- statements ----

  void parse_graph_header() {
    lex_.next();  // graph
    g_.name = parse_name("a graph name", "after 'graph'");
    if (lex_.accept("{")) {
      while (!lex_.peek().is("}")) {
        Token key = lex_.next();
        if (!key.is_ident("frontend"))
          lex_.fail_expected("'frontend'", "in the graph's {...}", key);
        lex_.expect("=", "after 'frontend'");
        g_.frontend = parse_string("a quoted frontend name", "after 'frontend='");
        if (!lex_.accept(",")) break;
      }
      lex_.expect("}", "closing the graph's {...}");
    }
    end_of_statement("after the graph name");
  }

  // module "PATH" "CLASS": the class of a module path that ops name (`module "PATH"`).
  void parse_module_type() {
    lex_.next();  // module
    std::string path = parse_string("a quoted module path", "after 'module'");
    std::string type = parse_string("a quoted class name", syntax::lazy("after module \"{}\"", path));
    g_.module_types[path] = type;
    end_of_statement("after a module's class");
  }

  TypeSpec parse_type(bool op_output, std::string_view name) {
    auto ctx_text = syntax::lazy("in the type of '{}'", name);
    const syntax::Ctx ctx(ctx_text);
    TypeSpec ts;
    Token d = lex_.next();
    ts.line = d.line;
    if (d.kind != TokKind::Ident) lex_.fail_expected("a dtype (f32, bf16, i8, ...)", ctx, d);
    std::optional<DType> dt = parse_dtype(d.text);
    if (!dt) lex_.fail(fmt::format("unknown dtype '{}' {}", d.text, ctx), d.line);
    ts.dtype = *dt;
    lex_.expect("[", syntax::lazy("after the dtype of '{}'", name));
    comma_list("]", [&] {
      Token n = lex_.next();
      if (n.kind != TokKind::Int)
        lex_.fail_expected("a dimension size (a non-negative integer)", ctx, n);
      std::int64_t v = 0;
      auto r = std::from_chars(n.text.data(), n.text.data() + n.text.size(), v);
      if (r.ec != std::errc())
        lex_.fail(fmt::format("dimension size {} {} is out of range", n.text, ctx), n.line);
      ts.shape.push_back(v);
    });
    lex_.expect("]", syntax::lazy("after the shape of '{}'", name));
    if (lex_.accept("{")) {
      bool have_zeros = false, have_24 = false, have_dims = false;
      double zeros = 0;
      while (!lex_.peek().is("}")) {
        Token key = lex_.next();
        if (key.is_ident("output")) {
          if (!op_output)
            lex_.fail(fmt::format("{{output}} marks an op's result; '{}' is a source tensor "
                                  "(input, weight or constant)",
                                  name),
                      key.line);
          ts.output = true;
        } else if (key.is_ident("dims")) {
          lex_.expect("=", "after 'dims'");
          std::string s = parse_string("a quoted list of dimension names", "after 'dims='");
          if (have_dims) lex_.fail("'dims' is given twice", key.line);
          have_dims = true;
          std::size_t start = 0;
          while (!s.empty()) {
            std::size_t comma = s.find(',', start);
            ts.dim_names.push_back(s.substr(start, comma - start));
            if (comma == std::string::npos) break;
            start = comma + 1;
          }
        } else if (key.is_ident("sparsity")) {
          lex_.expect("=", "after 'sparsity'");
          Token v = lex_.next();
          if (v.kind != TokKind::String || syntax::decode_string(v) != "2:4")
            lex_.fail_expected("\"2:4\"", "after 'sparsity=' (for a zero fraction write zeros=F)",
                               v);
          have_24 = true;
        } else if (key.is_ident("zeros")) {
          lex_.expect("=", "after 'zeros'");
          zeros = syntax::parse_number(lex_, "after 'zeros='");
          have_zeros = true;
        } else {
          lex_.fail_expected("'dims', 'sparsity', 'zeros' or 'output'", ctx, key);
        }
        if (!lex_.accept(",")) break;
      }
      lex_.expect("}", syntax::lazy("closing the annotations of '{}'", name));
      if (have_24 || have_zeros) {
        // 2:4 alone means exactly half the elements are zero.
        ts.sparsity = Sparsity{have_zeros ? zeros : 0.5, have_24};
      }
    }
    return ts;
  }

  Tensor make_tensor(const std::string& name, TypeSpec&& ts, Role role) {
    Tensor t;
    t.name = name;
    t.shape = std::move(ts.shape);
    t.dtype = ts.dtype;
    t.role = role;
    t.sparsity = ts.sparsity;
    t.dim_names = std::move(ts.dim_names);
    return t;
  }

  // One hash lookup per new tensor: the graph rejects a duplicate name; say where.
  TensorId add_tensor(Tensor t, int line) {
    std::string name = t.name;
    try {
      return g_.add_tensor(std::move(t));
    } catch (const UserError&) {
      lex_.fail(fmt::format("tensor '{}' is already defined", name), line);
    }
  }

  void parse_statement() {
    int line = lex_.peek().line;
    std::vector<std::string> names;
    std::vector<int> name_lines;
    while (true) {
      name_lines.push_back(lex_.peek().line);
      names.push_back(parse_name("a tensor name", "at the start of a statement"));
      if (!lex_.accept(",")) break;
    }
    lex_.expect("=", syntax::lazy("after the name '{}'", names.back()));
    if (names.size() > 1) {
      std::unordered_set<std::string_view> seen;
      for (const std::string& n : names)
        if (!seen.insert(n).second)
          lex_.fail(fmt::format("tensor '{}' is named twice in one statement", n), line);
    }
    std::vector<TypeSpec> types;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (i > 0)
        lex_.expect(",", syntax::lazy("before the type of '{}' ({} names need {} types)",
                                     names[i], names.size(), names.size()));
      types.push_back(parse_type(true, names[i]));
    }
    Token kw = lex_.next();
    if (kw.kind != TokKind::Ident)
      lex_.fail_expected("a role (input, weight, constant) or an op (einsum, move, opaque, "
                         "unanalyzed, repeat, collective)",
                         fmt::format("after the type of '{}'", names.back()), kw);
    std::optional<Role> role = parse_role(kw.text);
    if (role) {
      if (!is_graph_source(*role))
        lex_.fail(fmt::format("'{}' cannot be declared {}: only input, weight and constant "
                              "tensors stand alone; other tensors are op results",
                              names[0], kw.text),
                  kw.line);
      if (names.size() != 1)
        lex_.fail("a source statement declares one tensor", line);
      if (types[0].output)
        lex_.fail(fmt::format("{{output}} marks an op's result; '{}' is declared {}", names[0],
                              kw.text),
                  types[0].line);
      end_of_statement(syntax::lazy("after the role of '{}'", names[0]));
      add_tensor(make_tensor(names[0], std::move(types[0]), *role), name_lines[0]);
      return;
    }
    Op op;
    if (kw.is_ident("einsum")) {
      op.body = parse_einsum(names, types, op.inputs);
    } else if (kw.is_ident("move")) {
      op.body = parse_move(names[0], op.inputs);
    } else if (kw.is_ident("opaque")) {
      op.body = parse_opaque(names[0], op.inputs);
    } else if (kw.is_ident("unanalyzed")) {
      op.body = parse_unanalyzed(names[0], op.inputs);
    } else if (kw.is_ident("repeat")) {
      op.body = parse_repeat(names, op.inputs);
    } else if (kw.is_ident("collective")) {
      op.body = parse_collective(names[0], op.inputs);
    } else {
      lex_.fail_expected("a role (input, weight, constant) or an op (einsum, move, opaque, "
                         "unanalyzed, repeat, collective)",
                         fmt::format("after the type of '{}'", names.back()), kw);
    }
    // Trailing clauses, in any order, each at most once.
    std::optional<std::string> from, at, opname, module, hint;
    while (true) {
      const Token& t = lex_.peek();
      std::optional<std::string>* slot = nullptr;
      if (t.is_ident("module")) slot = &module;
      if (t.is_ident("hint")) slot = &hint;
      if (t.is_ident("from")) slot = &from;
      if (t.is_ident("at")) slot = &at;
      if (t.is_ident("name")) slot = &opname;
      if (!slot) break;
      Token key = lex_.next();
      if (*slot) lex_.fail(fmt::format("'{}' is given twice", key.text), key.line);
      *slot = parse_string("a quoted string", syntax::lazy("after '{}'", key.text));
      if (slot == &opname && opname->empty()) lex_.fail("empty op name", key.line);
      if (slot == &hint) {
        std::optional<ContractionHint> h = parse_contraction_hint(*hint);
        if (!h) lex_.fail(fmt::format("unknown hint \"{}\" (none attention)", *hint), key.line);
        if (op.kind() != OpKind::Einsum) lex_.fail("only an einsum takes a hint", key.line);
        std::get<EinsumOp>(op.body).hint = *h;
      }
    }
    if (op.kind() == OpKind::Repeat) parse_repeat_body(std::get<RepeatOp>(op.body), names[0]);
    end_of_statement(syntax::lazy("after the op producing '{}'", names[0]));
    for (std::size_t i = 0; i < names.size(); ++i) {
      Role r = types[i].output ? Role::Output : Role::Intermediate;
      op.outputs.push_back(
          add_tensor(make_tensor(names[i], std::move(types[i]), r), name_lines[i]));
    }
    op.name = opname ? *opname : names[0];
    op.origin = Origin{g_.source, line, from ? *from : op.name};
    if (module) op.origin.module = *module;
    if (at) {
      // FILE:LINE, or a bare FILE.
      std::size_t colon = at->rfind(':');
      int n = 0;
      std::string_view tail = colon == std::string::npos
                                  ? std::string_view()
                                  : std::string_view(*at).substr(colon + 1);
      auto r = std::from_chars(tail.data(), tail.data() + tail.size(), n);
      if (!tail.empty() && r.ec == std::errc() && r.ptr == tail.data() + tail.size() && n > 0) {
        op.origin.file = at->substr(0, colon);
        op.origin.line = n;
      } else {
        op.origin.file = *at;
        op.origin.line = 0;
      }
    }
    g_.add_op(std::move(op));
  }

  // (NAME, NAME, ...) of an op.
  void parse_input_list(std::string_view owner, std::vector<TensorId>& inputs) {
    auto ctx_text = syntax::lazy("in the inputs of '{}'", owner);
    const syntax::Ctx ctx(ctx_text);
    lex_.expect("(", syntax::lazy("before the inputs of '{}'", owner));
    comma_list(")", [&] {
      int line = lex_.peek().line;
      std::string n = parse_name("a tensor name", ctx);
      inputs.push_back(lookup(n, line, ctx));
    });
    lex_.expect(")", syntax::lazy("after the inputs of '{}'", owner));
  }

  // ---- einsum ----

  EinsumOp parse_einsum(const std::vector<std::string>& names, const std::vector<TypeSpec>& types,
                        std::vector<TensorId>& inputs) {
    if (lex_.peek().kind == TokKind::String) return parse_shorthand(names, inputs);
    const std::string& out_name = names[0];
    EinsumOp e;
    lex_.expect("[", syntax::lazy("after 'einsum' for '{}' (the index list [i=N,...] or a "
                                 "quoted numpy spec)",
                                 out_name));
    std::vector<bool> has_extent;
    std::vector<int> index_lines;
    comma_list("]", [&] {
      Token id = lex_.next();
      if (id.kind != TokKind::Ident)
        lex_.fail_expected("an index name", fmt::format("in the index list of '{}'", out_name),
                           id);
      IndexDim d{std::string(id.text), 0};
      bool explicit_extent = false;
      if (lex_.accept("=")) {
        d.extent = syntax::parse_int(lex_, syntax::lazy("as the extent of index '{}'", d.name));
        explicit_extent = true;
      }
      e.indices.push_back(std::move(d));
      has_extent.push_back(explicit_extent);
      index_lines.push_back(id.line);
    });
    lex_.expect("]", syntax::lazy("after the index list of '{}'", out_name));
    syntax::IndexLookup lookup_idx(e.indices);
    // Duplicates would make name lookup ambiguous: report them here, with the line.
    for (std::size_t i = 0; i < e.indices.size(); ++i)
      if (lookup_idx.find(e.indices[i].name) != static_cast<IndexPos>(i))
        lex_.fail(fmt::format("index '{}' is declared twice in the index list of '{}'",
                              e.indices[i].name, out_name),
                  index_lines[i]);
    Token r = lex_.next();
    std::optional<Reduce> red = r.kind == TokKind::Ident ? parse_reduce(r.text) : std::nullopt;
    if (!red)
      lex_.fail_expected("a reduction (none sum max min prod any all)",
                         fmt::format("after the index list of '{}'", out_name), r);
    e.reduce = *red;
    e.combine = syntax::parse_combine(lex_, syntax::lazy("in the combine of '{}'", out_name));
    lex_.expect("(", syntax::lazy("before the operands of '{}'", out_name));
    comma_list(")", [&] {
      int line = lex_.peek().line;
      std::string tname = parse_name("an operand tensor name",
                                     syntax::lazy("in the operands of '{}'", out_name));
      inputs.push_back(lookup(tname, line, syntax::lazy("in the operands of '{}'", out_name)));
      Operand opnd;
      lex_.expect("[", syntax::lazy("after operand '{}' (its subscript)", tname));
      comma_list("]", [&] {
        opnd.subscript.push_back(syntax::parse_affine(
            lex_, lookup_idx,
            syntax::lazy("in subscript {} of operand '{}'", opnd.subscript.size(), tname)));
      });
      lex_.expect("]", syntax::lazy("after subscript of operand '{}'", tname));
      if (lex_.accept_ident("pad"))
        opnd.pad = syntax::parse_number(lex_, syntax::lazy("as the pad value of '{}'", tname));
      e.operands.push_back(std::move(opnd));
    });
    lex_.expect(")", syntax::lazy("after the operands of '{}'", out_name));
    lex_.expect("->", syntax::lazy("after the operands of '{}' (then the output subscript)",
                                  out_name));
    lex_.expect("[", syntax::lazy("before the output subscript of '{}'", out_name));
    comma_list("]", [&] {
      e.output.push_back(syntax::parse_affine(
          lex_, lookup_idx,
          syntax::lazy("in subscript {} of output '{}'", e.output.size(), out_name)));
    });
    lex_.expect("]", syntax::lazy("after the output subscript of '{}'", out_name));
    if (lex_.accept_ident("where")) {
      while (true) {
        e.mask.push_back(syntax::parse_constraint(
            lex_, lookup_idx, syntax::lazy("in the mask of '{}'", out_name)));
        if (!lex_.accept(",")) break;
      }
    }
    // Extents left out come from a plain use: an operand or output dimension indexed by
    // exactly that index (the first such use; the verifier checks the others agree).
    std::vector<std::int64_t> plain_extent(e.indices.size(), -1);
    for (std::size_t k = 0; k < e.operands.size(); ++k) {
      const Tensor& t = g_.tensor(inputs[k]);
      const auto& sub = e.operands[k].subscript;
      for (std::size_t d = 0; d < sub.size() && d < t.shape.size(); ++d)
        if (std::optional<IndexPos> p = sub[d].as_plain_index(); p && plain_extent[*p] < 0)
          plain_extent[*p] = t.shape[d];
    }
    if (types.size() == 1)
      for (std::size_t d = 0; d < e.output.size() && d < types[0].shape.size(); ++d)
        if (std::optional<IndexPos> p = e.output[d].as_plain_index(); p && plain_extent[*p] < 0)
          plain_extent[*p] = types[0].shape[d];
    for (std::size_t i = 0; i < e.indices.size(); ++i) {
      if (has_extent[i]) continue;
      if (plain_extent[i] < 0)
        lex_.fail(fmt::format("index '{}' of '{}' has no extent: write {}=N, or use it as a "
                              "plain subscript of some dimension",
                              e.indices[i].name, out_name, e.indices[i].name),
                  index_lines[i]);
      e.indices[i].extent = plain_extent[i];
    }
    return e;
  }

  EinsumOp parse_shorthand(const std::vector<std::string>& names, std::vector<TensorId>& inputs) {
    const std::string& out_name = names[0];
    Token spec_tok = lex_.next();
    std::string spec = syntax::decode_string(spec_tok);
    parse_input_list(out_name, inputs);
    auto fail = [&](const std::string& msg) {
      lex_.fail(fmt::format("einsum \"{}\" of '{}': {}", spec, out_name, msg), spec_tok.line);
    };
    // Ranks and extents that disagree are a well-formed op on the wrong shapes: an invalid
    // graph (exit 5, as the verifier says of the full form), not a syntax error.
    auto invalid = [&](const std::string& msg) {
      Origin where;
      where.file = lex_.file();
      where.line = spec_tok.line;
      throw UserError(UserError::Kind::InvalidGraph,
                      fmt::format("einsum \"{}\" of '{}': {}", spec, out_name, msg), where);
    };
    std::string lhs = spec, rhs;
    bool explicit_output = false;
    if (std::size_t arrow = spec.find("->"); arrow != std::string::npos) {
      lhs = spec.substr(0, arrow);
      rhs = spec.substr(arrow + 2);
      explicit_output = true;
    }
    std::vector<std::string> terms;
    {
      std::size_t start = 0;
      while (true) {
        std::size_t comma = lhs.find(',', start);
        terms.push_back(lhs.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    auto valid_letters = [&](const std::string& s) {
      for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
          fail(fmt::format("{} is not an index letter (only a-z and A-Z; write the full form "
                           "for anything else)",
                           syntax::describe(Token{TokKind::Punct, std::string_view(&c, 1), 0})));
    };
    for (const std::string& t : terms) valid_letters(t);
    valid_letters(rhs);
    if (terms.size() != inputs.size())
      fail(fmt::format("the spec has {} operand{} but the op has {} input{}", terms.size(),
                       terms.size() == 1 ? "" : "s", inputs.size(),
                       inputs.size() == 1 ? "" : "s"));
    if (inputs.size() < 1 || inputs.size() > 2)
      fail("the shorthand takes 1 or 2 operands; write the full form for more");
    std::array<std::int64_t, 256> extent;
    std::array<int, 256> count{};
    std::array<int, 256> first_operand;
    extent.fill(-1);
    for (std::size_t k = 0; k < terms.size(); ++k) {
      const Tensor& t = g_.tensor(inputs[k]);
      if (terms[k].size() != t.shape.size())
        invalid(fmt::format("operand {} ('{}') has rank {} but its subscript \"{}\" has {} letters",
                            k, t.name, t.shape.size(), terms[k], terms[k].size()));
      for (std::size_t d = 0; d < terms[k].size(); ++d) {
        auto c = static_cast<unsigned char>(terms[k][d]);
        ++count[c];
        if (extent[c] < 0) {
          extent[c] = t.shape[d];
          first_operand[c] = static_cast<int>(k);
        } else if (extent[c] != t.shape[d]) {
          invalid(fmt::format("letter '{}' has extent {} in operand {} ('{}') but {} in operand {} "
                              "('{}'); size-1 broadcasting is not implied",
                              terms[k][d], extent[c], first_operand[c],
                              g_.tensor(inputs[first_operand[c]]).name, t.shape[d], k, t.name));
        }
      }
    }
    if (!explicit_output) {
      // numpy's implicit mode: the letters that appear once, in alphabetical order.
      for (int c = 0; c < 256; ++c)
        if (count[c] == 1) rhs.push_back(static_cast<char>(c));
      std::sort(rhs.begin(), rhs.end());
    }
    EinsumOp e;
    std::array<int, 256> pos;
    pos.fill(-1);
    auto add_index = [&](char ch) {
      auto c = static_cast<unsigned char>(ch);
      if (pos[c] >= 0) return;
      pos[c] = static_cast<int>(e.indices.size());
      e.indices.push_back(IndexDim{std::string(1, ch), extent[c]});
    };
    for (char c : rhs) {
      if (extent[static_cast<unsigned char>(c)] < 0)
        fail(fmt::format("output letter '{}' appears in no operand", c));
      add_index(c);
    }
    bool reduces = false;
    for (const std::string& t : terms)
      for (char c : t) {
        if (pos[static_cast<unsigned char>(c)] < 0) reduces = true;
        add_index(c);
      }
    for (const std::string& t : terms) {
      Operand o;
      for (char c : t) o.subscript.push_back(AffineExpr::index(pos[static_cast<unsigned char>(c)]));
      e.operands.push_back(std::move(o));
    }
    for (char c : rhs) e.output.push_back(AffineExpr::index(pos[static_cast<unsigned char>(c)]));
    e.combine = inputs.size() == 2
                    ? Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::operand(1)})
                    : Expr::operand(0);
    e.reduce = reduces ? Reduce::Sum : Reduce::None;
    return e;
  }

  // ---- attributes ----

  // {key=value, ...}: integers, floats, quoted strings, integer lists. Keys listed in
  // `counts` are parsed as counts into `count_out` instead.
  Attrs parse_attrs(std::string_view owner,
                    const std::vector<std::pair<std::string_view, Count*>>& counts = {},
                    std::vector<std::string_view>* seen_counts = nullptr) {
    Attrs attrs;
    if (!lex_.accept("{")) return attrs;
    auto ctx_text = syntax::lazy("in the attributes of '{}'", owner);
    const syntax::Ctx ctx(ctx_text);
    while (!lex_.peek().is("}")) {
      Token key = lex_.next();
      if (key.kind != TokKind::Ident && key.kind != TokKind::String)
        lex_.fail_expected("an attribute name", ctx, key);
      std::string key_name =
          key.kind == TokKind::String ? syntax::decode_string(key) : std::string(key.text);
      lex_.expect("=", syntax::lazy("after attribute '{}'", key_name));
      auto vctx_text = syntax::lazy("as the value of attribute '{}'", key_name);
      const syntax::Ctx vctx(vctx_text);
      bool is_count = false;
      for (const auto& [name, slot] : counts) {
        if (key_name != name) continue;
        is_count = true;
        if (seen_counts) {
          if (std::find(seen_counts->begin(), seen_counts->end(), name) != seen_counts->end())
            lex_.fail(fmt::format("attribute '{}' is given twice", key_name), key.line);
          seen_counts->push_back(name);
        }
        *slot = syntax::parse_count(lex_, vctx);
      }
      if (!is_count) {
        if (attrs.contains(key_name))
          lex_.fail(fmt::format("attribute '{}' is given twice", key_name), key.line);
        attrs.emplace(key_name, parse_attr_value(vctx));
      }
      if (!lex_.accept(",")) break;
    }
    lex_.expect("}", syntax::lazy("closing the attributes of '{}'", owner));
    return attrs;
  }

  AttrValue parse_attr_value(const syntax::Ctx& ctx) {
    const Token& t = lex_.peek();
    if (t.kind == TokKind::String) return syntax::decode_string(lex_.next());
    if (t.is("[")) {
      lex_.next();
      std::vector<std::int64_t> v;
      comma_list("]", [&] { v.push_back(syntax::parse_int(lex_, ctx)); });
      lex_.expect("]", syntax::lazy("closing the list {}", ctx));
      return v;
    }
    const Token& num = t.is("-") ? lex_.peek(1) : t;
    if (num.kind == TokKind::Int) return syntax::parse_int(lex_, ctx);
    if (num.kind == TokKind::Float || num.is_ident("inf") || num.is_ident("nan"))
      return syntax::parse_number(lex_, ctx);
    lex_.fail_expected("an integer, a number, a quoted string or an integer list", ctx,
                       lex_.peek());
  }

  // ---- repeat ----
  // repeat TRIPS [reverse] (BINDING, ...) -> (RESULT, ...) ... {
  //   BINDING: invariant X as P | carried X as P next N | sliced X axis A as P
  //   RESULT:  last V | stacked V axis A
  // The body follows the op's trailing clauses; its names are resolved once it is read.
  RepeatOp parse_repeat(const std::vector<std::string>& names, std::vector<TensorId>& inputs) {
    RepeatOp r;
    const std::string where = fmt::format("in the repeat op of '{}'", names[0]);
    const syntax::Ctx ctx(where);
    r.trips = syntax::parse_int(lex_, ctx);
    r.reverse = lex_.accept_ident("reverse");
    pending_.clear();
    lex_.expect("(", ctx);
    while (!lex_.peek().is(")")) {
      Pending p;
      p.line = lex_.peek().line;
      std::string how = parse_name("invariant, carried or sliced", ctx);
      std::optional<LoopInput> k = parse_loop_input(how);
      if (!k) lex_.fail(fmt::format("unknown binding '{}' {} (invariant carried sliced)", how,
                                    where), p.line);
      RepeatInput in;
      in.how = *k;
      std::string outer = parse_name("a tensor name", ctx);
      inputs.push_back(lookup(outer, p.line, ctx));
      if (in.how == LoopInput::Sliced) {
        if (!lex_.accept_ident("axis")) lex_.fail_expected("'axis'", ctx, lex_.peek());
        in.axis = syntax::parse_int(lex_, ctx);
      }
      if (!lex_.accept_ident("as")) lex_.fail_expected("'as'", ctx, lex_.peek());
      p.param = parse_name("a body tensor name", ctx);
      if (in.how == LoopInput::Carried) {
        if (!lex_.accept_ident("next")) lex_.fail_expected("'next'", ctx, lex_.peek());
        p.next = parse_name("a body tensor name", ctx);
      }
      r.inputs.push_back(in);
      pending_.push_back(std::move(p));
      if (!lex_.accept(",")) break;
    }
    lex_.expect(")", ctx);
    lex_.expect("->", ctx);
    lex_.expect("(", ctx);
    while (!lex_.peek().is(")")) {
      Pending p;
      p.line = lex_.peek().line;
      std::string how = parse_name("last or stacked", ctx);
      std::optional<LoopOutput> k = parse_loop_output(how);
      if (!k) lex_.fail(fmt::format("unknown result '{}' {} (last stacked)", how, where),
                        p.line);
      RepeatOutput out;
      out.how = *k;
      p.param = parse_name("a body tensor name", ctx);
      if (out.how == LoopOutput::Stacked) {
        if (!lex_.accept_ident("axis")) lex_.fail_expected("'axis'", ctx, lex_.peek());
        out.axis = syntax::parse_int(lex_, ctx);
      }
      r.outputs.push_back(out);
      pending_.push_back(std::move(p));
      if (!lex_.accept(",")) break;
    }
    lex_.expect(")", ctx);
    return r;
  }

  void parse_repeat_body(RepeatOp& r, const std::string& owner) {
    const std::string where = fmt::format("after the repeat op of '{}'", owner);
    const syntax::Ctx ctx(where);
    if (depth_ >= kMaxRepeatDepth)
      lex_.fail(fmt::format("repeat bodies nest deeper than {}", kMaxRepeatDepth),
                lex_.peek().line);
    lex_.expect("{", ctx);
    if (lex_.peek().kind != TokKind::Newline) lex_.fail_expected("end of line", ctx, lex_.peek());
    std::vector<Pending> pending = std::move(pending_);
    Graph body = Parser(lex_, g_.source, depth_ + 1).run();
    auto find = [&](const std::string& name, int line) {
      std::optional<TensorId> id = body.find_tensor(name);
      if (!id)
        lex_.fail(fmt::format("the body of repeat op '{}' has no tensor '{}'", owner, name), line);
      return *id;
    };
    for (std::size_t k = 0; k < r.inputs.size(); ++k) {
      r.inputs[k].param = find(pending[k].param, pending[k].line);
      if (r.inputs[k].how == LoopInput::Carried)
        r.inputs[k].next = find(pending[k].next, pending[k].line);
    }
    for (std::size_t k = 0; k < r.outputs.size(); ++k) {
      const Pending& p = pending[r.inputs.size() + k];
      r.outputs[k].value = find(p.param, p.line);
    }
    r.body = std::make_shared<const Graph>(std::move(body));
  }

  // ---- move / opaque / unanalyzed ----

  // collective KIND [REDUCTION] {ATTRS} (INPUTS): the reduction for all_reduce and
  // reduce_scatter only; the attributes per ir/collective.h.
  CollectiveOp parse_collective(const std::string& out_name, std::vector<TensorId>& inputs) {
    Token k = lex_.next();
    std::optional<CollectiveKind> kind =
        k.kind == TokKind::Ident ? parse_collective_kind(k.text) : std::nullopt;
    if (!kind)
      lex_.fail_expected("a collective kind (all_reduce all_gather reduce_scatter all_to_all "
                         "send recv broadcast)",
                         fmt::format("after 'collective' for '{}'", out_name), k);
    std::optional<CollectiveReduction> reduction;
    if (collective_reduces(*kind)) {
      Token r = lex_.next();
      reduction = r.kind == TokKind::Ident ? parse_collective_reduction(r.text) : std::nullopt;
      if (!reduction)
        lex_.fail_expected("a reduction (sum prod max min avg)",
                           fmt::format("after '{}' for '{}'", k.text, out_name), r);
    }
    int line = lex_.peek().line;
    CollectiveFromAttrs c = collective_from_attrs(*kind, reduction, parse_attrs(out_name));
    if (!c.why_not.empty()) lex_.fail(fmt::format("'{}': {}", out_name, c.why_not), line);
    parse_input_list(out_name, inputs);
    return c.op;
  }

  MoveOp parse_move(const std::string& out_name, std::vector<TensorId>& inputs) {
    MoveOp m;
    Token k = lex_.next();
    std::optional<MoveKind> kind =
        k.kind == TokKind::Ident ? parse_move_kind(k.text) : std::nullopt;
    if (!kind)
      lex_.fail_expected("a move kind (view copy permute slice concat pad gather scatter cast)",
                         fmt::format("after 'move' for '{}'", out_name), k);
    m.kind = *kind;
    m.attrs = parse_attrs(out_name);
    parse_input_list(out_name, inputs);
    return m;
  }

  OpaqueOp parse_opaque(const std::string& out_name, std::vector<TensorId>& inputs) {
    OpaqueOp o;
    int line = lex_.peek().line;
    o.function = parse_string("the quoted function name", "after 'opaque'");
    std::vector<std::string_view> seen;
    o.attrs = parse_attrs(out_name,
                          {{"vector_flops", &o.vector_flops},
                           {"special_ops", &o.special_ops},
                           {"bytes", &o.bytes}},
                          &seen);
    // The cost is the point of an opaque op: every part must be stated, never a silent 0.
    for (std::string_view need : {"vector_flops", "special_ops", "bytes"})
      if (std::find(seen.begin(), seen.end(), need) == seen.end())
        lex_.fail(fmt::format("opaque op '{}' needs {}=N in its {{...}} (its cost is explicit: "
                              "vector_flops, special_ops, bytes, assumption)",
                              out_name, need),
                  line);
    auto it = o.attrs.find("assumption");
    if (it == o.attrs.end() || !std::holds_alternative<std::string>(it->second))
      lex_.fail(fmt::format("opaque op '{}' needs assumption=\"...\" stating what its cost "
                            "assumes",
                            out_name),
                line);
    o.assumption = std::get<std::string>(it->second);
    o.attrs.erase(it);
    parse_input_list(out_name, inputs);
    return o;
  }

  UnanalyzedOp parse_unanalyzed(const std::string& out_name, std::vector<TensorId>& inputs) {
    UnanalyzedOp u;
    int line = lex_.peek().line;
    u.framework_op = parse_string("the quoted framework op", "after 'unanalyzed'");
    Attrs attrs = parse_attrs(out_name);
    for (auto& [k, v] : attrs) {
      if (k != "reason" || !std::holds_alternative<std::string>(v))
        lex_.fail(fmt::format("unanalyzed op '{}' takes only reason=\"...\", found '{}'",
                              out_name, k),
                  line);
      u.reason = std::get<std::string>(v);
    }
    parse_input_list(out_name, inputs);
    return u;
  }

  // The statements of a repeat op's binding lists, their names resolved against its body.
  struct Pending {
    std::string param, next;
    int line = 0;
  };
  static constexpr int kMaxRepeatDepth = 16;

  std::optional<Lexer> own_;
  Lexer& lex_;
  int depth_ = 0;
  std::vector<Pending> pending_;
  Graph g_;
};

}  // namespace

Graph parse_graph(std::string_view text, std::string_view file) {
  Graph g = Parser(text, file).run();
  verify(g);
  return g;
}

}  // namespace solar::ir
