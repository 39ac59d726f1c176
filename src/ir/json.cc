#include "solar/ir/json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "solar/ir/text.h"
#include "solar/ir/verify.h"
#include "syntax.h"

namespace solar::ir {

namespace {

using json = nlohmann::json;

// JSON nesting deeper than this is refused while parsing (the schema nests 5 levels; the
// limit keeps adversarial input from exhausting the stack in nlohmann's recursive parts).
constexpr int kMaxJsonDepth = 64;

// A JSON path, built on the stack and formatted only when an error needs it:
// ops[3].operands[1].subscript[2].
struct Path {
  const Path* parent = nullptr;
  std::string_view key;  // a field name; empty for an array element
  std::size_t index = 0;

  Path field(std::string_view k) const { return Path{this, k, 0}; }
  Path at(std::size_t i) const { return Path{this, {}, i}; }
  std::string str() const {
    if (!parent) return std::string(key);
    std::string p = parent->str();
    if (key.empty()) return p + fmt::format("[{}]", index);
    return p.empty() ? std::string(key) : p + "." + std::string(key);
  }
};

std::string type_of(const json& v) {
  if (v.is_number_float()) return "a float";
  if (v.is_number()) return "an integer";
  switch (v.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::null: return "null";
    default: return v.type_name();
  }
}

class Reader {
 public:
  explicit Reader(std::string_view file) : file_(file) {}

  Graph read(const json& j) {
    Path root;
    expect_object(j, root, "a graph object");
    check_keys(j, root, {"schema", "name", "frontend", "modules", "tensors", "ops"});
    const json* schema = find(j, "schema");
    if (!schema || !schema->is_string() || schema->get_ref<const std::string&>() != kGraphSchema)
      fail(root.field("schema"),
           fmt::format("{}; this version of Solar reads \"schema\": \"{}\"",
                       schema ? "unsupported schema " + schema->dump() : "missing",
                       kGraphSchema));
    Graph g;
    g.source = file_;
    if (const json* v = find(j, "name")) g.name = string(*v, root.field("name"));
    if (const json* v = find(j, "frontend")) g.frontend = string(*v, root.field("frontend"));
    if (const json* m = find(j, "modules")) {
      Path mp = root.field("modules");
      expect_object(*m, mp);
      for (const auto& [path, type] : m->items())
        g.module_types[path] = string(type, mp.field(path));
    }
    read_statements(g, j, root);
    return g;
  }

 private:
  static constexpr int kMaxRepeatDepth = 16;

  void read_statements(Graph& g, const json& j, const Path& p) {
    const json& tensors = require(j, p, "tensors");
    Path tp = p.field("tensors");
    expect_array(tensors, tp);
    for (std::size_t i = 0; i < tensors.size(); ++i) read_tensor(g, tensors[i], tp.at(i));
    const json& ops = require(j, p, "ops");
    Path op_path = p.field("ops");
    expect_array(ops, op_path);
    for (std::size_t i = 0; i < ops.size(); ++i) read_op(g, ops[i], op_path.at(i));
  }

