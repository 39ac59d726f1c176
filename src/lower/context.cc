// The lowering context: trace tensors to graph tensors, argument access, einsum builders.
#include "context.h"
#include "families.h"

#include <functional>
#include <limits>

#include <fmt/format.h>

#include "solar/ir/verify.h"
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

void Context::begin(const TraceOp& op) {
  op_ = &op;
  const TraceOp* first = trace_.ops.data();
  const std::less<const TraceOp*> before;
  traced_op_ = !before(&op, first) && before(&op, first + trace_.ops.size())
                   ? static_cast<int>(&op - first)
                   : -1;
  line_ = 0;
  origin_op_.clear();
  hint_ = ir::ContractionHint::None;
}

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

ir::CollectiveOp Context::collective_args(std::string_view recorded_under) const {
  const nlohmann::json& kind_arg = a("collective");
  if (!kind_arg.is_string())
    throw Unsupported(fmt::format("a collective without the capture's `collective` argument "
                                  "(was it recorded outside {}?)",
                                  recorded_under));
  const auto kind = ir::parse_collective_kind(kind_arg.get<std::string>());
  if (!kind) throw Unsupported("unknown collective kind '" + kind_arg.get<std::string>() + "'");
  ir::CollectiveOp op;
  op.kind = *kind;
  const bool pair = op.kind == ir::CollectiveKind::Send || op.kind == ir::CollectiveKind::Recv;
  op.group.size = pair ? 2 : int_arg("size", 1);
  op.group.ranks_per_domain = int_arg("ranks_per_domain", 0);  // placed on a system
  if (a("group").is_string()) op.group.name = a("group").get<std::string>();
  if (a("replica_groups").is_array())  // groups that are not consecutive blocks
    for (const auto& r : a("replica_groups")) {
      if (!r.is_number_integer()) throw Unsupported("replica_groups holds a non-integer");
      op.group.replica_groups.push_back(r.get<std::int64_t>());
    }
  if (ir::collective_reduces(op.kind)) {
    const auto r = ir::parse_collective_reduction(a("reduction").get<std::string>());
    if (!r) throw Unsupported("unknown collective reduction");
    op.reduction = *r;
  }
  op.axis = int_arg("axis", 0);
  op.concat_axis = int_arg("concat_axis", 0);
  op.peer = int_arg("peer", 0);
  op.root = int_arg("root", 0);
  op.eager = int_arg("eager", 0) != 0;  // torch.distributed: runs whether or not it is read
  return op;
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
  // Frontends that speak Solar's own dtypes (the loop language) use the IR's names.
  if (std::optional<DType> dt = ir::parse_dtype(d)) return *dt;
  throw Unsupported(fmt::format("dtype '{}' has no Solar equivalent", d));
}

solar::Origin Context::origin() const {
  solar::Origin o;
  if (op_) {
    o.file = op_->file;
    o.line = line_ ? line_ : op_->line;
    o.op = origin_op_.empty() ? op_->op : origin_op_;
    o.module = op_->module;  // every op lowered from a traced op inherits its module
    o.traced_op = traced_op_;
  }
  return o;
}

const ir::Tensor& Context::t(TensorId id) const {
  std::size_t base = g_.tensors().size();
  if (id.value < base) return g_.tensor(id);
  SOLAR_CHECK(id.value - base < tensors_.size(),
              fmt::format("tensor id {} does not exist", id.value));
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
    // Continue from the last suffix this name took: a program that names a thousand tensors
    // alike stays linear.
    std::string base = t.name;
    int& k = suffixes_[base];
    do t.name = fmt::format("{}#{}", base, ++k);
    while (taken(t.name));
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
  check_staged();
  for (ir::Tensor& t : tensors_) {
    TensorId want = t.id;
    SOLAR_CHECK(g_.add_tensor(std::move(t)) == want,
                "staged tensor ids out of step with the graph");
  }
  for (ir::Op& op : ops_) g_.add_op(std::move(op));
  tensors_.clear();
  ops_.clear();
  mapped_.clear();
  for (auto& [k, v] : staged_aliases_) aliases_[k] = std::move(v);
  for (auto& [k, v] : staged_flats_) flats_[k] = v;
  for (auto& [k, v] : staged_copies_) copies_[k] = v;
  staged_aliases_.clear();
  staged_flats_.clear();
  staged_copies_.clear();
}

