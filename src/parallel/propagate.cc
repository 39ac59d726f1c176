// Tensor parallelism: the weights' splits propagated through the einsum indices, GSPMD-like
// (docs/parallel.md, "Parallel plans"), and the rank graph assembled from what the pass kept.
#include <algorithm>

#include "sharder.h"
#include "solar/ir/attrs.h"
#include "solar/ir/rewrite.h"
#include "solar/ir/shape.h"

namespace solar::parallel {

using detail::Id;
using detail::Sharder;
using detail::Spec;

std::string_view shard_kind_name(ShardKind k) {
  switch (k) {
    case ShardKind::Column:
      return "column";
    case ShardKind::Row:
      return "row";
    case ShardKind::Vocab:
      return "vocab";
    case ShardKind::Head:
      return "head";
  }
  SOLAR_UNREACHABLE("shard kind");
}

namespace detail {

std::int64_t prod(const std::vector<std::int64_t>& xs, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < std::min(to, xs.size()); ++i) p *= xs[i];
  return p;
}

bool uses(const ir::AffineExpr& e, ir::IndexPos i) {
  return std::any_of(e.terms().begin(), e.terms().end(),
                     [&](const ir::AffineTerm& t) { return t.index == i; });
}

namespace {

// A shape as Python prints a list: [1, 8, 64].
std::string list_str(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

Sharder::Sharder(const ir::Graph& g, const TensorParallelPlan& plan)
    : g_(g), tp_(plan.tp), rank_(plan.rank), sp_(plan.sequence_parallel), group_(plan.group) {
  for (const ir::Tensor& t : g.tensors()) {
    by_name_[t.name] = static_cast<Id>(t_.size());
    t_.push_back(t);
  }
  spec_.resize(t_.size());
  // A rule naming a tensor the live graph lacks (a weight only dead ops read) has nothing to
  // shard. A weight's gradient has the weight's whole shape and keeps its sharded dimension.
  for (const auto& [n, rule] : plan.weights)
    if (by_name_.count(n)) grad_like_.insert({t_[by_name_.at(n)].shape, rule.dim});
  for (const auto& [n, rule] : plan.weights)
    if (by_name_.count(n)) shard_source(by_name_.at(n), rule.dim, rule.parts ? rule.parts : tp_);
  for (const auto& [n, rule] : plan.state)
    if (by_name_.count(n)) shard_source(by_name_.at(n), rule.dim, rule.parts ? rule.parts : tp_);
}

void Sharder::shard_source(Id x, int dim, std::int64_t parts) {
  auto& shape = t_[x].shape;
  if (parts < 1 || tp_ % parts)
    throw Unsupported(name(x) + ": " + std::to_string(parts) + " blocks are not shared evenly by " +
                      "tp=" + std::to_string(tp_) + " ranks");
  if (dim < 0 || dim >= static_cast<int>(shape.size()) || shape[dim] % parts)
    throw Unsupported(
        name(x) + ": dimension " + std::to_string(dim) + " of " + list_str(shape) +
        " does not divide over " +
        (parts == tp_ ? "tp=" + std::to_string(tp_) : std::to_string(parts) + " blocks"));
  spec_[x] = Spec::shard(dim, parts);
  shape[dim] /= parts;
}

Id Sharder::add(const std::string& base, Id like, std::vector<std::int64_t> shape,
                std::optional<ir::DType> dtype) {
  std::string n = base;
  for (int i = 1; by_name_.count(n); ++i) n = base + std::to_string(i);
  ir::Tensor t;
  t.name = n;
  t.shape = std::move(shape);
  t.dtype = dtype.value_or(t_[like].dtype);
  t.role = ir::Role::Intermediate;
  Id id = static_cast<Id>(t_.size());
  by_name_[n] = id;
  t_.push_back(std::move(t));
  spec_.emplace_back();
  return id;
}

std::vector<std::int64_t> Sharder::full_shape(Id x) const {
  auto s = t_[x].shape;
  if (spec_[x].kind == Spec::Kind::Shard) s[spec_[x].dim] *= spec_[x].parts;
  return s;
}

void Sharder::set_out(Id out, const Spec& s) {
  spec_[out] = s;
  if (s.kind == Spec::Kind::Shard) t_[out].shape[s.dim] /= s.parts;
}

std::optional<int> Sharder::view_dim(Id x, int d, const std::vector<std::int64_t>& dst,
                                     std::int64_t parts) const {
  // The dimension of the reshape after the same number of elements holds the same blocks.
  std::int64_t prefix = prod(full_shape(x), 0, d);
  for (std::size_t e = 0; e < dst.size(); ++e)
    if (prod(dst, 0, e) == prefix && dst[e] > 1 && dst[e] % parts == 0) return static_cast<int>(e);
  return std::nullopt;
}

ir::Op& Sharder::push(ir::Op op) {
  ops_.push_back(std::move(op));
  return ops_.back();
}

void Sharder::copy_ops() {
  for (const ir::Op& op : g_.ops()) push(op);
}

void Sharder::run() {
  consumers_.assign(g_.tensors().size(), {});
  for (const ir::Op& op : g_.ops())
    for (ir::TensorId x : op.inputs) consumers_[x.value].push_back(&op);
  wanted_ = wanted_gradients();
  std::map<Id, Id> offsets_of = strided_offset_targets();
  for (const ir::Op& op : g_.ops()) {
    switch (op.kind()) {
      case ir::OpKind::Einsum:
        einsum(op);
        break;
      case ir::OpKind::Move:
        move(op);
        break;
      case ir::OpKind::Opaque:
        if (op.opaque().function == "strided_offsets" && offsets_of.count(op.outputs[0].value)) {
          strided_offsets(op, offsets_of.at(op.outputs[0].value));
          break;
        }
        [[fallthrough]];
      case ir::OpKind::Unanalyzed:
      case ir::OpKind::Repeat:
      case ir::OpKind::Collective:
        replicate(op, "a " + std::string(ir::op_kind_name(op.kind())) + " op has no sharding rule");
        break;
    }
  }
}

std::optional<ir::IndexPos> Sharder::var_at(const ir::EinsumOp& e, const ir::AffineExpr& sub,
                                            std::int64_t size) const {
  // The index whose blocks a dimension of `size` holds: a mixed-radix composition
  // outer*c + inner... with the outer index on top (an index of extent 1 reads only 0).
  if (sub.constant_term() != 0) return std::nullopt;
  std::vector<ir::AffineTerm> vars;
  for (const auto& t : sub.terms())
    if (e.indices[t.index].extent > 1) vars.push_back(t);
  if (vars.empty()) return std::nullopt;
  ir::AffineTerm outer = vars[0];
  std::int64_t p = 1;
  for (const auto& t : vars) {
    if (t.coef > outer.coef) outer = t;
    p *= e.indices[t.index].extent;
  }
  if (p != size || outer.coef * e.indices[outer.index].extent != size) return std::nullopt;
  return outer.index;
}

ir::IndexPos Sharder::flat_operand(ir::Op& op, std::size_t n, const Spec& spec) {
  // An einsum reading a rank's flattened block through one strided subscript (a transpose
  // written over the flat view): the subscript rewritten to the block's own strides.
  auto& e = std::get<ir::EinsumOp>(op.body);
  auto& subs = e.operands[n].subscript;
  if (subs.size() != 1 || subs[0].constant_term() != 0 || subs[0].terms().empty())
    throw Unsupported(op.name + ": reads a rank's flattened block through a subscript of " +
                      std::to_string(subs.size()) + " dimensions or with an offset");
  const auto& root = spec.root;
  std::vector<std::int64_t> full(root.size()), local(root.size());
  auto local_root = root;
  local_root[spec.dim] /= spec.parts;
  for (std::size_t j = 0; j < root.size(); ++j) {
    full[j] = prod(root, j + 1);
    local[j] = prod(local_root, j + 1);
  }
  std::map<ir::IndexPos, std::size_t> dims;
  auto taken = [&](std::size_t j) {
    return std::any_of(dims.begin(), dims.end(), [&](const auto& kv) { return kv.second == j; });
  };
  for (const auto& t : subs[0].terms()) {
    std::int64_t ext = e.indices[t.index].extent;
    if (ext == 1) continue;  // always 0: its term reads nothing
    std::vector<std::size_t> js, exact;
    for (std::size_t j = 0; j < root.size(); ++j)
      if (full[j] == t.coef && !taken(j)) js.push_back(j);
    for (std::size_t j : js)
      if (root[j] == ext) exact.push_back(j);
    if (!exact.empty()) js = exact;
    if (js.empty())
      throw Unsupported(op.name + ": term " + e.indices[t.index].name + "*" +
                        std::to_string(t.coef) + " strides no dimension of the flattened block");
    dims[t.index] = js[0];
  }
  std::vector<ir::IndexPos> sharded;
  for (const auto& [v, j] : dims)
    if (static_cast<int>(j) == spec.dim) sharded.push_back(v);
  if (sharded.size() != 1)
    throw Unsupported(op.name + ": does not read the flattened block's sharded dimension");
  std::vector<ir::AffineTerm> terms;
  for (const auto& t : subs[0].terms())
    terms.push_back({t.index, dims.count(t.index) ? local[dims.at(t.index)] : t.coef});
  subs[0] = ir::AffineExpr::make(std::move(terms), 0);
  return sharded[0];
}

bool Sharder::shard_wanted(ir::Op& op, int d) {
  // A weight's gradient made from replicated operands only (the head's, from the loss's
  // all-ones gradient): each rank computes its block, reading its slice of the operands
  // along the index of the weight's sharded dimension.
  auto& e = std::get<ir::EinsumOp>(op.body);
  auto sub = e.output[d].as_plain_index();
  if (!sub || e.indices[*sub].extent % tp_ || !e.mask.empty()) return false;
  std::vector<std::pair<std::size_t, int>> reads;
  for (std::size_t n = 0; n < op.inputs.size(); ++n)
    for (std::size_t k = 0; k < e.operands[n].subscript.size(); ++k) {
      const auto& osub = e.operands[n].subscript[k];
      if (osub.as_plain_index() == sub)
        reads.push_back({n, static_cast<int>(k)});
      else if (uses(osub, *sub))
        return false;
    }
  for (auto [n, k] : reads) op.inputs[n] = {local_slice(op.inputs[n].value, k, tp_)};
  e.indices[*sub].extent /= tp_;
  Id out = op.outputs[0].value;
  push(op);
  set_out(out, sh(d));
  return true;
}

std::map<Id, int> Sharder::wanted_gradients() const {
  // einsum output -> the dimension along which a graph output it becomes (through views and
  // copies of the same shape) is a sharded weight's gradient.
  auto producer = [&](Id x) -> const ir::Op* {
    if (x >= g_.tensors().size()) return nullptr;
    auto p = g_.producer({x});
    return p ? &g_.op(*p) : nullptr;
  };
  std::map<Id, int> out;
  for (const ir::Tensor& t : g_.tensors()) {
    if (t.role != ir::Role::Output) continue;
    std::optional<int> dim;
    for (const auto& [shape, d] : grad_like_)
      if (shape == t.shape) {
        dim = d;
        break;
      }
    if (!dim) continue;
    Id x = t.id.value;
    for (const ir::Op* p = producer(x);
         p && p->kind() == ir::OpKind::Move &&
         (p->move().kind == ir::MoveKind::View || p->move().kind == ir::MoveKind::Copy) &&
         p->inputs.size() == 1;
         p = producer(x))
      x = p->inputs[0].value;
    const ir::Op* p = producer(x);
    if (!p) continue;
    if (p->kind() == ir::OpKind::Einsum && g_.tensors()[x].shape == t.shape) {
      out[x] = *dim;
    } else if (p->kind() == ir::OpKind::Move && p->move().kind == ir::MoveKind::Scatter &&
               *dim == 0) {
      const auto* mode = ir::find_string(p->move().attrs, "mode");
      if (!mode || *mode != "take" || ir::find_int(p->move().attrs, "axis").value_or(0) != 0)
        continue;
      // An embedding's gradient: rows added into a table of zeros.
      out[x] = 0;
      Id base = p->inputs[0].value;
      const ir::Op* b = producer(base);
      if (b && b->kind() == ir::OpKind::Einsum && b->inputs.empty()) out[base] = 0;
    }
  }
  return out;
}

void Sharder::einsum(const ir::Op& in) {
  ir::Op op = in;
  auto& e = std::get<ir::EinsumOp>(op.body);
  for (auto& x : op.inputs) x = {settle(x.value, op.name + " needs the reduced value")};
  std::vector<Cand> cands;
  for (std::size_t n = 0; n < op.inputs.size(); ++n) {
    Id x = op.inputs[n].value;
    const Spec spec = spec_[x];
    if (spec.kind == Spec::Kind::Flat) {
      cands.push_back({flat_operand(op, n, spec), n, false, spec.parts});
    } else if (spec) {
      auto v = var_at(e, e.operands[n].subscript[spec.dim], full_shape(x)[spec.dim]);
      if (!v)
        op.inputs[n] = {whole_of(x, op.name + " reads it along no index")};
      else
        cands.push_back({*v, n, t_[x].role == ir::Role::Weight, spec.parts});
    }
  }
  Id out = op.outputs[0].value;
  if (cands.empty()) {
    if (wanted_.count(out) && shard_wanted(op, wanted_.at(out))) return;
    push(op);
    set_out(out, {});
    return;
  }
  Cand pick = cands[0];
  for (const Cand& c : cands)
    if (c.weight) {
      pick = c;
      break;
    }
  const ir::IndexPos chosen = pick.var;
  for (const Cand& c : cands)
    if (c.var != chosen)
      op.inputs[c.n] = {
          whole_of(op.inputs[c.n].value, op.name + " is sharded along another index")};
  std::erase_if(cands, [&](const Cand& c) { return c.var != chosen; });
  const std::string& iname = e.indices[chosen].name;
  bool masked = std::any_of(e.mask.begin(), e.mask.end(),
                            [&](const ir::AffineConstraint& c) { return uses(c.expr, chosen); });
  const std::int64_t parts = pick.parts;
  bool mixed =
      std::any_of(cands.begin(), cands.end(), [&](const Cand& c) { return c.parts != parts; });
  if (mixed || (e.indices[chosen].extent % parts && !masked))
    if (shared_heads(op, cands)) return;
  if (mixed || e.indices[chosen].extent % parts || masked)
    return replicate(op, "index " + iname + " does not divide or is masked");
  // Where the output keeps the index, or how the ranks' values combine where it is reduced.
  std::optional<int> out_dim;
  for (std::size_t d = 0; d < e.output.size(); ++d)
    if (uses(e.output[d], chosen)) {
      out_dim = static_cast<int>(d);
      break;
    }
  std::optional<ir::CollectiveReduction> partial;
  if (!out_dim) {
    switch (e.reduce) {
      case ir::Reduce::Sum:
        partial = ir::CollectiveReduction::Sum;
        break;
      case ir::Reduce::Max:
        partial = ir::CollectiveReduction::Max;
        break;
      case ir::Reduce::Min:
        partial = ir::CollectiveReduction::Min;
        break;
      case ir::Reduce::Prod:
        partial = ir::CollectiveReduction::Prod;
        break;
      case ir::Reduce::None:
      case ir::Reduce::Any:
      case ir::Reduce::All:
        break;
    }
    // Ranks sharing a block would count it more than once.
    if (!partial || parts != tp_)
      return replicate(
          op, "a " + std::string(ir::reduce_name(e.reduce)) + " reduction over a sharded index");
  } else if (var_at(e, e.output[*out_dim], t_[out].shape[*out_dim]) != chosen) {
    return replicate(op, "its output reads index " + iname + " with other terms");
  }
  for (std::size_t n = 0; n < op.inputs.size(); ++n) {
    Id x = op.inputs[n].value;
    if (spec_[x]) continue;
    for (std::size_t d = 0; d < e.operands[n].subscript.size(); ++d) {
      const auto& sub = e.operands[n].subscript[d];
      if (!uses(sub, chosen)) continue;
      if (var_at(e, sub, t_[x].shape[d]) != chosen)
        return replicate(op, t_[x].name + " reads index " + iname + " with other terms");
      // A replicated operand read along the sharded index: its rank's block, sliced locally.
      op.inputs[n] = {local_slice(x, static_cast<int>(d), parts)};
    }
  }
  e.indices[chosen].extent /= parts;
  push(op);
  set_out(out, out_dim ? Spec::shard(*out_dim, parts) : Spec::partial(*partial));
}

bool Sharder::shared_heads(ir::Op& op, const std::vector<Cand>& cands) {
  // Grouped-query attention with fewer key/value heads than ranks: the query heads h*c + j
  // (h a key/value head, j its query heads, extent c) split in tp blocks, the key/value heads
  // h in kv blocks, each shared by tp / kv ranks. Each rank keeps one h (extent 1) and c / (tp
  // / kv) of its j: the query heads of its block read the key/value head it holds.
  auto& e = std::get<ir::EinsumOp>(op.body);
  const ir::IndexPos h = cands[0].var;
  const std::int64_t kv = e.indices[h].extent;
  if (kv >= tp_ || tp_ % kv) return false;
  const std::int64_t share = tp_ / kv;
  std::optional<ir::IndexPos> j;
  // h*c + j with c = extent(j): the index of the query heads within their group.
  auto inner = [&](const ir::AffineExpr& sub) -> std::optional<ir::IndexPos> {
    if (sub.constant_term() != 0 || sub.terms().size() != 2) return std::nullopt;
    for (std::size_t k = 0; k < 2; ++k) {
      const auto& outer = sub.terms()[k];
      const auto& in = sub.terms()[1 - k];
      if (outer.index == h && in.coef == 1 && outer.coef == e.indices[in.index].extent)
        return in.index;
    }
    return std::nullopt;
  };
  for (const Cand& c : cands) {
    const auto& sub = e.operands[c.n].subscript[spec_[op.inputs[c.n].value].dim];
    if (c.parts == tp_) {
      auto in = inner(sub);
      if (!in || (j && *j != *in)) return false;
      j = in;
    } else if (c.parts != kv || sub.as_plain_index() != h) {
      return false;
    }
  }
  if (!j || e.indices[*j].extent % share) return false;
  for (const auto& m : e.mask)
    if (uses(m.expr, h) || uses(m.expr, *j)) return false;
  // Every other read of h or j must be one of the sharded dimensions above.
  for (std::size_t n = 0; n < op.inputs.size(); ++n) {
    const Spec& s = spec_[op.inputs[n].value];
    for (std::size_t d = 0; d < e.operands[n].subscript.size(); ++d) {
      const auto& sub = e.operands[n].subscript[d];
      bool sharded_dim = s.kind == Spec::Kind::Shard && static_cast<int>(d) == s.dim;
      if (!sharded_dim && (uses(sub, h) || uses(sub, *j))) return false;
    }
  }
  std::optional<int> out_dim;
  for (std::size_t d = 0; d < e.output.size(); ++d) {
    if (!uses(e.output[d], h) && !uses(e.output[d], *j)) continue;
    if (out_dim || inner(e.output[d]) != j) return false;
    out_dim = static_cast<int>(d);
  }
  if (!out_dim) return false;
  const std::int64_t local_j = e.indices[*j].extent / share;
  auto local = [&](ir::AffineExpr& sub) {
    if (inner(sub)) sub = ir::AffineExpr::make({{h, local_j}, {*j, 1}}, 0);
  };
  for (auto& o : e.operands)
    for (auto& sub : o.subscript) local(sub);
  for (auto& sub : e.output) local(sub);
  e.indices[h].extent = 1;
  e.indices[*j].extent = local_j;
  Id out = op.outputs[0].value;
  push(op);
  set_out(out, sh(*out_dim));
  return true;
}

ShardedGraph Sharder::finish(const std::set<std::string>& keep_sharded) {
  std::map<Id, Id> renames;
  std::size_t n0 = t_.size();
  for (Id x = 0; x < n0; ++x) {
    if (t_[x].role != ir::Role::Output || !spec_[x]) continue;
    const Spec spec = spec_[x];
    if (spec.kind == Spec::Kind::Shard && keep_sharded.count(t_[x].name)) continue;
    // A weight's gradient stays with its shard (each rank updates its own block).
    if (spec.kind == Spec::Kind::Shard && grad_like_.count({full_shape(x), spec.dim})) continue;
    if (spec.kind == Spec::Kind::Flat)
      throw Unsupported(t_[x].name + ": an output that is a rank's flattened block");
    if (spec.kind == Spec::Kind::Shard && spec.parts != tp_)
      throw Unsupported(t_[x].name +
                        ": an output in blocks that ranks share cannot be gathered "
                        "over the tp group");
    Id local = add(t_[x].name + ".local", x, t_[x].shape);
    spec_[local] = spec;
    renames[x] = local;
  }
  for (ir::Op& op : ops_) {
    for (auto& o : op.outputs)
      if (renames.count(o.value)) o = {renames.at(o.value)};
    for (auto& i : op.inputs)
      if (renames.count(i.value)) i = {renames.at(i.value)};
  }
  for (ir::Op& op : ops_) {
    auto it = by_name_.find(op.name);
    if (it != by_name_.end() && renames.count(it->second))
      op.name = t_[renames.at(it->second)].name;
  }
  for (const auto& [x, local] : renames) {
    const Spec spec = spec_[local];
    t_[x].shape = spec.kind == Spec::Kind::Shard ? full_shape(local) : t_[local].shape;
    const std::string why = "the step's output is whole";
    if (spec.kind == Spec::Kind::Partial)
      coll(ir::CollectiveKind::AllReduce, local, x, why, spec.reduction, 0);
    else
      coll(ir::CollectiveKind::AllGather, local, x, why, ir::CollectiveReduction::Sum, spec.dim);
    spec_[x] = {};
  }
  std::vector<bool> used(t_.size());
  for (const ir::Op& op : ops_) {
    for (auto i : op.inputs) used[i.value] = true;
    for (auto o : op.outputs) used[o.value] = true;
  }
  ShardedGraph r{ir::empty_like(g_), std::move(collectives_), std::move(replicated_)};
  std::vector<ir::TensorId> map(t_.size());
  for (Id x = 0; x < t_.size(); ++x)
    if (used[x] || t_[x].role != ir::Role::Intermediate) map[x] = r.graph.add_tensor(t_[x]);
  for (ir::Op& op : ops_) {
    for (auto& i : op.inputs) i = map[i.value];
    for (auto& o : op.outputs) o = map[o.value];
    op.id = {};
    r.graph.add_op(std::move(op));
  }
  return r;
}

}  // namespace detail

ir::Graph remove_dead_ops(const ir::Graph& g) {
  std::vector<bool> live(g.tensors().size()), keep(g.ops().size());
  for (const ir::Tensor& t : g.tensors())
    if (t.role == ir::Role::Output) live[t.id.value] = true;
  for (std::size_t k = g.ops().size(); k-- > 0;) {
    const ir::Op& op = g.ops()[k];
    bool p2p =
        op.kind() == ir::OpKind::Collective && (op.collective().kind == ir::CollectiveKind::Send ||
                                                op.collective().kind == ir::CollectiveKind::Recv);
    if (p2p || std::any_of(op.outputs.begin(), op.outputs.end(),
                           [&](ir::TensorId o) { return live[o.value]; })) {
      keep[k] = true;
      for (auto i : op.inputs) live[i.value] = true;
    }
  }
  std::vector<bool> used(g.tensors().size());
  for (std::size_t k = 0; k < g.ops().size(); ++k)
    if (keep[k]) {
      for (auto i : g.ops()[k].inputs) used[i.value] = true;
      for (auto o : g.ops()[k].outputs) used[o.value] = true;
    }
  ir::Rewriter rw(g);
  for (const ir::Tensor& t : g.tensors())
    if (used[t.id.value] || t.role == ir::Role::Output) rw.keep(t.id);
  for (std::size_t k = 0; k < g.ops().size(); ++k)
    if (keep[k]) rw.keep(g.ops()[k]);
  return std::move(rw).finish();
}

namespace {

// Outputs written into a state input (through views, scatters and copies): they stay sharded.
std::set<std::string> state_outputs(const ir::Graph& g,
                                    const std::map<std::string, StateRule>& state) {
  std::set<std::string> out;
  for (const ir::Tensor& t : g.tensors()) {
    if (t.role != ir::Role::Output) continue;
    ir::TensorId x = t.id;
    for (auto p = g.producer(x); p && g.op(*p).kind() == ir::OpKind::Move; p = g.producer(x)) {
      auto k = g.op(*p).move().kind;
      if (k != ir::MoveKind::View && k != ir::MoveKind::Scatter && k != ir::MoveKind::Copy) break;
      x = g.op(*p).inputs[0];
    }
    if (state.count(g.tensor(x).name)) out.insert(t.name);
  }
  return out;
}

}  // namespace

ShardedGraph shard_tensor_parallel(const ir::Graph& g, const TensorParallelPlan& plan) {
  if (plan.tp < 1 || plan.rank < 0 || plan.rank >= plan.tp)
    throw Unsupported("rank " + std::to_string(plan.rank) + " of tp=" + std::to_string(plan.tp));
  ir::Graph live = remove_dead_ops(g);
  Sharder s(live, plan);
  if (plan.tp > 1)
    s.run();
  else
    s.copy_ops();
  return s.finish(state_outputs(live, plan.state));
}

}  // namespace solar::parallel
