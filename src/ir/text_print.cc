// The text form's printer: the canonical text of a graph, which parse_graph reads back to an
// equal graph with the same tensor ids (docs/ir-text.md).
#include "solar/ir/text.h"

#include <fmt/format.h>

#include "solar/ir/collective.h"
#include "syntax.h"

namespace solar::ir {

namespace {

std::string format_attr_value(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          return fmt::format("{}", x);
        } else if constexpr (std::is_same_v<T, double>) {
          // A float must not read back as an integer: 1.0 prints as "1.0", not "1".
          std::string s = syntax::format_number(x);
          if (s.find_first_not_of("-0123456789") == std::string::npos) s += ".0";
          return s;
        } else if constexpr (std::is_same_v<T, std::string>) {
          return syntax::quote(x);
        } else {
          return fmt::format("[{}]", fmt::join(x, ","));
        }
      },
      v);
}

std::string format_count(Count c) { return c.fits_u64() ? c.str() : syntax::quote(c.str()); }

std::string format_attrs(const std::vector<std::string>& leading, const Attrs& attrs) {
  std::vector<std::string> parts = leading;
  for (const auto& [k, v] : attrs)
    parts.push_back(syntax::name_token(k) + "=" + format_attr_value(v));
  if (parts.empty()) return "";
  return fmt::format(" {{{}}}", fmt::join(parts, ", "));
}

std::string format_type(const Tensor& t) {
  std::string s = fmt::format("{}[{}]", dtype_name(t.dtype), fmt::join(t.shape, ","));
  std::vector<std::string> ann;
  if (!t.dim_names.empty())
    ann.push_back("dims=" + syntax::quote(fmt::format("{}", fmt::join(t.dim_names, ","))));
  if (t.sparsity) {
    if (t.sparsity->structured_2_4) ann.push_back("sparsity=\"2:4\"");
    if (!t.sparsity->structured_2_4 || t.sparsity->zero_fraction != 0.5)
      ann.push_back("zeros=" + syntax::format_number(t.sparsity->zero_fraction));
  }
  if (t.role == Role::Output) ann.push_back("output");
  if (!ann.empty()) s += fmt::format("{{{}}}", fmt::join(ann, ", "));
  return s;
}

std::string tensor_ref(const Graph& g, TensorId id) {
  if (id.value >= g.tensors().size()) return fmt::format("\"<bad tensor id {}>\"", id.value);
  return syntax::name_token(g.tensor(id).name);
}

std::string format_einsum(const Graph& g, const Op& op, const EinsumOp& e) {
  std::vector<std::string> idx;
  for (const IndexDim& d : e.indices) idx.push_back(fmt::format("{}={}", d.name, d.extent));
  std::vector<std::string> operands;
  for (std::size_t k = 0; k < e.operands.size(); ++k) {
    const Operand& o = e.operands[k];
    std::vector<std::string> sub;
    for (const AffineExpr& a : o.subscript) sub.push_back(syntax::format_affine(a, e.indices));
    std::string s = fmt::format(
        "{}[{}]", k < op.inputs.size() ? tensor_ref(g, op.inputs[k]) : "\"<missing input>\"",
        fmt::join(sub, ","));
    if (o.pad) s += " pad " + syntax::format_number(*o.pad);
    operands.push_back(std::move(s));
  }
  std::vector<std::string> out;
  for (const AffineExpr& a : e.output) out.push_back(syntax::format_affine(a, e.indices));
  std::string s = fmt::format("einsum [{}] {} {} ({}) -> [{}]", fmt::join(idx, ","),
                              reduce_name(e.reduce), syntax::format_combine(e.combine),
                              fmt::join(operands, ", "), fmt::join(out, ","));
  if (!e.mask.empty()) {
    std::vector<std::string> m;
    for (const AffineConstraint& c : e.mask) m.push_back(syntax::format_constraint(c, e.indices));
    s += " where " + fmt::format("{}", fmt::join(m, ", "));
  }
  return s;
}

