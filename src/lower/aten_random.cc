// The aten table's random-number ops (rand, randn, randint, bernoulli, normal ...) and
// dropout with its gradient: opaque generators whose numbers the executor cannot reproduce.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "context.h"
#include "families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {

namespace {

// A random-number op: opaque, counting the numbers generated (one generator step each, plus
// the special functions of the distribution's transform) and the bytes written and read.
// The executor cannot reproduce torch's generator: a graph with one is analyzable, and
// validation can compare only what does not depend on it.
void rng_into(Context& c, std::vector<TensorId> reads, TensorId out, const std::string& dist,
              ir::Attrs attrs = {}) {
  const Count n = c.t(out).num_elements();
  ir::OpaqueOp o;
  o.function = "random_" + dist;
  o.vector_flops = n;
  // Box-Muller: a log, a square root and a sine or cosine per number.
  o.special_ops = dist == "normal" ? n * Count(3) : Count(0);
  Count bytes = c.t(out).size_bytes();
  for (TensorId r : reads) bytes = bytes + c.t(r).size_bytes();
  o.bytes = bytes;
  o.assumption = dist == "normal"
                     ? "one generator step and a Box-Muller transform (log, sqrt, sin/cos) per "
                       "number; writes each number once, reads its parameters once"
                     : "one generator step per number; writes each number once, reads its "
                       "parameters once";
  attrs["distribution"] = dist;
  o.attrs = std::move(attrs);
  c.opaque(std::move(reads), {out}, std::move(o));
}

// rand, randn, randint, bernoulli, normal, uniform_ ... : `reads` names the tensor arguments
// whose values the distribution reads (probabilities, means, standard deviations).
Fn random_op(std::string dist, std::vector<const char*> reads) {
  return [=](Context& c) {
    std::vector<TensorId> in;
    for (const char* name : reads) {
      const auto& v = c.a(name);
      if (v.is_object() && v.contains("tensor")) in.push_back(c.use_arg(name));
    }
    ir::Attrs attrs;
    for (const char* name : {"p", "low", "high", "from", "to", "mean", "std"})
      if (auto v = number_value(c.a(name))) attrs[name] = *v;
    rng_into(c, std::move(in), c.def(0), dist, std::move(attrs));
  };
}

// A view of `in` as output 0: free; of an alias, another alias.
void view_into_output(Context& c, TensorId in, std::int64_t in_trace) {
  if (c.is_alias(in)) return alias_view(c, in, in_trace);
  c.move(MoveKind::View, {in}, c.def(0));
}

// dropout / native_dropout: identity in eval mode (mask all ones); in training a Bernoulli
// keep-mask (probability 1 - p) and out = in * mask / (1 - p).
void lower_dropout(Context& c) {
  const double p = c.num_arg("p", 0);
  const bool train = c.a("train").is_null() ? true : c.bool_arg("train", true);
  std::int64_t x = c.trace_id("input");
  TensorId in = c.use(x);
  if (!train || p == 0) {
    view_into_output(c, in, x);
    if (c.out_id(1)) c.elementwise({}, c.def(1), num(1));
    return;
  }
  TensorId out = c.def(0);
  TensorId mask = c.out_id(1) ? c.def(1) : c.temp("keep", c.t(out).shape, ir::DType::Bool);
  rng_into(c, {}, mask, "bernoulli", {{"p", 1 - p}});
  c.elementwise({in, mask}, out, mul(mul(arg(0), arg(1)), num(p >= 1 ? 0.0 : 1 / (1 - p))));
}

}  // namespace

void register_random_ops(const Register& reg) {
  reg("aten::native_dropout.default", lower_dropout);
  reg("aten::dropout.default", lower_dropout);
  reg("aten::native_dropout_backward.default", [](Context& c) {
    std::vector<TensorId> in;
    Expr g = operand(c, "grad_output", in), m = operand(c, "mask", in);
    c.elementwise(in, c.def(0), mul(mul(g, m), num(c.num_arg("scale", 1))));
  });
  // Random numbers.
  for (auto [name, dist, reads] :
       std::initializer_list<std::tuple<std::string_view, const char*, std::vector<const char*>>>{
           {"aten::rand.default", "uniform", {}}, {"aten::rand.generator", "uniform", {}},
           {"aten::rand_like.default", "uniform", {}}, {"aten::uniform_.default", "uniform", {}},
           {"aten::randn.default", "normal", {}}, {"aten::randn.generator", "normal", {}},
           {"aten::randn_like.default", "normal", {}}, {"aten::normal_.default", "normal", {}},
           {"aten::normal.Tensor_float", "normal", {"mean"}},
           {"aten::normal.float_Tensor", "normal", {"std"}},
           {"aten::normal.Tensor_Tensor", "normal", {"mean", "std"}},
           {"aten::normal.float_float", "normal", {}},
           {"aten::randint.default", "randint", {}}, {"aten::randint.low", "randint", {}},
           {"aten::randint.generator", "randint", {}}, {"aten::randint.low_generator", "randint", {}},
           {"aten::randint_like.default", "randint", {}}, {"aten::randint_like.low_dtype", "randint", {}},
           {"aten::random_.default", "randint", {}}, {"aten::random_.from", "randint", {}},
           {"aten::random_.to", "randint", {}},
           {"aten::bernoulli.default", "bernoulli", {"self"}}, {"aten::bernoulli.p", "bernoulli", {}},
           {"aten::bernoulli_.float", "bernoulli", {}}, {"aten::bernoulli_.Tensor", "bernoulli", {"p"}},
           {"aten::exponential_.default", "exponential", {}},
       })
    reg(name, random_op(dist, reads));
}

}  // namespace solar::lower::detail
