// Re-association of contraction chains (reassociate.h): groups, their sum-product networks
// over refined labels, the best binary order, and the rewritten graph.
#include "solar/insight/reassociate.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "solar/ir/rewrite.h"
#include "solar/ir/verify.h"
#include "solar/util/errors.h"

namespace solar::insight {
namespace {

using ir::AffineExpr;
using ir::Graph;
using ir::IndexPos;
using ir::Op;
using ir::OpId;
using ir::OpKind;
using ir::Tensor;
using ir::TensorId;

// Exhaustive search up to this many leaves (3^n subset pairs); greedy beyond.
constexpr int kMaxExhaustiveLeaves = 12;
// Labels a network may have (one 64-bit mask per set of labels).
constexpr int kMaxLabels = 64;

// ---------------------------------------------------------------- which ops

// Every subscript a plain index, no index twice in one subscript list.
bool plain_distinct(const std::vector<AffineExpr>& sub) {
  std::set<IndexPos> seen;
  for (const AffineExpr& a : sub) {
    std::optional<IndexPos> p = a.as_plain_index();
    if (!p || !seen.insert(*p).second) return false;
  }
  return true;
}

// sum_r A[...] * B[...] over plain subscripts, no mask, something reduced.
bool is_contraction(const Op& op) {
  if (op.kind() != OpKind::Einsum || op.inputs.size() != 2) return false;
  const ir::EinsumOp& e = op.einsum();
  if (e.reduce != ir::Reduce::Sum || !e.combine.is_product_of_two_operands() || !e.mask.empty())
    return false;
  for (const ir::Operand& o : e.operands)
    if (o.pad || !plain_distinct(o.subscript)) return false;
  return plain_distinct(e.output) && !e.reduced_indices().empty();
}

// The output dimensions of a copy `out[i...] = flat[sum c_k i_k]` read from a one-dimensional
// tensor, most significant first, when the subscript walks the flat tensor exactly once in
// mixed radix (the coefficients, sorted, are 1, e_1, e_1*e_2, ... and cover its size): the
// copy is then a permute of the flat tensor's row-major factors (how the torch lowering
// materializes a transpose of a view). Empty otherwise.
std::vector<int> radix_order(const ir::EinsumOp& e, std::int64_t size) {
  if (e.operands.size() != 1 || e.operands[0].subscript.size() != 1) return {};
  const AffineExpr& a = e.operands[0].subscript[0];
  if (a.constant_term() != 0) return {};
  std::vector<std::pair<std::int64_t, IndexPos>> terms;  // (coefficient, index)
  for (const ir::AffineTerm& t : a.terms()) {
    if (t.coef <= 0) return {};
    if (e.indices[t.index].extent > 1) terms.emplace_back(t.coef, t.index);
  }
  std::sort(terms.begin(), terms.end());
  std::int64_t stride = 1;
  for (const auto& [coef, idx] : terms) {
    if (coef != stride) return {};
    stride *= e.indices[idx].extent;
  }
  if (stride != size) return {};
  std::vector<int> dims;  // output dimension of each term, most significant first
  for (auto it = terms.rbegin(); it != terms.rend(); ++it) {
    int d = -1;
    for (std::size_t k = 0; k < e.output.size(); ++k)
      if (e.output[k].as_plain_index() == it->second) d = static_cast<int>(k);
    if (d < 0) return {};
    dims.push_back(d);
  }
  return dims.empty() ? std::vector<int>{-1} : dims;  // {-1}: a copy of a single element
}

// Ops that only relabel dimensions: views (reshapes, expands), permutes, same-shape copies and
// identity einsums that transpose (also out of a flat view, radix_order).
bool is_relabel(const Graph& g, const Op& op) {
  if (op.inputs.size() != 1 || op.outputs.size() != 1) return false;
  if (op.kind() == OpKind::Move) {
    switch (op.move().kind) {
      case ir::MoveKind::View: case ir::MoveKind::Permute: return true;
      case ir::MoveKind::Copy:
        return g.tensor(op.inputs[0]).shape == g.tensor(op.outputs[0]).shape;
      case ir::MoveKind::Slice: case ir::MoveKind::Concat: case ir::MoveKind::Pad:
      case ir::MoveKind::Gather: case ir::MoveKind::Scatter: case ir::MoveKind::Cast:
        return false;
    }
    return false;
  }
  if (op.kind() != OpKind::Einsum) return false;
  const ir::EinsumOp& e = op.einsum();
  if (e.reduce != ir::Reduce::None || e.combine.op() != ir::ExprOp::Operand || !e.mask.empty() ||
      e.operands[0].pad || !plain_distinct(e.output) ||
      g.tensor(op.inputs[0]).dtype != g.tensor(op.outputs[0]).dtype)
    return false;
  const std::vector<std::int64_t>& in = g.tensor(op.inputs[0]).shape;
  if (in.size() == 1 && !radix_order(e, in[0]).empty()) return true;  // out of a flat view
  if (!plain_distinct(e.operands[0].subscript)) return false;
  // a transposing copy: the output's indices are the operand's, in another order
  std::multiset<IndexPos> a, b;
  for (const AffineExpr& x : e.operands[0].subscript) a.insert(*x.as_plain_index());
  for (const AffineExpr& x : e.output) b.insert(*x.as_plain_index());
  return a == b;
}

// ---------------------------------------------------------------- groups

struct Groups {
  std::vector<int> parent;  // union-find over ops (only contractions are roots of sets)
  int find(int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
};

// Ops some of whose results reach a graph output (every op when the graph marks none).
std::vector<bool> live_ops(const Graph& g) {
  std::vector<bool> live_tensor(g.tensors().size(), false), live(g.ops().size(), false);
  bool any_output = false;
  for (const Tensor& t : g.tensors())
    if (t.role == ir::Role::Output) live_tensor[t.id.value] = any_output = true;
  if (!any_output) return std::vector<bool>(g.ops().size(), true);
  for (auto it = g.ops().rbegin(); it != g.ops().rend(); ++it) {
    for (TensorId t : it->outputs) live[it->id.value] = live[it->id.value] || live_tensor[t.value];
    if (live[it->id.value])
      for (TensorId t : it->inputs) live_tensor[t.value] = true;
  }
  return live;
}

// Tensors read by more than one input slot of a live op, or outputs of the graph (reads by
// dead ops, such as the unused alias views of a transpose, do not count).
std::vector<bool> shared_tensors(const Graph& g) {
  const std::vector<bool> live = live_ops(g);
  std::vector<int> uses(g.tensors().size(), 0);
  for (const Op& op : g.ops())
    if (live[op.id.value])
      for (TensorId t : op.inputs) ++uses[t.value];
  std::vector<bool> shared(g.tensors().size(), false);
  for (const Tensor& t : g.tensors())
    shared[t.id.value] = uses[t.id.value] != 1 || t.role == ir::Role::Output;
  return shared;
}

// ---------------------------------------------------------------- the network

// A tensor occurrence: an internal tensor of the group (once) or a use of an outside tensor.
struct Occurrence {
  TensorId tensor;
  bool leaf = false;
  std::vector<std::vector<std::int64_t>> factors;  // per dimension (extent 1: none)
  std::vector<std::vector<int>> slots;             // per dimension, per factor
};

// The common refinement of two factorizations of the same number, or nullopt when a factor
// of one straddles two of the other (a reshape that moves data, not a relabeling).
std::optional<std::vector<std::int64_t>> refine(const std::vector<std::int64_t>& a,
                                                const std::vector<std::int64_t>& b) {
  std::vector<std::int64_t> out;
  std::size_t i = 0, j = 0;
  std::int64_t x = 0, y = 0;
  while (true) {
    if (x == 0 && i < a.size()) x = a[i++];
    if (y == 0 && j < b.size()) y = b[j++];
    if (x == 0 && y == 0) return out;
    if (x == 0 || y == 0) return std::nullopt;
    if (x == y) {
      out.push_back(x);
      x = y = 0;
    } else if (x < y && y % x == 0) {
      out.push_back(x);
      y /= x;
      x = 0;
    } else if (y < x && x % y == 0) {
      out.push_back(y);
      x /= y;
      y = 0;
    } else {
      return std::nullopt;
    }
  }
}

std::vector<std::int64_t> concat(const std::vector<std::vector<std::int64_t>>& lists,
                                 const std::vector<int>& dims) {
  std::vector<std::int64_t> out;
  for (int d : dims) out.insert(out.end(), lists[d].begin(), lists[d].end());
  return out;
}

// Splits a refined concatenation back into the factor lists of `dims` (their products
// are boundaries of the refinement).
void split_back(const std::vector<std::int64_t>& common, std::vector<std::vector<std::int64_t>>& lists,
                const std::vector<int>& dims) {
  std::size_t k = 0;
  for (int d : dims) {
    std::int64_t want = 1;
    for (std::int64_t f : lists[d]) want *= f;
    std::vector<std::int64_t> mine;
    std::int64_t have = 1;
    while (have < want) have *= common[k], mine.push_back(common[k++]);
    lists[d] = std::move(mine);
  }
}

struct Constraint {
  enum Kind { Equal, Reshape } kind;
  int a, b;                    // occurrences
  std::vector<int> da, db;     // dims of a and b (Equal: one each)
};

std::vector<std::int64_t> factors_of(std::int64_t extent) {
  return extent == 1 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{extent};
}

int index_of(const std::vector<int>& v, int x) {
  return static_cast<int>(std::find(v.begin(), v.end(), x) - v.begin());
}

class NetworkBuilder {
 public:
  NetworkBuilder(const Graph& g, const std::vector<OpId>& ops) : g_(g), ops_(ops) {}

