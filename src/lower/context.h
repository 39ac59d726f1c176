// Private to lower/: the state of one lowering (trace tensor -> graph tensor), the staging of
// einsums and data-movement ops every dialect and builder uses, and their shared vocabulary
// (combine-expression shorthands).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "solar/ir/graph.h"
#include "solar/ir/shape.h"
#include "solar/lower/optrace.h"

namespace solar::lower::detail {

// The iteration space of one einsum under construction.
struct Space {
  std::vector<ir::IndexDim> dims;
  ir::IndexPos add(std::string name, std::int64_t extent) {
    dims.push_back({std::move(name), extent});
    return static_cast<ir::IndexPos>(dims.size() - 1);
  }
};

inline ir::AffineExpr ix(ir::IndexPos i) { return ir::AffineExpr::index(i); }
inline ir::AffineExpr zero() { return ir::AffineExpr::constant(0); }
inline ir::Expr arg(int k) { return ir::Expr::operand(k); }
inline ir::Expr num(double v) { return ir::Expr::constant(v); }
inline ir::Expr fn(ir::ExprOp op, std::vector<ir::Expr> c) { return ir::Expr::make(op, std::move(c)); }

// The vocabulary every dialect's entries and the builders share.
using ir::AffineConstraint;
using ir::AffineExpr;
using ir::AffineTerm;
using ir::Expr;
using ir::ExprOp;
using ir::MoveKind;
using ir::numel;
using ir::Reduce;
using ir::Shape;
using ir::TensorId;
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline ir::Expr mul(ir::Expr a, ir::Expr b) {
  return fn(ir::ExprOp::Mul, {std::move(a), std::move(b)});
}
inline ir::Expr add(ir::Expr a, ir::Expr b) {
  return fn(ir::ExprOp::Add, {std::move(a), std::move(b)});
}
inline ir::Expr sub(ir::Expr a, ir::Expr b) {
  return fn(ir::ExprOp::Sub, {std::move(a), std::move(b)});
}
inline ir::Expr un(ir::ExprOp op, ir::Expr a) { return fn(op, {std::move(a)}); }
inline ir::Expr divide(ir::Expr a, ir::Expr b) {
  return fn(ir::ExprOp::Div, {std::move(a), std::move(b)});
}
inline ir::Expr sel(ir::Expr c, ir::Expr a, ir::Expr b) {
  return fn(ir::ExprOp::Select, {std::move(c), std::move(a), std::move(b)});
}
inline ir::Expr cmp(ir::ExprOp op, ir::Expr a, ir::Expr b) {
  return fn(op, {std::move(a), std::move(b)});
}

class Context {
 public:
  Context(const OpTrace& trace, ir::Graph& graph) : trace_(trace), g_(graph) {}

  // --- the op being lowered ---
  void begin(const TraceOp& op);
  const TraceOp& op() const { return *op_; }
  // The origin of the ops staged from now on, for trace ops that span several lines and name
  // what they run (a loop nest's statements, `loopir::softmax` at the statement's line);
  // 0 and "" keep the trace op's own. begin() resets both.
  void at(int line, std::string op = {}) {
    line_ = line;
    origin_op_ = std::move(op);
  }
  // The hint of the einsums staged from now on (a fused attention op's contractions);
  // begin() resets it to None.
  void set_contraction_hint(ir::ContractionHint h) { hint_ = h; }
  // A named argument (null when absent).
  const nlohmann::json& a(const char* name) const;
  bool has(const char* name) const;
  std::int64_t trace_id(const char* name) const;              // a tensor argument
  std::vector<std::int64_t> trace_ids(const char* name) const;  // a list of tensors
  std::int64_t int_arg(const char* name, std::int64_t dflt) const;
  // A collective's kind, group and attributes as the sharded captures record them, under
  // the same argument names for every frontend (collective, size, group, ranks_per_domain,
  // replica_groups, eager, reduction, axis, concat_axis, peer, root); a send or recv runs
  // between a pair (group size 2, the IR's rule). `recorded_under` names what the capture records them under,
  // for the error when they are missing.
  ir::CollectiveOp collective_args(std::string_view recorded_under) const;
  double num_arg(const char* name, double dflt) const;
  bool bool_arg(const char* name, bool dflt) const;
  std::vector<std::int64_t> ints(const char* name) const;  // an int or int list; [] if None
  std::optional<std::int64_t> out_id(std::size_t k) const;  // trace id of output k

