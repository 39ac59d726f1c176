// run_einsum: dispatch between the GEMM path (einsum_gemm.cc) and the loop nest (loop_nest.cc).
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <string>

#include <fmt/format.h>

#include "einsum_gemm.h"
#include "loop_nest.h"
#include "solar/exec/einsum_path.h"
#include "solar/exec/kernels.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

std::atomic<std::size_t> g_materialize_budget{std::size_t{16} << 20};
thread_local EinsumRunInfo t_last_run;

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += fmt::format("{}{}", i ? "," : "", s[i]);
  return t + "]";
}

}  // namespace

std::string_view einsum_path_name(EinsumPath p) {
  switch (p) {
    case EinsumPath::Gemm: return "gemm";
    case EinsumPath::Im2colGemm: return "im2col_gemm";
    case EinsumPath::LoopNest: return "loop_nest";
  }
  return "?";
}

void set_materialize_budget_bytes(std::size_t bytes) { g_materialize_budget = bytes; }
EinsumRunInfo last_einsum_run() { return t_last_run; }
std::size_t materialize_budget_bytes() { return g_materialize_budget; }

EinsumPath einsum_path(const ir::EinsumOp& e, std::span<const ir::DType> input_dtypes,
                       ir::DType output_dtype) {
  std::vector<Storage> storages;
  std::vector<std::optional<double>> pads;
  for (std::size_t k = 0; k < e.operands.size(); ++k) {
    storages.push_back(k < input_dtypes.size() ? storage_for(input_dtypes[k]) : Storage::F32);
    pads.push_back(e.operands[k].pad);
  }
  const Storage compute = compute_storage(storages, storage_for(output_dtype), e.combine, pads);
  std::optional<GemmClassification> cl = classify_contraction(e, compute);
  if (!cl) return EinsumPath::LoopNest;
  return cl->affine_operands ? EinsumPath::Im2colGemm : EinsumPath::Gemm;
}

void run_einsum(const ir::EinsumOp& e, std::span<const Buffer* const> inputs, Buffer& output,
                const ExecContext& ctx) {
  if (inputs.size() != e.operands.size())
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("einsum has {} operands but {} input buffers were given",
                                e.operands.size(), inputs.size()));
  LoopSpec spec;
  spec.extents = e.extents();
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Buffer* b = inputs[k];
    if (b == nullptr || !b->defined())
      throw UserError(UserError::Kind::BadArgument, fmt::format("einsum input {} has no data", k));
    if (b->shape().size() != e.operands[k].subscript.size())
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("einsum input {} has shape {} but its subscript has {} "
                                  "dimensions",
                                  k, shape_text(b->shape()), e.operands[k].subscript.size()));
    spec.operands.push_back(LoopTensor{b->raw_data(), b->storage(), b->shape(),
                                       e.operands[k].subscript, e.operands[k].pad});
  }
  if (!output.defined())
    throw UserError(UserError::Kind::BadArgument, "einsum output buffer is not allocated");
  if (output.shape().size() != e.output.size())
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("einsum output has shape {} but the output subscript has {} "
                                "dimensions",
                                shape_text(output.shape()), e.output.size()));
  t_last_run = EinsumRunInfo{};
  if (output.num_elements() == 0) return;
  spec.output = LoopTensor{output.raw_data(), output.storage(), output.shape(), e.output, {}};
  spec.output_dtype = output.dtype();
  spec.combine = e.combine;
  std::vector<ir::DType> operand_dtypes;
  for (const Buffer* b : inputs) operand_dtypes.push_back(b->dtype());
  spec.ints = integer_type(operand_dtypes, output.dtype());
  spec.reduce = e.reduce;
  spec.mask = e.mask;
  const int threads = ctx.threads > 0 ? ctx.threads : omp_get_max_threads();
  if (std::find(spec.extents.begin(), spec.extents.end(), 0) != spec.extents.end()) {
    // An empty iteration space (a reduction over nothing): every element is the identity.
    fill_storage(output.raw_data(), output.storage(), output.num_elements(),
                 reduce_identity(e.reduce, output.dtype()), threads);
    return;
  }

  std::vector<Storage> storages;
  std::vector<std::optional<double>> pads;
  for (const LoopTensor& t : spec.operands) {
    storages.push_back(t.storage);
    pads.push_back(t.pad);
  }
  const Storage compute = compute_storage(storages, output.storage(), e.combine, pads);
  spec.compute = compute;

  // Output elements outside the image of the iteration box hold the identity (graph.h). The
  // kernels write every element of the image, so only a partial image needs a fill first.
  const std::size_t n_idx = spec.extents.size();
  std::int64_t out_base;
  std::vector<std::int64_t> out_stride;
  tensor_strides(spec.output, n_idx, out_base, out_stride);
  if (n_idx > 0 && output_is_one_to_one(out_stride, spec.extents)) {
    std::int64_t image = 1;
    for (std::size_t j = 0; j < n_idx; ++j)
      if (out_stride[j] != 0) image *= spec.extents[j];
    if (image != output.num_elements())
      fill_storage(output.raw_data(), output.storage(), output.num_elements(),
                   reduce_identity(e.reduce, output.dtype()), threads);
  }

  t_last_run = EinsumRunInfo{};
  if (std::optional<GemmClassification> cl = classify_contraction(e, compute)) {
    int chunks = 0;
    if (run_gemm_path(*cl, spec, threads, chunks)) {
      t_last_run = {cl->affine_operands ? EinsumPath::Im2colGemm : EinsumPath::Gemm, chunks};
      return;
    }
  }
  run_loop_nest(spec, threads);
}

}  // namespace solar::exec