  // Fills r's network; false when the group is not a pure sum-product (a reshape that moves
  // data, a diagonal, too many labels).
  bool build(Reassociation& r) {
    std::map<std::uint32_t, int> internal;  // tensor -> occurrence
    for (OpId id : ops_) internal[g_.op(id).outputs[0].value] = -1;
    auto occurrence = [&](TensorId t, bool leaf) {
      occ_.push_back({t, leaf, {}, {}});
      for (std::int64_t e : g_.tensor(t).shape) occ_.back().factors.push_back(factors_of(e));
      return static_cast<int>(occ_.size() - 1);
    };
    for (OpId id : ops_) {
      const Op& op = g_.op(id);
      std::vector<int> ins;
      for (TensorId t : op.inputs) {
        auto it = internal.find(t.value);
        ins.push_back(it != internal.end() ? it->second : occurrence(t, true));
      }
      const int out = occurrence(op.outputs[0], false);
      internal[op.outputs[0].value] = out;
      if (!constrain(op, ins, out)) return false;
    }
    root_ = internal.at(r.output.value);
    if (!refine_all()) return false;
    return label(r);
  }

 private:
  bool constrain(const Op& op, const std::vector<int>& ins, int out) {
    auto equal = [&](int a, int da, int b, int db) { cons_.push_back({Constraint::Equal, a, b, {da}, {db}}); };
    if (op.kind() == OpKind::Einsum) {
      const ir::EinsumOp& e = op.einsum();
      if (op.inputs.size() == 1 && !plain_distinct(e.operands[0].subscript)) {
        // the flat input's factors, in output dimensions (is_relabel checked the radix)
        std::vector<int> dims = radix_order(e, g_.tensor(op.inputs[0]).shape[0]);
        if (dims == std::vector<int>{-1}) dims.clear();
        cons_.push_back({Constraint::Reshape, ins[0], out, {0}, dims});
        return true;
      }
      for (std::size_t k = 0; k < e.operands.size(); ++k)
        for (std::size_t d = 0; d < e.operands[k].subscript.size(); ++d) {
          const IndexPos p = *e.operands[k].subscript[d].as_plain_index();
          // the index's first use: the output, else the first operand that has it
          bool linked = false;
          for (std::size_t od = 0; od < e.output.size() && !linked; ++od)
            if (*e.output[od].as_plain_index() == p)
              equal(ins[k], static_cast<int>(d), out, static_cast<int>(od)), linked = true;
          for (std::size_t j = 0; j < k && !linked; ++j)
            for (std::size_t dj = 0; dj < e.operands[j].subscript.size() && !linked; ++dj)
              if (*e.operands[j].subscript[dj].as_plain_index() == p)
                equal(ins[k], static_cast<int>(d), ins[j], static_cast<int>(dj)), linked = true;
        }
      return true;
    }
    const std::vector<std::int64_t>& is = g_.tensor(op.inputs[0]).shape;
    const std::vector<std::int64_t>& os = g_.tensor(op.outputs[0]).shape;
    switch (op.move().kind) {
      case ir::MoveKind::Permute: {
        const auto& perm = std::get<std::vector<std::int64_t>>(op.move().attrs.at("perm"));
        for (std::size_t k = 0; k < perm.size(); ++k)
          equal(out, static_cast<int>(k), ins[0], static_cast<int>(perm[k]));
        return true;
      }
      case ir::MoveKind::Copy:
        for (std::size_t d = 0; d < is.size(); ++d)
          equal(out, static_cast<int>(d), ins[0], static_cast<int>(d));
        return true;
      case ir::MoveKind::View: {
        std::int64_t ni = 1, no = 1;
        for (std::int64_t x : is) ni *= x;
        for (std::int64_t x : os) no *= x;
        if (ni == no) {  // a reshape: the two sides refine each other
          std::vector<int> di(is.size()), dout(os.size());
          std::iota(di.begin(), di.end(), 0);
          std::iota(dout.begin(), dout.end(), 0);
          cons_.push_back({Constraint::Reshape, ins[0], out, di, dout});
          return true;
        }
        // an expand: aligned right; broadcast dimensions are new labels
        if (os.size() < is.size()) return false;
        const std::size_t lead = os.size() - is.size();
        for (std::size_t d = 0; d < is.size(); ++d) {
          if (is[d] == os[d + lead]) equal(ins[0], static_cast<int>(d), out, static_cast<int>(d + lead));
          else if (is[d] != 1) return false;
        }
        return true;
      }
      default: return false;
    }
  }

