#include "solar/cost/graph_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include "slice_union.h"
#include "solar/ir/attrs.h"
#include "solar/util/errors.h"
#include "work_detail.h"

namespace solar::cost {

using ir::Graph;
using ir::Op;
using ir::OpKind;
using ir::Tensor;

namespace {

constexpr std::uint32_t kNone = UINT32_MAX;

// The compulsory-traffic pass walks ops in reverse order and relies on every consumer of a
// view's output coming after the view; the verifier guarantees topological order, and this
// check (O(ops + edges)) keeps an unverified graph from giving a silently wrong number.
void check_topological(const Graph& g) {
  std::vector<std::uint32_t> producer(g.tensors().size(), kNone);
  for (const Op& op : g.ops())
    for (ir::TensorId out : op.outputs)
      if (out.value < producer.size() && producer[out.value] == kNone)
        producer[out.value] = op.id.value;
  for (const Op& op : g.ops())
    for (ir::TensorId in : op.inputs)
      if (in.value < producer.size() && producer[in.value] != kNone &&
          producer[in.value] >= op.id.value)
        throw UserError(UserError::Kind::InvalidGraph,
                        fmt::format("ops are not in topological order: '{}' reads '{}' before "
                                    "it is produced (run the verifier)",
                                    op.name, g.tensor(in).name),
                        Origin{op.origin.file, op.origin.line, op.name});
}

// Per op, whether none of its results reaches a root (walking ops in reverse topological
// order), and per tensor whether it reaches one. Roots: the tensors flagged in `roots`, or
// when null the graph outputs; a graph that marks no output keeps every op and tensor live
// (explicit roots that are all unset leave every op dead).
struct Liveness {
  std::vector<char> dead_op;
  std::vector<char> live;
};

// A send or recv (its peer rank waits for it) or an eager program's collective (it runs
// whether or not anything reads its result): never dead.
bool never_dead(const Op& op) {
  return op.kind() == OpKind::Collective && (op.collective().kind == ir::CollectiveKind::Send ||
                                             op.collective().kind == ir::CollectiveKind::Recv ||
                                             op.collective().eager);
}

Liveness liveness(const Graph& g, const std::vector<char>* roots) {
  Liveness l;
  l.live.assign(g.tensors().size(), 0);
  bool any_root = false;
  for (const Tensor& t : g.tensors())
    if (roots ? (*roots)[t.id.value] != 0 : t.role == ir::Role::Output) {
      l.live[t.id.value] = 1;
      any_root = true;
    }
  l.dead_op.assign(g.ops().size(), 0);
  if (!any_root && !roots) {
    l.live.assign(g.tensors().size(), 1);
    return l;
  }
  for (auto it = g.ops().rbegin(); it != g.ops().rend(); ++it) {
    const bool reaches = never_dead(*it) ||
                         std::any_of(it->outputs.begin(), it->outputs.end(),
                                     [&](ir::TensorId t) { return l.live[t.value] != 0; });
    l.dead_op[it->id.value] = !reaches;
    if (reaches)
      for (ir::TensorId in : it->inputs) l.live[in.value] = 1;
  }
  return l;
}

// Per tensor that is a graph source's storage updated in place by at least one scatter
// (through reshaping views and further scatters), the bytes written into that storage since
// the source: the scatters' src elements (per_op's bytes_written). nullopt for every other
// tensor, the sources and their plain views included. One forward pass.
std::vector<std::optional<Count>> in_place_updates(const Graph& g,
                                                   const std::vector<Work>& per_op) {
  struct Version {
    bool of_source = false;  // the source's storage, as it is or updated
    Count written{0};
    bool scattered = false;
  };
  std::vector<Version> version(g.tensors().size());
  for (const Tensor& t : g.tensors())
    if (ir::is_graph_source(t.role)) version[t.id.value].of_source = true;
  for (const Op& op : g.ops()) {
    if (op.kind() != OpKind::Move || op.inputs.empty() || op.outputs.size() != 1 ||
        !per_op[op.id.value].counted())
      continue;
    const Version& base = version[op.inputs[0].value];
    if (!base.of_source) continue;
    const Tensor& in = g.tensor(op.inputs[0]);
    const Tensor& out = g.tensor(op.outputs[0]);
    const ir::MoveKind kind = op.move().kind;
    if (kind == ir::MoveKind::View && out.num_elements() == in.num_elements())
      version[out.id.value] = base;
    else if (kind == ir::MoveKind::Scatter)
      version[out.id.value] = {true, base.written + per_op[op.id.value].bytes_written, true};
  }
  std::vector<std::optional<Count>> updated(g.tensors().size());
  for (std::size_t t = 0; t < version.size(); ++t)
    if (version[t].scattered) updated[t] = version[t].written;
  return updated;
}

}  // namespace

namespace {

GraphCost graph_cost_impl(const Graph& g, const std::vector<char>* roots) {
  check_topological(g);
  const Liveness alive = liveness(g, roots);
  const std::vector<char>& dead = alive.dead_op;
  const std::vector<Op>& ops = g.ops();
  const std::vector<Tensor>& tensors = g.tensors();

  GraphCost gc;
  gc.per_op.reserve(ops.size());
  // Bytes each op reads from each input, flattened: op i's inputs start at first_read[i].
  std::vector<std::size_t> first_read(ops.size() + 1, 0);
  for (const Op& op : ops) first_read[op.id.value + 1] = first_read[op.id.value] + op.inputs.size();
  std::vector<Count> input_bytes(first_read.back());
  std::vector<Count> reads;
  std::vector<char> live_outputs;
  for (const Op& op : ops) {
    Work w;
    try {
      live_outputs.clear();
      for (ir::TensorId out : op.outputs) live_outputs.push_back(alive.live[out.value]);
      w = detail::op_work(g, op, &reads, &live_outputs);
      std::copy_n(reads.begin(), std::min(reads.size(), op.inputs.size()),
                  input_bytes.begin() + static_cast<std::ptrdiff_t>(first_read[op.id.value]));
    } catch (const Unsupported& ex) {
      // An einsum whose mask cannot be counted exactly is reported like any op no lowering
      // knows: unanalyzed, with the reason, never as zero work.
      w = Work{};
      w.analyzed = false;
      w.note = ex.message();
    }
    if (dead[op.id.value]) {
      w.dead = true;
      w.analyzed = true;
      ++gc.num_dead;
      gc.dead_total += w;
    } else if (w.analyzed) {
      gc.total += w;
    } else {
      ++gc.num_unanalyzed;
    }
    gc.per_op.push_back(std::move(w));
  }

  // State updated in place (a KV cache a decode step writes one token into, a running
  // statistic written through a slice): a scatter into a graph source, through free views,
  // is the source's own storage with some elements replaced. updated[t]: the bytes written
  // into that storage so far, for every tensor that is such a version of a source.
  const std::vector<std::optional<Count>> updated = in_place_updates(g, gc.per_op);

  // reach[t]: the largest number of bytes any consumer reads of tensor t, followed through
  // free views (a view's reads are reads of what it views) and through scatters (a consumer
  // of the result reads the data elements the scatter did not replace). whole[t]: an opaque
  // consumer reads t (or what views it), which counts as the whole source.
  std::vector<Count> reach(tensors.size());
  std::vector<char> whole(tensors.size(), 0);
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    const Op& op = *it;
    const Work& w = gc.per_op[op.id.value];
    if (!w.counted()) continue;  // unknown reads (shown by coverage), or none needed
    if (ir::is_free_view(op)) {
      for (ir::TensorId in : op.inputs)
        for (ir::TensorId out : op.outputs) {
          reach[in.value] = std::max(reach[in.value], reach[out.value]);
          whole[in.value] = whole[in.value] || whole[out.value];
        }
      continue;
    }
    switch (op.kind()) {
      case OpKind::Opaque:
        for (ir::TensorId in : op.inputs) whole[in.value] = 1;
        break;
      case OpKind::Repeat:
      case OpKind::Einsum:
      case OpKind::Collective:
      case OpKind::Move: {
        for (std::size_t k = 0; k < op.inputs.size(); ++k)
          reach[op.inputs[k].value] =
              std::max(reach[op.inputs[k].value], input_bytes[first_read[op.id.value] + k]);
        if (op.kind() == OpKind::Move && op.move().kind == ir::MoveKind::Scatter) {
          const ir::TensorId data = op.inputs[0], out = op.outputs[0];
          const Count replaced = w.bytes_written;
          const Count kept = reach[out.value] > replaced ? reach[out.value] - replaced : Count(0);
          reach[data.value] = std::max(reach[data.value], kept);
          whole[data.value] = whole[data.value] || whole[out.value];
        }
        break;
      }
      case OpKind::Unanalyzed:
        break;  // never analyzed (skipped above)
    }
  }

