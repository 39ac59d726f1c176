// Tensor parallelism through data movement: a reshape keeps the dimension after the same
// number of elements, permutations, whole slices, pads and concatenations along other axes
// keep theirs; vocab-parallel lookups and gradients mask the ids outside a rank's rows; the
// offsets of an in-place cache update become the rank's own.
#include <algorithm>

#include "sharder.h"
#include "solar/ir/attrs.h"

namespace solar::parallel::detail {

namespace {

ir::Expr op2(ir::ExprOp o, ir::Expr a, ir::Expr b) { return ir::Expr::make(o, {a, b}); }
ir::Expr num(double v) { return ir::Expr::constant(v); }

// An elementwise einsum over `shape` of inputs whose subscripts are leading prefixes of it.
ir::EinsumOp elementwise(const std::vector<std::int64_t>& shape,
                         const std::vector<std::size_t>& operand_ranks, ir::Expr combine) {
  ir::EinsumOp e;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    e.indices.push_back({"i" + std::to_string(k), shape[k]});
    e.output.push_back(ir::AffineExpr::index(static_cast<int>(k)));
  }
  for (std::size_t r : operand_ranks) {
    ir::Operand o;
    for (std::size_t k = 0; k < r; ++k)
      o.subscript.push_back(ir::AffineExpr::index(static_cast<int>(k)));
    e.operands.push_back(std::move(o));
  }
  e.combine = std::move(combine);
  e.reduce = ir::Reduce::None;
  return e;
}

}  // namespace