  // "trips", "reverse"?, "bindings" (one per input: how, param, axis?, next?), "results" (one
  // per output: how, value, axis?), "body" ({"tensors", "ops"}: a graph without a header).
  RepeatOp read_repeat(const json& j, const Path& p) {
    RepeatOp r;
    r.trips = integer(require(j, p, "trips"), p.field("trips"));
    if (const json* rev = find(j, "reverse")) {
      if (!rev->is_boolean())
        fail(p.field("reverse"), fmt::format("expected a boolean, found {}", type_of(*rev)));
      r.reverse = rev->get<bool>();
    }
    if (++depth_ > kMaxRepeatDepth)
      fail(p.field("body"), fmt::format("repeat bodies nest deeper than {}", kMaxRepeatDepth));
    Path bp = p.field("body");
    const json& bj = require(j, p, "body");
    expect_object(bj, bp, "a body object {\"tensors\", \"ops\"}");
    check_keys(bj, bp, {"tensors", "ops"});
    Graph body;
    body.name = "body";
    body.source = file_;
    read_statements(body, bj, bp);
    --depth_;
    Path lp = p.field("bindings");
    const json& bindings = require(j, p, "bindings");
    expect_array(bindings, lp);
    for (std::size_t k = 0; k < bindings.size(); ++k) {
      Path kp = lp.at(k);
      expect_object(bindings[k], kp, "a binding object {\"how\", \"param\", ...}");
      check_keys(bindings[k], kp, {"how", "param", "axis", "next"});
      std::string how = string(require(bindings[k], kp, "how"), kp.field("how"));
      std::optional<LoopInput> h = parse_loop_input(how);
      if (!h) fail(kp.field("how"), fmt::format("unknown binding \"{}\" (invariant carried sliced)", how));
      RepeatInput in;
      in.how = *h;
      in.param = tensor_ref(body, require(bindings[k], kp, "param"), kp.field("param"));
      if (in.how == LoopInput::Sliced)
        in.axis = integer(require(bindings[k], kp, "axis"), kp.field("axis"));
      if (in.how == LoopInput::Carried)
        in.next = tensor_ref(body, require(bindings[k], kp, "next"), kp.field("next"));
      r.inputs.push_back(in);
    }
    Path rp = p.field("results");
    const json& results = require(j, p, "results");
    expect_array(results, rp);
    for (std::size_t k = 0; k < results.size(); ++k) {
      Path kp = rp.at(k);
      expect_object(results[k], kp, "a result object {\"how\", \"value\", ...}");
      check_keys(results[k], kp, {"how", "value", "axis"});
      std::string how = string(require(results[k], kp, "how"), kp.field("how"));
      std::optional<LoopOutput> h = parse_loop_output(how);
      if (!h) fail(kp.field("how"), fmt::format("unknown result \"{}\" (last stacked)", how));
      RepeatOutput out;
      out.how = *h;
      out.value = tensor_ref(body, require(results[k], kp, "value"), kp.field("value"));
      if (out.how == LoopOutput::Stacked)
        out.axis = integer(require(results[k], kp, "axis"), kp.field("axis"));
      r.outputs.push_back(out);
    }
    r.body = std::make_shared<const Graph>(std::move(body));
    return r;
  }

  int depth_ = 0;

  [[noreturn]] void fail(const Path& p, const std::string& msg) const {
    std::string where = p.str();
    throw UserError(UserError::Kind::Parse, where.empty() ? msg : where + ": " + msg,
                    Origin{file_, 0, {}});
  }

