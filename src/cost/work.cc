#include "solar/cost/work.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>

#include "solar/ir/attrs.h"
#include "solar/util/errors.h"
#include "work_detail.h"

namespace solar::cost {

using ir::DType;
using ir::EinsumOp;
using ir::Graph;
using ir::MoveKind;
using ir::Op;
using ir::OpKind;
using ir::Tensor;
using ir::TensorId;

Count Work::total_macs() const {
  Count s;
  for (const auto& [dtype, n] : macs) s += n;
  return s;
}

Count Work::total_macs_2_4() const {
  Count s;
  for (const auto& [dtype, n] : macs_2_4) s += n;
  return s;
}

Count Work::total_vector_flops() const {
  Count s;
  for (const auto& [dtype, n] : vector_flops) s += n;
  return s;
}

Count Work::total_comm_bytes() const {
  Count s;
  for (const auto& [kind, n] : comm_bytes) s += n;
  return s;
}

Work& Work::operator+=(const Work& o) {
  if (contraction != o.contraction) contraction = ContractionClass::None;
  for (const auto& [dtype, n] : o.macs) macs[dtype] += n;
  for (const auto& [dtype, n] : o.macs_2_4) macs_2_4[dtype] += n;
  macs_dense += o.macs_dense;
  for (const auto& [dtype, n] : o.vector_flops) vector_flops[dtype] += n;
  special_ops += o.special_ops;
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  live_points += o.live_points;
  for (const auto& [kind, n] : o.comm_bytes) comm_bytes[kind] += n;
  analyzed = analyzed && o.analyzed;
  return *this;
}

namespace {

// ---- work per op kind ----------------------------------------------------------------

DType wider_dtype(DType a, DType b) {
  const int ba = ir::dtype_bits(a), bb = ir::dtype_bits(b);
  if (ba != bb) return ba > bb ? a : b;
  // Equal width: a float type decides the unit (int8 x fp8 runs as fp8 on tensor cores).
  if (ir::is_float(a) != ir::is_float(b)) return ir::is_float(a) ? a : b;
  return a;
}

bool is_2_4(const Tensor& t) { return t.sparsity && t.sparsity->structured_2_4; }

Count full_bytes(const Tensor& t) { return tensor_bytes(t, t.num_elements()); }

void add_nonzero(std::map<DType, Count>& m, DType d, Count n) {
  if (n != Count(0)) m[d] += n;
}

const Tensor& input(const Graph& g, const Op& op, std::size_t k) { return g.tensor(op.inputs[k]); }

void require_inputs(const Op& op, std::size_t n, std::string_view what) {
  if (op.inputs.size() < n)
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("{} needs {} inputs, got {}", what, n, op.inputs.size()),
                    ir::op_origin(op));
}

void require_output(const Op& op) {
  if (op.outputs.empty())
    throw UserError(UserError::Kind::InvalidGraph, "op has no output", ir::op_origin(op));
}

Work einsum_work(const Graph& g, const Op& op, std::vector<Count>* input_bytes) {
  const EinsumOp& e = op.einsum();
  if (op.inputs.size() != e.operands.size())
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("einsum has {} inputs but {} operand subscripts",
                                op.inputs.size(), e.operands.size()),
                    ir::op_origin(op));
  require_output(op);
  if (!e.combine.defined())
    throw UserError(UserError::Kind::InvalidGraph, "einsum has no combine expression",
                    ir::op_origin(op));

  Work w;
  for (std::size_t k = 0; k < op.inputs.size(); ++k) {
    const Tensor& t = input(g, op, k);
    Count b;
    try {
      b = tensor_bytes(t, operand_footprint(e, e.operands[k], t));
    } catch (const UserError& ex) {
      throw UserError(ex.kind(), ex.message(), ir::op_origin(op));
    }
    w.bytes_read += b;
    if (input_bytes) input_bytes->push_back(b);
  }
  for (TensorId out : op.outputs) w.bytes_written += full_bytes(g.tensor(out));

  try {
    w.live_points = live_points(e);
  } catch (const Unsupported& ex) {
    throw Unsupported(ex.message(), ir::op_origin(op));
  } catch (const UserError& ex) {
    throw UserError(ex.kind(), ex.message(), ir::op_origin(op));
  }