  // --- tensors ---
  const TraceTensor& tt(std::int64_t id) const { return trace_.tensor(id); }
  const std::vector<std::int64_t>& shape(std::int64_t trace_tensor) const { return tt(trace_tensor).shape; }
  // The graph tensor holding a trace tensor; a tensor that no op produced is a graph source
  // (input, weight, constant) created on first use.
  ir::TensorId use(std::int64_t id);
  ir::TensorId use_arg(const char* name) { return use(trace_id(name)); }
  // The graph tensor for output k of the current op (created now).
  ir::TensorId def(std::size_t k);
  // A new intermediate of a decomposition.
  ir::TensorId temp(const std::string& suffix, std::vector<std::int64_t> shape, ir::DType dt);
  const ir::Tensor& t(ir::TensorId id) const;

  // Tensors and ops of the current trace op are staged, and reach the graph only when the
  // whole op lowered: an op that fails halfway leaves nothing behind.
  void commit();
  void rollback();

  // --- ops ---
  void einsum(std::vector<ir::TensorId> inputs, ir::TensorId out, Space space,
              std::vector<std::vector<ir::AffineExpr>> subs, std::vector<ir::AffineExpr> out_sub,
              ir::Expr combine, ir::Reduce reduce, std::vector<ir::AffineConstraint> mask = {},
              std::vector<std::optional<double>> pads = {});
  void move(ir::MoveKind kind, std::vector<ir::TensorId> inputs, ir::TensorId out, ir::Attrs attrs = {});
  void opaque(std::vector<ir::TensorId> inputs, std::vector<ir::TensorId> outputs, ir::OpaqueOp body);
  void unanalyzed(const std::string& reason);
  // A repeat op (its inputs' aliases materialized first, as for an opaque op).
  void repeat(std::vector<ir::TensorId> inputs, std::vector<ir::TensorId> outputs, ir::RepeatOp body);
  // One rank's part of a collective (no input for a recv).
  void collective(std::vector<ir::TensorId> inputs, ir::TensorId out, ir::CollectiveOp body);

  // --- building another graph (a repeat op's body, aten_rnn.cc) ---
  // A Context over the body graph, begun at this Context's op, stages body ops with the same
  // builders; these two make the body's params and results, which no trace tensor stands for.
  // A graph input of the staged ops named `name` (uniquified like temps).
  ir::TensorId source(std::string name, std::vector<std::int64_t> shape, ir::DType dt);
  // Marks a staged tensor an output of the graph it is staged for.
  void mark_output(ir::TensorId id);
  const OpTrace& trace() const { return trace_; }

  // Elementwise over the broadcast of the inputs to `out`'s shape (numpy rules: aligned
  // right, size-1 dimensions broadcast). `mask` uses the output's index positions.
  void elementwise(std::vector<ir::TensorId> inputs, ir::TensorId out, ir::Expr combine,
                   std::vector<ir::AffineConstraint> mask = {});
  // Reduces `in` over `dims` into `out` (keepdim: `out` keeps them as size 1).
  void reduce(ir::TensorId in, ir::TensorId out, const std::vector<std::int64_t>& dims,
              ir::Reduce r, ir::Expr combine = arg(0), std::vector<ir::AffineConstraint> mask = {});
  // Elementwise where rank-1 inputs are per-channel vectors along `out`'s dimension
  // `channel_dim` and the other inputs have `out`'s shape (batch norm, convolution bias).
  void channelwise(std::vector<ir::TensorId> inputs, ir::TensorId out, ir::Expr combine,
                   std::size_t channel_dim);