void Sharder::move(const ir::Op& in) {
  ir::Op op = in;
  auto& mv = std::get<ir::MoveOp>(op.body);
  const ir::MoveKind kind = mv.kind;
  const Id out = op.outputs[0].value;
  const std::string why =
      op.name + " (" + std::string(ir::move_kind_name(kind)) + ") needs it whole";
  for (auto& x : op.inputs) {
    Id a = alias_.count(x.value) ? alias_.at(x.value) : x.value;
    x = {settle(a, op.name + " needs the reduced value")};
  }
  if (kind != ir::MoveKind::View)
    for (auto x : op.inputs)
      SOLAR_CHECK(!alias_.count(x.value), "an aliased view read by a non-view");
  std::vector<Id> ins;
  std::vector<Spec> specs;
  for (auto x : op.inputs) {
    ins.push_back(x.value);
    specs.push_back(spec_[x.value]);
  }
  if (kind == ir::MoveKind::Scatter && wanted_.count(out) && specs.size() == 3 &&
      specs[0] == sh(0) && !specs[1] && !specs[2])
    return vocab_scatter(op);
  if (std::none_of(specs.begin(), specs.end(), [](const Spec& s) { return bool(s); })) {
    push(op);
    set_out(out, {});
    return;
  }
  ir::Attrs& attrs = mv.attrs;
  const auto* mode = ir::find_string(attrs, "mode");
  if (kind == ir::MoveKind::View && specs[0].kind == Spec::Kind::Flat) {
    if (t_[out].shape != specs[0].root)
      throw Unsupported(op.name + ": a reshape of a rank's flattened block");
    Spec s = Spec::shard(specs[0].dim, specs[0].parts);
    push(op);
    return set_out(out, s);
  }
  if (kind == ir::MoveKind::Cast || kind == ir::MoveKind::Copy ||
      (kind == ir::MoveKind::View && ins.size() == 1)) {
    if (specs[0].kind != Spec::Kind::Shard) return replicate(op, why);
    std::optional<int> d = specs[0].dim;
    if (kind == ir::MoveKind::View) {
      d = view_dim(ins[0], *d, t_[out].shape, specs[0].parts);
      const auto& cs = consumers_[out];
      if (!d && !cs.empty() && std::all_of(cs.begin(), cs.end(), [](const ir::Op* c) {
            return c->kind() == ir::OpKind::Move && c->move().kind == ir::MoveKind::View;
          })) {
        // A reshape into a shape that splits the block (a transpose of a size-1 dimension
        // written as flatten + view): its consumers reshape the source directly.
        alias_[out] = ins[0];
        return;
      }
      if (!d && t_[out].shape.size() == 1) {
        // A flattening (the element view of an in-place update): this rank's block
        // flattened, read only by element scatters into it and by the reshape back.
        Spec flat{Spec::Kind::Flat, specs[0].dim, ir::CollectiveReduction::Sum, full_shape(ins[0]),
                  specs[0].parts};
        push(op);
        spec_[out] = flat;
        t_[out].shape = {prod(t_[ins[0]].shape)};
        if (local_offsets_.count(ins[0])) local_offsets_.insert(out);
        return;
      }
    }
    if (!d) return replicate(op, op.name + " (view) splits the sharded dimension");
    if (kind == ir::MoveKind::View) view_src_[out] = ins[0];
    std::int64_t parts = specs[0].parts;
    push(op);
    return set_out(out, Spec::shard(*d, parts));
  }
  if (kind == ir::MoveKind::Permute && specs[0].kind == Spec::Kind::Shard) {
    auto perm = ir::int_list_attr(attrs, "perm", op.name);
    auto it = std::find(perm.begin(), perm.end(), specs[0].dim);
    if (it == perm.end()) return replicate(op, why);
    std::int64_t parts = specs[0].parts;
    push(op);
    return set_out(out, Spec::shard(static_cast<int>(it - perm.begin()), parts));
  }
  if (kind == ir::MoveKind::Slice && specs[0].kind == Spec::Kind::Shard) {
    int d = specs[0].dim;
    std::int64_t parts = specs[0].parts;
    std::int64_t full = full_shape(ins[0])[d];
    auto starts = ir::int_list_attr(attrs, "starts", op.name);
    auto ends = ir::int_list_attr(attrs, "ends", op.name);
    auto steps = ir::int_list_attr(attrs, "steps", op.name);
    if (starts[d] == 0 && ends[d] >= full && steps[d] == 1) {
      ends[d] = full / parts;
      attrs["ends"] = ends;
      push(op);
      return set_out(out, Spec::shard(d, parts));
    }
    return replicate(op, why);
  }
  if (kind == ir::MoveKind::Pad && specs[0].kind == Spec::Kind::Shard && ins.size() == 1) {
    int d = specs[0].dim;
    auto pads = ir::int_list_attr(attrs, "pads", op.name);
    if (pads.size() == 2 * t_[out].shape.size() && pads[2 * d] == 0 && pads[2 * d + 1] == 0) {
      Spec s = specs[0];
      push(op);  // padded along other dimensions only
      return set_out(out, s);
    }
    return replicate(op, why);
  }
  if (kind == ir::MoveKind::Concat && specs[0].kind == Spec::Kind::Shard &&
      std::all_of(specs.begin(), specs.end(), [&](const Spec& s) { return s == specs[0]; }) &&
      specs[0].dim != ir::find_int(attrs, "axis").value_or(0)) {
    Spec s = specs[0];
    push(op);
    return set_out(out, s);
  }
  if (kind == ir::MoveKind::Gather && mode && *mode == "take" &&
      ir::find_int(attrs, "axis").value_or(0) == 0 && specs.size() == 2 && specs[0] == sh(0) &&
      !specs[1])
    return vocab_gather(op);
  if (kind == ir::MoveKind::Scatter && mode && *mode == "elements" && specs.size() == 3 &&
      local_offsets_.count(ins[1])) {
    if (std::all_of(specs.begin(), specs.end(), [&](const Spec& s) { return s == specs[0]; }) &&
        specs[0].kind == Spec::Kind::Shard && specs[0].dim == 0) {
      Spec s = specs[0];
      push(op);
      return set_out(out, s);
    }
    if (std::all_of(specs.begin(), specs.end(),
                    [](const Spec& s) { return s.kind == Spec::Kind::Flat; })) {
      Spec s = specs[0];
      push(op);
      spec_[out] = s;
      t_[out].shape = t_[ins[0]].shape;
      return;
    }
  }
  replicate(op, why);
}

