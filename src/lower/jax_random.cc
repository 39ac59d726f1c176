// The jax table's random-number primitives: counter-based generators as opaque integer
// work.
#include <string>
#include <vector>

#include "jax_families.h"

namespace solar::lower::detail::jax {

namespace {

// Random-number primitives: counter-based generators (threefry) are integer arithmetic; the
// stated cost is the Threefry-2x32 round count. Validation is given the framework's draws.
void lower_random(Context& c) {
  std::vector<TensorId> ins, outs;
  for (std::size_t k = 0; k < n_operands(c); ++k)
    if (is_tensor(operands(c)[k])) ins.push_back(in(c, k));
  Count bytes(0), elems(0);
  for (TensorId t : ins) bytes = bytes + c.t(t).size_bytes();
  for (std::size_t k = 0; k < c.op().outputs.size(); ++k)
    if (c.out_id(k)) {
      outs.push_back(c.def(k));
      bytes = bytes + c.t(outs.back()).size_bytes();
      elems = elems + c.t(outs.back()).num_elements();
    }
  ir::OpaqueOp o;
  o.function = c.op().op.substr(5);
  o.vector_flops = elems * Count(20 * 4 / 2);
  o.special_ops = Count(0);
  o.bytes = bytes;
  o.assumption = "Threefry-2x32: 20 rounds of 4 integer ops per pair of 32-bit words; reads the "
                 "key, writes the bits once";
  c.opaque(ins, outs, std::move(o));
}

}  // namespace

void register_random_ops(const Register& reg) {
  for (std::string_view name : {"jax::random_bits", "jax::random_seed", "jax::random_wrap",
                                "jax::random_unwrap", "jax::random_fold_in", "jax::random_split",
                                "jax::threefry2x32", "jax::rng_bit_generator",
                                "jax::rng_uniform"})
    reg(name, lower_random);
}

}  // namespace solar::lower::detail::jax
