// The error taxonomy every Solar module throws: user errors, unsupported constructs, bugs.
#pragma once

#include <stdexcept>
#include <string>

namespace solar {

// Where a problem came from: a file and line, and/or the op it concerns. Any part may be empty.
struct Origin {
  std::string file;
  int line = 0;  // 1-based; 0 when unknown
  std::string op;
  // The framework module that ran it ("blocks.3.attn.qkv": PyTorch's module path, JAX's
  // name stack); "" when unknown. Not part of describe().
  std::string module = {};
  // The position in its trace of the traced op it was lowered from (an aten call, a jaxpr
  // equation, a loop nest): the ops of one traced op are one framework kernel (report/
  // framework.h). -1 when it was not lowered from a trace (a graph file). Not part of
  // describe().
  int traced_op = -1;

  // "file:line: op 'name'" with the empty parts left out.
  std::string describe() const;
};

// Base of all Solar errors; what() is one line that names the problem and its origin.
class Error : public std::runtime_error {
 public:
  Error(const std::string& message, Origin origin = {});
  const Origin& origin() const { return origin_; }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
  Origin origin_;
};

// Bad input: a malformed file, an invalid graph, an unknown device. Says what is wrong and
// how to fix it.
class UserError : public Error {
 public:
  enum class Kind {
    Io,          // a file cannot be read or written
    Parse,       // malformed text or JSON
    InvalidGraph,// the verifier rejected the graph
    UnknownDevice,
    BadArgument, // a bad option value
    // Refusals of the loop language (docs/loop-language.md), one exit code each:
    OutsideLanguage,   // a construct or program shape the language does not have
    NotAffine,         // a subscript or guard that is not affine in the loop variables
    DataDependent,     // a branch or subscript that depends on tensor values
    UnknownIntrinsic,  // a call to a function the language does not define
    ShapeMismatch,     // ranks, extents or bounds that do not agree
    Undeclared,        // a name that is no tensor, constant, parameter or loop variable
    NonConstantBound,  // a loop bound that is not a static constant (or affine in outer loops)
  };
  UserError(Kind kind, const std::string& message, Origin origin = {})
      : Error(message, std::move(origin)), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// A construct Solar cannot model; frontends turn it into a reported `unanalyzed` op.
class Unsupported : public Error {
 public:
  using Error::Error;
};

// A bug in Solar. Carries the C++ file and line that detected it.
class InternalError : public Error {
 public:
  InternalError(const std::string& message, const char* file, int line);
};

}  // namespace solar

// The one way an internal error is raised: SOLAR_CHECK(invariant, message) where a condition
// must hold, SOLAR_UNREACHABLE(message) where control cannot arrive (after a switch over a
// closed enum, with every case returning). Both carry the file and line that detected it.
#define SOLAR_CHECK(cond, msg)                                        \
  do {                                                                \
    if (!(cond)) throw ::solar::InternalError((msg), __FILE__, __LINE__); \
  } while (0)
#define SOLAR_UNREACHABLE(msg) throw ::solar::InternalError((msg), __FILE__, __LINE__)