  bool refine_all() {
    for (bool changed = true; changed;) {
      changed = false;
      for (const Constraint& c : cons_) {
        auto& fa = occ_[c.a].factors;
        auto& fb = occ_[c.b].factors;
        const std::vector<std::int64_t> la = concat(fa, c.da), lb = concat(fb, c.db);
        std::optional<std::vector<std::int64_t>> common = refine(la, lb);
        if (!common) return false;
        if (*common == la && *common == lb) continue;
        split_back(*common, fa, c.da);
        split_back(*common, fb, c.db);
        changed = true;
      }
    }
    return true;
  }

  int find(int x) { return uf_[x] == x ? x : uf_[x] = find(uf_[x]); }

  std::vector<int> flat_slots(const Occurrence& o, const std::vector<int>& dims) const {
    std::vector<int> out;
    for (int d : dims) out.insert(out.end(), o.slots[d].begin(), o.slots[d].end());
    return out;
  }

  bool label(Reassociation& r) {
    std::vector<std::int64_t> slot_extent;
    for (Occurrence& o : occ_) {
      o.slots.resize(o.factors.size());
      for (std::size_t d = 0; d < o.factors.size(); ++d)
        for (std::int64_t f : o.factors[d]) {
          o.slots[d].push_back(static_cast<int>(slot_extent.size()));
          slot_extent.push_back(f);
        }
    }
    uf_.resize(slot_extent.size());
    std::iota(uf_.begin(), uf_.end(), 0);
    for (const Constraint& c : cons_) {
      std::vector<int> a = flat_slots(occ_[c.a], c.da), b = flat_slots(occ_[c.b], c.db);
      if (a.size() != b.size()) return false;
      for (std::size_t k = 0; k < a.size(); ++k) uf_[find(a[k])] = find(b[k]);
    }
    std::map<int, int> label_of;  // root slot -> label
    auto labels = [&](const Occurrence& o) {
      std::vector<int> out;
      for (const auto& dim : o.slots)
        for (int s : dim) {
          auto [it, fresh] = label_of.emplace(find(s), static_cast<int>(label_of.size()));
          if (fresh) r.extents.push_back(slot_extent[s]);
          out.push_back(it->second);
        }
      return out;
    };
    for (const Occurrence& o : occ_) {
      if (!o.leaf) continue;
      std::vector<int> l = labels(o);
      if (std::set<int>(l.begin(), l.end()).size() != l.size()) return false;  // a diagonal
      r.leaves.push_back({o.tensor, std::move(l)});
    }
    r.output_labels = labels(occ_[root_]);
    std::set<int> out(r.output_labels.begin(), r.output_labels.end());
    if (out.size() != r.output_labels.size()) return false;
    // Every output label must come from a leaf (an expanded dimension of the result is a
    // broadcast the group does not compute: leave such groups alone).
    std::set<int> seen;
    for (const Leaf& l : r.leaves) seen.insert(l.labels.begin(), l.labels.end());
    for (int x : r.output_labels)
      if (!seen.contains(x)) return false;
    return static_cast<int>(r.extents.size()) <= kMaxLabels;
  }