std::pair<Id, Id> Sharder::local_rows(Id ids, std::int64_t rows, ir::DType dtype) {
  // (ids into this rank's block of `rows` rows, 0 outside it; a `dtype` mask, 1 where an id
  // is in the block) for a vocab-parallel table. The id arithmetic in f32 (exact below 2^24
  // rows; devices publish f32 vector rates, not integer ones), the local ids cast back.
  std::int64_t lo = rank_ * rows, hi = (rank_ + 1) * rows;
  if (hi > (std::int64_t{1} << 24))
    throw Unsupported(name(ids) + ": " + std::to_string(hi) +
                      " rows are past f32's exact integers");
  const auto shape = t_[ids].shape;
  std::vector<std::size_t> one = {shape.size()};
  auto x0 = ir::Expr::operand(0);
  auto inside = op2(ir::ExprOp::Mul, op2(ir::ExprOp::Ge, x0, num(double(lo))),
                    op2(ir::ExprOp::Lt, x0, num(double(hi))));
  auto move = [&](ir::MoveKind k, Id from, Id to) {
    ir::Op op;
    op.name = name(to);
    op.inputs = {{from}};
    op.outputs = {{to}};
    op.body = ir::MoveOp{k, {}};
    push(std::move(op));
  };
  auto ew = [&](Id from, Id to, ir::Expr combine) {
    ir::Op op;
    op.name = name(to);
    op.inputs = {{from}};
    op.outputs = {{to}};
    op.body = elementwise(shape, one, std::move(combine));
    push(std::move(op));
  };
  Id fids = add(name(ids) + ".f32", ids, shape, ir::DType::F32);
  move(ir::MoveKind::Cast, ids, fids);
  Id flocal = add(name(ids) + ".local_rows_f32", ids, shape, ir::DType::F32);
  ew(fids, flocal,
     ir::Expr::make(ir::ExprOp::Select,
                    {inside, op2(ir::ExprOp::Sub, x0, num(double(lo))), num(0)}));
  Id local = add(name(ids) + ".local_rows", ids, shape);
  move(ir::MoveKind::Cast, flocal, local);
  Id keep = add(name(ids) + ".in_rows", ids, shape, dtype);
  ew(fids, keep, ir::Expr::make(ir::ExprOp::Select, {inside, num(1), num(0)}));
  return {local, keep};
}

void Sharder::vocab_scatter(ir::Op op) {
  // An embedding's gradient, vocab-parallel: this rank adds the rows of the ids in its block
  // into its block of the table (the others' rows masked to zero).
  Id base = op.inputs[0].value, ids = op.inputs[1].value, vals = op.inputs[2].value;
  Id out = op.outputs[0].value;
  auto [local, keep] = local_rows(ids, t_[base].shape[0], t_[vals].dtype);
  Id masked = add(name(vals) + ".in_rows", vals, t_[vals].shape);
  ir::Op m;
  m.name = name(masked);
  m.inputs = {{vals}, {keep}};
  m.outputs = {{masked}};
  m.body = elementwise(t_[vals].shape, {t_[vals].shape.size(), t_[ids].shape.size()},
                       op2(ir::ExprOp::Mul, ir::Expr::operand(0), ir::Expr::operand(1)));
  push(std::move(m));
  op.inputs = {{base}, {local}, {masked}};
  push(std::move(op));
  set_out(out, sh(0));
}

