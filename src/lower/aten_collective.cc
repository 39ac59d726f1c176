// The aten table's collectives: torch.distributed's ops as one rank records them under the
// fake process group (python/solar/frontends/torch/distributed.py) -- the functional
// collectives (`_c10d_functional::all_reduce`, `all_gather_into_tensor`,
// `reduce_scatter_tensor`, `all_to_all_single`, `broadcast`, and `wait_tensor`, a free view
// of its input) and the c10d ops `dist.all_reduce` & friends call (`c10d::allreduce_`,
// `_allgather_base_`, `_reduce_scatter_base_`, `broadcast_`, `alltoall_base_`). The capture
// resolves what depends on the process group and writes it as arguments: `collective` (the
// IR kind), `reduction`, `group` (the mesh dimension or group name), `size` (the group's
// ranks), `axis`, `concat_axis` and `root`. Without `collective` (an op the capture did not
// understand: a list collective, a premultiplied sum, unequal all-to-all splits) the op is
// unanalyzed with the capture's `refused` reason.
#include <cstdint>
#include <string>
#include <vector>

#include "context.h"
#include "families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {
namespace {

using ir::TensorId;

// The tensor a collective reads: a strided alias is made dense first (a collective moves a
// contiguous buffer, as NCCL does).
TensorId dense(Context& c, std::int64_t trace_id) {
  TensorId x = c.use(trace_id);
  return c.is_alias(x) ? c.materialize(x) : x;
}

// `input`: the schema argument the collective reads (a list's one tensor for the c10d ops
// that take a list); its result is the op's first output (the written tensor's new version
// for the in-place c10d ops).
void collective(Context& c, const char* input, bool list) {
  if (c.has("refused") && c.a("refused").is_string())
    throw Unsupported(c.a("refused").get<std::string>());
  const nlohmann::json& kind_arg = c.a("collective");
  if (!kind_arg.is_string())
    throw Unsupported("a collective without the capture's `collective` argument (was it "
                      "recorded outside torch.distributed's fake process group?)");
  const auto kind = ir::parse_collective_kind(kind_arg.get<std::string>());
  if (!kind) throw Unsupported("unknown collective kind '" + kind_arg.get<std::string>() + "'");
  ir::CollectiveOp op;
  op.kind = *kind;
  op.group.size = c.int_arg("size", 1);
  op.group.ranks_per_domain = c.int_arg("ranks_per_domain", 0);
  if (c.a("group").is_string()) op.group.name = c.a("group").get<std::string>();
  if (ir::collective_reduces(op.kind)) {
    const auto r = ir::parse_collective_reduction(c.a("reduction").get<std::string>());
    if (!r) throw Unsupported("unknown collective reduction");
    op.reduction = *r;
  }
  op.axis = c.int_arg("axis", 0);
  op.concat_axis = c.int_arg("concat_axis", 0);
  op.root = c.int_arg("root", 0);
  std::int64_t in_id = 0;
  if (list) {
    const std::vector<std::int64_t> ids = c.trace_ids(input);
    if (ids.size() != 1) throw Unsupported("a collective over a list of tensors (one is read)");
    in_id = ids[0];
  } else {
    in_id = c.trace_id(input);
  }
  c.collective({dense(c, in_id)}, c.def(0), std::move(op));
}

// wait_tensor: the collective's result, already complete in the rank's graph (its cost is
// the collective's): a free view.
void wait_tensor(Context& c) {
  const std::int64_t x = c.trace_id("tensor");
  TensorId in = c.use(x);
  if (c.is_alias(in)) return alias_view(c, in, x);
  c.move(ir::MoveKind::View, {in}, c.def(0));
}

}  // namespace

void register_c10d_ops(const Register& reg) {
  for (const char* name : {"_c10d_functional::all_reduce.default",
                           "_c10d_functional::all_reduce_.default",
                           "_c10d_functional::all_gather_into_tensor.default",
                           "_c10d_functional::reduce_scatter_tensor.default",
                           "_c10d_functional::all_to_all_single.default",
                           "_c10d_functional::broadcast.default",
                           "_c10d_functional::broadcast_.default"})
    reg(name, [](Context& c) { collective(c, "input", false); });
  reg("_c10d_functional::wait_tensor.default", wait_tensor);
  reg("c10d::allreduce_.default", [](Context& c) { collective(c, "tensors", true); });
  reg("c10d::broadcast_.default", [](Context& c) { collective(c, "tensors", true); });
  for (const char* name : {"c10d::_allgather_base_.default", "c10d::_reduce_scatter_base_.default"})
    reg(name, [](Context& c) { collective(c, "input_tensor", false); });
  reg("c10d::alltoall_base_.default", [](Context& c) { collective(c, "input", false); });
}

}  // namespace solar::lower::detail
