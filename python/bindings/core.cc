// solar._core: the module, and C++ exceptions mapped to Python exceptions.
//
//   solar::Error         -> solar.Error(ValueError)
//   solar::UserError     -> solar.UserError(Error), with .kind ("io", "parse",
//                           "invalid_graph", "unknown_device", "bad_argument", and the
//                           loop-language refusals "outside_language" ... "non_constant_bound")
//   solar::Unsupported   -> solar.UnsupportedError(Error)
//   solar::InternalError -> solar.InternalError(Error)
// Each keeps the one-line message (with its file:line origin); .exit_code is the code the
// CLI exits with for the same error.
#include <exception>
#include <string>

#include <nanobind/nanobind.h>
#include <nlohmann/json.hpp>

#include "bindings.h"
#include "solar/cli/cli.h"
#include "solar/util/errors.h"

namespace nb = nanobind;

namespace solar::python {
namespace {

PyObject* g_error = nullptr;
PyObject* g_user_error = nullptr;
PyObject* g_unsupported = nullptr;
PyObject* g_internal = nullptr;

const char* kind_name(UserError::Kind k) {
  switch (k) {
    case UserError::Kind::Io: return "io";
    case UserError::Kind::Parse: return "parse";
    case UserError::Kind::InvalidGraph: return "invalid_graph";
    case UserError::Kind::UnknownDevice: return "unknown_device";
    case UserError::Kind::BadArgument: return "bad_argument";
    case UserError::Kind::OutsideLanguage: return "outside_language";
    case UserError::Kind::NotAffine: return "not_affine";
    case UserError::Kind::DataDependent: return "data_dependent";
    case UserError::Kind::UnknownIntrinsic: return "unknown_intrinsic";
    case UserError::Kind::ShapeMismatch: return "shape_mismatch";
    case UserError::Kind::Undeclared: return "undeclared";
    case UserError::Kind::NonConstantBound: return "non_constant_bound";
  }
  return "unknown";
}

void raise(PyObject* type, const std::exception& e, const char* kind) {
  nb::object exc = nb::steal(PyObject_CallFunction(type, "s", e.what()));
  if (!exc.is_valid()) return;  // the constructor raised; that error stands
  exc.attr("kind") = kind ? nb::cast(kind) : nb::none();
  exc.attr("exit_code") = static_cast<int>(cli::exit_code_for(e));
  PyErr_SetObject(type, exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const UserError& e) {
    raise(g_user_error, e, kind_name(e.kind()));
  } catch (const Unsupported& e) {
    raise(g_unsupported, e, nullptr);
  } catch (const InternalError& e) {
    raise(g_internal, e, nullptr);
  } catch (const Error& e) {
    raise(g_error, e, nullptr);
  } catch (const nlohmann::json::parse_error& e) {
    // A JSON library error escaping a parser is still malformed input.
    raise(g_user_error, e, "parse");
  }
}

}  // namespace
}  // namespace solar::python

NB_MODULE(_core, m) {
  using namespace solar::python;
  m.doc() = "Solar's C++ core: EinsumGraph, device database, analysis and the CLI.";

  g_error = PyErr_NewExceptionWithDoc("solar.Error", "Base of every Solar error.",
                                      PyExc_ValueError, nullptr);
  g_user_error = PyErr_NewExceptionWithDoc(
      "solar.UserError", "Bad input: a malformed file, an invalid graph, an unknown device.",
      g_error, nullptr);
  g_unsupported = PyErr_NewExceptionWithDoc(
      "solar.UnsupportedError", "A construct Solar cannot model.", g_error, nullptr);
  g_internal = PyErr_NewExceptionWithDoc("solar.InternalError", "A bug in Solar.", g_error,
                                         nullptr);
  m.attr("Error") = nb::handle(g_error);
  m.attr("UserError") = nb::handle(g_user_error);
  m.attr("UnsupportedError") = nb::handle(g_unsupported);
  m.attr("InternalError") = nb::handle(g_internal);
  nb::register_exception_translator(translate);

  bind_ir(m);
  bind_hw(m);
  bind_report(m);
  bind_cli(m);
  bind_exec(m);
  bind_lower(m);
  bind_insight(m);
  bind_interop(m);
  bind_parallel(m);
}
