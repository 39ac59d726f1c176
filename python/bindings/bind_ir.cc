// solar._core: the EinsumGraph (read-only inspection), its text and JSON forms.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bindings.h"
#include "solar/ir/graph.h"
#include "solar/ir/json.h"
#include "solar/ir/text.h"
#include "solar/ir/verify.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace solar::python {
namespace {

using ir::Graph;
using ir::Op;
using ir::Tensor;

std::vector<std::uint32_t> ids(const std::vector<ir::TensorId>& v) {
  std::vector<std::uint32_t> out;
  out.reserve(v.size());
  for (ir::TensorId id : v) out.push_back(id.value);
  return out;
}

std::vector<std::string> names(const Graph& g, const std::vector<ir::TensorId>& v) {
  std::vector<std::string> out;
  out.reserve(v.size());
  for (ir::TensorId id : v) out.push_back(g.tensor(id).name);
  return out;
}

const Tensor& tensor_by_name(const Graph& g, const std::string& name) {
  std::optional<ir::TensorId> id = g.find_tensor(name);
  if (!id) throw nb::key_error(fmt::format("no tensor named '{}'", name).c_str());
  return g.tensor(*id);
}

const Tensor& tensor_by_id(const Graph& g, std::uint32_t id) {
  if (id >= g.tensors().size()) throw nb::index_error("tensor id out of range");
  return g.tensor(ir::TensorId{id});
}

const Op& op_by_id(const Graph& g, std::uint32_t id) {
  if (id >= g.ops().size()) throw nb::index_error("op id out of range");
  return g.op(ir::OpId{id});
}

// A list of references into the graph that keep it alive.
template <typename T>
nb::list refs(const std::vector<T>& items, nb::handle owner) {
  nb::list out;
  for (const T& item : items) out.append(nb::cast(&item, nb::rv_policy::reference_internal, owner));
  return out;
}

}  // namespace

void bind_ir(nb::module_& m) {
  nb::enum_<ir::DType>(m, "DType")
      .value("f64", ir::DType::F64).value("f32", ir::DType::F32).value("tf32", ir::DType::TF32)
      .value("bf16", ir::DType::BF16).value("f16", ir::DType::F16)
      .value("f8e4m3", ir::DType::F8E4M3).value("f8e5m2", ir::DType::F8E5M2)
      .value("f6", ir::DType::F6).value("f4", ir::DType::F4).value("i64", ir::DType::I64)
      .value("i32", ir::DType::I32).value("i16", ir::DType::I16).value("i8", ir::DType::I8)
      .value("i4", ir::DType::I4).value("u8", ir::DType::U8).value("bool", ir::DType::Bool);
  m.def("dtype_bits", &ir::dtype_bits, "dtype"_a, "Storage width of a dtype in bits.");

  nb::enum_<ir::Role>(m, "Role")
      .value("input", ir::Role::Input).value("weight", ir::Role::Weight)
      .value("constant", ir::Role::Constant).value("intermediate", ir::Role::Intermediate)
      .value("output", ir::Role::Output);

  nb::enum_<ir::OpKind>(m, "OpKind")
      .value("einsum", ir::OpKind::Einsum).value("move", ir::OpKind::Move)
      .value("opaque", ir::OpKind::Opaque).value("unanalyzed", ir::OpKind::Unanalyzed)
      .value("repeat", ir::OpKind::Repeat).value("collective", ir::OpKind::Collective);

  nb::class_<Tensor>(m, "Tensor", "A tensor of a graph (read-only).")
      .def_prop_ro("id", [](const Tensor& t) { return t.id.value; })
      .def_ro("name", &Tensor::name)
      .def_prop_ro("shape", [](const Tensor& t) { return t.shape; })
      .def_ro("dtype", &Tensor::dtype)
      .def_ro("role", &Tensor::role)
      .def_prop_ro("dims", [](const Tensor& t) { return t.dim_names; })
      .def_prop_ro("zero_fraction",
                   [](const Tensor& t) -> std::optional<double> {
                     if (!t.sparsity) return std::nullopt;
                     return t.sparsity->zero_fraction;
                   })
      .def_prop_ro("structured_2_4",
                   [](const Tensor& t) { return t.sparsity && t.sparsity->structured_2_4; })
      .def_prop_ro("num_elements", [](const Tensor& t) { return count_to_py(t.num_elements()); })
      .def_prop_ro("size_bytes", [](const Tensor& t) { return count_to_py(t.size_bytes()); })
      .def("__repr__", [](const Tensor& t) {
        return fmt::format("<solar.Tensor {} {}[{}] {}>", t.name, ir::dtype_name(t.dtype),
                           fmt::join(t.shape, ","), ir::role_name(t.role));
      });

  nb::class_<Op>(m, "Op", "An op of a graph (read-only); inputs/outputs are tensor ids.")
      .def_prop_ro("id", [](const Op& o) { return o.id.value; })
      .def_ro("name", &Op::name)
      .def_prop_ro("kind", &Op::kind)
      .def_prop_ro("inputs", [](const Op& o) { return ids(o.inputs); })
      .def_prop_ro("outputs", [](const Op& o) { return ids(o.outputs); })
      .def_prop_ro("origin", [](const Op& o) { return o.origin.describe(); })
      .def_prop_ro("framework_op", [](const Op& o) { return o.origin.op; })
      .def("__repr__", [](const Op& o) {
        return fmt::format("<solar.Op {} {}>", o.name, ir::op_kind_name(o.kind()));
      });

  nb::class_<Graph>(m, "Graph", "An EinsumGraph: tensors and ops (inspect; build with GraphBuilder).")
      .def_ro("name", &Graph::name)
      .def_ro("frontend", &Graph::frontend)
      .def_ro("source", &Graph::source)
      .def_prop_ro("tensors", [](nb::handle self) {
        return refs(nb::cast<const Graph&>(self).tensors(), self);
      })
      .def_prop_ro("ops", [](nb::handle self) {
        return refs(nb::cast<const Graph&>(self).ops(), self);
      })
      .def("tensor", &tensor_by_name, "name"_a, nb::rv_policy::reference_internal,
           "The tensor with this name (KeyError when none).")
      .def("tensor", &tensor_by_id, "id"_a, nb::rv_policy::reference_internal)
      .def("op", &op_by_id, "id"_a, nb::rv_policy::reference_internal)
      .def("input_names", [](const Graph& g, const Op& o) { return names(g, o.inputs); }, "op"_a)
      .def("output_names", [](const Graph& g, const Op& o) { return names(g, o.outputs); },
           "op"_a)
      .def("to_text", &ir::print_graph, "The canonical text form (docs/ir-text.md).")
      .def("to_json", [](const Graph& g, int indent) { return ir::graph_to_json(g).dump(indent); },
           "indent"_a = 2, "The JSON form (solar.graph.v1) as a string.")
      .def("__repr__", [](const Graph& g) {
        return fmt::format("<solar.Graph {}: {} tensors, {} ops>", g.name, g.tensors().size(),
                           g.ops().size());
      });

  m.def("parse_graph", &ir::parse_graph, "text"_a, "file"_a = "<text>",
        "Parses (and verifies) the text form.");
  m.def("parse_graph_json", &ir::parse_graph_json, "text"_a, "file"_a = "<json>",
        "Parses (and verifies) the JSON form.");
  m.def("load_graph", &ir::load_graph_file, "path"_a,
        "Reads a graph file: JSON when it starts with '{', the text form otherwise.");
  m.def("why_invalid", &ir::why_invalid, "graph"_a,
        "Why the graph is invalid (one sentence), or None.");
}

}  // namespace solar::python
