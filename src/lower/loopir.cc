// The loopir table: `loopir::nest` (lifted by loopir_nest.cc), `loopir::recurrence`
// (loopir_recurrence.cc) and the composition intrinsics of a loop program's model()
// (docs/loop-language.md), each a data-movement op or a small einsum.
#include "solar/lower/loopir.h"

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "builders.h"
#include "context.h"
#include "loopir_nest.h"
#include "loopir_recurrence.h"
#include "op_table.h"
#include "solar/ir/verify.h"
#include "solar/lower/jax.h"
#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using namespace detail;
using ir::MoveKind;
using ir::TensorId;

// Moves one dimension of an input to a row-major view with a size-1 dimension at `dim`.
TensorId unsqueezed(Context& c, TensorId in, std::int64_t dim) {
  Shape shape = c.t(in).shape;
  shape.insert(shape.begin() + dim, 1);
  TensorId out = c.temp("unsqueezed", shape, c.t(in).dtype);
  c.move(MoveKind::View, {in}, out);
  return out;
}

void fill(Context& c) {
  std::optional<double> v = number_value(c.a("value"));
  if (!v) throw UserError(UserError::Kind::Parse, "loopir::fill needs a number", c.origin());
  c.elementwise({}, c.def(0), num(*v));
}

void reshape(Context& c) {
  TensorId in = c.use_arg("self"), out = c.def(0);
  if (numel(c.t(in).shape) != numel(c.t(out).shape))
    throw UserError(UserError::Kind::ShapeMismatch,
                    fmt::format("shape mismatch: reshape of {} elements to {}",
                                numel(c.t(in).shape), numel(c.t(out).shape)),
                    c.origin());
  c.move(MoveKind::View, {in}, out);
}

void permute(Context& c) {
  c.move(MoveKind::Permute, {c.use_arg("self")}, c.def(0), {{"perm", c.ints("perm")}});
}

void slice(Context& c) {
  TensorId in = c.use_arg("self");
  const Shape& shape = c.t(in).shape;
  const std::size_t dim = static_cast<std::size_t>(norm_dim(c.int_arg("dim", 0), shape.size()));
  Shape starts(shape.size(), 0), ends = shape, steps(shape.size(), 1);
  starts[dim] = c.int_arg("start", 0);
  ends[dim] = c.int_arg("stop", shape[dim]);
  steps[dim] = c.int_arg("step", 1);
  c.move(MoveKind::Slice, {in}, c.def(0), {{"starts", starts}, {"ends", ends}, {"steps", steps}});
}

// W[l]: the sub-tensor at constant indices of the leading dimensions (a free view).
void select(Context& c) {
  TensorId in = c.use_arg("self");
  const Shape& shape = c.t(in).shape;
  const Shape index = c.ints("index");
  Shape starts(shape.size(), 0), ends = shape, steps(shape.size(), 1);
  for (std::size_t d = 0; d < index.size() && d < shape.size(); ++d)
    starts[d] = index[d], ends[d] = index[d] + 1;
  Shape kept = shape;
  for (std::size_t d = 0; d < index.size() && d < kept.size(); ++d) kept[d] = 1;
  TensorId part = c.temp("part", kept, c.t(in).dtype);
  c.move(MoveKind::Slice, {in}, part, {{"starts", starts}, {"ends", ends}, {"steps", steps}});
  c.move(MoveKind::View, {part}, c.def(0));
}

void concat(Context& c, bool stack) {
  const std::int64_t dim = c.int_arg("dim", 0);
  std::vector<TensorId> ins;
  for (std::int64_t id : c.trace_ids("tensors")) {
    TensorId t = c.use(id);
    ins.push_back(stack ? unsqueezed(c, t, dim) : t);
  }
  c.move(MoveKind::Concat, std::move(ins), c.def(0), {{"axis", dim}});
}

// The gather or scatter mode the recorder wrote ("take" or "elements").
IndexMode index_mode(Context& c) {
  const std::string name = c.a("mode").get<std::string>();
  std::optional<IndexMode> mode = parse_index_mode(name);
  if (!mode) throw Unsupported(fmt::format("mode '{}' is neither take nor elements", name));
  return *mode;
}

// The op library's gather and scatter (the output made before the operands are used, as the
// lowering always has).
void gather_op(Context& c) {
  const std::int64_t axis = c.int_arg("dim", 0);
  const IndexMode mode = index_mode(c);
  TensorId out = c.def(0);
  TensorId data = c.use_arg("data"), index = c.use_arg("index");
  gather(c, data, index, out, axis, mode);
}

void scatter_op(Context& c) {
  const std::int64_t axis = c.int_arg("dim", 0);
  const IndexMode mode = index_mode(c);
  const std::string name = c.a("reduce").get<std::string>();
  std::optional<ScatterReduce> reduce = parse_scatter_reduce(name);
  if (!reduce) throw Unsupported(fmt::format("scatter reduce '{}'", name));
  TensorId out = c.def(0);
  TensorId data = c.use_arg("data"), index = c.use_arg("index"), src = c.use_arg("src");
  scatter(c, data, index, src, out, axis, mode, *reduce, true);
}

