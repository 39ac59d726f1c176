// The aten table's collectives: torch.distributed's ops as one rank records them under the
// fake process group (python/solar/frontends/torch/distributed.py) -- the functional
// collectives (`_c10d_functional::all_reduce`, `all_gather_into_tensor`,
// `reduce_scatter_tensor`, `all_to_all_single`, `broadcast`, and `wait_tensor`, a free view
// of its input) and the c10d ops `dist.all_reduce` & friends call (`c10d::allreduce_`,
// `_allgather_base_`, `_reduce_scatter_base_`, `broadcast_`, `alltoall_base_`). The capture
// resolves what depends on the process group and writes it as arguments: `collective` (the
// IR kind), `reduction`, `group` (the mesh dimension or group name), `size` (the group's
// ranks), `axis`, `concat_axis` and `root`; what it cannot resolve (a list collective, a
// premultiplied sum, unequal all-to-all splits) it refuses before lowering. Without
// `collective` (a trace recorded outside the fake process group) the op is unanalyzed. FSDP2's own copy-in and chunking ops
// (`fsdp::all_gather_copy_in`, `split_with_sizes_copy`, `chunk_cat`) are the data movement around its
// all-gathers and reduce-scatters.
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
  ir::CollectiveOp op = c.collective_args("torch.distributed's fake process group");
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

std::int64_t count(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

// `x` (dense) as [rows, numel / rows]: free (a row-major reshape).
TensorId as_rows(Context& c, TensorId x, std::int64_t rows, const char* suffix) {
  const ir::Tensor& t = c.t(x);
  TensorId v = c.temp(suffix, {rows, count(t.shape) / rows}, t.dtype);
  c.move(ir::MoveKind::View, {x}, v);
  return v;
}

// fsdp::all_gather_copy_in (FSDP2's copy-in): the rank's parameter shards, flattened and
// concatenated, are output 0 (its slot of the all-gather buffer, what the all-gather sends);
// the buffer (output 1) is written whole by the all-gather that follows and read by nothing
// before it.
void all_gather_copy_in(Context& c) {
  std::vector<TensorId> parts;
  for (std::int64_t id : c.trace_ids("all_gather_inputs"))
    parts.push_back(as_rows(c, dense(c, id), 1, "flat"));
  if (parts.empty()) throw Unsupported("an all-gather copy-in of no tensors");
  const std::int64_t n = count(c.tt(*c.out_id(0)).shape);
  TensorId row = c.temp("copy_in", {1, n}, c.t(parts[0]).dtype);
  if (parts.size() == 1) c.move(ir::MoveKind::Copy, parts, row);
  else c.move(ir::MoveKind::Concat, parts, row, {{"axis", std::int64_t{1}}});
  c.move(ir::MoveKind::View, {row}, c.def(0));
  c.mark_uninitialized(1);
}

// fsdp::chunk_cat (torch._chunk_cat, FSDP2's reduce-scatter input): each gradient cut into
// `num_chunks` chunks along `dim`, chunk i of every gradient side by side in row i of `out`
// ([num_chunks, sum of numel / num_chunks]). Only dim 0 with chunks that divide it (no
// padding) is modeled.
void chunk_cat(Context& c) {
  const std::int64_t chunks = c.int_arg("num_chunks", 1);
  if (c.int_arg("dim", 0) != 0) throw Unsupported("chunk_cat along a dimension other than 0");
  std::vector<TensorId> parts;
  for (std::int64_t id : c.trace_ids("tensors")) {
    TensorId x = dense(c, id);
    const auto& shape = c.t(x).shape;
    if (shape.empty() || shape[0] % chunks != 0)
      throw Unsupported("chunk_cat of a tensor whose first dimension the chunks do not divide "
                        "(padded chunks)");
    parts.push_back(as_rows(c, x, chunks, "chunks"));
  }
  if (parts.empty()) throw Unsupported("a chunk_cat of no tensors");
  std::int64_t width = 0;
  for (TensorId p : parts) width += c.t(p).shape[1];
  TensorId rows = c.temp("chunk_cat", {chunks, width}, c.t(parts[0]).dtype);
  if (parts.size() == 1) c.move(ir::MoveKind::Copy, parts, rows);
  else c.move(ir::MoveKind::Concat, parts, rows, {{"axis", std::int64_t{1}}});
  c.move(ir::MoveKind::View, {rows}, c.def(0));
}

// fsdp::split_with_sizes_copy (FSDP2's copy-out): the gathered buffer cut along `dim` into
// the unsharded parameters' storages (the op's outputs, in order), each a copy.
void split_with_sizes_copy(Context& c) {
  TensorId in = dense(c, c.trace_id("all_gather_output"));
  const auto sizes = c.ints("all_gather_input_split_sizes");
  const std::int64_t dim = c.int_arg("dim", 0);
  const auto& shape = c.t(in).shape;
  if (dim < 0 || dim >= static_cast<std::int64_t>(shape.size()))
    throw Unsupported("split_with_sizes_copy along a dimension the buffer lacks");
  std::int64_t start = 0;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    if (!c.out_id(k)) throw Unsupported("split_with_sizes_copy with fewer outputs than sizes");
    slice_into(c, in, c.def(k), dim, start, start + sizes[k], 1);
    start += sizes[k];
  }
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
  reg("fsdp::all_gather_copy_in.default", all_gather_copy_in);
  reg("fsdp::chunk_cat.default", chunk_cat);
  reg("fsdp::split_with_sizes_copy.default", split_with_sizes_copy);
}

}  // namespace solar::lower::detail