// The staged ops as a graph of their own (tensors they read from the graph become inputs),
// verified: a family that built an invalid op fails here, before the graph changes, so its
// trace op becomes unanalyzed with the reason instead of the whole lowering failing.
void Context::check_staged() const {
  const std::size_t base = g_.tensors().size();
  ir::Graph mini;
  std::map<std::uint32_t, TensorId> remap;
  for (const ir::Op& op : ops_)
    for (TensorId id : op.inputs)
      if (id.value < base && !remap.contains(id.value)) {
        ir::Tensor t = g_.tensor(id);
        t.role = ir::Role::Input;
        t.sparsity.reset();
        remap[id.value] = mini.add_tensor(std::move(t));
      }
  for (const ir::Tensor& x : tensors_) {
    ir::Tensor t = x;
    remap[x.id.value] = mini.add_tensor(std::move(t));
  }
  for (const ir::Op& x : ops_) {
    ir::Op op = x;
    for (TensorId& id : op.inputs) id = remap.at(id.value);
    for (TensorId& id : op.outputs) id = remap.at(id.value);
    op.name.clear();
    mini.add_op(std::move(op));
  }
  if (std::optional<std::string> why = ir::why_invalid(mini))
    throw Unsupported(fmt::format("the lowering built an invalid op (a lowering bug): {}", *why));
}

void Context::rollback() {
  for (std::int64_t id : mapped_) map_[id] = TensorId{};
  tensors_.clear();
  ops_.clear();
  mapped_.clear();
  staged_aliases_.clear();
  staged_flats_.clear();
  staged_copies_.clear();
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
  t.dim_names = x.dims;
  t.sparsity = x.sparsity;
  TensorId tid = stage(std::move(t));
  if (static_cast<std::size_t>(id) >= map_.size()) map_.resize(id + 1);
  map_[id] = tid;
  mapped_.push_back(id);
  return tid;
}

// ---------------------------------------------------------------- strided aliases

namespace {

using ir::numel;

}  // namespace

const Context::Alias* Context::alias_of(TensorId t) const {
  if (auto it = staged_aliases_.find(t.value); it != staged_aliases_.end()) return &it->second;
  if (auto it = aliases_.find(t.value); it != aliases_.end()) return &it->second;
  return nullptr;
}

bool Context::is_alias(TensorId t) const { return alias_of(t) != nullptr; }

TensorId Context::flat_of(TensorId base) {
  const ir::Tensor& b = t(base);
  if (b.shape.size() == 1) return base;
  if (auto it = staged_flats_.find(base.value); it != staged_flats_.end()) return it->second;
  if (auto it = flats_.find(base.value); it != flats_.end()) return it->second;
  const std::int64_t n = numel(b.shape);
  const ir::DType dt = b.dtype;
  TensorId flat = temp("flat", {n}, dt);
  move(ir::MoveKind::View, {base}, flat);
  staged_flats_[base.value] = flat;
  return flat;
}

Context::Strided Context::layout(TensorId in, std::int64_t root_trace_id) const {
  if (const Alias* a = alias_of(in)) return a->layout;
  Strided s;
  const auto& shape = t(in).shape;
  s.strides.assign(shape.size(), 0);
  std::int64_t st = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    s.strides[d] = st;
    st *= shape[d];
  }
  s.root_offset = tt(root_trace_id).storage_offset;
  return s;
}