std::string format_inputs(const Graph& g, const Op& op) {
  std::vector<std::string> in;
  for (TensorId id : op.inputs) in.push_back(tensor_ref(g, id));
  return fmt::format("({})", fmt::join(in, ", "));
}

std::string body_ref(const RepeatOp& r, TensorId id) {
  return r.body && id.value < r.body->tensors().size() ? tensor_ref(*r.body, id) : "?";
}

std::string format_repeat(const Graph& g, const Op& op, const RepeatOp& r) {
  std::vector<std::string> ins, outs;
  for (std::size_t k = 0; k < r.inputs.size(); ++k) {
    const RepeatInput& in = r.inputs[k];
    std::string outer = k < op.inputs.size() ? tensor_ref(g, op.inputs[k]) : "?";
    std::string s = fmt::format("{} {}", loop_input_name(in.how), outer);
    if (in.how == LoopInput::Sliced) s += fmt::format(" axis {}", in.axis);
    s += " as " + body_ref(r, in.param);
    if (in.how == LoopInput::Carried) s += " next " + body_ref(r, in.next);
    ins.push_back(std::move(s));
  }
  for (const RepeatOutput& out : r.outputs) {
    std::string s = fmt::format("{} {}", loop_output_name(out.how), body_ref(r, out.value));
    if (out.how == LoopOutput::Stacked) s += fmt::format(" axis {}", out.axis);
    outs.push_back(std::move(s));
  }
  return fmt::format("repeat {}{} ({}) -> ({})", r.trips, r.reverse ? " reverse" : "",
                     fmt::join(ins, ", "), fmt::join(outs, ", "));
}

std::string format_op(const Graph& g, const Op& op) {
  std::vector<std::string> names, types;
  for (TensorId id : op.outputs) {
    names.push_back(tensor_ref(g, id));
    types.push_back(id.value < g.tensors().size() ? format_type(g.tensor(id)) : "?");
  }
  std::string s = fmt::format("{} = {} ", fmt::join(names, ", "), fmt::join(types, ", "));
  switch (op.kind()) {
    case OpKind::Einsum:
      s += format_einsum(g, op, op.einsum());
      break;
    case OpKind::Move: {
      const MoveOp& m = op.move();
      s += fmt::format("move {}{} {}", move_kind_name(m.kind), format_attrs({}, m.attrs),
                       format_inputs(g, op));
      break;
    }
    case OpKind::Opaque: {
      const OpaqueOp& o = op.opaque();
      s += fmt::format("opaque {}{} {}", syntax::quote(o.function),
                       format_attrs({"vector_flops=" + format_count(o.vector_flops),
                                     "special_ops=" + format_count(o.special_ops),
                                     "bytes=" + format_count(o.bytes),
                                     "assumption=" + syntax::quote(o.assumption)},
                                    o.attrs),
                       format_inputs(g, op));
      break;
    }
    case OpKind::Unanalyzed: {
      const UnanalyzedOp& u = op.unanalyzed();
      std::vector<std::string> lead;
      if (!u.reason.empty()) lead.push_back("reason=" + syntax::quote(u.reason));
      s += fmt::format("unanalyzed {}{} {}", syntax::quote(u.framework_op), format_attrs(lead, {}),
                       format_inputs(g, op));
      break;
    }
    case OpKind::Repeat:
      s += format_repeat(g, op, op.repeat());
      break;
    case OpKind::Collective: {
      const CollectiveOp& c = op.collective();
      std::vector<std::string> attrs;
      for (const auto& [key, value] : collective_text_attrs(c))
        attrs.push_back(key + "=" + format_attr_value(value));
      s += fmt::format("collective {}{}{} {}", collective_kind_name(c.kind),
                       collective_reduces(c.kind)
                           ? " " + std::string(collective_reduction_name(c.reduction))
                           : std::string(),
                       format_attrs(attrs, {}), format_inputs(g, op));
      break;
    }
  }
  if (op.kind() == OpKind::Einsum && op.einsum().hint != ContractionHint::None)
    s += " hint " + syntax::quote(contraction_hint_name(op.einsum().hint));
  // The origin is printed when it is not simply this statement's own position.
  if (!op.origin.op.empty() && op.origin.op != op.name) s += " from " + syntax::quote(op.origin.op);
  if (!op.origin.file.empty() && op.origin.file != g.source) {
    s += " at " + syntax::quote(op.origin.line > 0
                                    ? fmt::format("{}:{}", op.origin.file, op.origin.line)
                                    : op.origin.file);
  }
  std::string default_name =
      op.outputs.empty() || op.outputs[0].value >= g.tensors().size()
          ? ""
          : g.tensor(op.outputs[0]).name;
  if (op.name != default_name) s += " name " + syntax::quote(op.name);
  if (!op.origin.module.empty()) s += " module " + syntax::quote(op.origin.module);
  return s;
}

