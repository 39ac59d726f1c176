// Tensor parallelism: the collectives a rank graph needs where a sharded or partial value is
// read whole (all_gather, all_reduce; under --sp reduce_scatter), the local slices that need
// none, and the ops no rule covers, run replicated on gathered inputs.
#include "sharder.h"

namespace solar::parallel::detail {

void Sharder::coll(ir::CollectiveKind kind, Id x, Id out, const std::string& why,
                   ir::CollectiveReduction r, int axis) {
  ir::Op op;
  op.name = name(out);
  op.inputs = {{x}};
  op.outputs = {{out}};
  ir::CollectiveOp c;
  c.kind = kind;
  c.group = group_;
  c.reduction = r;
  c.axis = axis;
  op.body = c;
  push(std::move(op));
  collectives_.push_back({kind, name(x), why});
}

Id Sharder::whole_of(Id x, const std::string& why) {
  const Spec spec = spec_[x];
  if (!spec) return x;
  if (auto it = whole_.find(x); it != whole_.end()) return it->second;
  if (local_offsets_.count(x) || spec.kind == Spec::Kind::Flat)
    throw Unsupported(name(x) + ": offsets into a rank's block cannot be gathered");
  if (spec.kind == Spec::Kind::Shard && spec.parts != tp_)
    throw Unsupported(name(x) + ": a block that " + std::to_string(tp_ / spec.parts) +
                      " ranks share (key/value heads fewer than tp) cannot be gathered over "
                      "the tp group");
  Id out;
  if (auto it = view_src_.find(x); it != view_src_.end()) {
    // A reshape of a sharded tensor: its source gathered once (q, k and v read views of the
    // same normalized activations) and the whole reshaped.
    Id src = whole_of(it->second, why);
    out = add(name(x) + ".whole", x, full_shape(x));
    ir::Op op;
    op.name = name(out);
    op.inputs = {{src}};
    op.outputs = {{out}};
    op.body = ir::MoveOp{ir::MoveKind::View, {}};
    push(std::move(op));
  } else if (spec.kind == Spec::Kind::Partial) {
    out = add(name(x) + ".reduced", x, t_[x].shape);
    coll(ir::CollectiveKind::AllReduce, x, out, why, spec.reduction, 0);
  } else {
    out = add(name(x) + ".whole", x, full_shape(x));
    coll(ir::CollectiveKind::AllGather, x, out, why, ir::CollectiveReduction::Sum, spec.dim);
  }
  spec_[out] = {};
  whole_[x] = out;
  return out;
}

Id Sharder::settle(Id x, const std::string& why) {
  const Spec spec = spec_[x];
  if (spec.kind != Spec::Kind::Partial) return x;
  if (auto it = whole_.find(x); it != whole_.end()) return it->second;
  auto shape = t_[x].shape;
  // The tokens: the first dimension that divides, before the features (the last).
  std::optional<int> d;
  for (std::size_t k = 0; k + 1 < shape.size(); ++k)
    if (shape[k] > 1 && shape[k] % tp_ == 0) {
      d = static_cast<int>(k);
      break;
    }
  if (!sp_ || spec.reduction != ir::CollectiveReduction::Sum || !d) return whole_of(x, why);
  shape[*d] /= tp_;
  Id out = add(name(x) + ".scattered", x, shape);
  coll(ir::CollectiveKind::ReduceScatter, x, out, why, ir::CollectiveReduction::Sum, *d);
  spec_[out] = sh(*d);
  whole_[x] = out;
  return out;
}

Id Sharder::local_slice(Id x, int dim, std::int64_t parts) {
  auto key = std::make_tuple(x, dim, parts);
  if (auto it = local_slices_.find(key); it != local_slices_.end()) return it->second;
  auto shape = t_[x].shape;
  std::int64_t n = shape[dim] / parts;
  std::vector<std::int64_t> starts(shape.size(), 0), ends = shape, steps(shape.size(), 1);
  starts[dim] = block(parts) * n;
  ends[dim] = (block(parts) + 1) * n;
  shape[dim] = n;
  Id out = add(name(x) + ".rank_block", x, shape);
  ir::Op op;
  op.name = name(out);
  op.inputs = {{x}};
  op.outputs = {{out}};
  op.body = ir::MoveOp{ir::MoveKind::Slice, {{"starts", starts}, {"ends", ends}, {"steps", steps}}};
  push(std::move(op));
  spec_[out] = Spec::shard(dim, parts);
  local_slices_[key] = out;
  return out;
}

void Sharder::replicate(ir::Op op, const std::string& why) {
  bool any = false;
  for (auto x : op.inputs) any = any || static_cast<bool>(spec_[x.value]);
  if (any) replicated_.push_back(op.name + ": " + why);
  for (auto& x : op.inputs) x = {whole_of(x.value, why)};
  for (auto o : op.outputs) spec_[o.value] = {};
  push(std::move(op));
}

}  // namespace solar::parallel::detail