TensorId Context::alias_output(std::size_t k, TensorId in, Strided s) {
  TensorId flat, root = in;
  if (const Alias* a = alias_of(in)) flat = a->flat, root = a->root;
  else flat = flat_of(in);
  const std::int64_t n = t(flat).shape.empty() ? 1 : t(flat).shape[0];
  TensorId out = def(k);
  const auto& shape = t(out).shape;
  SOLAR_CHECK(s.strides.size() == shape.size(), "alias strides do not match the view's rank");
  if (numel(shape) == 0) {  // an empty view reads nothing: a slice of no element
    if (t(out).dtype != t(flat).dtype) throw Unsupported("a strided view that reinterprets the dtype");
    TensorId none = temp("empty", {0}, t(out).dtype);
    move(ir::MoveKind::Slice, {flat}, none,
         {{"starts", std::vector<std::int64_t>{0}}, {"ends", std::vector<std::int64_t>{0}},
          {"steps", std::vector<std::int64_t>{1}}});
    move(ir::MoveKind::View, {none}, out);
    return out;
  }
  std::int64_t lo = s.offset, hi = s.offset;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::int64_t span = (shape[d] - 1) * s.strides[d];
    (span < 0 ? lo : hi) += span;
  }
  if (lo < 0 || hi >= n)
    throw Unsupported(fmt::format("a strided view reaches elements [{}, {}] outside the {} "
                                  "elements of the tensor it views", lo, hi, n));
  const ir::DType dt = t(out).dtype;
  if (dt != t(flat).dtype) throw Unsupported("a strided view that reinterprets the dtype");
  // A row-major layout is a contiguous block of the flat tensor: a slice and a reshape hold
  // its values (both free), no alias needed.
  bool row_major = true;
  std::int64_t want = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && s.strides[d] != want) row_major = false;
    want *= shape[d];
  }
  if (row_major) {
    const std::int64_t count = numel(shape);
    TensorId block = flat;
    if (count != n) {
      block = temp("block", {count}, dt);
      move(ir::MoveKind::Slice, {flat}, block,
           {{"starts", std::vector<std::int64_t>{s.offset}},
            {"ends", std::vector<std::int64_t>{s.offset + count}},
            {"steps", std::vector<std::int64_t>{1}}});
    }
    move(ir::MoveKind::View, {block}, out);
    return out;
  }
  Alias a{flat, std::move(s), root};
  auto free_alias = [&](TensorId target) {
    // A one-element slice broadcast to the shape: zero bytes, right shape; nothing reads it.
    TensorId one = temp("alias_src", {1}, dt);
    move(ir::MoveKind::Slice, {flat}, one,
         {{"starts", std::vector<std::int64_t>{0}}, {"ends", std::vector<std::int64_t>{1}},
          {"steps", std::vector<std::int64_t>{1}}});
    move(ir::MoveKind::View, {one}, target);
    staged_aliases_[target.value] = std::move(a);
  };
  if (t(out).role == ir::Role::Output) {  // a program output must hold its values
    TensorId alias = temp("alias", shape, dt);
    free_alias(alias);
    copy_alias(alias, out);
  } else {
    free_alias(out);
  }
  return out;
}

void Context::read_through(TensorId& in, std::vector<AffineExpr>& sub, std::optional<double> pad) {
  const Alias* a = alias_of(in);
  if (!a) return;
  // A padded read leaves the view's box (the flat subscript would not), and a broadcast
  // (stride-0) dimension would drop its index from the subscript: both read a copy.
  bool broadcast = false;
  for (std::size_t d = 0; d < a->layout.strides.size(); ++d)
    broadcast = broadcast || (a->layout.strides[d] == 0 && t(in).shape[d] > 1);
  if (pad || broadcast) {
    in = materialize(in);
    return;
  }
  if (std::optional<std::vector<AffineExpr>> per_dim = root_subscript(*a, t(in).shape, sub)) {
    sub = std::move(*per_dim);
    in = a->root;
    return;
  }
  std::vector<ir::AffineTerm> terms;
  std::int64_t constant = a->layout.offset;
  const std::vector<std::int64_t>& st = a->layout.strides;
  for (std::size_t d = 0; d < sub.size() && d < st.size(); ++d) {
    for (const ir::AffineTerm& term : sub[d].terms())
      terms.push_back({term.index, term.coef * st[d]});
    constant += sub[d].constant_term() * st[d];
  }
  sub = {AffineExpr::make(std::move(terms), constant)};
  in = a->flat;
}

