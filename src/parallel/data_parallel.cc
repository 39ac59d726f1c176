// Data parallelism: gradient all-reduce, ZeRO's reduce-scatter and parameter all-gathers.
#include "solar/parallel/data_parallel.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "solar/ir/rewrite.h"

namespace solar::parallel {

namespace {

std::int64_t numel(const std::vector<std::int64_t>& s) {
  std::int64_t n = 1;
  for (auto x : s) n *= x;
  return n;
}

struct Builder {
  std::vector<ir::Tensor> t;
  std::vector<ir::Op> ops;
  const ir::CollectiveGroup& group;

  ir::TensorId add(const std::string& name, std::vector<std::int64_t> shape, ir::DType dtype,
                   ir::Role role = ir::Role::Intermediate) {
    ir::Tensor x;
    x.id = {static_cast<std::uint32_t>(t.size())};
    x.name = name;
    x.shape = std::move(shape);
    x.dtype = dtype;
    x.role = role;
    t.push_back(x);
    return x.id;
  }
  ir::Op coll(ir::CollectiveKind kind, ir::TensorId x, ir::TensorId out,
              ir::CollectiveReduction r = ir::CollectiveReduction::Sum) const {
    ir::Op op;
    op.name = t[out.value].name;
    op.inputs = {x};
    op.outputs = {out};
    ir::CollectiveOp c;
    c.kind = kind;
    c.group = group;
    c.reduction = r;
    op.body = c;
    return op;
  }
  ir::Op view(ir::TensorId x, ir::TensorId out) const {
    ir::Op op;
    op.name = t[out.value].name;
    op.inputs = {x};
    op.outputs = {out};
    op.body = ir::MoveOp{ir::MoveKind::View, {}};
    return op;
  }
};

// FSDP: each trainable weight held as its 1/dp shard, all-gathered before its first use in
// the forward, and again after the loss for the backward (FSDP frees the gathered parameters
// after the forward; the captured backward reads the forward's views of the weights, so the
// second gather is charged, its result kept as an output, not rewired).
void gather_parameters(Builder& b, const std::vector<ir::TensorId>& grads,
                       const std::map<std::uint32_t, ir::TensorId>& local_of, std::int64_t dp) {
  std::set<std::vector<std::int64_t>> grad_shapes;
  for (auto gr : grads) grad_shapes.insert(b.t[local_of.at(gr.value).value].shape);
  std::optional<ir::TensorId> loss;
  for (const ir::Tensor& x : b.t)
    if (x.role == ir::Role::Output && x.shape.empty()) {
      loss = x.id;
      break;
    }
  if (!loss) throw Unsupported("no scalar loss among the step's outputs: FSDP gathers around it");
  std::size_t loss_at = b.ops.size();
  for (std::size_t i = 0; i < b.ops.size(); ++i)
    if (std::find(b.ops[i].outputs.begin(), b.ops[i].outputs.end(), *loss) !=
        b.ops[i].outputs.end()) {
      loss_at = i;
      break;
    }
  std::vector<std::pair<ir::TensorId, ir::TensorId>> shards;  // weight, its shard
  const std::size_t n0 = b.t.size();
  for (std::size_t k = 0; k < n0; ++k) {
    const ir::Tensor w = b.t[k];
    bool trainable =
        w.dtype == ir::DType::BF16 || w.dtype == ir::DType::F16 || w.dtype == ir::DType::F32;
    if (w.role != ir::Role::Weight || !grad_shapes.count(w.shape) || !trainable) continue;
    std::int64_t n = numel(w.shape);
    if (n % dp)
      throw Unsupported("weight " + w.name + " of " + std::to_string(n) +
                        " elements does not split over dp=" + std::to_string(dp));
    b.t[k].role = ir::Role::Intermediate;
    shards.push_back({w.id, b.add(w.name + ".fsdp_shard", {n / dp}, w.dtype, ir::Role::Weight)});
  }
  std::vector<ir::Op> out;
  std::set<std::uint32_t> done;
  for (std::size_t i = 0; i < b.ops.size(); ++i) {
    for (auto x : b.ops[i].inputs) {
      auto it = std::find_if(shards.begin(), shards.end(), [&](auto& s) { return s.first == x; });
      if (it == shards.end() || !done.insert(x.value).second) continue;
      const ir::Tensor& w = b.t[x.value];
      auto flat = b.add(w.name + ".fwd_flat", {numel(w.shape)}, w.dtype);
      out.push_back(b.coll(ir::CollectiveKind::AllGather, it->second, flat));
      out.push_back(b.view(flat, x));
    }
    out.push_back(std::move(b.ops[i]));
    if (i == loss_at)
      for (auto [w, shard] : shards) {
        auto again = b.add(b.t[w.value].name + ".bwd_gathered", {numel(b.t[w.value].shape)},
                           b.t[w.value].dtype, ir::Role::Output);
        out.push_back(b.coll(ir::CollectiveKind::AllGather, shard, again));
      }
  }
  b.ops = std::move(out);
}

}  // namespace

DataParallelGraph data_parallel(const ir::Graph& g, std::int64_t dp, int zero,
                                const ir::CollectiveGroup& group) {
  Builder b{{g.tensors().begin(), g.tensors().end()}, {g.ops().begin(), g.ops().end()}, group};
  std::vector<ir::TensorId> grads;  // every output but the loss (the scalar)
  for (const ir::Tensor& x : g.tensors())
    if (x.role == ir::Role::Output && !x.shape.empty()) grads.push_back(x.id);
  if (grads.empty())
    throw Unsupported("no gradients: data parallelism applies to a training step (--train)");
  std::int64_t elements = 0;
  std::map<std::uint32_t, ir::TensorId> local_of;
  for (auto gr : grads) {
    const ir::Tensor grt = b.t[gr.value];
    const std::int64_t n = numel(grt.shape);
    elements += n;
    // The gradient as computed, before the reduction.
    auto local = b.add(grt.name + ".local", grt.shape, grt.dtype);
    local_of[gr.value] = local;
    for (ir::Op& op : b.ops) {
      for (auto& x : op.outputs)
        if (x == gr) x = local;
      for (auto& x : op.inputs)
        if (x == gr) x = local;
      if (op.name == grt.name) op.name = grt.name + ".local";
    }
    if (zero == 0) {
      b.ops.push_back(
          b.coll(ir::CollectiveKind::AllReduce, local, gr, ir::CollectiveReduction::Avg));
      continue;
    }
    if (n % dp)
      throw Unsupported("gradient " + grt.name + " of " + std::to_string(n) +
                        " elements does not split over dp=" + std::to_string(dp));
    auto flat = b.add(grt.name + ".flat", {n}, grt.dtype);
    b.ops.push_back(b.view(local, flat));
    auto shard = b.add(grt.name + ".shard", {n / dp}, grt.dtype, ir::Role::Output);
    b.ops.push_back(
        b.coll(ir::CollectiveKind::ReduceScatter, flat, shard, ir::CollectiveReduction::Avg));
    b.t[gr.value].shape = {n};  // the updated parameters gathered, flat
    b.ops.push_back(b.coll(ir::CollectiveKind::AllGather, shard, gr));
  }
  if (zero == 3) gather_parameters(b, grads, local_of, dp);
  DataParallelGraph r{ir::empty_like(g), elements};
  for (ir::Tensor& x : b.t) r.graph.add_tensor(std::move(x));  // ids unchanged: all kept
  for (ir::Op& op : b.ops) {
    op.id = {};
    r.graph.add_op(std::move(op));
  }
  return r;
}

}  // namespace solar::parallel
