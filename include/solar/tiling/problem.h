// A single einsum as the tiling search sees it: ranks (loop indices) with extents, and each
// tensor's access as one affine expression per dimension, with its element width in bits.
//
// Semantics
// - Ranks are the einsum's iteration indices; every rank ranges over [0, extent).
// - A tensor dimension is read at sum_i coef_i * rank_i + constant. A plain dimension has one
//   term of coefficient 1 and no constant; a sliding-window (convolution) dimension has
//   several terms (`p*stride + r*dilation - pad`). Positions outside [0, dim extent) are
//   padding: never transferred. A dimension whose terms never overlap and stay in range (a
//   flat tensor read through a permuted or strided view, a window with stride >= kernel) is
//   split into plain dimensions, one per term: it reads one element per rank tuple.
// - The output is the last tensor; its dimensions must be plain ranks (distinct). A kept
//   size-1 dimension read or written at constant 0 gets a rank of extent 1 of its own.
// - A mask (a causal attention's key <= query) leaves out the iteration points where one of
//   its constraints `sum_r coef_r * rank_r + constant >= 0` fails. A tile (a box of
//   iterations) none of whose points is live is skipped: it loads and computes nothing; a
//   live tile is loaded whole. Masks go with plain dense tensors only (problem_from_einsum).
// - Sizes are in elements; widths in bits, so traffic converts to bytes per tensor
//   (bytes = ceil(elements * bits / 8) over the whole run). A sparse tensor is stored as the
//   cost module stores it (cost::tensor_bytes: 2:4 compressed, unstructured zeros as a
//   bitmap): n of its elements take storage_bits(n), and a tile of a 2:4 tensor covers the
//   whole groups of 4 it touches along its group dimension.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solar/cost/storage.h"
#include "solar/ir/dtype.h"
#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::tiling {

// How a tensor stores its elements: the rule of cost::tensor_bytes (cost/storage.h), so that
// every byte the tiling model counts is a byte the cost module would count.
using cost::Storage;
using cost::StorageFormat;

// Bit mask over ranks (a problem has at most kMaxRanks ranks).
using RankMask = std::uint32_t;
inline constexpr int kMaxRanks = 24;

struct Rank {
  std::string name;
  std::int64_t extent = 1;  // >= 1
};

struct DimTerm {
  int rank = 0;
  std::int64_t coef = 1;  // never 0
};

struct DimAccess {
  std::vector<DimTerm> terms;  // distinct ranks
  std::int64_t constant = 0;
  std::int64_t extent = 1;  // the tensor dimension's size (>= 1)
  bool plain() const { return terms.size() == 1 && terms[0].coef == 1 && constant == 0; }
};

struct TensorAccess {
  std::string name;
  int bits = 32;        // element width (ir::dtype_bits)
  bool output = false;  // exactly one tensor, the last, is the output
  std::vector<DimAccess> dims;
  RankMask ranks = 0;   // ranks that appear in any dimension
  // Per dimension of `dims`, the tensor dimension it reads: a flattened box split into plain
  // dimensions gives several the same one. Empty: dims[d] reads tensor dimension d.
  std::vector<int> tensor_dim = {};
  // Per dimension of `dims`, how far apart in the tensor's row-major element order two
  // elements one step apart along it are: the tensor dimension's stride, times the term's
  // coefficient for a split part; 0 where that is no fixed distance (a window), or for a
  // split part that a constant offset moves across its own positions (its steps do not
  // line up with the tensor's). Fusion follows ranks by it (fusion_plan.cc). Empty: the
  // row-major strides of `dims` (see element_strides).
  std::vector<std::int64_t> strides = {};
  Storage storage = {};
  // 2:4 storage: the dimension of `dims` along which the tensor's groups of 4 consecutive
  // elements lie (the one reading its innermost dimension at stride 1). A tile covers the
  // whole groups it touches along it (positions 4g..4g+3), within the positions the whole
  // iteration space reads, which are taken to be whole groups as cost::tensor_bytes takes a
  // footprint to be. -1: none (dense, bitmap, or no such dimension).
  int group_dim = -1;
  bool plain() const;   // every dimension plain
  // Elements of the whole tensor (product of dimension extents).
  Count elements() const;
};

using cost::storage_of;  // a tensor's own storage (cost/storage.h)
// The storage of tensor `id` of `g`: its own annotation, else that of the tensor it is a free
// view of (views and slices that do not copy rename their source's elements), as the cost
// module's compulsory traffic follows a source through its views. The factories below use it.
Storage storage_of(const ir::Graph& g, ir::TensorId id);

// Bits of `elements` elements in a storage (cost::storage_bits; rounded up to whole bytes,
// cost::tensor_bytes of the same elements exactly); sums over tensors are rounded once.
using cost::storage_bits;
Count storage_bits(const TensorAccess& a, Count elements);