// The alias read as its root tensor, one subscript per root dimension, when every view
// dimension walks one root dimension of its own (a permute, transpose, select or strided
// slice of one): root dimension e is read at start_e + step * sub_d. A plain subscript
// must span its whole dimension (the verifier's rule), so a view that covers part of a
// root dimension with step 1 from 0 keeps the flat form. nullopt: the flat form.
std::optional<std::vector<AffineExpr>> Context::root_subscript(const Alias& a,
                                                               const std::vector<std::int64_t>& shape,
                                                               const std::vector<AffineExpr>& sub) const {
  const std::vector<std::int64_t>& B = t(a.root).shape;
  const std::size_t R = B.size();
  std::vector<std::int64_t> beta(R, 1), start(R, 0);
  for (std::size_t e = R; e-- > 1;) beta[e - 1] = beta[e] * B[e];
  std::int64_t rest = a.layout.offset;
  for (std::size_t e = 0; e < R; ++e) {
    start[e] = rest / beta[e];
    rest %= beta[e];
  }
  std::vector<int> owner(R, -1);
  std::vector<std::int64_t> step(shape.size(), 0);
  std::vector<std::size_t> dim_of(shape.size(), 0);
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;  // its index is 0 (or constant): no root dimension needed
    const std::int64_t s = a.layout.strides[d];
    std::optional<std::size_t> found;
    for (std::size_t e = 0; e < R && !found; ++e)
      if (B[e] > 1 && s >= beta[e] && s < beta[e] * B[e] && s % beta[e] == 0) found = e;
    if (!found || owner[*found] >= 0) return std::nullopt;
    const std::size_t e = *found;
    step[d] = s / beta[e];
    if (start[e] + step[d] * (shape[d] - 1) >= B[e]) return std::nullopt;
    owner[e] = static_cast<int>(d);
    dim_of[d] = e;
  }
  std::vector<AffineExpr> out;
  for (std::size_t e = 0; e < R; ++e) {
    if (owner[e] < 0) {
      out.push_back(AffineExpr::constant(start[e]));
      continue;
    }
    const auto d = static_cast<std::size_t>(owner[e]);
    std::vector<ir::AffineTerm> terms;
    for (const ir::AffineTerm& term : sub[d].terms()) terms.push_back({term.index, term.coef * step[d]});
    AffineExpr x = AffineExpr::make(std::move(terms), start[e] + sub[d].constant_term() * step[d]);
    // a plain index over part of a dimension breaks the verifier's extent rule
    if (x.as_plain_index() && shape[d] != B[e]) return std::nullopt;
    out.push_back(std::move(x));
  }
  // Indices reading a size-1 view dimension have extent 1 (a read without pad stays in
  // range): their value is 0, but they must still appear in a subscript, so they ride along
  // on root dimension 0.
  std::vector<ir::AffineTerm> extra;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (shape[d] == 1)
      for (const ir::AffineTerm& term : sub[d].terms()) extra.push_back(term);
  if (!extra.empty()) {
    if (out.empty()) return std::nullopt;
    std::vector<ir::AffineTerm> terms = out[0].terms();
    terms.insert(terms.end(), extra.begin(), extra.end());
    out[0] = AffineExpr::make(std::move(terms), out[0].constant_term());
  }
  return out;
}

// out[i..] = flat[offset + sum_d i_d * strides[d]] for an alias: every index is in the
// output, so broadcast (stride-0) dimensions keep theirs; a cast happens at the store.
void Context::copy_alias(TensorId x, TensorId out) {
  const Alias a = *alias_of(x);
  const std::vector<std::int64_t> shape = t(x).shape;
  Space s;
  std::vector<AffineExpr> out_sub;
  std::vector<ir::AffineTerm> terms;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    ir::IndexPos i = s.add(fmt::format("i{}", d), shape[d]);
    out_sub.push_back(ix(i));
    terms.push_back({i, a.layout.strides[d]});
  }
  einsum({a.flat}, out, std::move(s), {{AffineExpr::make(std::move(terms), a.layout.offset)}},
         std::move(out_sub), arg(0), ir::Reduce::None);
}

TensorId Context::materialize(TensorId x) {
  if (!is_alias(x)) return x;
  if (auto it = staged_copies_.find(x.value); it != staged_copies_.end()) return it->second;
  if (auto it = copies_.find(x.value); it != copies_.end()) return it->second;
  TensorId c = temp("contiguous", t(x).shape, t(x).dtype);
  copy_alias(x, c);
  staged_copies_[x.value] = c;
  return c;
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
  if (uninitialized_.contains(id)) return make_uninitialized(id);
  throw Unsupported(fmt::format("uses tensor t{}, which no lowered op produced", id));
}

void Context::mark_uninitialized(std::size_t k) {
  if (std::optional<std::int64_t> id = out_id(k)) uninitialized_.insert(*id);
}

TensorId Context::make_uninitialized(std::int64_t id) {
  TensorId t = make_tensor(id, tt(id).role == TraceRole::Output ? ir::Role::Output
                                                                : ir::Role::Intermediate);
  ir::OpaqueOp o;
  o.function = "uninitialized";
  o.vector_flops = Count(0);
  o.special_ops = Count(0);
  o.bytes = Count(0);
  o.assumption = "allocated memory with no defined values (torch.empty): no work, nothing "
                 "moved; the executor fills it with zeros";
  opaque({}, {t}, std::move(o));
  return t;
}