  // A source read in parts through slices (unbind, the steps of an unrolled scan, one layer
  // of stacked weights each): the union of the parts read whole, which the largest single
  // read above undercounts. Followed forward through chains of slices and shape-keeping
  // views; a reshape ends the chain (the largest read still holds there).
  struct Based {
    std::uint32_t source = kNone;
    detail::StridedBox box;
  };
  std::vector<Based> based(tensors.size());
  std::vector<std::vector<detail::StridedBox>> parts(tensors.size());
  for (const Tensor& t : tensors)
    if (ir::is_graph_source(t.role)) based[t.id.value] = {t.id.value, detail::whole_box(t.shape)};
  for (const Op& op : ops) {
    if (op.kind() != OpKind::Move || op.inputs.size() != 1 || op.outputs.size() != 1 ||
        !gc.per_op[op.id.value].counted())
      continue;
    const Based& in = based[op.inputs[0].value];
    if (in.source == kNone) continue;
    const Tensor& out = g.tensor(op.outputs[0]);
    const ir::MoveOp& m = op.move();
    if (m.kind == ir::MoveKind::View && out.shape == g.tensor(op.inputs[0]).shape) {
      based[out.id.value] = in;
    } else if (m.kind == ir::MoveKind::Slice) {
      detail::StridedBox box = detail::slice_box(in.box, m);
      const bool read_whole = ir::slice_copies(op) || whole[out.id.value] ||
                              reach[out.id.value] >= tensor_bytes(out, out.num_elements());
      if (read_whole) parts[in.source].push_back(box);
      based[out.id.value] = {in.source, std::move(box)};
    }
  }

