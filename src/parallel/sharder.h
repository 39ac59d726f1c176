// The tensor-parallel sharder's state, shared by its files: propagation through einsums
// (propagate.cc), through data movement (moves.cc) and the collectives it inserts
// (collectives.cc). Internal to the module.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "solar/parallel/tensor_parallel.h"

namespace solar::parallel::detail {

// What a rank holds of a tensor: all of it (None), its block along `dim` (Shard), a partial
// reduction the ranks' values complete (Partial), or its block of the tensor `root`
// flattened, `root` sharded along `dim` (Flat: the element view of an in-place update). A
// Shard or Flat splits its dimension in `parts` blocks: tp, or fewer where tp / parts ranks
// share one block (key/value heads fewer than tp), rank r holding block r / (tp / parts).
struct Spec {
  enum class Kind { None, Shard, Partial, Flat };
  Kind kind = Kind::None;
  int dim = 0;
  ir::CollectiveReduction reduction = ir::CollectiveReduction::Sum;
  std::vector<std::int64_t> root;
  std::int64_t parts = 0;
  explicit operator bool() const { return kind != Kind::None; }
  friend bool operator==(const Spec&, const Spec&) = default;
  static Spec shard(int d, std::int64_t parts) {
    return {Kind::Shard, d, ir::CollectiveReduction::Sum, {}, parts};
  }
  static Spec partial(ir::CollectiveReduction r) { return {Kind::Partial, 0, r, {}, 0}; }
};

using Id = std::uint32_t;  // a tensor of the working table

std::int64_t prod(const std::vector<std::int64_t>& xs, std::size_t from = 0,
                  std::size_t to = SIZE_MAX);

class Sharder {
 public:
  Sharder(const ir::Graph& g, const TensorParallelPlan& plan);
  void run();
  void copy_ops();  // tp 1: the ops as they are
  ShardedGraph finish(const std::set<std::string>& keep_sharded);

 private:
  friend struct Access;
  // tensors (propagate.cc)
  void shard_source(Id x, int dim, std::int64_t parts);
  Spec sh(int d) const { return Spec::shard(d, tp_); }
  // The block of `parts` this rank holds.
  std::int64_t block(std::int64_t parts) const { return rank_ / (tp_ / parts); }
  Id add(const std::string& name, Id like, std::vector<std::int64_t> shape,
         std::optional<ir::DType> dtype = std::nullopt);
  std::vector<std::int64_t> full_shape(Id x) const;
  void set_out(Id out, const Spec& s);
  std::optional<int> view_dim(Id x, int d, const std::vector<std::int64_t>& dst,
                              std::int64_t parts) const;
  ir::Op& push(ir::Op op);
  const std::string& name(Id x) const { return t_[x].name; }

  // collectives (collectives.cc)
  void coll(ir::CollectiveKind kind, Id x, Id out, const std::string& why,
            ir::CollectiveReduction r, int axis);
  Id whole_of(Id x, const std::string& why);
  Id settle(Id x, const std::string& why);
  Id local_slice(Id x, int dim, std::int64_t parts);
  void replicate(ir::Op op, const std::string& why);

  // einsums (propagate.cc)
  struct Cand {  // an operand sharded along an einsum index
    ir::IndexPos var;
    std::size_t n;
    bool weight;
    std::int64_t parts;
  };
  void einsum(const ir::Op& in);
  bool shared_heads(ir::Op& op, const std::vector<Cand>& cands);
  std::optional<ir::IndexPos> var_at(const ir::EinsumOp& e, const ir::AffineExpr& sub,
                                     std::int64_t size) const;
  ir::IndexPos flat_operand(ir::Op& op, std::size_t n, const Spec& spec);
  bool shard_wanted(ir::Op& op, int d);
  std::map<Id, int> wanted_gradients() const;

  // data movement (moves.cc)
  void move(const ir::Op& in);
  std::pair<Id, Id> local_rows(Id ids, std::int64_t rows, ir::DType dtype);
  void vocab_scatter(ir::Op op);
  void vocab_gather(ir::Op op);
  std::map<Id, Id> strided_offset_targets() const;
  void strided_offsets(const ir::Op& op, Id target);
  void mark_offsets_views(Id x);

  const ir::Graph& g_;
  std::int64_t tp_, rank_;
  bool sp_;
  ir::CollectiveGroup group_;
  std::vector<ir::Tensor> t_;  // the working tensors: the input's first, same ids
  std::unordered_map<std::string, Id> by_name_;
  std::vector<Spec> spec_;
  std::vector<ir::Op> ops_;  // tensor ids of the working table
  std::vector<InsertedCollective> collectives_;
  std::vector<std::string> replicated_;
  std::map<Id, Id> whole_, alias_, view_src_;
  std::map<std::tuple<Id, int, std::int64_t>, Id> local_slices_;
  std::set<Id> local_offsets_;
  std::vector<std::vector<const ir::Op*>> consumers_;  // by input tensor id
  std::set<std::pair<std::vector<std::int64_t>, int>> grad_like_;
  std::map<Id, int> wanted_;
};

// An affine expression's use of index i.
bool uses(const ir::AffineExpr& e, ir::IndexPos i);

}  // namespace solar::parallel::detail