  static const json* find(const json& obj, std::string_view key) {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }
  const json& require(const json& obj, const Path& p, std::string_view key) const {
    const json* v = find(obj, key);
    if (!v) fail(p, fmt::format("missing field \"{}\"", key));
    return *v;
  }
  void check_keys(const json& obj, const Path& p,
                  std::initializer_list<std::string_view> known) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool ok = false;
      for (std::string_view k : known) ok |= it.key() == k;
      if (!ok)
        fail(p, fmt::format("unknown field \"{}\" (known here: {})", it.key(),
                            fmt::join(known, ", ")));
    }
  }
  void expect_object(const json& v, const Path& p, std::string_view what = "an object") const {
    if (!v.is_object()) fail(p, fmt::format("expected {}, found {}", what, type_of(v)));
  }
  void expect_array(const json& v, const Path& p) const {
    if (!v.is_array()) fail(p, fmt::format("expected an array, found {}", type_of(v)));
  }
  std::string string(const json& v, const Path& p) const {
    if (!v.is_string()) fail(p, fmt::format("expected a string, found {}", type_of(v)));
    return v.get<std::string>();
  }
  std::int64_t integer(const json& v, const Path& p) const {
    if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<std::int64_t>();
    if (v.is_number_unsigned()) {
      auto u = v.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(u);
    }
    fail(p, fmt::format("expected a 64-bit integer, found {}",
                        v.is_number() ? v.dump() : type_of(v)));
  }
  // A float: a JSON number, or "inf", "-inf", "nan" (JSON has no literal for them).
  double number(const json& v, const Path& p) const {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
      const auto& s = v.get_ref<const std::string&>();
      if (s == "inf") return INFINITY;
      if (s == "-inf") return -INFINITY;
      if (s == "nan") return NAN;
    }
    fail(p, fmt::format("expected a number (or \"inf\", \"-inf\", \"nan\"), found {}",
                        v.is_string() ? v.dump() : type_of(v)));
  }
  Count count(const json& v, const Path& p) const {
    if (v.is_number_unsigned()) return Count(v.get<std::uint64_t>());
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0)
      return Count(static_cast<std::uint64_t>(v.get<std::int64_t>()));
    if (v.is_string())
      if (std::optional<Count> c = syntax::count_from_decimal(v.get_ref<const std::string&>()))
        return *c;
    fail(p, fmt::format("expected a count (a non-negative integer, or a decimal string when over "
                        "64 bits), found {}",
                        v.is_number() || v.is_string() ? v.dump() : type_of(v)));
  }

  TensorId tensor_ref(const Graph& g, const json& v, const Path& p) const {
    std::string name = string(v, p);
    std::optional<TensorId> id = g.find_tensor(name);
    if (!id) fail(p, fmt::format("unknown tensor '{}' (not in \"tensors\")", name));
    return *id;
  }

  // Runs one of the text-form grammars over a JSON string, which it must consume whole.
  template <class F>
  auto parse_piece(const json& v, const Path& p, F&& parse) const {
    std::string s = string(v, p);
    try {
      syntax::Lexer lex(s, file_);
      auto result = parse(lex);
      if (lex.peek().kind != syntax::TokKind::End)
        lex.fail_expected("the end of the string", "", lex.peek());
      return result;
    } catch (const UserError& e) {
      fail(p, e.message());
    }
  }

  void read_tensor(Graph& g, const json& j, const Path& p) {
    expect_object(j, p, "a tensor object");
    check_keys(j, p, {"name", "shape", "dtype", "role", "dims", "sparsity"});
    Tensor t;
    t.name = string(require(j, p, "name"), p.field("name"));
    if (t.name.empty()) fail(p.field("name"), "a tensor name must not be empty");
    Path sp = p.field("shape");
    const json& shape = require(j, p, "shape");
    expect_array(shape, sp);
    t.shape.reserve(shape.size());
    for (std::size_t i = 0; i < shape.size(); ++i) t.shape.push_back(integer(shape[i], sp.at(i)));
    std::string dt = string(require(j, p, "dtype"), p.field("dtype"));
    std::optional<DType> d = parse_dtype(dt);
    if (!d) fail(p.field("dtype"), fmt::format("unknown dtype \"{}\"", dt));
    t.dtype = *d;
    std::string role = string(require(j, p, "role"), p.field("role"));
    std::optional<Role> r = parse_role(role);
    if (!r)
      fail(p.field("role"), fmt::format("unknown role \"{}\" (input weight constant intermediate "
                                        "output)",
                                        role));
    t.role = *r;
    if (const json* dims = find(j, "dims")) {
      Path dp = p.field("dims");
      expect_array(*dims, dp);
      for (std::size_t i = 0; i < dims->size(); ++i)
        t.dim_names.push_back(string((*dims)[i], dp.at(i)));
    }
    if (const json* sp2 = find(j, "sparsity")) {
      Path spp = p.field("sparsity");
      expect_object(*sp2, spp);
      check_keys(*sp2, spp, {"zero_fraction", "structured_2_4"});
      Sparsity s;
      s.zero_fraction = number(require(*sp2, spp, "zero_fraction"), spp.field("zero_fraction"));
      if (const json* b = find(*sp2, "structured_2_4")) {
        if (!b->is_boolean())
          fail(spp.field("structured_2_4"),
               fmt::format("expected a boolean, found {}", type_of(*b)));
        s.structured_2_4 = b->get<bool>();
      }
      t.sparsity = s;
    }
    try {
      g.add_tensor(std::move(t));
    } catch (const UserError& e) {
      fail(p.field("name"), e.message());
    }
  }

  Attrs attrs(const json& j, const Path& p) const {
    expect_object(j, p);
    Attrs out;
    for (auto it = j.begin(); it != j.end(); ++it) {
      Path ap = p.field(it.key());
      const json& v = it.value();
      if (v.is_string()) {
        out.emplace(it.key(), v.get<std::string>());
      } else if (v.is_number_float()) {
        out.emplace(it.key(), v.get<double>());
      } else if (v.is_number()) {
        out.emplace(it.key(), integer(v, ap));
      } else if (v.is_array()) {
        std::vector<std::int64_t> list;
        for (std::size_t i = 0; i < v.size(); ++i) list.push_back(integer(v[i], ap.at(i)));
        out.emplace(it.key(), std::move(list));
      } else if (v.is_object() && v.size() == 1 && v.contains("float")) {
        out.emplace(it.key(), number(v["float"], ap.field("float")));
      } else {
        fail(ap, fmt::format("expected an attribute value (integer, float, string, integer "
                             "list, or {{\"float\": \"inf\"}}), found {}",
                             type_of(v)));
      }
    }
    return out;
  }

  void read_op(Graph& g, const json& j, const Path& p) {
    expect_object(j, p, "an op object");
    std::string kind = string(require(j, p, "kind"), p.field("kind"));
    Op op;
    auto names = [&](std::string_view key, std::vector<TensorId>& out) {
      Path lp = p.field(key);
      const json& list = require(j, p, key);
      expect_array(list, lp);
      out.reserve(list.size());
      for (std::size_t i = 0; i < list.size(); ++i) out.push_back(tensor_ref(g, list[i], lp.at(i)));
    };
    names("inputs", op.inputs);
    names("outputs", op.outputs);
    if (const json* n = find(j, "name")) {
      op.name = string(*n, p.field("name"));
      if (op.name.empty()) fail(p.field("name"), "an op name must not be empty");
    }
    if (kind == "einsum") {
      check_keys(j, p, {"name", "kind", "inputs", "outputs", "origin", "indices", "operands",
                        "output", "combine", "reduce", "mask", "hint"});
      op.body = read_einsum(j, p);
    } else if (kind == "move") {
      check_keys(j, p, {"name", "kind", "inputs", "outputs", "origin", "move", "attrs"});
      MoveOp m;
      std::string mk = string(require(j, p, "move"), p.field("move"));
      std::optional<MoveKind> k = parse_move_kind(mk);
      if (!k)
        fail(p.field("move"), fmt::format("unknown move kind \"{}\" (view copy permute slice "
                                          "concat pad gather scatter cast)",
                                          mk));
      m.kind = *k;
      if (const json* a = find(j, "attrs")) m.attrs = attrs(*a, p.field("attrs"));
      op.body = std::move(m);
    } else if (kind == "opaque") {
      check_keys(j, p, {"name", "kind", "inputs", "outputs", "origin", "function", "vector_flops",
                        "special_ops", "bytes", "assumption", "attrs"});
      OpaqueOp o;
      o.function = string(require(j, p, "function"), p.field("function"));
      o.vector_flops = count(require(j, p, "vector_flops"), p.field("vector_flops"));
      o.special_ops = count(require(j, p, "special_ops"), p.field("special_ops"));
      o.bytes = count(require(j, p, "bytes"), p.field("bytes"));
      o.assumption = string(require(j, p, "assumption"), p.field("assumption"));
      if (const json* a = find(j, "attrs")) o.attrs = attrs(*a, p.field("attrs"));
      op.body = std::move(o);
    } else if (kind == "unanalyzed") {
      check_keys(j, p, {"name", "kind", "inputs", "outputs", "origin", "framework_op", "reason"});
      UnanalyzedOp u;
      u.framework_op = string(require(j, p, "framework_op"), p.field("framework_op"));
      if (const json* r = find(j, "reason")) u.reason = string(*r, p.field("reason"));
      op.body = std::move(u);
    } else if (kind == "repeat") {
      check_keys(j, p, {"name", "kind", "inputs", "outputs", "origin", "trips", "reverse",
                        "bindings", "results", "body"});
      op.body = read_repeat(j, p);
    } else if (kind == "collective") {
      check_keys(j, p, {"name", "kind", "inputs", "outputs", "origin", "collective", "reduction",
                        "group", "axis", "split_axis", "concat_axis", "peer", "root", "eager"});
      op.body = read_collective(j, p);
    } else {
      fail(p.field("kind"),
           fmt::format("unknown op kind \"{}\" (einsum move opaque unanalyzed repeat "
                       "collective)",
                       kind));
    }
    if (op.name.empty() && !op.outputs.empty()) op.name = g.tensor(op.outputs[0]).name;
    // Parts of the origin left out default to "this op of this file".
    op.origin = Origin{file_, 0, op.name};
    if (const json* o = find(j, "origin")) {
      Path op2 = p.field("origin");
      expect_object(*o, op2);
      check_keys(*o, op2, {"file", "line", "op", "module"});
      if (const json* f = find(*o, "file")) op.origin.file = string(*f, op2.field("file"));
      if (const json* l = find(*o, "line")) {
        if (!find(*o, "file"))
          fail(op2.field("line"), "a line needs the file it is in (\"file\")");
        std::int64_t line = integer(*l, op2.field("line"));
        if (line < 1 || line > INT32_MAX)
          fail(op2.field("line"), fmt::format("{} is not a line number", line));
        op.origin.line = static_cast<int>(line);
      }
      if (const json* n = find(*o, "op")) op.origin.op = string(*n, op2.field("op"));
      if (const json* m = find(*o, "module")) op.origin.module = string(*m, op2.field("module"));
    }
    g.add_op(std::move(op));
  }

  // The typed fields of a collective (graph-json.md, "collective"): the kind's own fields
  // only, the reduction exactly for the kinds that reduce.
  CollectiveOp read_collective(const json& j, const Path& p) const {
    std::string ck = string(require(j, p, "collective"), p.field("collective"));
    std::optional<CollectiveKind> kind = parse_collective_kind(ck);
    if (!kind)
      fail(p.field("collective"),
           fmt::format("unknown collective \"{}\" (all_reduce all_gather reduce_scatter "
                       "all_to_all send recv broadcast)",
                       ck));
    CollectiveOp c;
    c.kind = *kind;
    const bool pair = c.kind == CollectiveKind::Send || c.kind == CollectiveKind::Recv;
    if (collective_reduces(c.kind)) {
      std::string r = string(require(j, p, "reduction"), p.field("reduction"));
      std::optional<CollectiveReduction> red = parse_collective_reduction(r);
      if (!red)
        fail(p.field("reduction"),
             fmt::format("unknown reduction \"{}\" (sum prod max min avg)", r));
      c.reduction = *red;
    } else if (find(j, "reduction")) {
      fail(p.field("reduction"), fmt::format("{} does not reduce: no \"reduction\"", ck));
    }
    std::vector<std::string_view> own;
    switch (c.kind) {
      case CollectiveKind::AllGather: case CollectiveKind::ReduceScatter: own = {"axis"}; break;
      case CollectiveKind::AllToAll: own = {"split_axis", "concat_axis"}; break;
      case CollectiveKind::Send: case CollectiveKind::Recv: own = {"peer"}; break;
      case CollectiveKind::Broadcast: own = {"root"}; break;
      case CollectiveKind::AllReduce: break;
    }
    for (std::string_view key : {"axis", "split_axis", "concat_axis", "peer", "root"}) {
      const json* v = find(j, key);
      if (!v) continue;
      if (std::find(own.begin(), own.end(), key) == own.end())
        fail(p.field(key), fmt::format("{} has no \"{}\"", ck, key));
      std::int64_t x = integer(*v, p.field(key));
      if (key == "axis" || key == "split_axis") c.axis = x;
      if (key == "concat_axis") c.concat_axis = x;
      if (key == "peer") c.peer = x;
      if (key == "root") c.root = x;
    }
    if (pair && !find(j, "peer"))
      fail(p, fmt::format("missing field \"peer\" (the rank a {} pairs with)", ck));
    if (const json* e = find(j, "eager")) {
      if (!e->is_boolean()) fail(p.field("eager"), "\"eager\" must be true or false");
      c.eager = e->get<bool>();
    }
    Path gp = p.field("group");
    if (pair) c.group.size = 2;
    const json* gj = find(j, "group");
    if (!gj && !pair) fail(p, "missing field \"group\"");
    if (gj) {
      expect_object(*gj, gp, "a group object");
      check_keys(*gj, gp, {"size", "name", "ranks_per_domain", "torus_extent",
                           "replica_groups"});
      if (const json* n = find(*gj, "size")) c.group.size = integer(*n, gp.field("size"));
      else if (!pair) fail(gp, "missing field \"size\"");
      if (const json* n = find(*gj, "name")) c.group.name = string(*n, gp.field("name"));
      if (const json* n = find(*gj, "ranks_per_domain"))
        c.group.ranks_per_domain = integer(*n, gp.field("ranks_per_domain"));
      if (const json* t = find(*gj, "torus_extent")) {
        Path tp = gp.field("torus_extent");
        expect_array(*t, tp);
        for (std::size_t i = 0; i < t->size(); ++i)
          c.group.torus_extent.push_back(integer((*t)[i], tp.at(i)));
      }
      if (const json* t = find(*gj, "replica_groups")) {
        Path tp = gp.field("replica_groups");
        expect_array(*t, tp);
        for (std::size_t i = 0; i < t->size(); ++i)
          c.group.replica_groups.push_back(integer((*t)[i], tp.at(i)));
      }
    }
    return c;
  }

  EinsumOp read_einsum(const json& j, const Path& p) const {
    EinsumOp e;
    Path ip = p.field("indices");
    const json& idx = require(j, p, "indices");
    expect_array(idx, ip);
    for (std::size_t i = 0; i < idx.size(); ++i) {
      Path xp = ip.at(i);
      expect_object(idx[i], xp, "an index object {\"name\", \"extent\"}");
      check_keys(idx[i], xp, {"name", "extent"});
      IndexDim d;
      d.name = string(require(idx[i], xp, "name"), xp.field("name"));
      d.extent = integer(require(idx[i], xp, "extent"), xp.field("extent"));
      e.indices.push_back(std::move(d));
    }
    syntax::IndexLookup lookup(e.indices);
    for (std::size_t i = 0; i < e.indices.size(); ++i)
      if (lookup.find(e.indices[i].name) != static_cast<IndexPos>(i))
        fail(ip.at(i).field("name"),
             fmt::format("index '{}' is declared twice", e.indices[i].name));
    auto affine = [&](const json& v, const Path& ap) {
      return parse_piece(v, ap, [&](syntax::Lexer& lex) {
        return syntax::parse_affine(lex, lookup, "");
      });
    };
    Path opp = p.field("operands");
    const json& ops = require(j, p, "operands");
    expect_array(ops, opp);
    for (std::size_t k = 0; k < ops.size(); ++k) {
      Path kp = opp.at(k);
      expect_object(ops[k], kp, "an operand object {\"subscript\", \"pad\"?}");
      check_keys(ops[k], kp, {"subscript", "pad"});
      Operand o;
      Path sp = kp.field("subscript");
      const json& sub = require(ops[k], kp, "subscript");
      expect_array(sub, sp);
      for (std::size_t d = 0; d < sub.size(); ++d) o.subscript.push_back(affine(sub[d], sp.at(d)));
      if (const json* pad = find(ops[k], "pad")) o.pad = number(*pad, kp.field("pad"));
      e.operands.push_back(std::move(o));
    }
    Path outp = p.field("output");
    const json& out = require(j, p, "output");
    expect_array(out, outp);
    for (std::size_t d = 0; d < out.size(); ++d) e.output.push_back(affine(out[d], outp.at(d)));
    e.combine = parse_piece(require(j, p, "combine"), p.field("combine"),
                            [&](syntax::Lexer& lex) { return syntax::parse_combine(lex, ""); });
    std::string red = string(require(j, p, "reduce"), p.field("reduce"));
    std::optional<Reduce> r = parse_reduce(red);
    if (!r)
      fail(p.field("reduce"),
           fmt::format("unknown reduction \"{}\" (none sum max min prod any all)", red));
    e.reduce = *r;
    if (const json* hint = find(j, "hint")) {
      std::string h = string(*hint, p.field("hint"));
      std::optional<ContractionHint> ch = parse_contraction_hint(h);
      if (!ch) fail(p.field("hint"), fmt::format("unknown hint \"{}\" (none attention)", h));
      e.hint = *ch;
    }
    if (const json* mask = find(j, "mask")) {
      Path mp = p.field("mask");
      expect_array(*mask, mp);
      for (std::size_t c = 0; c < mask->size(); ++c)
        e.mask.push_back(parse_piece((*mask)[c], mp.at(c), [&](syntax::Lexer& lex) {
          return syntax::parse_constraint(lex, lookup, "");
        }));
    }
    return e;
  }

  std::string file_;
};