// x * mask; the result's declared sparsity (the mask's) travels on its trace tensor.
void apply_mask(Context& c) {
  c.elementwise({c.use_arg("self"), c.use_arg("mask")}, c.def(0), mul(arg(0), arg(1)));
}

void cast(Context& c) { c.move(MoveKind::Cast, {c.use_arg("self")}, c.def(0)); }

// Each entry of the table, with a malformed op (a field missing or of the wrong JSON type, an
// argument that is no tensor: a trace the loop frontend did not write) a parse error of the
// trace, never a crash, and never an op left unanalyzed: the loopir table lifts exactly or
// refuses. A composition intrinsic's ops are verified here too: the recorder checks their
// shapes, so ops that do not verify come from a trace whose shapes disagree (a nest's are
// not: an invalid einsum from a nest is a lifting bug, left to fail as one).
void register_loopir_ops(const Register& table_reg) {
  const Register reg = [&table_reg](std::string_view name, Fn f) {
    const bool nest = name == "loopir::nest" || name == "loopir::recurrence";
    table_reg(name, [f = std::move(f), nest](Context& c) {
      try {
        f(c);
        if (!nest) c.commit();
      } catch (const nlohmann::json::exception& e) {
        throw UserError(UserError::Kind::Parse,
                        fmt::format("a malformed {} op: {}", c.op().op, e.what()), c.origin());
      } catch (const Unsupported& e) {
        throw UserError(UserError::Kind::Parse,
                        fmt::format("a malformed {} op: {}", c.op().op, e.what()), c.origin());
      }
    });
  };
  reg("loopir::nest", lift_nest);
  reg("loopir::recurrence", lift_recurrence);
  reg("loopir::fill", fill);
  reg("loopir::reshape", reshape);
  reg("loopir::permute", permute);
  reg("loopir::slice", slice);
  reg("loopir::select", select);
  reg("loopir::concat", [](Context& c) { concat(c, false); });
  reg("loopir::stack", [](Context& c) { concat(c, true); });
  reg("loopir::gather", gather_op);
  reg("loopir::scatter", scatter_op);
  reg("loopir::apply_mask", apply_mask);
  reg("loopir::cast", cast);
}

const Table& table() {
  static const Table t = [] {
    TableBuilder b("loopir");
    b.add("loopir.cc", register_loopir_ops);
    return b.take();
  }();
  return t;
}

// Each tensor of the trace as the graph will hold it, verified alone: a trace whose tensors
// the recorder could not have written (an unknown dtype, a zero fraction outside [0, 1],
// dimension names that do not fit) is a parse error of the trace before anything is lifted.
void check_tensors(const OpTrace& trace) {
  for (const TraceTensor& x : trace.tensors) {
    auto bad = [&](const std::string& why) {
      throw UserError(UserError::Kind::Parse,
                      fmt::format("{}: tensor {} ('{}') of the trace: {}",
                                  trace.source.empty() ? "the OpTrace" : trace.source, x.id,
                                  x.name, why));
    };
    std::optional<ir::DType> dtype = ir::parse_dtype(x.dtype);
    if (!dtype) bad(fmt::format("dtype '{}' is none of the loop language's", x.dtype));
    ir::Graph g;
    ir::Tensor t;
    t.name = x.name.empty() ? fmt::format("t{}", x.id) : x.name;
    t.shape = x.shape;
    t.dtype = *dtype;
    t.role = ir::Role::Input;
    t.dim_names = x.dims;
    t.sparsity = x.sparsity;
    g.add_tensor(std::move(t));
    if (std::optional<std::string> why = ir::why_invalid(g)) bad(*why);
  }
}

}  // namespace

LowerResult lower_loopir(const OpTrace& trace) {
  for (const TraceOp& op : trace.ops)
    if (!loopir_op_known(op.op))
      throw UserError(UserError::Kind::OutsideLanguage,
                      fmt::format("outside the language: `{}` is not an op of a loop program",
                                  op.op),
                      Origin{op.file, op.line, op.op});
  check_tensors(trace);
  // Strict: a nest the table lifts either becomes exact einsums or is refused; an Unsupported
  // from the staging checks is a lifting bug and must not hide as an unanalyzed op.
  return lower_with_table(trace, {.strict = true}, table(), "loopir");
}

bool loopir_op_known(std::string_view op) { return table().contains(op); }

LowerResult lower_trace(const OpTrace& trace, const LowerOptions& options) {
  if (trace.frontend == "loopir") return lower_loopir(trace);
  if (trace.frontend == "jax") return lower_jax(trace, options);
  return lower_aten(trace, options);
}

}  // namespace solar::lower
