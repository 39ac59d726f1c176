// The EinsumGraph: a DAG of ops over tensors (docs/ir-text.md).
//
// Semantics
// - A tensor is produced by at most one op; graph inputs, weights and constants by none.
// - Ops are stored in a topological order (every input defined before its use); the
//   verifier enforces it.
// - Einsum: out[o...] = REDUCE_{reduced} COMBINE(in0[f0(i...)], in1[f1(i...)], ...).
//   The iteration space is the box of all index extents, minus the points where a mask
//   constraint fails. Reduced indices are those not in the output subscript. An output
//   element that no live point reaches holds the reduction's identity (sum 0, prod 1,
//   max -inf, min +inf, any false, all true; 0 for reduce none): consumers of a masked
//   tensor mask the same points or rely on that value. An operand
//   read outside its tensor yields its `pad` value (zero-padding of a convolution,
//   -inf for max pooling); without a pad value such a read is a verifier error.
// - Data-movement ops copy or re-view data; a view is free (no bytes move).
// - Opaque ops carry their own cost and the assumption behind it.
// - Unanalyzed ops are framework ops no lowering table knows: kept, counted, reported.
// - Repeat ops run a body graph `trips` times (RepeatOp below): a recurrence (LSTM, GRU, a
//   JAX scan) stays one op with one body instead of `trips` copies of it.
// - Collective ops exchange data among the ranks of a group (CollectiveOp below): the graph
//   is one rank's program, and every rank of the group runs the same collective.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "solar/ir/affine.h"
#include "solar/ir/dtype.h"
#include "solar/ir/expr.h"
#include "solar/util/count.h"
#include "solar/util/errors.h"

namespace solar::ir {

struct TensorId {
  std::uint32_t value = UINT32_MAX;
  bool valid() const { return value != UINT32_MAX; }
  friend auto operator<=>(TensorId, TensorId) = default;
};
struct OpId {
  std::uint32_t value = UINT32_MAX;
  bool valid() const { return value != UINT32_MAX; }
  friend auto operator<=>(OpId, OpId) = default;
};

enum class Role { Input, Weight, Constant, Intermediate, Output };
std::string_view role_name(Role r);  // input weight constant intermediate output
std::optional<Role> parse_role(std::string_view name);
// Inputs, weights and constants come from outside the graph (no producer).
inline bool is_graph_source(Role r) {
  return r == Role::Input || r == Role::Weight || r == Role::Constant;
}

struct Sparsity {
  double zero_fraction = 0;     // fraction of elements that are zero, in [0, 1]
  bool structured_2_4 = false;  // 2:4 structured (implies zero_fraction >= 0.5)
  friend bool operator==(const Sparsity&, const Sparsity&) = default;
};

struct Tensor {
  TensorId id;
  std::string name;                 // unique within the graph
  std::vector<std::int64_t> shape;  // every extent >= 0; rank 0 is a scalar
  DType dtype = DType::F32;
  Role role = Role::Intermediate;
  std::optional<Sparsity> sparsity;
  std::vector<std::string> dim_names;  // empty, or one name per dimension

  Count num_elements() const;
  // Storage size at the tensor's own width, rounded up to whole bytes.
  Count size_bytes() const;
};

enum class Reduce { None, Sum, Max, Min, Prod, Any, All };
std::string_view reduce_name(Reduce r);  // none sum max min prod any all
std::optional<Reduce> parse_reduce(std::string_view name);

// What the framework said about an einsum beyond its structure. Attention: a contraction of
// a fused attention op (scaled_dot_product_attention and its backend and backward ops), which
// the framework runs in its own attention kernels, not its matmul library, so math policies
// route it as attention (docs/bounds.md). Set by the lowering; the text and JSON forms carry
// it (`hint "attention"`).
enum class ContractionHint { None, Attention };
std::string_view contraction_hint_name(ContractionHint h);  // none attention
std::optional<ContractionHint> parse_contraction_hint(std::string_view name);

struct IndexDim {
  std::string name;
  std::int64_t extent = 0;  // >= 1
  friend bool operator==(const IndexDim&, const IndexDim&) = default;
};

struct Operand {
  std::vector<AffineExpr> subscript;  // one expression per tensor dimension
  std::optional<double> pad;          // value read outside the tensor, if allowed
  // NaN pads compare equal (as Expr constants do), so the text round trip is exact.
  friend bool operator==(const Operand&, const Operand&);
};

struct EinsumOp {
  std::vector<IndexDim> indices;          // the iteration space
  std::vector<Operand> operands;          // one per op input, same order
  std::vector<AffineExpr> output;         // output subscript, one per output dimension
  Expr combine;                           // over $0..$n-1
  Reduce reduce = Reduce::None;
  std::vector<AffineConstraint> mask;     // live points satisfy every constraint
  ContractionHint hint = ContractionHint::None;
  friend bool operator==(const EinsumOp&, const EinsumOp&) = default;

