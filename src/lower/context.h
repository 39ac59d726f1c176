// Private to lower/: the state of one lowering (trace tensor -> graph tensor) and the
// builders the aten table uses to emit einsums and data-movement ops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "solar/ir/graph.h"
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

class Context {
 public:
  Context(const OpTrace& trace, ir::Graph& graph) : trace_(trace), g_(graph) {}

  // --- the op being lowered ---
  void begin(const TraceOp& op);
  const TraceOp& op() const { return *op_; }
  // A named argument (null when absent).
  const nlohmann::json& a(const char* name) const;
  bool has(const char* name) const;
  std::int64_t trace_id(const char* name) const;              // a tensor argument
  std::vector<std::int64_t> trace_ids(const char* name) const;  // a list of tensors
  std::int64_t int_arg(const char* name, std::int64_t dflt) const;
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

  static ir::DType dtype_of(const std::string& torch_dtype);
  solar::Origin origin() const;
  // The graph tensor of each trace id lowered so far (invalid where none), committed ops only.
  const std::vector<ir::TensorId>& tensor_map() const { return map_; }

 private:
  ir::TensorId make_tensor(std::int64_t id, ir::Role role);
  ir::TensorId stage(ir::Tensor t);
  void stage(ir::Op op);
  std::vector<ir::Tensor> tensors_;    // staged
  std::vector<ir::Op> ops_;            // staged
  std::vector<std::int64_t> mapped_;   // trace ids mapped by the staged tensors
  const OpTrace& trace_;
  ir::Graph& g_;
  const TraceOp* op_ = nullptr;
  std::vector<ir::TensorId> map_;  // by trace id
  int temps_ = 0;
};

// A JSON number, bool or {"float": "inf"|"-inf"|"nan"}; nullopt for anything else.
std::optional<double> number_value(const nlohmann::json& v);

// Normalizes a possibly negative dimension against a rank; throws Unsupported when outside.
std::int64_t norm_dim(std::int64_t d, std::size_t rank);

}  // namespace solar::lower::detail