json number_json(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

json count_json(Count c) {
  if (c.fits_u64()) return c.to_u64();
  return c.str();
}

json attrs_json(const Attrs& attrs) {
  json out = json::object();
  for (const auto& kv : attrs) {
    const std::string& k = kv.first;  // a named variable: clang cannot capture a binding
    const AttrValue& v = kv.second;
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, double>) {
            out[k] = std::isfinite(x) ? json(x) : json{{"float", number_json(x)}};
          } else {
            out[k] = x;
          }
        },
        v);
  }
  return out;
}

std::string tensor_name(const Graph& g, TensorId id) {
  return id.value < g.tensors().size() ? g.tensor(id).name : fmt::format("<bad id {}>", id.value);
}

}  // namespace

Graph graph_from_json(const nlohmann::json& j, std::string_view file) {
  Graph g = Reader(file).read(j);
  verify(g);
  return g;
}

Graph parse_graph_json(std::string_view text, std::string_view file) {
  // Refuse deep nesting before parsing (a linear scan: nlohmann's callback parser, which
  // could check it on the way, is many times slower on large graphs).
  {
    int depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (in_string) {
        if (c == '\\') ++i;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '[' || c == '{') {
        if (++depth > kMaxJsonDepth)
          throw UserError(UserError::Kind::Parse,
                          fmt::format("JSON nests deeper than {} levels (at byte {})",
                                      kMaxJsonDepth, i),
                          Origin{std::string(file), 0, {}});
      } else if (c == ']' || c == '}') {
        --depth;
      }
    }
  }
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // nlohmann reports a byte offset; give the line too.
    std::size_t byte = std::min<std::size_t>(e.byte, text.size());
    int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + byte, '\n'));
    throw UserError(UserError::Kind::Parse,
                    fmt::format("malformed JSON at byte {}: {}", e.byte, e.what()),
                    Origin{std::string(file), line, {}});
  } catch (const json::exception& e) {
    // E.g. out_of_range.406: a number literal too large for a double.
    throw UserError(UserError::Kind::Parse, fmt::format("malformed JSON: {}", e.what()),
                    Origin{std::string(file), 0, {}});
  }
  return graph_from_json(j, file);
}