std::string format_source(const Tensor& t) {
  return fmt::format("{} = {} {}", syntax::name_token(t.name), format_type(t), role_name(t.role));
}

// The statements of `g` in tensor-id order where the graph allows it (a source where it was
// declared, an op where its outputs start), so that parsing the text gives every tensor its
// original id. A graph whose tensor order does not fit (outputs of one op not consecutive)
// gets its remaining sources first, then its remaining ops, in order. A repeat op's body
// follows its statement, indented, up to a closing `}`.
void print_statements(const Graph& g, std::string& out, const std::string& indent) {
  const auto& tensors = g.tensors();
  const auto& ops = g.ops();
  auto op_line = [&](const Op& op) {
    out += indent + format_op(g, op);
    if (op.kind() == OpKind::Repeat && op.repeat().body) {
      out += " {\n";
      print_statements(*op.repeat().body, out, indent + "  ");
      out += indent + "}";
    }
    out += "\n";
  };
  std::size_t t = 0, o = 0;
  std::vector<bool> printed(tensors.size(), false);
  auto fits = [&](const Op& op) {
    for (std::size_t i = 0; i < op.outputs.size(); ++i)
      if (op.outputs[i].value != t + i || t + i >= printed.size() || printed[t + i]) return false;
    for (TensorId id : op.inputs)
      if (id.value >= printed.size() || !printed[id.value]) return false;
    return !op.outputs.empty();
  };
  while (t < tensors.size() || o < ops.size()) {
    if (t < tensors.size() && printed[t]) {
      ++t;
    } else if (t < tensors.size() && !g.producer(TensorId{static_cast<std::uint32_t>(t)})) {
      out += indent + format_source(tensors[t]) + "\n";
      printed[t++] = true;
    } else if (o < ops.size() && fits(ops[o])) {
      op_line(ops[o]);
      for (TensorId id : ops[o].outputs) printed[id.value] = true;
      ++o;
    } else {
      break;
    }
  }
  for (; t < tensors.size(); ++t)
    if (!printed[t] && !g.producer(TensorId{static_cast<std::uint32_t>(t)}))
      out += indent + format_source(tensors[t]) + "\n";
  for (; o < ops.size(); ++o) op_line(ops[o]);
}

}  // namespace

std::string print_graph(const Graph& g) {
  std::string out;
  out.reserve(64 * (g.tensors().size() + g.ops().size()) + 64);
  out += "graph " + syntax::name_token(g.name);
  if (g.frontend != "einsum") out += " {frontend=" + syntax::quote(g.frontend) + "}";
  out += "\n";
  for (const auto& [path, type] : g.module_types)
    out += "module " + syntax::quote(path) + " " + syntax::quote(type) + "\n";
  print_statements(g, out, "");
  return out;
}

std::string print_statements(const Graph& g) {
  std::string out;
  print_statements(g, out, "");
  return out;
}

std::string print_affine(const AffineExpr& e, const std::vector<IndexDim>& indices) {
  return syntax::format_affine(e, indices);
}

}  // namespace solar::ir