void Sharder::vocab_gather(ir::Op op) {
  // A vocab-parallel embedding: this rank looks up the ids in its block of rows and gives
  // zeros for the others (Megatron's VocabParallelEmbedding); the sum over ranks is the lookup.
  Id table = op.inputs[0].value, ids = op.inputs[1].value;
  Id out = op.outputs[0].value;
  auto [local, keep] = local_rows(ids, t_[table].shape[0], t_[out].dtype);
  Id raw = add(name(out) + ".rows", out, t_[out].shape);
  ir::Op rows = op;
  rows.name = name(raw);
  rows.inputs = {{table}, {local}};
  rows.outputs = {{raw}};
  push(std::move(rows));
  ir::Op m;
  m.name = name(out);
  m.inputs = {{raw}, {keep}};
  m.outputs = {{out}};
  m.origin = op.origin;
  m.body = elementwise(t_[out].shape, {t_[out].shape.size(), t_[ids].shape.size()},
                       op2(ir::ExprOp::Mul, ir::Expr::operand(0), ir::Expr::operand(1)));
  push(std::move(m));
  set_out(out, Spec::partial(ir::CollectiveReduction::Sum));
}

std::map<Id, Id> Sharder::strided_offset_targets() const {
  // strided_offsets output -> the tensor its scatter writes into (through views).
  auto base = [&](ir::TensorId x) {
    for (auto p = g_.producer(x);
         p && g_.op(*p).kind() == ir::OpKind::Move && g_.op(*p).move().kind == ir::MoveKind::View;
         p = g_.producer(x))
      x = g_.op(*p).inputs[0];
    return x;
  };
  std::map<Id, Id> found;
  for (const ir::Op& op : g_.ops()) {
    if (op.kind() != ir::OpKind::Move || op.move().kind != ir::MoveKind::Scatter ||
        op.inputs.size() != 3)
      continue;
    auto offs = base(op.inputs[1]);
    auto p = g_.producer(offs);
    if (p && g_.op(*p).kind() == ir::OpKind::Opaque &&
        g_.op(*p).opaque().function == "strided_offsets")
      found[offs.value] = base(op.inputs[0]).value;
  }
  return found;
}

void Sharder::strided_offsets(const ir::Op& in, Id target) {
  // The element offsets of a window of `target` (an in-place cache update): with the target
  // sharded along a dimension the window spans whole, the offsets are this rank's, into its
  // block (local strides).
  const Spec spec = spec_[target];
  Id out = in.outputs[0].value;
  auto full = full_shape(target);
  const auto& win = t_[out].shape;
  if (spec.kind != Spec::Kind::Shard || win.size() != full.size() ||
      win[spec.dim] != full[spec.dim])
    return replicate(in, "the offsets of a window of a tensor that is not sharded");
  int d = spec.dim;
  ir::Op op = in;
  auto& o = std::get<ir::OpaqueOp>(op.body);
  auto strides = ir::int_list_attr(o.attrs, "strides", op.name);
  std::int64_t rest = ir::int_attr(o.attrs, "offset", 0, op.name);
  std::vector<std::int64_t> start;
  for (auto s : strides) {
    start.push_back(rest / s);
    rest %= s;
  }
  auto local = full;
  const std::int64_t parts = spec.parts;
  local[d] /= parts;
  std::vector<std::int64_t> new_strides(local.size());
  std::int64_t offset = 0;
  for (std::size_t k = 0; k < local.size(); ++k) {
    new_strides[k] = prod(local, k + 1);
    if (k < start.size()) offset += start[k] * new_strides[k];
  }
  o.attrs["strides"] = new_strides;
  o.attrs["offset"] = offset;
  // Its cost is the window's, of which the rank computes its block.
  o.vector_flops = Count::from_raw(o.vector_flops.raw() / static_cast<Count::Rep>(parts));
  o.bytes = Count::from_raw(o.bytes.raw() / static_cast<Count::Rep>(parts));
  push(op);
  set_out(out, Spec::shard(d, parts));
  local_offsets_.insert(out);
  mark_offsets_views(out);
}

void Sharder::mark_offsets_views(Id x) {
  for (const ir::Op& op : g_.ops())
    if (op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::View &&
        op.inputs.size() == 1 && op.inputs[0].value == x) {
      local_offsets_.insert(op.outputs[0].value);
      mark_offsets_views(op.outputs[0].value);
    }
}

}  // namespace solar::parallel::detail