namespace {

void write_statements(const Graph& g, json& out);

json repeat_json(const RepeatOp& r) {
  json oj;
  oj["trips"] = r.trips;
  if (r.reverse) oj["reverse"] = true;
  const Graph* body = r.body.get();
  auto name = [&](TensorId id) { return body ? tensor_name(*body, id) : std::string("?"); };
  json bindings = json::array();
  for (const RepeatInput& in : r.inputs) {
    json b = {{"how", loop_input_name(in.how)}, {"param", name(in.param)}};
    if (in.how == LoopInput::Sliced) b["axis"] = in.axis;
    if (in.how == LoopInput::Carried) b["next"] = name(in.next);
    bindings.push_back(std::move(b));
  }
  oj["bindings"] = std::move(bindings);
  json results = json::array();
  for (const RepeatOutput& out : r.outputs) {
    json b = {{"how", loop_output_name(out.how)}, {"value", name(out.value)}};
    if (out.how == LoopOutput::Stacked) b["axis"] = out.axis;
    results.push_back(std::move(b));
  }
  oj["results"] = std::move(results);
  json bj = json::object();
  if (body) write_statements(*body, bj);
  oj["body"] = std::move(bj);
  return oj;
}

json collective_json(const CollectiveOp& c) {
  json oj;
  oj["collective"] = collective_kind_name(c.kind);
  if (collective_reduces(c.kind)) oj["reduction"] = collective_reduction_name(c.reduction);
  json gj;
  gj["size"] = c.group.size;
  if (!c.group.name.empty()) gj["name"] = c.group.name;
  if (c.group.ranks_per_domain > 0) gj["ranks_per_domain"] = c.group.ranks_per_domain;
  if (!c.group.torus_extent.empty()) gj["torus_extent"] = c.group.torus_extent;
  if (!c.group.replica_groups.empty()) gj["replica_groups"] = c.group.replica_groups;
  oj["group"] = std::move(gj);
  if (c.eager) oj["eager"] = true;
  switch (c.kind) {
    case CollectiveKind::AllGather: case CollectiveKind::ReduceScatter:
      oj["axis"] = c.axis;
      break;
    case CollectiveKind::AllToAll:
      oj["split_axis"] = c.axis;
      oj["concat_axis"] = c.concat_axis;
      break;
    case CollectiveKind::Send: case CollectiveKind::Recv:
      oj["peer"] = c.peer;
      break;
    case CollectiveKind::Broadcast:
      oj["root"] = c.root;
      break;
    case CollectiveKind::AllReduce:
      break;
  }
  return oj;
}

}  // namespace