  // --- strided aliases ---
  // torch makes transposes, permutes, windows (as_strided, unfold) and diagonals by strides,
  // without a copy. The graph holds such a view as an *alias*: a graph tensor of the view's
  // logical shape whose values are flat[offset + sum_d i_d * strides[d]], where `flat` is a
  // plain (row-major) graph tensor seen as one dimension. An alias is produced by free
  // (zero-byte) views, so it costs nothing, but its values are never read from it: an
  // einsum reading it reads the viewed tensor instead (one subscript per dimension when each
  // view dimension walks a dimension of its own, else `flat` through the strided
  // subscript), and any other consumer reads a copy made by `materialize` (an einsum that
  // costs what the copy costs). A view that is a program output is copied out at once.
  struct Strided {
    std::vector<std::int64_t> strides;  // per view dimension, in elements of the flat tensor
    std::int64_t offset = 0;
    std::int64_t root_offset = 0;       // trace storage offset of the flat tensor's element 0
  };
  // `in` as a strided view: an alias's layout, else row-major over `in` itself
  // (`root_trace_id`: the trace tensor of `in`, for its storage offset).
  Strided layout(ir::TensorId in, std::int64_t root_trace_id) const;
  // Output k of the current op as the alias `s` over `in`'s flat tensor (s from layout(in)).
  ir::TensorId alias_output(std::size_t k, ir::TensorId in, Strided s);
  bool is_alias(ir::TensorId t) const;
  // A plain graph tensor with an alias's values (an einsum copy); other tensors unchanged.
  ir::TensorId materialize(ir::TensorId t);
  // Output k of the current op is memory with no defined values (torch.empty, new_empty):
  // nothing is lowered for it, and a consumer that reads it (a slice an in-place copy fills,
  // say) gets it from an "uninitialized" op that costs nothing (docs/cost.md).
  void mark_uninitialized(std::size_t k);

  static ir::DType dtype_of(const std::string& torch_dtype);
  solar::Origin origin() const;
  // The graph tensor of each trace id lowered so far (invalid where none), committed ops only.
  const std::vector<ir::TensorId>& tensor_map() const { return map_; }

 private:
  struct Alias {
    ir::TensorId flat;  // a plain tensor of one dimension: `root` flattened
    Strided layout;
    ir::TensorId root;  // the plain tensor viewed
  };
  ir::TensorId make_tensor(std::int64_t id, ir::Role role);
  // An uninitialized tensor's first use: an "uninitialized" opaque op (no work) makes it.
  ir::TensorId make_uninitialized(std::int64_t id);
  // Verifies the staged ops as a graph of their own (throws Unsupported: a lowering bug).
  void check_staged() const;
  // out = the alias's values (an einsum copy; a cast when out's dtype differs).
  void copy_alias(ir::TensorId alias, ir::TensorId out);
  std::optional<std::vector<ir::AffineExpr>> root_subscript(const Alias& a,
                                                            const std::vector<std::int64_t>& shape,
                                                            const std::vector<ir::AffineExpr>& sub) const;
  const Alias* alias_of(ir::TensorId t) const;
  ir::TensorId flat_of(ir::TensorId base);
  // An operand that reads an alias reads the viewed tensor instead (root_subscript, or the
  // flat form); a padded or broadcast read reads a materialized copy.
  void read_through(ir::TensorId& in, std::vector<ir::AffineExpr>& sub, std::optional<double> pad);
  ir::TensorId stage(ir::Tensor t);
  void stage(ir::Op op);
  // An op that reads its inputs whole, not through subscripts (opaque, repeat): aliases
  // among them are materialized first.
  void stage_reading_whole(std::vector<ir::TensorId> inputs, std::vector<ir::TensorId> outputs,
                           decltype(ir::Op::body) body);
  std::vector<ir::Tensor> tensors_;    // staged
  std::vector<ir::Op> ops_;            // staged
  std::vector<std::int64_t> mapped_;   // trace ids mapped by the staged tensors
  const OpTrace& trace_;
  ir::Graph& g_;
  const TraceOp* op_ = nullptr;
  int traced_op_ = -1;  // op_'s position in trace_.ops (-1: not one of them)
  int line_ = 0;
  std::string origin_op_;
  ir::ContractionHint hint_ = ir::ContractionHint::None;
  std::vector<ir::TensorId> map_;  // by trace id
  int temps_ = 0;
  std::unordered_set<std::int64_t> uninitialized_;  // trace ids of empty / new_empty results
  std::unordered_map<std::string, int> suffixes_;  // name -> the last `#k` it was given
  // Committed and staged (this op's) aliases, flat views and materialized copies; staged
  // ones are dropped by rollback.
  std::map<std::uint32_t, Alias> aliases_, staged_aliases_;
  std::map<std::uint32_t, ir::TensorId> flats_, staged_flats_;  // viewed tensor -> flat view
  std::map<std::uint32_t, ir::TensorId> copies_, staged_copies_;  // alias -> materialized
};

// A JSON number, bool or {"float": "inf"|"-inf"|"nan"}; nullopt for anything else.
std::optional<double> number_value(const nlohmann::json& v);

// Normalizes a possibly negative dimension against a rank; throws Unsupported when outside.
std::int64_t norm_dim(std::int64_t d, std::size_t rank);

}  // namespace solar::lower::detail
