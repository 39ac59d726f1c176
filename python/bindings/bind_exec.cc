// solar._core: run a graph on arrays and validate it against reference outputs.
//
// Arrays come in through nanobind's ndarray caster (numpy, and anything with __dlpack__, such
// as torch tensors, including bfloat16 and float8). An f32, f64 or int64 C-contiguous array
// whose dtype is the tensor's compute representation is borrowed without a copy; any other
// dtype is converted (its raw format through Buffer::from_raw, then, when the tensor is
// declared with another dtype of the same kind, a cast that rounds narrow floats; an integer
// that the declared dtype cannot hold is an error). Outputs come back as numpy arrays of
// the declared dtype where numpy has it (f64, f32, f16, int64 .. int8, uint8, bool); bf16,
// tf32, fp8, fp6 and fp4 as float32 (their exact values), int4 as int8.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <fmt/format.h>

#include "bindings.h"
#include "solar/exec/executor.h"
#include "solar/exec/kernels.h"
#include "solar/exec/ranks.h"
#include "solar/exec/validate.h"
#include "solar/ir/graph.h"
#include "solar/util/errors.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace solar::python {
namespace {

using exec::Buffer;
using exec::TensorMap;
using Array = nb::ndarray<nb::ro, nb::device::cpu>;
using Code = nb::dlpack::dtype_code;

[[noreturn]] void bad(const std::string& msg) {
  throw UserError(UserError::Kind::BadArgument, msg);
}

std::string array_dtype_str(nb::dlpack::dtype t) {
  const char* kind = "?";
  switch (static_cast<Code>(t.code)) {
    case Code::Int: kind = "int"; break;
    case Code::UInt: kind = "uint"; break;
    case Code::Float: kind = "float"; break;
    case Code::Bfloat: kind = "bfloat"; break;
    case Code::Bool: kind = "bool"; break;
    case Code::Float8_E4M3FN: return "float8_e4m3fn";
    case Code::Float8_E5M2: return "float8_e5m2";
    default: kind = "code"; break;
  }
  return fmt::format("{}{}", kind, t.bits);
}

// The Solar dtype whose raw format is the array's element format.
std::optional<ir::DType> natural_dtype(nb::dlpack::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<Code>(t.code)) {
    case Code::Float:
      if (t.bits == 64) return ir::DType::F64;
      if (t.bits == 32) return ir::DType::F32;
      if (t.bits == 16) return ir::DType::F16;
      break;
    case Code::Bfloat:
      if (t.bits == 16) return ir::DType::BF16;
      break;
    case Code::Int:
      if (t.bits == 64) return ir::DType::I64;
      if (t.bits == 32) return ir::DType::I32;
      if (t.bits == 16) return ir::DType::I16;
      if (t.bits == 8) return ir::DType::I8;
      break;
    case Code::UInt:
      if (t.bits == 8) return ir::DType::U8;
      break;
    case Code::Bool:
      if (t.bits == 8) return ir::DType::Bool;
      break;
    case Code::Float8_E4M3FN:
      if (t.bits == 8) return ir::DType::F8E4M3;
      break;
    case Code::Float8_E5M2:
      if (t.bits == 8) return ir::DType::F8E5M2;
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::vector<std::int64_t> shape_of(const Array& a) {
  std::vector<std::int64_t> s(a.ndim());
  for (std::size_t d = 0; d < a.ndim(); ++d) s[d] = static_cast<std::int64_t>(a.shape(d));
  return s;
}

bool c_contiguous(const Array& a) {
  if (a.size() == 0) return true;  // an empty array has no layout to get wrong
  std::int64_t want = 1;
  for (std::size_t d = a.ndim(); d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != want) return false;
    want *= static_cast<std::int64_t>(a.shape(d));
  }
  return true;
}

// The array as a buffer of its own element format: borrowed when that format is a compute
// representation (f32, f64, int64), converted otherwise. `raw_as` reads uint8 bytes as the raw
// format of an 8-bit float dtype (fp8 tensors from frameworks without DLPack fp8).
Buffer natural_buffer(const std::string& what, const Array& a,
                      std::optional<ir::DType> raw_as = std::nullopt) {
  std::optional<ir::DType> d = natural_dtype(a.dtype());
  if (raw_as && d == ir::DType::U8) d = raw_as;
  if (!d) bad(fmt::format("{}: arrays of {} are not supported", what, array_dtype_str(a.dtype())));
  if (!c_contiguous(a))
    bad(fmt::format("{}: the array is not C-contiguous (pass np.ascontiguousarray(a) or "
                    "t.contiguous())",
                    what));
  std::vector<std::int64_t> shape = shape_of(a);
  if (a.size() == 0) return Buffer::zeros(*d, shape);
  void* data = const_cast<void*>(a.data());  // sources are only read
  if (*d == ir::DType::F32 || *d == ir::DType::F64 || *d == ir::DType::I64)
    return Buffer::borrow(*d, std::move(shape), data);
  return Buffer::from_raw(*d, std::move(shape), data);
}

// The value of source tensor `t` from array `a`, in t's declared dtype.
Buffer source_buffer(const ir::Tensor& t, const Array& a) {
  const bool raw_fp8 = t.dtype == ir::DType::F8E4M3 || t.dtype == ir::DType::F8E5M2;
  Buffer b = natural_buffer(fmt::format("value for '{}'", t.name), a,
                            raw_fp8 ? std::optional<ir::DType>(t.dtype) : std::nullopt);
  if (b.dtype() == t.dtype) return b;
  const bool from_float = ir::is_float(b.dtype()), to_float = ir::is_float(t.dtype);
  if (from_float != to_float || (b.dtype() == ir::DType::Bool) != (t.dtype == ir::DType::Bool))
    bad(fmt::format("value for '{}' holds {} but the graph declares {}: convert it first", t.name,
                    ir::dtype_name(b.dtype()), ir::dtype_name(t.dtype)));
  // Same kind: a cast (floats round to the declared precision, as the framework would have).
  Buffer out = Buffer::zeros(t.dtype, b.shape());
  ir::MoveOp cast;
  cast.kind = ir::MoveKind::Cast;
  const Buffer* ins[] = {&b};
  exec::run_move(cast, ins, out, {});
  if (!from_float)
    for (std::int64_t i = 0; i < b.num_elements(); ++i)
      if (out.data<std::int64_t>()[i] != b.data<std::int64_t>()[i])
        bad(fmt::format("value for '{}': element {} ({}) does not fit the declared {}", t.name, i,
                        b.data<std::int64_t>()[i], ir::dtype_name(t.dtype)));
  return out;
}

// Holds the arrays (so borrowed memory stays alive) and their buffers.
struct Inputs {
  std::vector<Array> arrays;
  TensorMap buffers;
};

Inputs sources_from(const ir::Graph& g, const nb::dict& inputs) {
  Inputs in;
  for (auto [key, value] : inputs) {
    std::string name = nb::cast<std::string>(key);
    Array a;
    if (!nb::try_cast(value, a))
      bad(fmt::format("value for '{}' is not an array (numpy array, or an object with "
                      "__dlpack__ on the CPU)",
                      name));
    in.arrays.push_back(a);
    std::optional<ir::TensorId> id = g.find_tensor(name);
    if (!id || !ir::is_graph_source(g.tensor(*id).role))
      bad(fmt::format("'{}' is not an input, weight or constant of graph '{}'", name, g.name));
    in.buffers.emplace(name, source_buffer(g.tensor(*id), a));
  }
  return in;
}

Inputs references_from(const nb::dict& refs, const char* what) {
  Inputs in;
  for (auto [key, value] : refs) {
    std::string name = nb::cast<std::string>(key);
    Array a;
    if (!nb::try_cast(value, a))
      bad(fmt::format("{} '{}' is not an array", what, name));
    in.arrays.push_back(a);
    in.buffers.emplace(name, natural_buffer(fmt::format("{} '{}'", what, name), a));
  }
  return in;
}

// A numpy array over `data` (owned by `owner`).
nb::object numpy(void* data, const std::vector<std::int64_t>& shape, nb::dlpack::dtype dt,
                 nb::capsule owner) {
  std::vector<std::size_t> s(shape.begin(), shape.end());
  return nb::ndarray<nb::numpy>(data, s.size(), s.data(), owner, nullptr, dt).cast();
}

template <class T>
nb::object numpy_copy(const T* src, std::size_t n, const std::vector<std::int64_t>& shape,
                      nb::dlpack::dtype dt) {
  T* p = new T[n == 0 ? 1 : n];
  std::memcpy(p, src, n * sizeof(T));
  nb::capsule owner(p, [](void* q) noexcept { delete[] static_cast<T*>(q); });
  return numpy(p, shape, dt, owner);
}

nb::object to_numpy(const Buffer& b) {
  const auto n = static_cast<std::size_t>(b.num_elements());
  nb::dlpack::dtype dt{static_cast<std::uint8_t>(Code::Float), 32, 1};
  auto raw = [&](Code code, std::uint8_t bits) {
    // The declared dtype's raw format is numpy's format for it.
    nb::dlpack::dtype t{static_cast<std::uint8_t>(code), bits, 1};
    std::vector<unsigned char> bytes(b.raw_bytes());
    b.to_raw(bytes.data());
    return numpy_copy(bytes.data(), bytes.size(), b.shape(), t);
  };
  switch (b.dtype()) {
    case ir::DType::F16: return raw(Code::Float, 16);
    case ir::DType::I32: return raw(Code::Int, 32);
    case ir::DType::I16: return raw(Code::Int, 16);
    case ir::DType::I8: return raw(Code::Int, 8);
    case ir::DType::U8: return raw(Code::UInt, 8);
    case ir::DType::Bool: return raw(Code::Bool, 8);
    case ir::DType::I4: {
      std::vector<std::int8_t> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int8_t>(b.data<std::int64_t>()[i]);
      return numpy_copy(v.data(), n, b.shape(), {static_cast<std::uint8_t>(Code::Int), 8, 1});
    }
    case ir::DType::F64: dt = {static_cast<std::uint8_t>(Code::Float), 64, 1}; break;
    case ir::DType::I64: dt = {static_cast<std::uint8_t>(Code::Int), 64, 1}; break;
    case ir::DType::F32: case ir::DType::TF32: case ir::DType::BF16: case ir::DType::F8E4M3:
    case ir::DType::F8E5M2: case ir::DType::F6: case ir::DType::F4:
      break;  // float32: the compute representation holds their exact values
  }
  if (!b.owns_memory()) {
    // A view of caller memory (an output that is a view of an input): copied, so the result
    // never aliases what the caller passed in.
    return numpy_copy(static_cast<const unsigned char*>(b.raw_data()), b.storage_size_bytes(),
                      b.shape(), dt);
  }
  auto* keep = new Buffer(b);  // shares the memory; freed with the array
  nb::capsule owner(keep, [](void* q) noexcept { delete static_cast<Buffer*>(q); });
  return numpy(keep->raw_data(), b.shape(), dt, owner);
}

nb::dict run(const ir::Graph& g, const nb::dict& inputs, int threads,
             const std::vector<std::string>& keep, std::uint64_t memory_limit_bytes) {
  Inputs in = sources_from(g, inputs);
  exec::ExecOptions opt{threads, memory_limit_bytes};
  std::set<std::string> kept(keep.begin(), keep.end());
  TensorMap out;
  {
    nb::gil_scoped_release release;
    out = exec::run_graph(g, in.buffers, opt, kept);
  }
  nb::dict d;
  for (const auto& [name, b] : out) d[name.c_str()] = to_numpy(b);
  return d;
}

// Each rank's graph on its own inputs, its collectives exchanging buffers (exec/ranks.h).
std::vector<nb::dict> run_ranks(const std::vector<const ir::Graph*>& graphs,
                                const std::vector<nb::dict>& inputs, int threads,
                                const std::vector<std::string>& keep,
                                std::uint64_t memory_limit_bytes) {
  if (graphs.size() != inputs.size())
    bad(fmt::format("run_ranks needs one input dict per rank: {} graphs, {} input dicts",
                    graphs.size(), inputs.size()));
  std::vector<Inputs> in;
  std::vector<TensorMap> sources;
  for (std::size_t r = 0; r < graphs.size(); ++r) {
    in.push_back(sources_from(*graphs[r], inputs[r]));
    sources.push_back(in.back().buffers);
  }
  exec::ExecOptions opt{threads, memory_limit_bytes};
  std::set<std::string> kept(keep.begin(), keep.end());
  std::vector<TensorMap> out;
  {
    nb::gil_scoped_release release;
    out = exec::run_ranks(graphs, sources, opt, kept);
  }
  std::vector<nb::dict> result;
  for (const TensorMap& rank : out) {
    nb::dict d;
    for (const auto& [name, b] : rank) d[name.c_str()] = to_numpy(b);
    result.push_back(std::move(d));
  }
  return result;
}

exec::ValidationResult validate(const ir::Graph& g, const nb::dict& inputs,
                                const nb::dict& references, const nb::dict& intermediates,
                                int threads, std::uint64_t memory_limit_bytes) {
  Inputs in = sources_from(g, inputs);
  Inputs refs = references_from(references, "reference");
  Inputs mids = references_from(intermediates, "intermediate reference");
  nb::gil_scoped_release release;
  return exec::validate(g, in.buffers, refs.buffers, mids.buffers,
                        exec::ExecOptions{threads, memory_limit_bytes});
}

nb::tuple position(const exec::OutputCheck& c) {
  if (c.worst_index < 0) return nb::tuple();
  std::vector<std::int64_t> pos(c.shape.size());
  std::int64_t i = c.worst_index;
  for (std::size_t d = c.shape.size(); d-- > 0;) {
    pos[d] = i % c.shape[d];
    i /= c.shape[d];
  }
  nb::list l;
  for (std::int64_t p : pos) l.append(p);
  return nb::tuple(l);
}

}  // namespace

