#include "solar/ir/unroll.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "solar/ir/rewrite.h"

namespace solar::ir {

namespace {

class Unroller {
 public:
  explicit Unroller(Graph& out) : out_(out) {}

  // Copies `g`'s ops into out_, tensors mapped through `env` (sources already mapped);
  // `prefix` renames what a repeat body adds.
  void copy_ops(const Graph& g, std::vector<TensorId>& env, const std::string& prefix) {
    for (const Op& op : g.ops()) {
      if (op.kind() == OpKind::Repeat) {
        expand(g, op, env, prefix);
        continue;
      }
      Op copy = op;
      copy.name = prefix + op.name;
      for (TensorId& in : copy.inputs) in = env[in.value];
      for (TensorId& o : copy.outputs) {
        Tensor t = g.tensor(o);
        if (!prefix.empty()) {
          t.name = prefix + t.name;
          t.role = Role::Intermediate;
        }
        env[o.value] = out_.add_tensor(std::move(t));
        o = env[o.value];
      }
      out_.add_op(std::move(copy));
    }
  }

 private:
  TensorId temp(const std::string& name, std::vector<std::int64_t> shape, DType dtype) {
    Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.dtype = dtype;
    return out_.add_tensor(std::move(t));
  }

  void move(MoveKind kind, Attrs attrs, std::vector<TensorId> inputs, TensorId output,
            const std::string& name, const Origin& origin) {
    Op op;
    op.name = name;
    op.inputs = std::move(inputs);
    op.outputs = {output};
    op.body = MoveOp{kind, std::move(attrs)};
    op.origin = origin;
    out_.add_op(std::move(op));
  }

  void expand(const Graph& g, const Op& op, std::vector<TensorId>& env,
              const std::string& prefix) {
    const RepeatOp& r = op.repeat();
    const Graph& body = *r.body;
    const std::string name = prefix + op.name;
    std::vector<TensorId> state(r.inputs.size());  // carried: the value of the current iteration
    for (std::size_t k = 0; k < r.inputs.size(); ++k) state[k] = env[op.inputs[k].value];
    // rows[k][i]: iteration i's value of stacked output k (by slice index).
    std::vector<std::vector<TensorId>> rows(r.outputs.size(),
                                            std::vector<TensorId>(static_cast<std::size_t>(r.trips)));
    std::vector<TensorId> inner(body.tensors().size());
    for (std::int64_t it = 0; it < r.trips; ++it) {
      const std::int64_t row = r.reverse ? r.trips - 1 - it : it;
      const std::string at = fmt::format("{}#{}/", name, it);
      for (std::size_t k = 0; k < r.inputs.size(); ++k) {
        const RepeatInput& in = r.inputs[k];
        if (in.how != LoopInput::Sliced) {
          inner[in.param.value] = state[k];
          continue;
        }
        // A copy: adding the row's tensors below may move the graph's tensors.
        const Tensor outer = out_.tensor(env[op.inputs[k].value]);
        const std::size_t axis = static_cast<std::size_t>(in.axis);
        std::vector<std::int64_t> starts(outer.shape.size(), 0), ends = outer.shape,
                                  steps(outer.shape.size(), 1);
        starts[axis] = row;
        ends[axis] = row + 1;
        std::vector<std::int64_t> one = outer.shape;
        one[axis] = 1;
        const std::string pname = body.tensor(in.param).name;
        TensorId slice = temp(at + pname + ".row", one, outer.dtype);
        move(MoveKind::Slice, {{"starts", starts}, {"ends", ends}, {"steps", steps}},
             {env[op.inputs[k].value]}, slice, at + pname + ".row", op.origin);
        TensorId param = temp(at + pname, body.tensor(in.param).shape, outer.dtype);
        move(MoveKind::View, {}, {slice}, param, at + pname, op.origin);
        inner[in.param.value] = param;
      }
      copy_ops(body, inner, at);
      for (std::size_t k = 0; k < r.inputs.size(); ++k)
        if (r.inputs[k].how == LoopInput::Carried) state[k] = inner[r.inputs[k].next.value];
      for (std::size_t k = 0; k < r.outputs.size(); ++k)
        rows[k][static_cast<std::size_t>(row)] = inner[r.outputs[k].value.value];
    }
    for (std::size_t k = 0; k < r.outputs.size(); ++k) {
      const RepeatOutput& o = r.outputs[k];
      Tensor result = g.tensor(op.outputs[k]);
      if (!prefix.empty()) {
        result.name = prefix + result.name;
        result.role = Role::Intermediate;
      }
      if (o.how == LoopOutput::Last) {
        const TensorId last = rows[k][static_cast<std::size_t>(r.reverse ? 0 : r.trips - 1)];
        TensorId id = out_.add_tensor(std::move(result));
        move(MoveKind::View, {}, {last}, id, name + "/" + out_.tensor(id).name, op.origin);
        env[op.outputs[k].value] = id;
        continue;
      }
      std::vector<TensorId> parts;
      for (std::int64_t i = 0; i < r.trips; ++i) {
        const Tensor& v = out_.tensor(rows[k][static_cast<std::size_t>(i)]);
        std::vector<std::int64_t> shape = v.shape;
        shape.insert(shape.begin() + o.axis, 1);
        const std::string pname = fmt::format("{}#{}/{}.row", name, i, result.name);
        TensorId part = temp(pname, shape, v.dtype);
        move(MoveKind::View, {}, {rows[k][static_cast<std::size_t>(i)]}, part, pname, op.origin);
        parts.push_back(part);
      }
      TensorId id = out_.add_tensor(std::move(result));
      move(MoveKind::Concat, {{"axis", o.axis}}, parts, id, name + "/" + out_.tensor(id).name,
           op.origin);
      env[op.outputs[k].value] = id;
    }
  }

  Graph& out_;
};

}  // namespace

Graph unroll(const Graph& g) {
  Graph out = empty_like(g);
  std::vector<TensorId> env(g.tensors().size());
  for (const Tensor& t : g.tensors())
    if (is_graph_source(t.role)) env[t.id.value] = out.add_tensor(t);
  Unroller u(out);
  u.copy_ops(g, env, "");
  return out;
}

}  // namespace solar::ir