TensorId Context::def(std::size_t k) {
  std::optional<std::int64_t> id = out_id(k);
  SOLAR_CHECK(id, fmt::format("{} has no output {}", op_->op, k));
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
  for (std::size_t k = 0; k < inputs.size() && k < subs.size(); ++k)
    read_through(inputs[k], subs[k], k < pads.size() ? pads[k] : std::nullopt);
  ir::EinsumOp e;
  e.indices = std::move(space.dims);
  for (std::size_t k = 0; k < subs.size(); ++k)
    e.operands.push_back({std::move(subs[k]), k < pads.size() ? pads[k] : std::nullopt});
  e.output = std::move(out_sub);
  e.combine = std::move(combine);
  e.reduce = reduce;
  e.mask = std::move(mask);
  e.hint = hint_;
  ir::Op op;
  op.inputs = std::move(inputs);
  op.outputs = {out};
  op.body = std::move(e);
  op.origin = origin();
  stage(std::move(op));
}

void Context::move(ir::MoveKind kind, std::vector<TensorId> inputs, TensorId out, ir::Attrs attrs) {
  if ((kind == ir::MoveKind::Copy || kind == ir::MoveKind::Cast) && inputs.size() == 1 &&
      is_alias(inputs[0]) && t(inputs[0]).shape == t(out).shape) {
    // contiguous() / clone() / a cast of a strided view: one einsum copy out of the storage.
    copy_alias(inputs[0], out);
    return;
  }
  for (TensorId& in : inputs) in = materialize(in);
  ir::Op op;
  op.inputs = std::move(inputs);
  op.outputs = {out};
  op.body = ir::MoveOp{kind, std::move(attrs)};
  op.origin = origin();
  stage(std::move(op));
}

void Context::opaque(std::vector<TensorId> inputs, std::vector<TensorId> outputs, ir::OpaqueOp body) {
  stage_reading_whole(std::move(inputs), std::move(outputs), std::move(body));
}

void Context::repeat(std::vector<TensorId> inputs, std::vector<TensorId> outputs, ir::RepeatOp body) {
  stage_reading_whole(std::move(inputs), std::move(outputs), std::move(body));
}

void Context::collective(std::vector<TensorId> inputs, TensorId out, ir::CollectiveOp body) {
  stage_reading_whole(std::move(inputs), {out}, std::move(body));
}

void Context::stage_reading_whole(std::vector<TensorId> inputs, std::vector<TensorId> outputs,
                                  decltype(ir::Op::body) body) {
  for (TensorId& in : inputs) in = materialize(in);
  ir::Op op;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.body = std::move(body);
  op.origin = origin();
  stage(std::move(op));
}

TensorId Context::source(std::string name, std::vector<std::int64_t> shape, ir::DType dt) {
  ir::Tensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.dtype = dt;
  t.role = ir::Role::Input;
  return stage(std::move(t));
}

void Context::mark_output(TensorId id) {
  const std::size_t base = g_.tensors().size();
  SOLAR_CHECK(id.value >= base && id.value - base < tensors_.size(),
              "mark_output of a tensor that is not staged");
  tensors_[id.value - base].role = ir::Role::Output;
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
    out_sub.push_back(ix(s.add(fmt::format("i{}", d), oshape[d])));
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

LowerResult lower_with_table(const OpTrace& trace, const LowerOptions& options,
                             const Table& table, std::string_view dialect) {
  LowerResult result;
  ir::Graph& g = result.graph;
  g.name = trace.name;
  g.frontend = trace.frontend;
  g.source = trace.source;
  g.module_types = trace.modules;
  Context c(trace, g);
  for (const TraceOp& op : trace.ops) {
    c.begin(op);
    std::string reason;
    auto it = table.find(op.op);
    if (it == table.end()) {
      reason = fmt::format("no lowering in the {} table", dialect);
    } else {
      try {
        it->second(c);
        c.commit();
        continue;
      } catch (const Unsupported& e) {
        c.rollback();
        reason = e.message();
      }
    }
    std::string where = op.file.empty() ? "" : fmt::format(" ({}:{})", op.file, op.line);
    if (options.strict)
      throw Unsupported(fmt::format("{}{} cannot be analyzed: {} (--strict)", op.op, where, reason),
                        c.origin());
    result.warnings.push_back(fmt::format("{}{}: {}", op.op, where, reason));
    c.unanalyzed(reason);
    c.commit();  // an unanalyzed op produces every output it stages
  }
  ir::verify(g);
  result.trace_ids.assign(g.tensors().size(), -1);
  const std::vector<ir::TensorId>& map = c.tensor_map();
  for (std::size_t id = 0; id < map.size(); ++id)
    if (map[id].valid()) result.trace_ids[map[id].value] = static_cast<std::int64_t>(id);
  return result;
}

}  // namespace solar::lower::detail
