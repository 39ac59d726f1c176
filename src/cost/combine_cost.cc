#include "solar/cost/combine_cost.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace solar::cost {

using ir::ExprOp;

namespace {

// The cost of one combine node alone (its children not included): the function table.
CombineCost node_cost(ExprOp op) {
  const ir::ExprOpInfo& info = ir::expr_op_info(op);  // the function table (ir/expr.h)
  return {info.vector_flops, info.special_ops};
}

// Counts each structurally distinct non-leaf subtree of a combine tree once: the value an
// implementation computes once and reuses (`d * d` with d = x - m inlined twice; softplus's
// beta * x in its test and its exponent). A subtree is keyed by a hash of its structure; equal
// hashes are confirmed with ir::Expr's structural equality. A node shared by pointer (an Expr
// copied into two places shares its tree) is recognized without walking it again, so a
// deeply shared tree costs its distinct nodes, not its unfolded size. Combine trees are small:
// the nodes seen are kept in a flat list (inline up to kInline, so the common tree allocates
// nothing), indexed by hash beyond that.
class DistinctSubtrees {
 public:
  CombineCost cost;

  // Counts `e` and its subtrees not seen before; returns the hash of `e`'s structure.
  std::uint64_t visit(const ir::Expr& e) {
    const ExprOp op = e.op();
    if (op == ExprOp::Operand) return mix(0x9E3779B97F4A7C15ull, 1 + e.operand_index());
    if (op == ExprOp::Const) return mix(0xC2B2AE3D27D4EB4Full, const_bits(e.value()));
    // The address of a node's child list identifies the node (Expr exposes no other handle).
    const void* node = &e.children();
    if (const Seen* s = find_node(node)) return s->hash;
    std::uint64_t h = mix(0x165667B19E3779F9ull, static_cast<std::uint64_t>(op));
    for (const ir::Expr& child : e.children()) h = mix(h, visit(child));
    const bool again = find_equal(h, e);  // computed once already
    push({h, node, &e});  // by pointer too, so that another copy of this node is not walked
    if (again) return h;
    const CombineCost own = node_cost(op);
    cost.vector_flops += own.vector_flops;
    cost.special_ops += own.special_ops;
    return h;
  }

 private:
  struct Seen {
    std::uint64_t hash = 0;
    const void* node = nullptr;
    const ir::Expr* expr = nullptr;  // valid while the tree being walked lives
  };
  static constexpr std::size_t kInline = 16;

  static std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 33);
  }
  // Constants hash as ir::Expr compares them: 0 equals -0 and every NaN equals every NaN.
  static std::uint64_t const_bits(double v) {
    if (v != v) return 0x7FF8000000000000ull;
    if (v == 0) v = 0;
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
  }
  const Seen* find_node(const void* node) const {
    for (std::size_t i = 0; i < std::min(size_, kInline); ++i)
      if (inline_[i].node == node) return &inline_[i];
    auto it = by_node_.find(node);
    return it == by_node_.end() ? nullptr : &more_[it->second];
  }
  bool find_equal(std::uint64_t h, const ir::Expr& e) const {
    for (std::size_t i = 0; i < std::min(size_, kInline); ++i)
      if (inline_[i].hash == h && *inline_[i].expr == e) return true;
    auto [lo, hi] = by_hash_.equal_range(h);
    for (auto it = lo; it != hi; ++it)
      if (*more_[it->second].expr == e) return true;
    return false;
  }
  void push(const Seen& s) {
    if (size_ < kInline) {
      inline_[size_] = s;
    } else {
      by_node_.emplace(s.node, more_.size());
      by_hash_.emplace(s.hash, more_.size());
      more_.push_back(s);
    }
    ++size_;
  }

  Seen inline_[kInline];
  std::size_t size_ = 0;
  std::vector<Seen> more_;
  std::unordered_map<const void*, std::size_t> by_node_;
  std::unordered_multimap<std::uint64_t, std::size_t> by_hash_;
};

}  // namespace

CombineCost combine_cost(const ir::Expr& combine) {
  if (!combine.defined()) return {};
  DistinctSubtrees walk;
  walk.visit(combine);
  return walk.cost;
}

}  // namespace solar::cost