  // Indices that appear in no output subscript (summed/maxed over).
  std::vector<IndexPos> reduced_indices() const;
  std::vector<std::int64_t> extents() const;
  std::optional<IndexPos> find_index(std::string_view name) const;
};

enum class MoveKind {
  View,     // reshape/view/squeeze/unsqueeze/expand/as_strided without a copy: free
  Copy,     // materialize (contiguous, clone, repeat, expand-copy): read input, write output
  Permute,  // attrs: perm
  Slice,    // attrs: starts, ends, steps (one per dim); reads its slice
  Concat,   // attrs: axis
  Pad,      // attrs: pads (before/after per dim, 2*rank), value
  // Gather and scatter (docs/executor.md): index values in [-size, size), negative from the end.
  // inputs (data, index); attrs: axis, mode. mode "take" (default; index_select, embedding):
  //   out.shape = data.shape[:axis] + index.shape + data.shape[axis+1:],
  //   out[a.., j.., b..] = data[a.., index[j..], b..];
  // mode "elements" (torch.gather): index has data's rank, out.shape = index.shape,
  //   out[p] = data[p with p[axis] = index[p]]. Reads the gathered elements + the index.
  Gather,
  // inputs (data, index, src); attrs: axis, mode, reduce, include_self. out = data, then
  // mode "elements" (default; torch.scatter/scatter_add/scatter_reduce): for each index
  //   position p, out[p with p[axis] = index[p]] op= src[p];
  // mode "take" (index_copy/index_add): src.shape = data.shape[:axis] + index.shape +
  //   data.shape[axis+1:], out[a.., index[j..], b..] op= src[a.., j.., b..].
  // reduce: none (last write in row-major order wins) sum prod max min mean; include_self 0
  // starts a written position from its first src value. Writes what it touches.
  Scatter,
  Cast,     // dtype conversion
};
std::string_view move_kind_name(MoveKind k);
std::optional<MoveKind> parse_move_kind(std::string_view name);

// Attribute values of data-movement and opaque ops.
using AttrValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;
using Attrs = std::map<std::string, AttrValue>;

// Attribute maps compare equal when their float values are equal or both NaN (as Expr
// constants and pad values do), so a text or JSON round trip compares exact.
bool attrs_equal(const Attrs& a, const Attrs& b);

struct MoveOp {
  MoveKind kind = MoveKind::Copy;
  Attrs attrs;
  friend bool operator==(const MoveOp& a, const MoveOp& b) {
    return a.kind == b.kind && attrs_equal(a.attrs, b.attrs);
  }
};

// An op that is not an einsum, with an explicit cost and the assumption behind it.
struct OpaqueOp {
  std::string function;   // e.g. "sort", "topk", "nonzero"
  Count vector_flops;     // per the stated assumption
  Count special_ops;
  Count bytes;            // bytes moved (reads + writes)
  std::string assumption; // e.g. "bitonic sort: n log2 n compare-exchanges"
  Attrs attrs;
  friend bool operator==(const OpaqueOp& a, const OpaqueOp& b) {
    return a.function == b.function && a.vector_flops == b.vector_flops &&
           a.special_ops == b.special_ops && a.bytes == b.bytes &&
           a.assumption == b.assumption && attrs_equal(a.attrs, b.attrs);
  }
};

// A framework op no lowering table knows. Never a silent zero: reports count and show it.
struct UnanalyzedOp {
  std::string framework_op;  // e.g. "aten::_fft_r2c"
  std::string reason;
  friend bool operator==(const UnanalyzedOp&, const UnanalyzedOp&) = default;
};

class Graph;

// How an input of a repeat op reaches its body (docs/ir-text.md, "Repeat").
enum class LoopInput {
  Invariant,  // the same value every iteration (weights, constants)
  Carried,    // the initial value of loop state; later iterations see `next` of the one before
  Sliced,     // iteration i sees slice i along `axis` (the axis removed): a sequence input
};
std::string_view loop_input_name(LoopInput k);  // invariant carried sliced
std::optional<LoopInput> parse_loop_input(std::string_view name);

struct RepeatInput {
  LoopInput how = LoopInput::Invariant;
  TensorId param;         // the body tensor it binds (role input in the body)
  std::int64_t axis = 0;  // Sliced: the op input's dimension walked by the iterations
  TensorId next;          // Carried: the body tensor the param takes in the next iteration
  friend bool operator==(const RepeatInput&, const RepeatInput&) = default;
};

// How an output of a repeat op is made from its body.
enum class LoopOutput {
  Last,     // the body tensor's value after the last iteration (final loop state)
  Stacked,  // the body tensor of every iteration, iteration i at index i along `axis`
};
std::string_view loop_output_name(LoopOutput k);  // last stacked
std::optional<LoopOutput> parse_loop_output(std::string_view name);

struct RepeatOutput {
  LoopOutput how = LoopOutput::Last;
  TensorId value;         // the body tensor (role output in the body)
  std::int64_t axis = 0;  // Stacked: the op output's dimension of the iterations
  friend bool operator==(const RepeatOutput&, const RepeatOutput&) = default;
};

// A body graph run `trips` times, in order (iteration 0 first). With `reverse`, iteration i
// reads slice trips-1-i of every sliced input and writes index trips-1-i of every stacked
// output (a backward RNN direction, a reverse scan). The body is an ordinary graph whose
// inputs are the params and whose outputs are the values the loop carries or stacks; it
// holds no graph outputs of its own. Its cost is trips times the body's, plus stacking each
// stacked output once (docs/cost.md, "Repeat"); ir/unroll.h gives the equivalent flat graph.
struct RepeatOp {
  std::int64_t trips = 0;  // >= 1
  bool reverse = false;
  std::shared_ptr<const Graph> body;
  std::vector<RepeatInput> inputs;    // one per op input, same order
  std::vector<RepeatOutput> outputs;  // one per op output, same order
  // Bodies compare by their text form (print_graph): equal structure, names and origins.
  friend bool operator==(const RepeatOp& a, const RepeatOp& b);
};

// Collective communication (docs/ir-text.md, "Collectives"; docs/parallel.md). The graph is
// one rank's program; a collective runs when every rank of its group reaches it, as NCCL's
// calls do. Shapes follow the frameworks (n = the group's size; `axis` of the input):
// - all_reduce: out = the reduction over the group of every rank's input; same shape.
// - all_gather: the ranks' inputs concatenated along `axis` in rank order: out.shape[axis] =
//   n x in.shape[axis].
// - reduce_scatter: the reduction of the inputs, split along `axis` into n blocks, rank r
//   keeping block r: out.shape[axis] = in.shape[axis] / n (which n divides).
// - all_to_all: the input split along `axis` into n blocks, block j sent to rank j; the n
//   blocks received concatenated along `concat_axis` in rank order (jax.lax.all_to_all; with
//   axis = concat_axis = 0, torch's all_to_all_single): out.shape[axis] /= n, then
//   out.shape[concat_axis] *= n.
// - send: sends its input to rank `peer` of the program; its result is the input, unchanged
//   (NCCL leaves a send buffer as it was), so that a graph can keep or output what it sent.
// - recv: no input; receives from rank `peer` the tensor of its result's type.
// - broadcast: out = the input of group rank `root` on every rank; same shape.
enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll, Send, Recv, Broadcast };
// all_reduce all_gather reduce_scatter all_to_all send recv broadcast
std::string_view collective_kind_name(CollectiveKind k);
std::optional<CollectiveKind> parse_collective_kind(std::string_view name);
// Whether a collective of `k` reduces its ranks' inputs (all_reduce, reduce_scatter).
bool collective_reduces(CollectiveKind k);