// `a.strides`, or when empty the row-major strides over `a.dims`' extents (an access whose
// dimensions are the tensor's own).
std::vector<std::int64_t> element_strides(const TensorAccess& a);
// Row-major strides of `shape` in elements; 0 from 2^62 on (no distance to follow).
std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape);

// One constraint of a mask: sum of coef * rank over `terms`, plus `constant`, is >= 0.
struct RankConstraint {
  std::vector<DimTerm> terms;  // distinct ranks
  std::int64_t constant = 0;
  friend bool operator==(const RankConstraint&, const RankConstraint&) = default;
};

struct TilingProblem {
  std::vector<Rank> ranks;
  std::vector<TensorAccess> tensors;  // inputs in operand order, then the output
  // Live iteration points satisfy every constraint (empty: the whole box).
  std::vector<RankConstraint> mask;
  // Distinct-tensor compulsory traffic in bits: each distinct input tensor's footprint
  // (elements actually read) and the output once, at storage_bits. Filled by the factories.
  Count compulsory_bits;

  const TensorAccess& output() const { return tensors.back(); }
  // Iteration points of the full box (product of rank extents).
  Count points() const;
  // Iteration points inside the mask (cost::live_points; points() without one).
  Count live_points() const;
  // The ranks the mask's constraints name.
  RankMask mask_ranks() const;
  // Checks the invariants above; throws InternalError when a factory broke them.
  void check() const;
};

// How problem_from_einsum treats an einsum with a mask (a causal attention's scores).
enum class MaskedEinsum {
  Refuse,  // Unsupported
  Box,     // the mask is ignored: the full box's tiles, which move at least what the live
           // tiles move (attainable estimates only: a provable bound of the box is no bound
           // of the masked op, which does less work)
  Live,    // the mask is kept: tiles without a live point are skipped, and bounds count the
           // live points. Unsupported when a tensor is not plain and dense with the ranks'
           // extents (a window, 2:4 groups, a clipped dimension)
};

// The problem of one einsum op of `g`. Throws Unsupported for what the tiling model cannot
// express: masks (unless `masked` is Box), non-plain or repeated output subscripts, a rank
// in two dimensions of one tensor, more than kMaxRanks ranks. Each operand is its own tensor
// even when two operands name the same graph tensor (the attainable model may then count its
// traffic twice; the compulsory traffic counts it once).
TilingProblem problem_from_einsum(const ir::Graph& g, const ir::Op& op,
                                  MaskedEinsum masked = MaskedEinsum::Refuse);

// The access pattern of a non-einsum op that reads and writes as an einsum would, for
// attainable estimates only (its arithmetic is not an einsum): a copy, permute or concat
// move reads and writes each element once; an element gather (take_along_dim) reads whole rows
// along its axis (exact only when they are on chip); an arg-reduction (argmax,
// argmin) over attribute `axis`, or over every element without one, reads its input once
// and writes one index per kept position, as a max reduction does; a max pool's indices
// (pool_argmax) read the pooling windows; a scan (cumsum, cumprod) reads and writes each
// element once, as an elementwise op. nullopt for other ops, or when the shapes or
// attributes do not match.
std::optional<TilingProblem> problem_from_pattern(const ir::Graph& g, const ir::Op& op);

// C[m,n] = sum_k A[m,k] * B[k,n] with every tensor of type `dtype` (ranks m, n, k).
TilingProblem gemm_problem(std::int64_t m, std::int64_t n, std::int64_t k, ir::DType dtype);

// Ranks of `p` that appear in some non-plain dimension (sliding windows, strides).
RankMask affine_ranks(const TilingProblem& p);

// The problem with the mask's constraints that name a rank in `drop` removed (a box over
// those ranks: at least the traffic of the live tiles, never less).
TilingProblem without_constraints_on(TilingProblem p, RankMask drop);

// A smaller problem with the same attainable curve up to scaling: ranks present in every
// tensor only as plain dimensions (batch ranks) are removed (`batch` = product of their
// extents; traffic of the original = batch x traffic of the reduced one, buffer equal), and
// plain ranks with the same tensor-membership signature are merged into one rank (their
// extents multiply: a linearized loop over the merged ranks implements any merged tile, so
// the merged curve is never above the unmerged one). Ranks of extent 1 are dropped. Ranks of
// a 2:4 group dimension are neither removed nor merged (their tiles must respect groups),
// nor are the mask's ranks (its constraints keep naming them).
struct ReducedProblem {
  TilingProblem problem;
  Count batch = 1;
};
ReducedProblem reduce_problem(const TilingProblem& p, bool merge_ranks);

}  // namespace solar::tiling
