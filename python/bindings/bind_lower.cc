// solar._core: lowering of a framework OpTrace (JSON text) to an EinsumGraph.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "solar/lower/aten.h"
#include "solar/lower/jax.h"
#include "solar/lower/loopir.h"
#include "solar/lower/optrace.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace solar::python {

void bind_lower(nb::module_& m) {
  m.attr("OPTRACE_SCHEMA") = std::string(lower::kOpTraceSchema);
  m.def(
      "lower_optrace",
      [](const std::string& text, const std::string& file, bool strict) {
        lower::OpTrace trace = lower::parse_optrace(text, file);
        lower::LowerResult r;
        {
          nb::gil_scoped_release release;
          // One dialect table per frontend (docs/optrace.md): aten ops, jaxpr equations or
          // loop nests.
          r = lower::lower_trace(trace, {strict});
        }
        nb::dict trace_ids;  // graph tensor name -> trace tensor id
        for (std::size_t k = 0; k < r.trace_ids.size(); ++k)
          if (r.trace_ids[k] >= 0)
            trace_ids[nb::str(r.graph.tensors()[k].name.c_str())] = r.trace_ids[k];
        return nb::make_tuple(nb::cast(std::move(r.graph)), nb::cast(r.warnings), trace_ids);
      },
      "text"_a, "file"_a = "<optrace>", "strict"_a = false,
      "Lowers an OpTrace (solar.optrace.v1 JSON text) with the table of its frontend (aten; jax "
      "when frontend is \"jax\"; loopir when \"loopir\", always strict); returns (graph, "
      "warnings, {graph tensor name: trace tensor id}). With strict, an op that cannot be lowered raises UnsupportedError.");
  m.def("aten_op_known", &lower::aten_op_known, "op"_a,
        "Whether the aten table lowers this op (\"aten::mm.default\").");
  m.def("loopir_op_known", &lower::loopir_op_known, "op"_a,
        "Whether the loopir table lowers this op (\"loopir::nest\").");
  m.def("jax_op_known", &lower::jax_op_known, "op"_a,
        "Whether the jax table lowers this op (\"jax::dot_general\").");
}

}  // namespace solar::python