// NCCL's reduction operators (ncclRedOp_t); avg is the sum divided by n.
enum class CollectiveReduction { Sum, Prod, Max, Min, Avg };
std::string_view collective_reduction_name(CollectiveReduction r);  // sum prod max min avg
std::optional<CollectiveReduction> parse_collective_reduction(std::string_view name);

// The ranks a collective runs over.
struct CollectiveGroup {
  std::int64_t size = 1;  // n ranks, >= 1 (send, recv: 2, the pair)
  std::string name;       // the mesh axis or group it runs over ("tp", "dp"); may be empty
  // How the group lies on a system, where the program or its plan knows it: ranks per
  // scale-up domain (0: unknown, numbered consecutively as bound::contiguous_group does), and
  // on a torus the group's extent along each axis of the domain (empty: unknown), whose
  // product is ranks_per_domain.
  std::int64_t ranks_per_domain = 0;
  std::vector<std::int64_t> torus_extent;
  // Which ranks run together, where they are not blocks of `size` consecutive ranks (a
  // collective over an outer mesh axis, XLA's replica groups): every group's ranks, one group
  // after another, `size` each, so {{0,2},{1,3}} is [0,2,1,3]; a rank's position in its group
  // is its group rank. Empty: the consecutive blocks (rank r in r / size * size ...).
  std::vector<std::int64_t> replica_groups;
  friend bool operator==(const CollectiveGroup&, const CollectiveGroup&) = default;
};

struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::AllReduce;
  CollectiveGroup group;
  CollectiveReduction reduction = CollectiveReduction::Sum;  // all_reduce, reduce_scatter
  std::int64_t axis = 0;         // all_gather, reduce_scatter: its axis; all_to_all: split axis
  std::int64_t concat_axis = 0;  // all_to_all
  std::int64_t peer = 0;         // send, recv: the other rank (the program's rank number)
  std::int64_t root = 0;         // broadcast: the group rank whose input everyone receives
  // Issued by an eager program (torch.distributed): it runs whether or not anything reads its
  // result, so it is never dead (a compiled program's unread collective may be dropped).
  bool eager = false;
  friend bool operator==(const CollectiveOp&, const CollectiveOp&) = default;
};

enum class OpKind { Einsum, Move, Opaque, Unanalyzed, Repeat, Collective };
std::string_view op_kind_name(OpKind k);  // einsum move opaque unanalyzed repeat collective

struct Op {
  OpId id;
  std::string name;  // unique within the graph; defaults to the first output's name
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  std::variant<EinsumOp, MoveOp, OpaqueOp, UnanalyzedOp, RepeatOp, CollectiveOp> body;
  Origin origin;  // where it came from (framework file/line, framework op)

  OpKind kind() const { return static_cast<OpKind>(body.index()); }
  const EinsumOp& einsum() const { return std::get<EinsumOp>(body); }
  const MoveOp& move() const { return std::get<MoveOp>(body); }
  const OpaqueOp& opaque() const { return std::get<OpaqueOp>(body); }
  const UnanalyzedOp& unanalyzed() const { return std::get<UnanalyzedOp>(body); }
  const RepeatOp& repeat() const { return std::get<RepeatOp>(body); }
  const CollectiveOp& collective() const { return std::get<CollectiveOp>(body); }
};

// The origin an error about `op` carries: its own, naming the op itself when it names no
// framework op.
Origin op_origin(const Op& op);

// What a graph says of itself beside its tensors and ops. A field of the graph as a whole
// belongs here: a rewrite copies this part whole (ir/rewrite.h, empty_like), so every pass
// keeps it without naming it.
struct GraphInfo {
  std::string name = "graph";
  std::string frontend = "einsum";  // who produced it: einsum (hand-written), torch, jax, loopir
  std::string source;               // file the graph was read from, if any
  // The class of each module path that ops' origins name ("blocks.3.attn" ->
  // "CausalSelfAttention"); a path missing here has an unknown class.
  std::map<std::string, std::string> module_types;
};

// Owns tensors and ops; everything else refers to them by id.
class Graph : public GraphInfo {
 public:
  TensorId add_tensor(Tensor t);  // assigns the id; throws UserError on a duplicate name
  OpId add_op(Op op);             // assigns the id (and a name when empty); add its outputs first

  const Tensor& tensor(TensorId id) const;
  Tensor& tensor(TensorId id);
  const Op& op(OpId id) const;
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<Op>& ops() const { return ops_; }
  std::optional<TensorId> find_tensor(std::string_view name) const;

  // The op that produces a tensor, if any.
  std::optional<OpId> producer(TensorId id) const;

 private:
  std::vector<Tensor> tensors_;
  std::vector<Op> ops_;
  // Name lookup: an open-addressing table of tensor id + 1 (0: empty), probed linearly and
  // compared against tensors_[id].name; no node per name, so a 100,000-op graph parses fast.
  std::vector<std::uint32_t> name_slots_;
  std::size_t find_slot(std::string_view name) const;  // the slot holding `name`, or an empty one
  std::vector<OpId> producer_;  // by tensor id; invalid when none
};

}  // namespace solar::ir
