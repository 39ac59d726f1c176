#include "solar/ir/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "solar/ir/attrs.h"
#include "solar/ir/collective.h"
#include "solar/ir/shape.h"
#include "syntax.h"

namespace solar::ir {

namespace {

using u128 = unsigned __int128;

struct Problem {
  std::string message;
  const Op* op = nullptr;  // the op it concerns, for the origin
};

// Element count; nullopt when it does not fit in 128 bits (or a dimension is negative).
std::optional<u128> elements(const std::vector<std::int64_t>& shape) {
  u128 n = 1;
  for (std::int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<u128>(d), &n)) return std::nullopt;
  }
  return n;
}

std::string u128_str(u128 v) {
  if (v == 0) return "0";
  std::string s;
  for (; v != 0; v /= 10) s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
  return s;
}

// Depth of a combine expression, stopping early past the limit.
int expr_depth(const Expr& e, int limit) {
  if (limit <= 0) return 1;
  int d = 0;
  for (const Expr& c : e.children()) d = std::max(d, expr_depth(c, limit - 1));
  return d + 1;
}

void collect_operands(const Expr& e, std::vector<int>& out) {
  if (e.op() == ExprOp::Operand) out.push_back(e.operand_index());
  for (const Expr& c : e.children()) collect_operands(c, out);
}

// The first position whose name repeats an earlier one. Open addressing over positions: no
// allocation per name (a 100,000-op graph has a quarter million names to check).
template <class NameAt>
std::optional<std::size_t> first_duplicate(std::size_t n, NameAt name_at) {
  std::size_t cap = 16;
  while (cap < 2 * n) cap <<= 1;
  std::vector<std::uint32_t> slots(cap, 0);  // position + 1; 0 is empty
  std::hash<std::string_view> hash;
  for (std::size_t i = 0; i < n; ++i) {
    std::string_view name = name_at(i);
    std::size_t h = hash(name) & (cap - 1);
    while (slots[h] != 0) {
      if (name_at(slots[h] - 1) == name) return i;
      h = (h + 1) & (cap - 1);
    }
    slots[h] = static_cast<std::uint32_t>(i + 1);
  }
  return std::nullopt;
}

class Verifier {
 public:
  explicit Verifier(const Graph& g) : g_(g) {}

  std::optional<Problem> run() {
    const auto& tensors = g_.tensors();
    if (auto dup = first_duplicate(tensors.size(), [&](std::size_t i) -> std::string_view {
          return tensors[i].name;
        }))
      return fail(fmt::format("tensor name '{}' is used twice", tensors[*dup].name));
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      if (t.id.value != i)
        return fail(fmt::format("tensor '{}' has id {} but is stored at position {}", t.name,
                                t.id.value, i));
      if (t.name.empty()) return fail(fmt::format("tensor #{} has an empty name", i));
      for (std::size_t d = 0; d < t.shape.size(); ++d)
        if (t.shape[d] < 0)
          return fail(fmt::format("tensor '{}' has shape {}: dimension {} is negative", t.name,
                                  shape_str(t.shape), d));
      // Sizes in bits must stay exact (128-bit counts): at most 2^122 elements.
      u128 bits;
      if (std::optional<u128> n = elements(t.shape); !n || __builtin_mul_overflow(*n, 64, &bits))
        return fail(fmt::format("tensor '{}' has shape {}: more than 2^122 elements", t.name,
                                shape_str(t.shape)));
      if (t.sparsity) {
        double z = t.sparsity->zero_fraction;
        if (!(z >= 0 && z <= 1))
          return fail(fmt::format("tensor '{}' has zero fraction {}, outside [0, 1]", t.name,
                                  syntax::format_number(z)));
        if (t.sparsity->structured_2_4 && z < 0.5)
          return fail(fmt::format("tensor '{}' is 2:4 sparse but its zero fraction {} is below "
                                  "0.5 (2:4 keeps at most 2 of every 4 elements)",
                                  t.name, syntax::format_number(z)));
      }
      if (!t.dim_names.empty() && t.dim_names.size() != t.shape.size())
        return fail(fmt::format("tensor '{}' has {} dimension names for rank {}", t.name,
                                t.dim_names.size(), t.shape.size()));
      for (std::size_t d = 0; d < t.dim_names.size(); ++d)
        if (t.dim_names[d].empty() || t.dim_names[d].find(',') != std::string::npos)
          return fail(fmt::format("tensor '{}' dimension name {} ('{}') must be non-empty and "
                                  "contain no ','",
                                  t.name, d, t.dim_names[d]));
    }