nlohmann::json graph_to_json(const Graph& g) {
  json out;
  out["schema"] = kGraphSchema;
  out["name"] = g.name;
  out["frontend"] = g.frontend;
  if (!g.module_types.empty()) out["modules"] = g.module_types;
  write_statements(g, out);
  return out;
}

namespace {

void write_statements(const Graph& g, json& out) {
  json tensors = json::array();
  for (const Tensor& t : g.tensors()) {
    json tj;
    tj["name"] = t.name;
    tj["shape"] = t.shape;
    tj["dtype"] = dtype_name(t.dtype);
    tj["role"] = role_name(t.role);
    if (!t.dim_names.empty()) tj["dims"] = t.dim_names;
    if (t.sparsity)
      tj["sparsity"] = {{"zero_fraction", number_json(t.sparsity->zero_fraction)},
                        {"structured_2_4", t.sparsity->structured_2_4}};
    tensors.push_back(std::move(tj));
  }
  out["tensors"] = std::move(tensors);
  json ops = json::array();
  for (const Op& op : g.ops()) {
    json oj;
    oj["name"] = op.name;
    oj["kind"] = op_kind_name(op.kind());
    json in = json::array(), outs = json::array();
    for (TensorId id : op.inputs) in.push_back(tensor_name(g, id));
    for (TensorId id : op.outputs) outs.push_back(tensor_name(g, id));
    oj["inputs"] = std::move(in);
    oj["outputs"] = std::move(outs);
    // The origin is written where it says more than "this op of this file": a position in
    // the graph's own source file is not data (it would not survive a re-serialization).
    const Origin& o = op.origin;
    json oo = json::object();
    if (!o.file.empty() && o.file != g.source) {
      oo["file"] = o.file;
      if (o.line > 0) oo["line"] = o.line;
    }
    if (!o.op.empty() && o.op != op.name) oo["op"] = o.op;
    if (!o.module.empty()) oo["module"] = o.module;
    if (!oo.empty()) oj["origin"] = std::move(oo);
    switch (op.kind()) {
      case OpKind::Einsum: {
        const EinsumOp& e = op.einsum();
        json idx = json::array();
        for (const IndexDim& d : e.indices) idx.push_back({{"name", d.name}, {"extent", d.extent}});
        oj["indices"] = std::move(idx);
        json operands = json::array();
        for (const Operand& o2 : e.operands) {
          json sub = json::array();
          for (const AffineExpr& a : o2.subscript)
            sub.push_back(syntax::format_affine(a, e.indices));
          json oo = {{"subscript", std::move(sub)}};
          if (o2.pad) oo["pad"] = number_json(*o2.pad);
          operands.push_back(std::move(oo));
        }
        oj["operands"] = std::move(operands);
        json outj = json::array();
        for (const AffineExpr& a : e.output) outj.push_back(syntax::format_affine(a, e.indices));
        oj["output"] = std::move(outj);
        oj["combine"] = syntax::format_combine(e.combine);
        oj["reduce"] = reduce_name(e.reduce);
        if (!e.mask.empty()) {
          json m = json::array();
          for (const AffineConstraint& c : e.mask)
            m.push_back(syntax::format_constraint(c, e.indices));
          oj["mask"] = std::move(m);
        }
        if (e.hint != ContractionHint::None) oj["hint"] = contraction_hint_name(e.hint);
        break;
      }
      case OpKind::Move:
        oj["move"] = move_kind_name(op.move().kind);
        if (!op.move().attrs.empty()) oj["attrs"] = attrs_json(op.move().attrs);
        break;
      case OpKind::Opaque: {
        const OpaqueOp& o2 = op.opaque();
        oj["function"] = o2.function;
        oj["vector_flops"] = count_json(o2.vector_flops);
        oj["special_ops"] = count_json(o2.special_ops);
        oj["bytes"] = count_json(o2.bytes);
        oj["assumption"] = o2.assumption;
        if (!o2.attrs.empty()) oj["attrs"] = attrs_json(o2.attrs);
        break;
      }
      case OpKind::Unanalyzed:
        oj["framework_op"] = op.unanalyzed().framework_op;
        if (!op.unanalyzed().reason.empty()) oj["reason"] = op.unanalyzed().reason;
        break;
      case OpKind::Repeat:
        oj.update(repeat_json(op.repeat()));
        break;
      case OpKind::Collective:
        oj.update(collective_json(op.collective()));
        break;
    }
    ops.push_back(std::move(oj));
  }
  out["ops"] = std::move(ops);
}

}  // namespace

Graph load_graph_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(UserError::Kind::Io,
                    fmt::format("cannot read graph file '{}': it is a directory", path));
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw UserError(UserError::Kind::Io,
                    fmt::format("cannot read graph file '{}': {}", path, std::strerror(errno)));
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad())
    throw UserError(UserError::Kind::Io,
                    fmt::format("cannot read graph file '{}': read error", path));
  Origin where;
  where.file = path;
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    throw UserError(UserError::Kind::Parse,
                    "the file is empty: expected a graph (the text form, docs/ir-text.md, or a "
                    "solar.graph.v1 JSON document, docs/graph-json.md)",
                    where);
  Graph g = text[first] == '{' ? parse_graph_json(text, path) : parse_graph(text, path);
  // A graph without ops (an empty JSON graph, a text file of declarations or comments only)
  // would analyze as "complete" with zero work: refuse it rather than report nothing.
  if (g.ops().empty())
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("graph '{}' has no ops, so no output: nothing to analyze (declare "
                                "an op and mark its result {{output}})",
                                g.name),
                    where);
  return g;
}

}  // namespace solar::ir
