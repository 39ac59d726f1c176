#include "solar/ir/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "solar/ir/text.h"

namespace solar::ir {

std::string_view role_name(Role r) {
  switch (r) {
    case Role::Input: return "input";
    case Role::Weight: return "weight";
    case Role::Constant: return "constant";
    case Role::Intermediate: return "intermediate";
    case Role::Output: return "output";
  }
  return "?";
}

std::optional<Role> parse_role(std::string_view name) {
  for (Role r : {Role::Input, Role::Weight, Role::Constant, Role::Intermediate, Role::Output})
    if (role_name(r) == name) return r;
  return std::nullopt;
}

std::string_view reduce_name(Reduce r) {
  switch (r) {
    case Reduce::None: return "none";
    case Reduce::Sum: return "sum";
    case Reduce::Max: return "max";
    case Reduce::Min: return "min";
    case Reduce::Prod: return "prod";
    case Reduce::Any: return "any";
    case Reduce::All: return "all";
  }
  return "?";
}

std::optional<Reduce> parse_reduce(std::string_view name) {
  for (Reduce r : {Reduce::None, Reduce::Sum, Reduce::Max, Reduce::Min, Reduce::Prod, Reduce::Any,
                   Reduce::All})
    if (reduce_name(r) == name) return r;
  return std::nullopt;
}

std::string_view contraction_hint_name(ContractionHint h) {
  switch (h) {
    case ContractionHint::None: return "none";
    case ContractionHint::Attention: return "attention";
  }
  return "?";
}

std::optional<ContractionHint> parse_contraction_hint(std::string_view name) {
  for (ContractionHint h : {ContractionHint::None, ContractionHint::Attention})
    if (contraction_hint_name(h) == name) return h;
  return std::nullopt;
}

std::string_view move_kind_name(MoveKind k) {
  switch (k) {
    case MoveKind::View: return "view";
    case MoveKind::Copy: return "copy";
    case MoveKind::Permute: return "permute";
    case MoveKind::Slice: return "slice";
    case MoveKind::Concat: return "concat";
    case MoveKind::Pad: return "pad";
    case MoveKind::Gather: return "gather";
    case MoveKind::Scatter: return "scatter";
    case MoveKind::Cast: return "cast";
  }
  return "?";
}

std::optional<MoveKind> parse_move_kind(std::string_view name) {
  for (MoveKind k : {MoveKind::View, MoveKind::Copy, MoveKind::Permute, MoveKind::Slice,
                     MoveKind::Concat, MoveKind::Pad, MoveKind::Gather, MoveKind::Scatter,
                     MoveKind::Cast})
    if (move_kind_name(k) == name) return k;
  return std::nullopt;
}

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Einsum: return "einsum";
    case OpKind::Move: return "move";
    case OpKind::Opaque: return "opaque";
    case OpKind::Unanalyzed: return "unanalyzed";
    case OpKind::Repeat: return "repeat";
    case OpKind::Collective: return "collective";
  }
  return "?";
}

std::string_view collective_kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::AllToAll: return "all_to_all";
    case CollectiveKind::Send: return "send";
    case CollectiveKind::Recv: return "recv";
    case CollectiveKind::Broadcast: return "broadcast";
  }
  return "?";
}

std::optional<CollectiveKind> parse_collective_kind(std::string_view name) {
  for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::AllGather,
                           CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
                           CollectiveKind::Send, CollectiveKind::Recv, CollectiveKind::Broadcast})
    if (collective_kind_name(k) == name) return k;
  return std::nullopt;
}

bool collective_reduces(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce: case CollectiveKind::ReduceScatter: return true;
    case CollectiveKind::AllGather: case CollectiveKind::AllToAll: case CollectiveKind::Send:
    case CollectiveKind::Recv: case CollectiveKind::Broadcast: return false;
  }
  return false;
}

std::string_view collective_reduction_name(CollectiveReduction r) {
  switch (r) {
    case CollectiveReduction::Sum: return "sum";
    case CollectiveReduction::Prod: return "prod";
    case CollectiveReduction::Max: return "max";
    case CollectiveReduction::Min: return "min";
    case CollectiveReduction::Avg: return "avg";
  }
  return "?";
}

std::optional<CollectiveReduction> parse_collective_reduction(std::string_view name) {
  for (CollectiveReduction r : {CollectiveReduction::Sum, CollectiveReduction::Prod,
                                CollectiveReduction::Max, CollectiveReduction::Min,
                                CollectiveReduction::Avg})
    if (collective_reduction_name(r) == name) return r;
  return std::nullopt;
}

Origin op_origin(const Op& op) {
  Origin o = op.origin;
  if (o.op.empty()) o.op = op.name;
  return o;
}

std::string_view loop_input_name(LoopInput k) {
  switch (k) {
    case LoopInput::Invariant: return "invariant";
    case LoopInput::Carried: return "carried";
    case LoopInput::Sliced: return "sliced";
  }
  return "?";
}

std::optional<LoopInput> parse_loop_input(std::string_view name) {
  for (LoopInput k : {LoopInput::Invariant, LoopInput::Carried, LoopInput::Sliced})
    if (loop_input_name(k) == name) return k;
  return std::nullopt;
}

std::string_view loop_output_name(LoopOutput k) {
  switch (k) {
    case LoopOutput::Last: return "last";
    case LoopOutput::Stacked: return "stacked";
  }
  return "?";
}