  w.contraction = classify_contraction(g, op);
  if (w.contraction != ContractionClass::None) {
    const Tensor& a = input(g, op, e.combine.children()[0].operand_index());
    const Tensor& b = input(g, op, e.combine.children()[1].operand_index());
    const DType dtype = wider_dtype(a.dtype, b.dtype);
    add_nonzero(w.macs, dtype, w.live_points);
    w.macs_dense = w.live_points;
    if (!e.mask.empty()) {
      w.macs_dense = 1;
      for (const ir::IndexDim& d : e.indices) w.macs_dense *= Count::from_signed(d.extent);
    }
    if (is_2_4(a) || is_2_4(b)) {
      // The work is the contraction as written; only a tensor unit with a published 2:4 peak
      // skips the structured zeros, so the bound decides (bound/sol.h).
      add_nonzero(w.macs_2_4, dtype, w.live_points);
      w.note = "2:4 structured operand: its MACs run at the 2:4 sparse peak where the device "
               "has one";
    }
    return w;
  }

  const CombineCost per_point = combine_cost(e.combine);
  Count vector = w.live_points * Count(per_point.vector_flops);
  if (e.reduce != ir::Reduce::None) {
    // Reducing n live points into one output element takes n - 1 binary ops.
    const Count out_elements = g.tensor(op.outputs[0]).num_elements();
    if (w.live_points > out_elements) vector += w.live_points - out_elements;
  }
  add_nonzero(w.vector_flops, g.tensor(op.outputs[0]).dtype, vector);
  w.special_ops = w.live_points * Count(per_point.special_ops);
  return w;
}

Work move_work(const Graph& g, const Op& op, std::vector<Count>* input_bytes) {
  Work w;
  std::vector<Count> reads(op.inputs.size());
  auto write_outputs = [&] {
    for (TensorId out : op.outputs) w.bytes_written += full_bytes(g.tensor(out));
  };
  auto read_all_inputs = [&] {
    for (std::size_t k = 0; k < op.inputs.size(); ++k) reads[k] = full_bytes(input(g, op, k));
  };
  const ir::MoveOp& m = op.move();
  switch (m.kind) {
    case MoveKind::View:
      w.note = "view: no copy";
      break;
    case MoveKind::Slice:
      if (!ir::slice_copies(op)) {
        w.note = "slice view: no copy";
        break;
      }
      require_inputs(op, 1, "slice");
      require_output(op);
      {
        const Tensor& in = input(g, op, 0);
        reads[0] = tensor_bytes(
            in, std::min(g.tensor(op.outputs[0]).num_elements(), in.num_elements()));
      }
      write_outputs();
      break;
    case MoveKind::Copy:
    case MoveKind::Permute:
    case MoveKind::Cast:
    case MoveKind::Pad:
    case MoveKind::Concat:
      read_all_inputs();
      write_outputs();
      break;
    case MoveKind::Gather: {
      require_inputs(op, 2, "gather (data, index)");
      require_output(op);
      const Tensor& data = input(g, op, 0);
      const Count gathered = std::min(g.tensor(op.outputs[0]).num_elements(), data.num_elements());
      reads[0] = tensor_bytes(data, gathered);
      for (std::size_t k = 1; k < op.inputs.size(); ++k) reads[k] = full_bytes(input(g, op, k));
      write_outputs();
      w.note = "gather: reads one data element per output element (indices assumed distinct)";
      break;
    }
    case MoveKind::Scatter: {
      require_inputs(op, 3, "scatter (data, index, src)");
      require_output(op);
      const Tensor& src = input(g, op, 2);
      for (std::size_t k = 1; k < op.inputs.size(); ++k) reads[k] = full_bytes(input(g, op, k));
      const Tensor& out = g.tensor(op.outputs[0]);
      const Count touched = std::min(src.num_elements(), out.num_elements());
      w.bytes_written = tensor_bytes(out, touched);
      w.note = "scatter: in place, writes the src elements only (data is not copied)";
      // A reducing scatter (scatter_add, index_add, scatter_reduce) reads each destination
      // element it updates and combines it with one operation.
      const std::string* reduce = ir::find_string(m.attrs, "reduce");
      if (reduce && *reduce != "none") {
        reads[0] = tensor_bytes(input(g, op, 0), touched);
        w.vector_flops[out.dtype] += touched;
        w.note = "scatter with reduce: in place, reads and writes the updated data elements once";
      }
      break;
    }
  }
  for (const Count& r : reads) w.bytes_read += r;
  if (input_bytes) *input_bytes = std::move(reads);
  return w;
}