  gc.source_bytes_read.assign(tensors.size(), Count(0));
  for (const Tensor& t : tensors) {
    if (ir::is_graph_source(t.role)) {
      // Capped at the source's own size: an expand view may read more elements than it holds.
      const Count size = tensor_bytes(t, t.num_elements());
      Count read = whole[t.id.value] ? size : std::min(size, reach[t.id.value]);
      if (parts[t.id.value].size() > 1)
        if (std::optional<Count> n = detail::union_elements(parts[t.id.value]))
          read = std::max(read, std::min(size, tensor_bytes(t, *n)));
      gc.compulsory_bytes_read += read;
      gc.source_bytes_read[t.id.value] = read;
    } else if (t.role == ir::Role::Output) {
      // A source updated in place is written only where it changed; any other output whole.
      const Count size = tensor_bytes(t, t.num_elements());
      gc.compulsory_bytes_written += updated[t.id.value] ? std::min(size, *updated[t.id.value])
                                                         : size;
    }
  }
  return gc;
}

}  // namespace

GraphCost graph_cost(const Graph& g) { return graph_cost_impl(g, nullptr); }

namespace detail {

GraphCost graph_cost_from(const Graph& g, const std::vector<char>& roots) {
  return graph_cost_impl(g, &roots);
}

std::vector<char> live_tensors(const Graph& g, const std::vector<char>& roots) {
  return liveness(g, &roots).live;
}

}  // namespace detail

}  // namespace solar::cost