std::optional<LoopOutput> parse_loop_output(std::string_view name) {
  for (LoopOutput k : {LoopOutput::Last, LoopOutput::Stacked})
    if (loop_output_name(k) == name) return k;
  return std::nullopt;
}

bool operator==(const RepeatOp& a, const RepeatOp& b) {
  if (a.trips != b.trips || a.reverse != b.reverse || a.inputs != b.inputs ||
      a.outputs != b.outputs || !a.body != !b.body)
    return false;
  return !a.body || a.body == b.body || print_statements(*a.body) == print_statements(*b.body);
}

Count Tensor::num_elements() const {
  Count n = 1;
  for (std::int64_t d : shape) n *= Count::from_signed(d);
  return n;
}

Count Tensor::size_bytes() const {
  return (num_elements() * Count(static_cast<std::uint64_t>(dtype_bits(dtype)))).ceil_div(8);
}

bool operator==(const Operand& a, const Operand& b) {
  if (a.subscript != b.subscript || a.pad.has_value() != b.pad.has_value()) return false;
  if (!a.pad) return true;
  return *a.pad == *b.pad || (std::isnan(*a.pad) && std::isnan(*b.pad));
}

bool attrs_equal(const Attrs& a, const Attrs& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
    if (i->first != j->first || i->second.index() != j->second.index()) return false;
    const auto* x = std::get_if<double>(&i->second);
    const auto* y = std::get_if<double>(&j->second);
    if (x && y ? !(*x == *y || (std::isnan(*x) && std::isnan(*y))) : i->second != j->second)
      return false;
  }
  return true;
}

std::vector<IndexPos> EinsumOp::reduced_indices() const {
  std::vector<bool> in_output(indices.size(), false);
  for (const AffineExpr& e : output)
    for (const AffineTerm& t : e.terms())
      if (t.index >= 0 && t.index < static_cast<int>(indices.size())) in_output[t.index] = true;
  std::vector<IndexPos> out;
  for (std::size_t i = 0; i < indices.size(); ++i)
    if (!in_output[i]) out.push_back(static_cast<IndexPos>(i));
  return out;
}

std::vector<std::int64_t> EinsumOp::extents() const {
  std::vector<std::int64_t> out;
  out.reserve(indices.size());
  for (const IndexDim& d : indices) out.push_back(d.extent);
  return out;
}

std::optional<IndexPos> EinsumOp::find_index(std::string_view name) const {
  for (std::size_t i = 0; i < indices.size(); ++i)
    if (indices[i].name == name) return static_cast<IndexPos>(i);
  return std::nullopt;
}

TensorId Graph::add_tensor(Tensor t) {
  if (t.name.empty()) t.name = fmt::format("t{}", tensors_.size());
  t.id = TensorId{static_cast<std::uint32_t>(tensors_.size())};
  // Keep the table at most half full; growing re-inserts every name.
  if (2 * (tensors_.size() + 1) > name_slots_.size()) {
    std::vector<std::uint32_t> old = std::move(name_slots_);
    name_slots_.assign(std::max<std::size_t>(16, 2 * old.size()), 0);
    for (std::uint32_t v : old)
      if (v != 0) name_slots_[find_slot(tensors_[v - 1].name)] = v;
  }
  std::size_t slot = find_slot(t.name);
  if (name_slots_[slot] != 0)
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("tensor '{}' is defined twice", t.name));
  name_slots_[slot] = t.id.value + 1;
  producer_.push_back(OpId{});
  tensors_.push_back(std::move(t));
  return tensors_.back().id;
}

OpId Graph::add_op(Op op) {
  op.id = OpId{static_cast<std::uint32_t>(ops_.size())};
  if (op.name.empty())
    op.name = op.outputs.empty() || !op.outputs[0].valid() || op.outputs[0].value >= tensors_.size()
                  ? fmt::format("op{}", op.id.value)
                  : tensors_[op.outputs[0].value].name;
  for (TensorId out : op.outputs)
    // The first producer wins; the verifier reports a second one (and unknown ids).
    if (out.value < producer_.size() && !producer_[out.value].valid()) producer_[out.value] = op.id;
  ops_.push_back(std::move(op));
  return ops_.back().id;
}

const Tensor& Graph::tensor(TensorId id) const {
  SOLAR_CHECK(id.value < tensors_.size(), fmt::format("tensor id {} out of range", id.value));
  return tensors_[id.value];
}

Tensor& Graph::tensor(TensorId id) {
  SOLAR_CHECK(id.value < tensors_.size(), fmt::format("tensor id {} out of range", id.value));
  return tensors_[id.value];
}

const Op& Graph::op(OpId id) const {
  SOLAR_CHECK(id.value < ops_.size(), fmt::format("op id {} out of range", id.value));
  return ops_[id.value];
}

std::size_t Graph::find_slot(std::string_view name) const {
  const std::size_t mask = name_slots_.size() - 1;  // the size is a power of two
  std::size_t h = std::hash<std::string_view>{}(name) & mask;
  while (name_slots_[h] != 0 && tensors_[name_slots_[h] - 1].name != name) h = (h + 1) & mask;
  return h;
}

std::optional<TensorId> Graph::find_tensor(std::string_view name) const {
  if (name_slots_.empty()) return std::nullopt;
  std::uint32_t v = name_slots_[find_slot(name)];
  if (v == 0) return std::nullopt;
  return TensorId{v - 1};
}

std::optional<OpId> Graph::producer(TensorId id) const {
  if (id.value >= producer_.size() || !producer_[id.value].valid()) return std::nullopt;
  return producer_[id.value];
}

}  // namespace solar::ir