    // defined[t]: the tensor exists at this point of the op order.
    std::vector<const Op*> produced_by(tensors.size(), nullptr);
    std::vector<bool> defined(tensors.size(), false);
    for (std::size_t i = 0; i < tensors.size(); ++i) defined[i] = is_graph_source(tensors[i].role);
    // Producers of later ops, to tell "used before defined" from "dangling".
    std::vector<const Op*> any_producer(tensors.size(), nullptr);
    for (const Op& op : g_.ops())
      for (TensorId out : op.outputs)
        if (out.value < tensors.size() && !any_producer[out.value]) any_producer[out.value] = &op;

    if (auto dup = first_duplicate(g_.ops().size(), [&](std::size_t i) -> std::string_view {
          return g_.ops()[i].name;
        })) {
      op_ = &g_.ops()[*dup];
      return fail(fmt::format("op name '{}' is used twice", op_->name));
    }
    for (std::size_t i = 0; i < g_.ops().size(); ++i) {
      const Op& op = g_.ops()[i];
      op_ = &op;
      if (op.id.value != i)
        return fail(fmt::format("op '{}' has id {} but is stored at position {}", op.name,
                                op.id.value, i));
      if (op.name.empty()) return fail(fmt::format("op #{} has an empty name", i));
      for (std::size_t k = 0; k < op.inputs.size(); ++k) {
        TensorId id = op.inputs[k];
        if (id.value >= tensors.size())
          return fail_op(fmt::format("input {} refers to tensor id {}, which does not exist", k,
                                     id.value));
        if (defined[id.value]) continue;
        const Tensor& t = tensors[id.value];
        if (const Op* p = any_producer[id.value])
          return fail_op(p == &op ? fmt::format("input '{}' is the op's own output", t.name)
                                  : fmt::format("input '{}' is used before op '{}' produces it "
                                                "(ops must be in topological order; a cycle "
                                                "has no such order)",
                                                t.name, p->name));
        return fail_op(fmt::format("input '{}' is dangling: it is {} but no op produces it",
                                   t.name, role_name(t.role)));
      }
      for (TensorId id : op.outputs) {
        if (id.value >= tensors.size())
          return fail_op(fmt::format("an output refers to tensor id {}, which does not exist",
                                     id.value));
        const Tensor& t = tensors[id.value];
        if (is_graph_source(t.role))
          return fail_op(fmt::format("output '{}' is a graph {} and cannot be produced by an op",
                                     t.name, role_name(t.role)));
        if (produced_by[id.value])
          return fail_op(produced_by[id.value] == &op
                             ? fmt::format("output '{}' is listed twice", t.name)
                             : fmt::format("output '{}' is already produced by op '{}'", t.name,
                                           produced_by[id.value]->name));
        produced_by[id.value] = &op;
      }
      for (TensorId id : op.outputs) defined[id.value] = true;
      std::optional<std::string> why;
      switch (op.kind()) {
        case OpKind::Einsum: why = check_einsum(op, op.einsum()); break;
        case OpKind::Move: why = check_move(op, op.move()); break;
        case OpKind::Opaque: why = check_opaque(op, op.opaque()); break;
        case OpKind::Unanalyzed: why = check_unanalyzed(op, op.unanalyzed()); break;
        case OpKind::Repeat: why = check_repeat(op, op.repeat()); break;
        case OpKind::Collective: why = why_not_collective(g_, op); break;
      }
      if (why) return fail_op(*why);
    }
    op_ = nullptr;
    for (const Tensor& t : tensors)
      if (!is_graph_source(t.role) && !produced_by[t.id.value])
        return fail(fmt::format("tensor '{}' is dangling: it is {} but no op produces it", t.name,
                                role_name(t.role)));
    return std::nullopt;
  }

 private:
  std::optional<Problem> fail(std::string message) { return Problem{std::move(message), op_}; }
  std::optional<Problem> fail_op(const std::string& message) {
    return Problem{fmt::format("op '{}': {}", op_->name, message), op_};
  }

  const Tensor& in(const Op& op, std::size_t k) const { return g_.tensor(op.inputs[k]); }
  const Tensor& out(const Op& op) const { return g_.tensor(op.outputs[0]); }

  // ---- einsum ----

  std::optional<std::string> check_einsum(const Op& op, const EinsumOp& e) {
    if (op.outputs.size() != 1)
      return fmt::format("an einsum has exactly one output, found {}", op.outputs.size());
    if (e.operands.size() != op.inputs.size())
      return fmt::format("has {} input{} but {} operand subscript{}", op.inputs.size(),
                         op.inputs.size() == 1 ? "" : "s", e.operands.size(),
                         e.operands.size() == 1 ? "" : "s");
    const std::size_t n_idx = e.indices.size();
    syntax::IndexLookup lookup(e.indices);
    for (std::size_t i = 0; i < n_idx; ++i) {
      const IndexDim& d = e.indices[i];
      if (!syntax::is_identifier(d.name))
        return fmt::format("index #{} is named '{}', which is not an identifier "
                           "([A-Za-z_][A-Za-z0-9_.]*)",
                           i, d.name);
      if (lookup.find(d.name) != static_cast<IndexPos>(i))
        return fmt::format("index '{}' is declared twice", d.name);
      if (d.extent < 0)
        return fmt::format("index '{}' has extent {}; extents must be >= 0", d.name, d.extent);
    }
    const std::vector<std::int64_t> extents = e.extents();
    // An empty iteration space (an index of extent 0) reads no element: no subscript can
    // leave its tensor's bounds.
    const bool empty = std::find(extents.begin(), extents.end(), 0) != extents.end();
    std::vector<bool> used(n_idx, false);
    // Checks one subscript expression against a tensor dimension.
    // k: the operand number, or -1 for the output. Messages are formatted only on failure.
    auto check_dim = [&](const AffineExpr& a, int k, const Tensor& t, std::size_t d,
                         bool has_pad) -> std::optional<std::string> {
      auto what = [&] {
        return k >= 0 ? fmt::format("operand {} ('{}')", k, t.name)
                      : fmt::format("output '{}'", t.name);
      };
      for (const AffineTerm& term : a.terms()) {
        if (term.index < 0 || static_cast<std::size_t>(term.index) >= n_idx)
          return fmt::format("{} subscript {} refers to index #{} but the op has {} indices",
                             what(), d, term.index, n_idx);
        used[term.index] = true;
      }
      std::int64_t size = t.shape[d];
      if (std::optional<IndexPos> p = a.as_plain_index()) {
        if (extents[*p] != size)
          return fmt::format("index '{}' has extent {} but {} dimension {} has size {} (no "
                             "implicit broadcast: a dimension indexed by a plain index has "
                             "that index's extent)",
                             e.indices[*p].name, extents[*p], what(), d, size);
        return std::nullopt;
      }
      if (has_pad || empty) return std::nullopt;
      std::int64_t lo = a.min_value(extents), hi = a.max_value(extents);
      if (lo < 0 || hi >= size)
        return fmt::format("{} subscript {} '{}' ranges over [{}, {}], outside [0, {}); give "
                           "it a pad value or narrow the index extents",
                           what(), d, syntax::format_affine(a, e.indices), lo, hi, size);
      return std::nullopt;
    };
    for (std::size_t k = 0; k < e.operands.size(); ++k) {
      const Tensor& t = in(op, k);
      const Operand& o = e.operands[k];
      if (o.subscript.size() != t.shape.size())
        return fmt::format("operand {} ('{}') has rank {} but its subscript has {} expression{}",
                           k, t.name,
                           t.shape.size(), o.subscript.size(),
                           o.subscript.size() == 1 ? "" : "s");
      for (std::size_t d = 0; d < o.subscript.size(); ++d)
        if (auto why = check_dim(o.subscript[d], static_cast<int>(k), t, d, o.pad.has_value()))
          return why;
    }
    const Tensor& ot = out(op);
    if (e.output.size() != ot.shape.size())
      return fmt::format("output '{}' has rank {} but the output subscript has {} expression{}",
                         ot.name,
                         ot.shape.size(), e.output.size(), e.output.size() == 1 ? "" : "s");
    for (std::size_t d = 0; d < e.output.size(); ++d)
      if (auto why = check_dim(e.output[d], -1, ot, d, false)) return why;
    for (std::size_t c = 0; c < e.mask.size(); ++c)
      for (const AffineTerm& term : e.mask[c].expr.terms())
        if (term.index < 0 || static_cast<std::size_t>(term.index) >= n_idx)
          return fmt::format("mask constraint {} refers to index #{} but the op has {} indices",
                             c, term.index, n_idx);
    for (std::size_t i = 0; i < n_idx; ++i)
      if (!used[i])
        return fmt::format("index '{}' appears in no operand or output subscript (it would "
                           "repeat the computation {} times)",
                           e.indices[i].name, e.indices[i].extent);
    if (!e.combine.defined()) return std::string("has no combine expression");
    if (expr_depth(e.combine, syntax::kMaxExprDepth + 1) > syntax::kMaxExprDepth)
      return fmt::format("combine expression nests deeper than {} levels", syntax::kMaxExprDepth);
    std::vector<int> refs;
    collect_operands(e.combine, refs);
    std::vector<bool> op_used(e.operands.size(), false);
    for (int r : refs) {
      if (r < 0 || static_cast<std::size_t>(r) >= e.operands.size())
        return fmt::format("combine refers to ${} but the op has {} operand{}", r,
                           e.operands.size(), e.operands.size() == 1 ? "" : "s");
      op_used[r] = true;
    }
    for (std::size_t k = 0; k < op_used.size(); ++k)
      if (!op_used[k])
        return fmt::format("operand {} ('{}') is not used by the combine expression {}", k,
                           in(op, k).name, syntax::format_combine(e.combine));
    if (e.reduce == Reduce::None) {
      std::vector<IndexPos> red = e.reduced_indices();
      if (!red.empty())
        return fmt::format("reduce is none but index '{}' does not appear in the output "
                           "subscript (name a reduction, or add it to the output)",
                           e.indices[red[0]].name);
    }
    return std::nullopt;
  }

  // ---- data movement ----

  std::optional<std::string> need_list(const MoveOp& m, const std::string& key,
                                       std::size_t size, const std::vector<std::int64_t>** out) {
    std::string_view kind = move_kind_name(m.kind);
    *out = find_int_list(m.attrs, key);
    if (!*out) {
      if (m.attrs.contains(key))
        return fmt::format("{} attribute '{}' must be an integer list", kind, key);
      return fmt::format("{} needs attribute {}=[...] ({} integers)", kind, key, size);
    }
    if ((*out)->size() != size)
      return fmt::format("{} attribute '{}' has {} entries but needs {}", kind, key,
                         (*out)->size(), size);
    return std::nullopt;
  }

  std::optional<std::string> need_axis(const MoveOp& m, std::size_t rank, std::int64_t* axis) {
    std::string_view kind = move_kind_name(m.kind);
    std::optional<std::int64_t> a = find_int(m.attrs, "axis");
    if (!a) return fmt::format("{} needs an integer attribute axis=N", kind);
    if (*a < 0 || static_cast<std::size_t>(*a) >= rank)
      return fmt::format("{} axis {} is outside [0, {}) (write a non-negative axis)", kind, *a,
                         rank);
    *axis = *a;
    return std::nullopt;
  }

  // Gather and scatter address `axis` in one of two modes: "take" (index_select, embedding,
  // index_add: the index replaces the axis) or "elements" (torch.gather/scatter: the index has
  // the data's rank and picks one element per position). *take says which.
  std::optional<std::string> need_mode(const MoveOp& m, const char* default_mode, bool* take) {
    std::string_view kind = move_kind_name(m.kind);
    std::string mode = default_mode;
    if (find_attr(m.attrs, "mode")) {
      const std::string* s = find_string(m.attrs, "mode");
      if (!s || (*s != "take" && *s != "elements"))
        return fmt::format("{} attribute 'mode' must be \"take\" or \"elements\"", kind);
      mode = *s;
    }
    *take = mode == "take";
    return std::nullopt;
  }

  // data.shape[:axis] + index.shape + data.shape[axis+1:]: the shape a take-mode gather
  // produces (and a take-mode scatter reads from its source).
  static std::vector<std::int64_t> taken_shape(const std::vector<std::int64_t>& data,
                                               const std::vector<std::int64_t>& index,
                                               std::int64_t axis) {
    std::vector<std::int64_t> s(data.begin(), data.begin() + axis);
    s.insert(s.end(), index.begin(), index.end());
    s.insert(s.end(), data.begin() + axis + 1, data.end());
    return s;
  }

  // An elements-mode index has the data's rank and is no larger than it outside `axis`.
  static std::optional<std::string> elements_index_fits(const Tensor& idx, const Tensor& data,
                                                        std::int64_t axis, const char* kind) {
    if (idx.shape.size() != data.shape.size())
      return fmt::format("{} (elements) index '{}' {} must have the rank of its data '{}' {}",
                         kind, idx.name, shape_str(idx.shape), data.name, shape_str(data.shape));
    for (std::size_t d = 0; d < idx.shape.size(); ++d)
      if (static_cast<std::int64_t>(d) != axis && idx.shape[d] > data.shape[d])
        return fmt::format("{} (elements) index '{}' {} is larger than its data '{}' {} in "
                           "dimension {} (only axis {} may differ)",
                           kind, idx.name, shape_str(idx.shape), data.name,
                           shape_str(data.shape), d, axis);
    return std::nullopt;
  }

  std::optional<std::string> check_move(const Op& op, const MoveOp& m) {
    std::string_view kind = move_kind_name(m.kind);
    if (op.outputs.size() != 1)
      return fmt::format("a {} move has exactly one output, found {}", kind, op.outputs.size());
    std::size_t want_inputs = 1;
    switch (m.kind) {
      case MoveKind::View: case MoveKind::Copy: case MoveKind::Permute: case MoveKind::Slice:
      case MoveKind::Pad: case MoveKind::Cast:
        want_inputs = 1;
        break;
      case MoveKind::Concat: want_inputs = 0; break;  // one or more, checked below
      case MoveKind::Gather: want_inputs = 2; break;
      case MoveKind::Scatter: want_inputs = 3; break;
    }
    if (m.kind == MoveKind::Concat) {
      if (op.inputs.empty()) return std::string("concat needs at least one input");
    } else if (op.inputs.size() != want_inputs) {
      static constexpr const char* kSig[] = {"", "(x)", "(data, index)", "(data, index, src)"};
      return fmt::format("{} takes {} input{} {}, found {}", kind, want_inputs,
                         want_inputs == 1 ? "" : "s", kSig[want_inputs], op.inputs.size());
    }
    const Tensor& x = in(op, 0);
    const Tensor& y = out(op);
    auto xs_text = [&] { return fmt::format("input '{}' {}", x.name, shape_str(x.shape)); };
    auto ys_text = [&] { return fmt::format("output '{}' {}", y.name, shape_str(y.shape)); };
    auto same_dtype = [&](const Tensor& a) -> std::optional<std::string> {
      if (a.dtype == y.dtype) return std::nullopt;
      return fmt::format("{} changes the dtype from {} ('{}') to {} ('{}'); use a cast", kind,
                         dtype_name(a.dtype), a.name, dtype_name(y.dtype), y.name);
    };
    const u128 nx = *elements(x.shape), ny = *elements(y.shape);
    switch (m.kind) {
      case MoveKind::View: {
        if (x.dtype != y.dtype) {
          // A view as another dtype reinterprets the same bytes.
          if (nx * static_cast<u128>(dtype_bits(x.dtype)) !=
              ny * static_cast<u128>(dtype_bits(y.dtype)))
            return fmt::format("view of {} ({}) as {} ({}) changes the size in bits", xs_text(),
                               dtype_name(x.dtype), ys_text(), dtype_name(y.dtype));
          return std::nullopt;
        }
        if (nx == ny || broadcasts_to(x.shape, y.shape)) return std::nullopt;
        return fmt::format("view {} has {} elements but {} has {}, and it is not a "
                           "broadcast (expand) of it either",
                           ys_text(), u128_str(ny), xs_text(), u128_str(nx));
      }
      case MoveKind::Copy: {
        if (auto why = same_dtype(x)) return why;
        if (nx == ny || tiles(x.shape, y.shape)) return std::nullopt;
        return fmt::format("copy {} has {} elements but {} has {}, and it is not a broadcast or "
                           "repeat of it either",
                           ys_text(), u128_str(ny), xs_text(), u128_str(nx));
      }
      case MoveKind::Cast:
        if (x.shape != y.shape)
          return fmt::format("cast {} must have the shape of {}", ys_text(), xs_text());
        return std::nullopt;
      case MoveKind::Permute: {
        if (auto why = same_dtype(x)) return why;
        const std::vector<std::int64_t>* perm;
        if (auto why = need_list(m, "perm", x.shape.size(), &perm)) return why;
        std::vector<bool> seen(x.shape.size(), false);
        for (std::int64_t p : *perm) {
          if (p < 0 || static_cast<std::size_t>(p) >= seen.size() || seen[p])
            return fmt::format("permute perm={} is not a permutation of 0..{}",
                               shape_str(*perm), static_cast<std::int64_t>(seen.size()) - 1);
          seen[p] = true;
        }
        if (y.shape.size() != x.shape.size())
          return fmt::format("permute {} must have the rank of {}", ys_text(), xs_text());
        for (std::size_t i = 0; i < perm->size(); ++i)
          if (y.shape[i] != x.shape[(*perm)[i]])
            return fmt::format("permute {}: dimension {} has size {} but input dimension "
                               "perm[{}]={} has size {}",
                               ys_text(), i, y.shape[i], i, (*perm)[i], x.shape[(*perm)[i]]);
        return std::nullopt;
      }
      case MoveKind::Slice: {
        if (auto why = same_dtype(x)) return why;
        std::size_t r = x.shape.size();
        const std::vector<std::int64_t> *starts, *ends, *steps = nullptr;
        if (auto why = need_list(m, "starts", r, &starts)) return why;
        if (auto why = need_list(m, "ends", r, &ends)) return why;
        std::vector<std::int64_t> ones(r, 1);
        if (m.attrs.contains("steps")) {
          if (auto why = need_list(m, "steps", r, &steps)) return why;
        } else {
          steps = &ones;
        }
        if (y.shape.size() != r)
          return fmt::format("slice {} must have the rank of {}", ys_text(), xs_text());
        for (std::size_t d = 0; d < r; ++d) {
          std::int64_t s = (*starts)[d], en = (*ends)[d], st = (*steps)[d];
          if (st < 1) return fmt::format("slice step {} in dimension {} must be >= 1", st, d);
          if (s < 0 || s > en || en > x.shape[d])
            return fmt::format("slice dimension {}: need 0 <= start ({}) <= end ({}) <= size "
                               "({}) of {}",
                               d, s, en, x.shape[d], xs_text());
          auto len = static_cast<std::int64_t>(
              (static_cast<__int128>(en) - s + st - 1) / st);
          if (y.shape[d] != len)
            return fmt::format("slice {}: dimension {} has size {} but [{}:{}:{}] selects {}",
                               ys_text(),
                               d, y.shape[d], s, en, st, len);
        }
        return std::nullopt;
      }
      case MoveKind::Concat: {
        std::int64_t axis = 0;
        if (auto why = need_axis(m, y.shape.size(), &axis)) return why;
        u128 total = 0;
        for (std::size_t k = 0; k < op.inputs.size(); ++k) {
          const Tensor& t = in(op, k);
          if (auto why = same_dtype(t)) return why;
          if (t.shape.size() != y.shape.size())
            return fmt::format("concat input {} ('{}') {} has rank {} but {} has rank {}", k,
                               t.name, shape_str(t.shape), t.shape.size(), ys_text(),
                               y.shape.size());
          for (std::size_t d = 0; d < t.shape.size(); ++d)
            if (static_cast<std::int64_t>(d) != axis && t.shape[d] != y.shape[d])
              return fmt::format("concat input {} ('{}') {} differs from {} in dimension {} "
                                 "(only axis {} may differ)",
                                 k, t.name, shape_str(t.shape), ys_text(), d, axis);
          total += static_cast<u128>(t.shape[axis]);
        }
        if (total != static_cast<u128>(y.shape[axis]))
          return fmt::format("concat {}: axis {} has size {} but the inputs sum to {}", ys_text(),
                             axis,
                             y.shape[axis], u128_str(total));
        return std::nullopt;
      }
      case MoveKind::Pad: {
        if (auto why = same_dtype(x)) return why;
        std::size_t r = x.shape.size();
        const std::vector<std::int64_t>* pads;
        if (auto why = need_list(m, "pads", 2 * r, &pads)) return why;
        if (y.shape.size() != r)
          return fmt::format("pad {} must have the rank of {}", ys_text(), xs_text());
        for (std::size_t d = 0; d < r; ++d) {
          __int128 want = static_cast<__int128>(x.shape[d]) + (*pads)[2 * d] + (*pads)[2 * d + 1];
          if (want != y.shape[d])
            return fmt::format("pad {}: dimension {} has size {} but {} + {} (before) + {} "
                               "(after) = {}",
                               ys_text(), d, y.shape[d], x.shape[d], (*pads)[2 * d],
                               (*pads)[2 * d + 1],
                               static_cast<std::int64_t>(want));
        }
        if (find_attr(m.attrs, "value") && !find_number(m.attrs, "value"))
          return std::string("pad attribute 'value' must be a number");
        return std::nullopt;
      }
      case MoveKind::Gather: {
        if (auto why = same_dtype(x)) return why;
        const Tensor& idx = in(op, 1);
        if (!is_integer(idx.dtype))
          return fmt::format("gather index '{}' has dtype {}; it must be an integer type",
                             idx.name, dtype_name(idx.dtype));
        std::int64_t axis = 0;
        if (auto why = need_axis(m, x.shape.size(), &axis)) return why;
        bool take;
        if (auto why = need_mode(m, "take", &take)) return why;
        if (take) {
          std::vector<std::int64_t> want = taken_shape(x.shape, idx.shape, axis);
          if (y.shape != want)
            return fmt::format("gather (take) {} must have shape data[:axis] + index + "
                               "data[axis+1:] = {} (data '{}' {}, index '{}' {}, axis {})",
                               ys_text(), shape_str(want), x.name, shape_str(x.shape), idx.name,
                               shape_str(idx.shape), axis);
          return std::nullopt;
        }
        if (auto why = elements_index_fits(idx, x, axis, "gather")) return why;
        if (y.shape != idx.shape)
          return fmt::format("gather (elements) {} must have the shape of its index '{}' {}",
                             ys_text(), idx.name, shape_str(idx.shape));
        return std::nullopt;
      }
      case MoveKind::Scatter: {
        if (auto why = same_dtype(x)) return why;
        const Tensor& src = in(op, 2);
        if (auto why = same_dtype(src)) return why;
        const Tensor& idx = in(op, 1);
        if (!is_integer(idx.dtype))
          return fmt::format("scatter index '{}' has dtype {}; it must be an integer type",
                             idx.name, dtype_name(idx.dtype));
        if (y.shape != x.shape)
          return fmt::format("scatter {} must have the shape of its data {}", ys_text(), xs_text());
        std::int64_t axis = 0;
        if (auto why = need_axis(m, x.shape.size(), &axis)) return why;
        bool take;
        if (auto why = need_mode(m, "elements", &take)) return why;
        if (find_attr(m.attrs, "reduce")) {
          const std::string* r = find_string(m.attrs, "reduce");
          static constexpr const char* kReduces[] = {"none", "sum", "prod", "max", "min", "mean"};
          if (!r || std::find(std::begin(kReduces), std::end(kReduces), *r) == std::end(kReduces))
            return std::string("scatter attribute 'reduce' must be one of \"none\", \"sum\", "
                               "\"prod\", \"max\", \"min\", \"mean\"");
        }
        if (find_attr(m.attrs, "include_self")) {
          const std::optional<std::int64_t> v = find_int(m.attrs, "include_self");
          if (!v || (*v != 0 && *v != 1))
            return std::string("scatter attribute 'include_self' must be 0 or 1");
        }
        if (take) {
          std::vector<std::int64_t> want = taken_shape(x.shape, idx.shape, axis);
          if (src.shape != want)
            return fmt::format("scatter (take) source '{}' {} must have shape data[:axis] + "
                               "index + data[axis+1:] = {} (data {}, index '{}' {}, axis {})",
                               src.name, shape_str(src.shape), shape_str(want), xs_text(),
                               idx.name, shape_str(idx.shape), axis);
          return std::nullopt;
        }
        if (auto why = elements_index_fits(idx, x, axis, "scatter")) return why;
        if (src.shape.size() != idx.shape.size())
          return fmt::format("scatter (elements) source '{}' {} must have the rank of its index "
                             "'{}' {}",
                             src.name, shape_str(src.shape), idx.name, shape_str(idx.shape));
        for (std::size_t d = 0; d < idx.shape.size(); ++d)
          if (idx.shape[d] > src.shape[d])
            return fmt::format("scatter (elements) index '{}' {} is larger than its source '{}' "
                               "{} in dimension {}",
                               idx.name, shape_str(idx.shape), src.name, shape_str(src.shape), d);
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  // ---- opaque / unanalyzed ----

  std::optional<std::string> check_opaque(const Op& op, const OpaqueOp& o) {
    if (op.outputs.empty()) return std::string("an opaque op needs at least one output");
    if (o.function.empty()) return std::string("an opaque op needs a function name");
    for (const char* reserved : {"vector_flops", "special_ops", "bytes", "assumption"})
      if (o.attrs.contains(reserved))
        return fmt::format("attribute '{}' of an opaque op is a field, not an attribute",
                           reserved);
    return std::nullopt;
  }

  std::optional<std::string> check_unanalyzed(const Op& op, const UnanalyzedOp& u) {
    if (op.outputs.empty()) return std::string("an unanalyzed op needs at least one output");
    if (u.framework_op.empty()) return std::string("an unanalyzed op needs its framework op name");
    return std::nullopt;
  }

  // ---- repeat ----

  std::optional<std::string> check_repeat(const Op& op, const RepeatOp& r) {
    if (r.trips < 1) return fmt::format("a repeat op runs its body at least once, not {} times", r.trips);
    if (!r.body) return std::string("a repeat op needs a body");
    const Graph& body = *r.body;
    if (std::optional<Problem> p = Verifier(body).run())
      return fmt::format("in its body: {}", p->message);
    if (r.inputs.size() != op.inputs.size())
      return fmt::format("{} inputs but {} bindings", op.inputs.size(), r.inputs.size());
    if (r.outputs.size() != op.outputs.size())
      return fmt::format("{} outputs but {} results", op.outputs.size(), r.outputs.size());
    const std::size_t n = body.tensors().size();
    auto valid = [&](TensorId id) { return id.value < n; };
    auto name = [&](TensorId id) { return body.tensor(id).name; };
    auto same_type = [&](const Tensor& a, const Tensor& b) {
      return a.dtype == b.dtype && a.shape == b.shape;
    };
    auto type_str = [](const Tensor& t) {
      return fmt::format("{}{}", dtype_name(t.dtype), shape_str(t.shape));
    };
    std::vector<bool> bound(n, false);
    for (std::size_t k = 0; k < r.inputs.size(); ++k) {
      const RepeatInput& b = r.inputs[k];
      const Tensor& outer = in(op, k);
      if (!valid(b.param)) return fmt::format("binding {} names no body tensor", k);
      const Tensor& param = body.tensor(b.param);
      if (!is_graph_source(param.role))
        return fmt::format("'{}' binds body tensor '{}', which an op of the body produces",
                           outer.name, param.name);
      if (bound[b.param.value])
        return fmt::format("body tensor '{}' is bound twice", param.name);
      bound[b.param.value] = true;
      if (b.how == LoopInput::Sliced) {
        if (b.axis < 0 || b.axis >= static_cast<std::int64_t>(outer.shape.size()))
          return fmt::format("'{}' is sliced along axis {}, outside its rank {}", outer.name,
                             b.axis, outer.shape.size());
        if (outer.shape[static_cast<std::size_t>(b.axis)] != r.trips)
          return fmt::format("'{}' is sliced along axis {} of extent {}, but the body runs {} "
                             "times",
                             outer.name, b.axis, outer.shape[static_cast<std::size_t>(b.axis)],
                             r.trips);
        Tensor slice = outer;
        slice.shape.erase(slice.shape.begin() + b.axis);
        if (!same_type(slice, param))
          return fmt::format("a slice of '{}' along axis {} is {}, but '{}' is {}", outer.name,
                             b.axis, type_str(slice), param.name, type_str(param));
        continue;
      }
      if (!same_type(outer, param))
        return fmt::format("'{}' is {}, but the body tensor '{}' it binds is {}", outer.name,
                           type_str(outer), param.name, type_str(param));
      if (b.how != LoopInput::Carried) continue;
      if (!valid(b.next)) return fmt::format("the carried '{}' names no next value", param.name);
      const Tensor& next = body.tensor(b.next);
      if (!same_type(next, param))
        return fmt::format("the carried '{}' is {}, but its next value '{}' is {}", param.name,
                           type_str(param), next.name, type_str(next));
      if (!is_graph_source(next.role) && next.role != Role::Output)
        return fmt::format("the next value '{}' of the carried '{}' is not marked {{output}} in "
                           "the body",
                           next.name, param.name);
    }
    for (const Tensor& t : body.tensors())
      if (is_graph_source(t.role) && !bound[t.id.value])
        return fmt::format("body tensor '{}' is {} but no input binds it", t.name,
                           role_name(t.role));
    for (std::size_t k = 0; k < r.outputs.size(); ++k) {
      const RepeatOutput& o = r.outputs[k];
      const Tensor& outer = g_.tensor(op.outputs[k]);
      if (!valid(o.value)) return fmt::format("result {} names no body tensor", k);
      const Tensor& value = body.tensor(o.value);
      if (!is_graph_source(value.role) && value.role != Role::Output)
        return fmt::format("the result '{}' is not marked {{output}} in the body", value.name);
      Tensor expect = value;
      if (o.how == LoopOutput::Stacked) {
        if (o.axis < 0 || o.axis > static_cast<std::int64_t>(value.shape.size()))
          return fmt::format("'{}' stacks along axis {}, outside 0..{}", outer.name, o.axis,
                             value.shape.size());
        expect.shape.insert(expect.shape.begin() + o.axis, r.trips);
      }
      if (!same_type(outer, expect))
        return fmt::format("'{}' is {}, but {} '{}' gives {}", outer.name, type_str(outer),
                           o.how == LoopOutput::Stacked ? "stacking" : "the last", name(o.value),
                           type_str(expect));
    }
    return std::nullopt;
  }

  const Graph& g_;
  const Op* op_ = nullptr;
};

}  // namespace

std::optional<std::string> why_invalid(const Graph& g) {
  std::optional<Problem> p = Verifier(g).run();
  if (!p) return std::nullopt;
  return p->message;
}

void verify(const Graph& g) {
  std::optional<Problem> p = Verifier(g).run();
  if (!p) return;
  Origin origin;
  if (p->op) {
    origin = p->op->origin;
    // The message already names the op; keep the origin's op only when it says more (the
    // framework op it came from).
    if (origin.op == p->op->name) origin.op.clear();
  } else {
    origin.file = g.source;
  }
  throw UserError(UserError::Kind::InvalidGraph, p->message, origin);
}

}  // namespace solar::ir