  const Graph& g_;
  const std::vector<OpId>& ops_;
  std::vector<Occurrence> occ_;
  std::vector<Constraint> cons_;
  std::vector<int> uf_;
  int root_ = -1;
};

// ---------------------------------------------------------------- the best order

using Mask = std::uint64_t;

struct Search {
  const Reassociation& r;
  std::vector<Mask> leaf_labels;  // label set of each leaf
  std::vector<bool> weight;       // leaf is a weight or constant
  Mask output = 0;
  std::vector<Mask> by_set;       // labels(set) for every set (exhaustive search only)

  Search(const Graph& g, const Reassociation& r) : r(r) {
    for (const Leaf& l : r.leaves) {
      Mask m = 0;
      for (int x : l.labels) m |= Mask{1} << x;
      leaf_labels.push_back(m);
      const ir::Role role = g.tensor(l.tensor).role;
      weight.push_back(role == ir::Role::Weight || role == ir::Role::Constant);
    }
    for (int x : r.output_labels) output |= Mask{1} << x;
  }

  Count product(Mask m) const {
    Count p(1);
    for (; m; m &= m - 1) p *= Count(static_cast<std::uint64_t>(r.extents[__builtin_ctzll(m)]));
    return p;
  }
  Mask labels(std::uint32_t set) const {
    if (set < by_set.size()) return by_set[set];
    Mask m = 0;
    for (std::size_t k = 0; k < leaf_labels.size(); ++k)
      if (set >> k & 1) m |= leaf_labels[k];
    return m;
  }
  void tabulate(int n) {
    by_set.assign(std::size_t{1} << n, 0);
    for (std::uint32_t set = 1; set < by_set.size(); ++set)
      by_set[set] = by_set[set & (set - 1)] | leaf_labels[__builtin_ctz(set)];
  }
  // The labels a partial result over `set` keeps: those still needed outside it.
  Mask open(std::uint32_t set, std::uint32_t all) const {
    return labels(set) & (labels(all & ~set) | output);
  }
  bool absorbed(std::uint32_t set) const {
    for (std::size_t k = 0; k < weight.size(); ++k)
      if ((set >> k & 1) && !weight[k]) return false;
    return true;
  }
};

// A result of the search: per-run MACs, then total MACs, then the tree.
struct Plan {
  Count run, total;
  std::uint32_t left = 0;  // the split (0 for a leaf)
  bool better_than(const Plan& o) const {
    return run != o.run ? run < o.run : total < o.total;
  }
};

void emit(const Search& s, const std::vector<Plan>& plans, std::uint32_t set, std::uint32_t all,
          std::vector<Step>& steps, std::vector<int>& id_of, int n) {
  if (__builtin_popcount(set) == 1) {
    id_of[set] = __builtin_ctz(set);
    return;
  }
  const std::uint32_t a = plans[set].left, b = set & ~a;
  emit(s, plans, a, all, steps, id_of, n);
  emit(s, plans, b, all, steps, id_of, n);
  Step st;
  st.a = id_of[a];
  st.b = id_of[b];
  const Mask keep = s.open(set, all);
  for (int x = 0; x < kMaxLabels; ++x)
    if (keep >> x & 1) st.labels.push_back(x);
  st.macs = s.product(s.open(a, all) | s.open(b, all));
  st.absorbed = s.absorbed(set);
  id_of[set] = n + static_cast<int>(steps.size());
  steps.push_back(std::move(st));
}

// The final step keeps the output labels in the output's order.
void order_output(const Reassociation& r, std::vector<Step>& steps) {
  if (!steps.empty()) steps.back().labels = r.output_labels;
}

std::vector<Step> exhaustive(const Search& s, int n, Count& run, Count& absorbed) {
  const std::uint32_t all = (std::uint32_t{1} << n) - 1;
  std::vector<Plan> plans(all + 1);
  for (std::uint32_t set = 1; set <= all; ++set) {
    if (__builtin_popcount(set) == 1) continue;
    Plan best{Count(~std::uint64_t{0}) * Count(~std::uint64_t{0}), Count(0), 0};
    bool found = false;
    const std::uint32_t low = set & (~set + 1);  // halve the pairs: `a` holds the lowest leaf
    for (std::uint32_t a = (set - 1) & set; a; a = (a - 1) & set) {
      if (!(a & low)) continue;
      const std::uint32_t b = set & ~a;
      const Count step = s.product(s.open(a, all) | s.open(b, all));
      Plan p{plans[a].run + plans[b].run + (s.absorbed(set) ? Count(0) : step),
             plans[a].total + plans[b].total + step, a};
      if (!found || p.better_than(best)) best = p, found = true;
    }
    plans[set] = best;
  }
  std::vector<Step> steps;
  std::vector<int> id_of(all + 1, -1);
  emit(s, plans, all, all, steps, id_of, n);
  run = plans[all].run;
  absorbed = plans[all].total - plans[all].run;
  return steps;
}

// opt_einsum's greedy: repeatedly contract the pair whose step is cheapest.
std::vector<Step> greedy(const Search& s, int n, Count& run, Count& absorbed) {
  struct Part { std::uint32_t set; int id; };
  std::vector<Part> parts;
  for (int k = 0; k < n; ++k) parts.push_back({std::uint32_t{1} << k, k});
  const std::uint32_t all = (std::uint32_t{1} << n) - 1;
  std::vector<Step> steps;
  run = absorbed = Count(0);
  while (parts.size() > 1) {
    std::size_t bi = 0, bj = 1;
    Count best;
    bool found = false;
    for (std::size_t i = 0; i < parts.size(); ++i)
      for (std::size_t j = i + 1; j < parts.size(); ++j) {
        const Count c = s.product(s.open(parts[i].set, all) | s.open(parts[j].set, all));
        if (!found || c < best) best = c, bi = i, bj = j, found = true;
      }
    Step st;
    st.a = parts[bi].id;
    st.b = parts[bj].id;
    const std::uint32_t set = parts[bi].set | parts[bj].set;
    const Mask keep = s.open(set, all);
    for (int x = 0; x < kMaxLabels; ++x)
      if (keep >> x & 1) st.labels.push_back(x);
    st.macs = best;
    st.absorbed = s.absorbed(set);
    (st.absorbed ? absorbed : run) += best;
    parts[bi] = {set, n + static_cast<int>(steps.size())};
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(bj));
    steps.push_back(std::move(st));
  }
  return steps;
}

// ---------------------------------------------------------------- text

std::string label_name(int x) {
  static const char* kLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  return x < 52 ? std::string(1, kLetters[x]) : fmt::format("l{}", x);
}

std::string labels_text(const std::vector<int>& ls) {
  std::string s;
  for (int x : ls) s += label_name(x);
  return s;
}

void describe(const Graph& g, Reassociation& r) {
  std::vector<std::string> parts;
  for (const Leaf& l : r.leaves)
    parts.push_back(fmt::format("{}[{}]", g.tensor(l.tensor).name, labels_text(l.labels)));
  r.expression = fmt::format("{} = sum {}", fmt::format("{}[{}]", g.tensor(r.output).name,
                                                         labels_text(r.output_labels)),
                             fmt::join(parts, " * "));
  std::vector<std::string> text;
  for (const Leaf& l : r.leaves) text.push_back(g.tensor(l.tensor).name);
  for (const Step& s : r.best)
    text.push_back(fmt::format("({} . {}){}", text[s.a], text[s.b], s.absorbed ? "'" : ""));
  r.order = text.empty() ? "" : text.back();
}

Count contraction_macs(const Op& op) {
  Count n(1);
  for (const ir::IndexDim& d : op.einsum().indices) n *= Count(static_cast<std::uint64_t>(d.extent));
  return n;
}

}  // namespace

std::vector<Reassociation> find_reassociations(const Graph& g) {
  const std::vector<bool> shared = shared_tensors(g);
  const std::size_t n = g.ops().size();
  Groups groups{std::vector<int>(n)};
  std::iota(groups.parent.begin(), groups.parent.end(), 0);
  std::vector<std::vector<OpId>> relabels(n);  // by contraction: relabel ops feeding it
  std::vector<bool> contraction(n, false);
  for (const Op& op : g.ops()) contraction[op.id.value] = is_contraction(op);
  for (const Op& op : g.ops()) {
    if (!contraction[op.id.value]) continue;
    for (TensorId t : op.inputs) {
      std::vector<OpId> chain;
      // back through relabelings of single-use intermediates
      while (!shared[t.value]) {
        std::optional<OpId> p = g.producer(t);
        if (!p || !is_relabel(g, g.op(*p))) break;
        chain.push_back(*p);
        t = g.op(*p).inputs[0];
      }
      std::optional<OpId> p = g.producer(t);
      relabels[op.id.value].insert(relabels[op.id.value].end(), chain.begin(), chain.end());
      if (!shared[t.value] && p && contraction[p->value])
        groups.parent[groups.find(static_cast<int>(p->value))] = groups.find(static_cast<int>(op.id.value));
    }
  }
  std::map<int, std::vector<OpId>> members;
  std::map<int, int> count;
  for (std::size_t k = 0; k < n; ++k) {
    if (!contraction[k]) continue;
    const int root = groups.find(static_cast<int>(k));
    ++count[root];
    members[root].push_back(OpId{static_cast<std::uint32_t>(k)});
    for (OpId r : relabels[k]) members[root].push_back(r);
  }
  std::vector<Reassociation> out;
  for (auto& [root, ops] : members) {
    if (count[root] < 2) continue;
    std::sort(ops.begin(), ops.end());
    Reassociation r;
    r.ops = ops;
    r.contractions = count[root];
    r.output = g.op(OpId{static_cast<std::uint32_t>(root)}).outputs[0];
    for (OpId id : ops)
      if (contraction[id.value]) r.macs_as_written += contraction_macs(g.op(id));
    if (!NetworkBuilder(g, r.ops).build(r)) continue;
    // Leaves in the order the graph declares their tensors: orders read like the program.
    std::stable_sort(r.leaves.begin(), r.leaves.end(),
                     [](const Leaf& a, const Leaf& b) { return a.tensor < b.tensor; });
    const int leaves = static_cast<int>(r.leaves.size());
    if (leaves > 31) continue;
    Search s(g, r);
    r.exhaustive = leaves <= kMaxExhaustiveLeaves;
    if (r.exhaustive) s.tabulate(leaves);
    r.best = r.exhaustive ? exhaustive(s, leaves, r.macs_least, r.macs_absorbed)
                          : greedy(s, leaves, r.macs_least, r.macs_absorbed);
    order_output(r, r.best);
    describe(g, r);
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(),
            [](const Reassociation& a, const Reassociation& b) { return a.output < b.output; });
  return out;
}

Graph reassociated(const Graph& g, const Reassociation& r) {
  SOLAR_CHECK(!r.best.empty(), "a reassociation without steps");
  ir::Rewriter rw(g);
  // The group's intermediates go; every other tensor keeps its name and role.
  std::set<std::uint32_t> in_group, dropped;
  for (OpId id : r.ops) {
    in_group.insert(id.value);
    if (g.op(id).outputs[0] != r.output) dropped.insert(g.op(id).outputs[0].value);
  }
  // Ops outside the group that read an intermediate are dead (a live reader would have made
  // it shared): they go too, with what they produce.
  std::set<std::uint32_t> dead_readers;
  for (const Op& op : g.ops()) {
    if (in_group.contains(op.id.value)) continue;
    const bool reads_dropped = std::any_of(op.inputs.begin(), op.inputs.end(),
                                           [&](TensorId t) { return dropped.contains(t.value); });
    if (!reads_dropped) continue;
    dead_readers.insert(op.id.value);
    for (TensorId t : op.outputs) {
      SOLAR_CHECK(g.tensor(t).role != ir::Role::Output, "a live reader of a group's intermediate");
      dropped.insert(t.value);
    }
  }
  for (const Tensor& t : g.tensors())
    if (!dropped.contains(t.id.value)) rw.keep(t.id);
  const OpId last = r.ops.back();
  const Op& root = g.op(last);
  const ir::DType dt = g.tensor(r.output).dtype;
  auto shape_of = [&](const std::vector<int>& labels) {
    std::vector<std::int64_t> s;
    for (int x : labels) s.push_back(r.extents[x]);
    return s;
  };
  auto add = [&](Op op) {
    op.origin = root.origin;
    op.origin.op = "insight::reassociated";
    rw.add_op(std::move(op));
  };
  auto temp = [&](const std::string& suffix, std::vector<std::int64_t> shape, ir::DType d) {
    Tensor t;
    t.name = fmt::format("{}.reassoc{}", g.tensor(r.output).name, suffix);
    t.shape = std::move(shape);
    t.dtype = d;
    return rw.add_tensor(std::move(t));
  };
  auto view = [&](TensorId from, TensorId to) {
    Op op;
    op.inputs = {from};
    op.outputs = {to};
    op.body = ir::MoveOp{ir::MoveKind::View, {}};
    add(std::move(op));
  };
  for (const Op& op : g.ops()) {
    if (dead_readers.contains(op.id.value)) continue;
    if (!in_group.contains(op.id.value)) {
      rw.keep(op);
      continue;
    }
    if (op.id != last) continue;
    const TensorId result = rw.map(r.output);
    std::vector<TensorId> value;  // by operand number: leaves, then steps
    std::vector<std::vector<int>> labels;
    for (std::size_t k = 0; k < r.leaves.size(); ++k) {
      const Leaf& l = r.leaves[k];
      const std::vector<std::int64_t> shape = shape_of(l.labels);
      TensorId t = rw.map(l.tensor);
      if (g.tensor(l.tensor).shape != shape) {
        TensorId v = temp(fmt::format(".leaf{}", k), shape, g.tensor(l.tensor).dtype);
        view(t, v);
        t = v;
      }
      value.push_back(t);
      labels.push_back(l.labels);
    }
    for (std::size_t k = 0; k < r.best.size(); ++k) {
      const Step& s = r.best[k];
      const bool final_step = k + 1 == r.best.size();
      const std::vector<std::int64_t> shape = shape_of(s.labels);
      TensorId t = final_step && g.tensor(r.output).shape == shape
                       ? result : temp(fmt::format(".step{}", k), shape, dt);
      std::vector<int> idx = labels[s.a];
      for (int x : labels[s.b])
        if (std::find(idx.begin(), idx.end(), x) == idx.end()) idx.push_back(x);
      ir::EinsumOp e;
      for (int x : idx) e.indices.push_back({label_name(x), r.extents[x]});
      auto sub = [&](const std::vector<int>& ls) {
        std::vector<AffineExpr> v;
        for (int x : ls) v.push_back(AffineExpr::index(index_of(idx, x)));
        return v;
      };
      e.operands = {{sub(labels[s.a]), std::nullopt}, {sub(labels[s.b]), std::nullopt}};
      e.output = sub(s.labels);
      e.combine = ir::Expr::make(ir::ExprOp::Mul, {ir::Expr::operand(0), ir::Expr::operand(1)});
      e.reduce = idx.size() > s.labels.size() ? ir::Reduce::Sum : ir::Reduce::None;
      Op step;
      step.inputs = {value[s.a], value[s.b]};
      step.outputs = {t};
      step.body = std::move(e);
      add(std::move(step));
      value.push_back(t);
      labels.push_back(s.labels);
    }
    if (value.back() != result) view(value.back(), result);
  }
  Graph out = std::move(rw).finish();
  ir::verify(out);
  return out;
}

}  // namespace solar::insight