Work opaque_work(const Graph& g, const Op& op, std::vector<Count>* input_bytes) {
  const ir::OpaqueOp& o = op.opaque();
  Work w;
  if (o.vector_flops != Count(0)) {
    if (op.outputs.empty())
      throw UserError(UserError::Kind::InvalidGraph,
                      "opaque op with vector_flops needs an output (its dtype keys the FLOPs)",
                      ir::op_origin(op));
    add_nonzero(w.vector_flops, g.tensor(op.outputs[0]).dtype, o.vector_flops);
  }
  w.special_ops = o.special_ops;
  // The opaque cost gives reads and writes as one number; it is kept whole in bytes_read.
  w.bytes_read = o.bytes;
  w.note = o.assumption;
  if (input_bytes)
    for (std::size_t k = 0; k < op.inputs.size(); ++k)
      input_bytes->push_back(full_bytes(input(g, op, k)));
  return w;
}

// A collective (docs/cost.md, "Collectives"): its payload S goes over links (comm_bytes,
// comm); in DRAM it reads its input and writes its result once (a send's result is its input:
// nothing written; a recv reads nothing). all_reduce and reduce_scatter reduce: each rank
// combines (n-1)/n of the input's E elements (ring or tree alike: the (n-1) E operations of
// the reduction shared by n ranks; the busiest does ceil((n-1) E / n)), plus for avg the
// division of the ceil(E / n) results it owns.
Work collective_work(const Graph& g, const Op& op, std::vector<Count>* input_bytes) {
  const ir::CollectiveOp& c = op.collective();
  Work w;
  const Tensor& out = g.tensor(op.outputs.at(0));
  const Tensor* in = op.inputs.empty() ? nullptr : &g.tensor(op.inputs[0]);
  const Count in_bytes = in ? full_bytes(*in) : Count(0);
  const Count out_bytes = full_bytes(out);
  const std::uint64_t n = static_cast<std::uint64_t>(std::max<std::int64_t>(c.group.size, 1));
  Count payload;
  switch (c.kind) {
    case ir::CollectiveKind::AllReduce: case ir::CollectiveKind::ReduceScatter:
    case ir::CollectiveKind::AllToAll: case ir::CollectiveKind::Send:
    case ir::CollectiveKind::Broadcast:
      payload = in_bytes;
      break;
    case ir::CollectiveKind::AllGather: case ir::CollectiveKind::Recv:
      payload = out_bytes;
      break;
  }
  w.bytes_read = in_bytes;
  w.bytes_written = c.kind == ir::CollectiveKind::Send ? Count(0) : out_bytes;
  if (ir::collective_reduces(c.kind) && in) {
    const Count e = in->num_elements();
    Count flops = (Count(n - 1) * e).ceil_div(n);
    if (c.reduction == ir::CollectiveReduction::Avg) flops += e.ceil_div(n);
    add_nonzero(w.vector_flops, out.dtype, flops);
  }
  w.comm_bytes[c.kind] = payload;
  w.comm = Communication{c.kind, c.group, payload};
  w.note = fmt::format("{} over {} ranks: {} bytes per rank over links",
                       ir::collective_kind_name(c.kind), c.group.size, payload.str());
  if (input_bytes) input_bytes->assign(op.inputs.size(), in_bytes);
  return w;
}

}  // namespace

namespace detail {

Work op_work(const Graph& g, const Op& op, std::vector<Count>* input_bytes,
             const std::vector<char>* live_outputs) {
  if (input_bytes) input_bytes->clear();
  switch (op.kind()) {
    case OpKind::Einsum:
      return einsum_work(g, op, input_bytes);
    case OpKind::Move:
      return move_work(g, op, input_bytes);
    case OpKind::Opaque:
      return opaque_work(g, op, input_bytes);
    case OpKind::Unanalyzed: {
      const ir::UnanalyzedOp& u = op.unanalyzed();
      Work w;
      w.analyzed = false;
      w.note = !u.reason.empty()
                   ? u.reason
                   : fmt::format("no lowering for framework op '{}'", u.framework_op);
      if (input_bytes) input_bytes->assign(op.inputs.size(), Count(0));
      return w;
    }
    case OpKind::Repeat:
      return repeat_work(g, op, input_bytes, live_outputs);
    case OpKind::Collective:
      return collective_work(g, op, input_bytes);
  }
  SOLAR_UNREACHABLE("unknown op kind");
}

}  // namespace detail

Work op_work(const Graph& g, const Op& op) { return detail::op_work(g, op, nullptr); }

}  // namespace solar::cost
