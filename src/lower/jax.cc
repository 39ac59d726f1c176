// The jax dialect table: one entry per lax primitive (`jax::NAME`), built from the
// registration hook of each primitive family, one file per family (jax_families.h), over the
// ops the JAX recorder writes (python/solar/frontends/jax/).
#include "solar/lower/jax.h"

#include <string_view>
#include <utility>

#include "jax_families.h"

namespace solar::lower {

namespace detail::jax {

const Table& table() {
  static const Table t = [] {
    static constexpr std::pair<std::string_view, void (*)(const Register&)> kFamilies[] = {
        {"jax_pointwise.cc", register_pointwise_ops}, {"jax_reduce.cc", register_reduction_ops},
        {"jax_matmul.cc", register_matmul_ops},       {"jax_window.cc", register_window_ops},
        {"jax_shape.cc", register_shape_ops},         {"jax_index.cc", register_index_ops},
        {"jax_random.cc", register_random_ops},       {"jax_loop.cc", register_loop_ops},
        {"jax_collective.cc", register_collective_ops}};
    TableBuilder b("jax");
    for (const auto& [file, hook] : kFamilies) b.add(file, hook);
    return b.take();
  }();
  return t;
}

}  // namespace detail::jax

bool jax_op_known(std::string_view op) {
  const detail::Table& t = detail::jax::table();
  return t.contains(op) && op != "jax::scan" && op != "jax::while" && op != "jax::cond" &&
         op != "jax::shard_map" && op != "jax::unsupported";
}

LowerResult lower_jax(const OpTrace& trace, const LowerOptions& options) {
  LowerResult r = detail::lower_with_table(trace, options, detail::jax::table(), "jax");
  detail::recognize_masks_in(r);
  return r;
}

}  // namespace solar::lower
