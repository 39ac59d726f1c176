// The lowering context: trace tensors to graph tensors, argument access, einsum builders.
#include "context.h"
#include "families.h"

#include <limits>

#include <fmt/format.h>

#include "solar/util/errors.h"

namespace solar::lower::detail {

using ir::AffineExpr;
using ir::TensorId;

std::int64_t norm_dim(std::int64_t d, std::size_t rank) {
  auto r = static_cast<std::int64_t>(rank);
  std::int64_t n = d < 0 ? d + std::max<std::int64_t>(r, 1) : d;
  if (n < 0 || n >= std::max<std::int64_t>(r, 1))
    throw Unsupported(fmt::format("dimension {} is outside a rank-{} tensor", d, rank));
  return n;
}

void Context::begin(const TraceOp& op) { op_ = &op; }

ir::Expr operand(Context& c, const char* name, std::vector<ir::TensorId>& inputs, double dflt) {
  const auto& v = c.a(name);
  if (v.is_object() && v.contains("tensor")) {
    inputs.push_back(c.use_arg(name));
    return arg(static_cast<int>(inputs.size() - 1));
  }
  if (v.is_null()) return num(dflt);
  if (std::optional<double> x = number_value(v)) return num(*x);
  throw Unsupported(fmt::format("argument '{}' is neither a tensor nor a number", name));
}

const nlohmann::json& Context::a(const char* name) const {
  static const nlohmann::json null;
  auto it = op_->args.find(name);
  return it == op_->args.end() ? null : *it;
}

bool Context::has(const char* name) const { return !a(name).is_null(); }

std::int64_t Context::trace_id(const char* name) const {
  const auto& v = a(name);
  if (!v.is_object() || !v.contains("tensor") || !v["tensor"].is_number_integer())
    throw Unsupported(fmt::format("argument '{}' is not a tensor", name));
  return v["tensor"].get<std::int64_t>();
}

std::vector<std::int64_t> Context::trace_ids(const char* name) const {
  const auto& v = a(name);
  if (!v.is_array()) throw Unsupported(fmt::format("argument '{}' is not a tensor list", name));
  std::vector<std::int64_t> ids;
  for (const auto& x : v) {
    if (!x.is_object() || !x.contains("tensor"))
      throw Unsupported(fmt::format("argument '{}' holds a non-tensor", name));
    ids.push_back(x["tensor"].get<std::int64_t>());
  }
  return ids;
}

std::int64_t Context::int_arg(const char* name, std::int64_t dflt) const {
  const auto& v = a(name);
  if (v.is_null()) return dflt;
  if (v.is_boolean()) return v.get<bool>();
  if (!v.is_number_integer()) throw Unsupported(fmt::format("argument '{}' is not an integer", name));
  return v.get<std::int64_t>();
}

std::optional<double> number_value(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_number()) return v.get<double>();
  if (v.is_object() && v.contains("float") && v["float"].is_string()) {
    const std::string s = v["float"];
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  return std::nullopt;
}

double Context::num_arg(const char* name, double dflt) const {
  const auto& v = a(name);
  if (v.is_null()) return dflt;
  if (auto x = number_value(v)) return *x;
  if (v.is_boolean()) return v.get<bool>();
  if (!v.is_number()) throw Unsupported(fmt::format("argument '{}' is not a number", name));
  return v.get<double>();
}

bool Context::bool_arg(const char* name, bool dflt) const { return int_arg(name, dflt) != 0; }

std::vector<std::int64_t> Context::ints(const char* name) const {
  const auto& v = a(name);
  if (v.is_null()) return {};
  if (v.is_number_integer()) return {v.get<std::int64_t>()};
  if (!v.is_array()) throw Unsupported(fmt::format("argument '{}' is not an integer list", name));
  std::vector<std::int64_t> out;
  for (const auto& x : v) {
    if (!x.is_number_integer())
      throw Unsupported(fmt::format("argument '{}' holds a non-integer (symbolic size?)", name));
    out.push_back(x.get<std::int64_t>());
  }
  return out;
}

std::optional<std::int64_t> Context::out_id(std::size_t k) const {
  if (k >= op_->outputs.size()) return std::nullopt;
  return op_->outputs[k];
}

ir::DType Context::dtype_of(const std::string& d) {
  using ir::DType;
  static const std::pair<const char*, DType> table[] = {
      {"float64", DType::F64}, {"float32", DType::F32},   {"bfloat16", DType::BF16},
      {"float16", DType::F16}, {"float8_e4m3fn", DType::F8E4M3}, {"float8_e5m2", DType::F8E5M2},
      {"int64", DType::I64},   {"int32", DType::I32},     {"int16", DType::I16},
      {"int8", DType::I8},     {"uint8", DType::U8},      {"bool", DType::Bool},
      // No Solar dtype of their own: held as the type of the same width and kind, so bytes
      // are exact (docs/optrace.md).
      {"uint16", DType::I16},  {"uint32", DType::I32},    {"uint64", DType::I64},
      {"float8_e4m3fnuz", DType::F8E4M3}, {"float8_e5m2fnuz", DType::F8E5M2}};
  for (const auto& [name, dt] : table)
    if (d == name) return dt;
  throw Unsupported(fmt::format("dtype '{}' has no Solar equivalent", d));
}

solar::Origin Context::origin() const {
  solar::Origin o;
  if (op_) {
    o.file = op_->file;
    o.line = op_->line;
    o.op = op_->op;
  }
  return o;
}

const ir::Tensor& Context::t(TensorId id) const {
  std::size_t base = g_.tensors().size();
  if (id.value < base) return g_.tensor(id);
  if (id.value - base >= tensors_.size())
    throw InternalError(fmt::format("tensor id {} does not exist", id.value), __FILE__, __LINE__);
  return tensors_[id.value - base];
}

TensorId Context::stage(ir::Tensor t) {
  auto taken = [&](const std::string& name) {
    if (g_.find_tensor(name)) return true;
    for (const ir::Tensor& x : tensors_)
      if (x.name == name) return true;
    return false;
  };
  if (taken(t.name)) {
    std::string base = t.name;
    for (int k = 1; taken(t.name); ++k) t.name = fmt::format("{}#{}", base, k);
  }
  t.id = TensorId{static_cast<std::uint32_t>(g_.tensors().size() + tensors_.size())};
  tensors_.push_back(std::move(t));
  return tensors_.back().id;
}

void Context::stage(ir::Op op) { ops_.push_back(std::move(op)); }

void Context::commit() {
  // Every staged tensor that is not a graph source must be produced by a staged op; a
  // family that made a tensor and left it unwritten fails here, before the graph changes,
  // so its op becomes unanalyzed instead of the graph invalid.
  std::vector<bool> produced(tensors_.size(), false);
  const std::size_t base = g_.tensors().size();
  for (const ir::Op& op : ops_)
    for (TensorId id : op.outputs)
      if (id.value >= base && id.value - base < produced.size()) produced[id.value - base] = true;
  for (std::size_t k = 0; k < tensors_.size(); ++k)
    if (!ir::is_graph_source(tensors_[k].role) && !produced[k])
      throw Unsupported(fmt::format("lowering left tensor '{}' unproduced (a lowering bug)",
                                    tensors_[k].name));
  for (ir::Tensor& t : tensors_) {
    TensorId want = t.id;
    if (g_.add_tensor(std::move(t)) != want)
      throw InternalError("staged tensor ids out of step with the graph", __FILE__, __LINE__);
  }
  for (ir::Op& op : ops_) g_.add_op(std::move(op));
  tensors_.clear();
  ops_.clear();
  mapped_.clear();
}

void Context::rollback() {
  for (std::int64_t id : mapped_) map_[id] = TensorId{};
  tensors_.clear();
  ops_.clear();
  mapped_.clear();
}

TensorId Context::make_tensor(std::int64_t id, ir::Role role) {
  const TraceTensor& x = tt(id);
  ir::Tensor t;
  t.name = x.name.empty() ? fmt::format("t{}", id) : x.name;
  t.shape = x.shape;
  // Complex tensors have no Solar dtype: they are held as (real, imaginary) pairs in a
  // trailing dimension of 2, so their bytes are right; ops over them stay unanalyzed.
  if (x.dtype == "complex64" || x.dtype == "complex128" || x.dtype == "complex32") {
    t.shape.push_back(2);
    t.dtype = x.dtype == "complex128" ? ir::DType::F64
              : x.dtype == "complex64" ? ir::DType::F32 : ir::DType::F16;
  } else {
    t.dtype = dtype_of(x.dtype);
  }
  t.role = role;
  TensorId tid = stage(std::move(t));
  if (static_cast<std::size_t>(id) >= map_.size()) map_.resize(id + 1);
  map_[id] = tid;
  mapped_.push_back(id);
  return tid;
}

TensorId Context::use(std::int64_t id) {
  if (static_cast<std::size_t>(id) < map_.size() && map_[id].valid()) return map_[id];
  const TraceTensor& x = tt(id);
  switch (x.role) {
    case TraceRole::Input: return make_tensor(id, ir::Role::Input);
    case TraceRole::Parameter: case TraceRole::Buffer: return make_tensor(id, ir::Role::Weight);
    case TraceRole::Constant: return make_tensor(id, ir::Role::Constant);
    case TraceRole::Intermediate: case TraceRole::Output: break;
  }
  throw Unsupported(fmt::format("uses tensor t{}, which no lowered op produced", id));
}

TensorId Context::def(std::size_t k) {
  std::optional<std::int64_t> id = out_id(k);
  if (!id) throw InternalError(fmt::format("{} has no output {}", op_->op, k), __FILE__, __LINE__);
  if (static_cast<std::size_t>(*id) < map_.size() && map_[*id].valid())
    throw Unsupported(fmt::format("output t{} is produced twice (in-place update without a new "
                                  "version in the trace)", *id));
  return make_tensor(*id, tt(*id).role == TraceRole::Output ? ir::Role::Output
                                                            : ir::Role::Intermediate);
}

TensorId Context::temp(const std::string& suffix, std::vector<std::int64_t> shape, ir::DType dt) {
  ir::Tensor t;
  std::optional<std::int64_t> first = op_ && !op_->outputs.empty() ? op_->outputs[0] : std::nullopt;
  t.name = fmt::format("{}.{}{}", first ? fmt::format("t{}", *first) : std::string("tmp"), suffix,
                       temps_++);
  t.shape = std::move(shape);
  t.dtype = dt;
  return stage(std::move(t));
}

void Context::einsum(std::vector<TensorId> inputs, TensorId out, Space space,
                     std::vector<std::vector<AffineExpr>> subs, std::vector<AffineExpr> out_sub,
                     ir::Expr combine, ir::Reduce reduce, std::vector<ir::AffineConstraint> mask,
                     std::vector<std::optional<double>> pads) {
  ir::EinsumOp e;
  e.indices = std::move(space.dims);
  for (std::size_t k = 0; k < subs.size(); ++k)
    e.operands.push_back({std::move(subs[k]), k < pads.size() ? pads[k] : std::nullopt});
  e.output = std::move(out_sub);
  e.combine = std::move(combine);
  e.reduce = reduce;
  e.mask = std::move(mask);
  ir::Op op;
  op.inputs = std::move(inputs);
  op.outputs = {out};
  op.body = std::move(e);
  op.origin = origin();
  stage(std::move(op));
}

void Context::move(ir::MoveKind kind, std::vector<TensorId> inputs, TensorId out, ir::Attrs attrs) {
  ir::Op op;
  op.inputs = std::move(inputs);
  op.outputs = {out};
  op.body = ir::MoveOp{kind, std::move(attrs)};
  op.origin = origin();
  stage(std::move(op));
}

void Context::opaque(std::vector<TensorId> inputs, std::vector<TensorId> outputs, ir::OpaqueOp body) {
  ir::Op op;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.body = std::move(body);
  op.origin = origin();
  stage(std::move(op));
}

void Context::unanalyzed(const std::string& reason) {
  ir::Op op;
  // Tensor arguments that some op produced or that are graph sources are its inputs.
  std::vector<std::int64_t> ids;
  auto collect = [&](const nlohmann::json& v, auto&& self) -> void {
    if (v.is_object() && v.contains("tensor") && v["tensor"].is_number_integer()) {
      ids.push_back(v["tensor"].get<std::int64_t>());
    } else if (v.is_array()) {
      for (const auto& x : v) self(x, self);
    }
  };
  for (const auto& [k, v] : op_->args.items()) collect(v, collect);
  for (std::int64_t id : ids) {
    try {
      TensorId t = use(id);
      bool dup = false;
      for (TensorId x : op.inputs) dup = dup || x == t;
      if (!dup) op.inputs.push_back(t);
    } catch (const Unsupported&) {
      // An input no op produced (itself from an unanalyzed op's missing output) is left out.
    }
  }
  for (std::size_t k = 0; k < op_->outputs.size(); ++k)
    if (op_->outputs[k] &&
        !(static_cast<std::size_t>(*op_->outputs[k]) < map_.size() && map_[*op_->outputs[k]].valid()))
      op.outputs.push_back(def(k));
  if (op.outputs.empty()) return;  // nothing observable (e.g. an op returning None)
  op.body = ir::UnanalyzedOp{op_->op, reason};
  op.origin = origin();
  stage(std::move(op));
}

void Context::elementwise(std::vector<TensorId> inputs, TensorId out, ir::Expr combine,
                          std::vector<ir::AffineConstraint> mask) {
  const std::vector<std::int64_t> oshape = t(out).shape;
  const std::size_t r = oshape.size();
  Space s;
  std::vector<AffineExpr> out_sub;
  for (std::size_t d = 0; d < r; ++d) {
    out_sub.push_back(ix(s.add(fmt::format("i{}", d), std::max<std::int64_t>(oshape[d], 1))));
  }
  std::vector<std::vector<AffineExpr>> subs;
  for (TensorId in : inputs) {
    const auto& sh = t(in).shape;
    if (sh.size() > r)
      throw Unsupported(fmt::format("operand of rank {} does not broadcast to rank {}", sh.size(), r));
    std::vector<AffineExpr> sub;
    for (std::size_t d = 0; d < sh.size(); ++d) {
      std::size_t od = d + (r - sh.size());
      if (sh[d] == oshape[od]) sub.push_back(out_sub[od]);
      else if (sh[d] == 1) sub.push_back(zero());
      else
        throw Unsupported(fmt::format("operand dimension {} of size {} does not broadcast to {}", d,
                                      sh[d], oshape[od]));
    }
    subs.push_back(std::move(sub));
  }
  for (std::size_t d = 0; d < r; ++d)
    if (oshape[d] == 0) throw Unsupported("an empty (size-0) tensor");
  einsum(std::move(inputs), out, std::move(s), std::move(subs), std::move(out_sub),
         std::move(combine), ir::Reduce::None, std::move(mask));
}

void Context::reduce(TensorId in, TensorId out, const std::vector<std::int64_t>& dims, ir::Reduce r,
                     ir::Expr combine, std::vector<ir::AffineConstraint> mask) {
  const auto ishape = t(in).shape;
  const auto& oshape = t(out).shape;
  std::vector<bool> red(ishape.size(), false);
  for (std::int64_t d : dims) red[norm_dim(d, ishape.size())] = true;
  if (dims.empty()) red.assign(ishape.size(), true);
  Space s;
  std::vector<AffineExpr> sub, out_sub;
  std::size_t kept = 0;
  for (std::size_t d = 0; d < ishape.size(); ++d) {
    if (ishape[d] == 0) throw Unsupported("an empty (size-0) tensor");
    ir::IndexPos p = s.add(fmt::format("{}{}", red[d] ? "r" : "i", d), ishape[d]);
    sub.push_back(ix(p));
    if (!red[d]) out_sub.push_back(ix(p)), ++kept;
    else if (oshape.size() == ishape.size()) out_sub.push_back(zero());  // keepdim
  }
  if (out_sub.size() != oshape.size())
    throw Unsupported(fmt::format("reduction output has rank {} but {} dimensions are kept",
                                  oshape.size(), kept));
  einsum({in}, out, std::move(s), {sub}, std::move(out_sub), std::move(combine), r,
         std::move(mask));
}

void Context::channelwise(std::vector<TensorId> inputs, TensorId out, ir::Expr combine,
                          std::size_t channel_dim) {
  const std::vector<std::int64_t> oshape = t(out).shape;
  if (channel_dim >= oshape.size()) throw Unsupported("channel dimension outside the tensor");
  Space s;
  std::vector<AffineExpr> out_sub;
  for (std::size_t d = 0; d < oshape.size(); ++d) {
    if (oshape[d] == 0) throw Unsupported("an empty (size-0) tensor");
    out_sub.push_back(ix(s.add(fmt::format("i{}", d), oshape[d])));
  }
  std::vector<std::vector<AffineExpr>> subs;
  for (TensorId in : inputs) {
    const auto& sh = t(in).shape;
    if (sh.size() == 1 && oshape.size() != 1) {
      if (sh[0] != oshape[channel_dim])
        throw Unsupported(fmt::format("per-channel vector of size {} for {} channels", sh[0],
                                      oshape[channel_dim]));
      subs.push_back({out_sub[channel_dim]});
    } else if (sh == oshape) {
      subs.push_back(out_sub);
    } else {
      throw Unsupported("operand is neither per-channel nor of the output's shape");
    }
  }
  einsum(std::move(inputs), out, std::move(s), std::move(subs), std::move(out_sub),
         std::move(combine), ir::Reduce::None);
}

}  // namespace solar::lower::detail