void bind_exec(nb::module_& m) {
  nb::class_<exec::OutputCheck>(m, "Check", "One compared tensor of a validation.")
      .def_ro("name", &exec::OutputCheck::name)
      .def_ro("passed", &exec::OutputCheck::pass)
      .def_ro("max_abs_error", &exec::OutputCheck::max_abs_error)
      .def_ro("max_rel_error", &exec::OutputCheck::max_rel_error)
      .def_ro("mismatches", &exec::OutputCheck::mismatches)
      .def_ro("worst_index", &exec::OutputCheck::worst_index,
              "Flat (row-major) index of the largest violation; -1 when none.")
      .def_prop_ro("worst_position", &position, "worst_index as a tuple; () when none.")
      .def_ro("worst_got", &exec::OutputCheck::worst_got)
      .def_ro("worst_want", &exec::OutputCheck::worst_want)
      .def_ro("scale", &exec::OutputCheck::scale)
      .def_ro("tightest_error", &exec::OutputCheck::tightest_error,
              "|got - want| of the element with the largest error / allowance; 0 when none "
              "differs.")
      .def_ro("tightest_allowance", &exec::OutputCheck::tightest_allowance,
              "That element's allowance, atol * scale + rtol * |want|.")
      .def_prop_ro("shape", [](const exec::OutputCheck& c) { return c.shape; })
      .def_prop_ro("atol", [](const exec::OutputCheck& c) { return c.tolerance.atol; })
      .def_prop_ro("rtol", [](const exec::OutputCheck& c) { return c.tolerance.rtol; })
      .def("__bool__", [](const exec::OutputCheck& c) { return c.pass; })
      .def("__repr__", [](const exec::OutputCheck& c) {
        return "<solar.Check " + exec::describe(c) + ">";
      });

  nb::class_<exec::ValidationResult>(m, "ValidationResult",
                                     "The outcome of solar.validate (truthy when it passed).")
      .def_ro("passed", &exec::ValidationResult::pass)
      .def_ro("outputs", &exec::ValidationResult::outputs)
      .def_ro("intermediates", &exec::ValidationResult::intermediates)
      .def_ro("first_divergent_op", &exec::ValidationResult::first_divergent_op)
      .def_ro("first_divergent_check", &exec::ValidationResult::first_divergent_check)
      .def("__bool__", [](const exec::ValidationResult& r) { return r.pass; })
      .def("__str__", [](const exec::ValidationResult& r) { return exec::describe(r); })
      .def("__repr__", [](const exec::ValidationResult& r) {
        return "<solar.ValidationResult " + exec::describe(r) + ">";
      });

  m.def("run", &run, "graph"_a, "inputs"_a, "threads"_a = 0, "keep"_a = std::vector<std::string>{},
        "memory_limit_bytes"_a = 0,
        "Runs the graph; returns {name: numpy array} for the outputs and kept tensors.");
  m.def("run_ranks", &run_ranks, "graphs"_a, "inputs"_a, "threads"_a = 0,
        "keep"_a = std::vector<std::string>{}, "memory_limit_bytes"_a = 0,
        "Runs graphs[r] as rank r on inputs[r], collectives exchanging the ranks' buffers; "
        "returns one {name: numpy array} per rank.");
  m.def("validate", &validate, "graph"_a, "inputs"_a, "references"_a, "intermediates"_a,
        "threads"_a = 0, "memory_limit_bytes"_a = 0,
        "Runs the graph and compares it with reference values.");
  m.def("compare",
        [](const std::string& name, const nb::dict& arrays, ir::DType dtype) {
          Inputs in = references_from(arrays, "value");
          if (!in.buffers.contains("got") || !in.buffers.contains("want"))
            bad("compare needs the arrays 'got' and 'want'");
          return exec::compare(name, in.buffers.at("got"), in.buffers.at("want"),
                               exec::tolerance_for(dtype));
        },
        "name"_a, "arrays"_a, "dtype"_a,
        "Compares arrays['got'] with arrays['want'] under the tolerance of `dtype` (the rule "
        "validate uses); returns a Check.");
  m.def("tolerance_for", [](ir::DType d) {
          exec::Tolerance t = exec::tolerance_for(d);
          return std::make_pair(t.atol, t.rtol);
        },
        "dtype"_a, "(atol, rtol) used to compare a tensor of this dtype (docs/executor.md).");
  m.def("opaque_functions", &exec::opaque_functions,
        "The opaque functions the executor can run.");
  m.def("default_memory_limit_bytes", &exec::default_memory_limit_bytes,
        "80% of physical memory: the executor's default memory limit, in bytes.");
}

}  // namespace solar::python
