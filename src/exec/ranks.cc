// The multi-rank runner: one thread per rank, collectives matched and computed by a shared
// exchange under one lock (docs/executor.md, "Ranks").
#include "solar/exec/ranks.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "solar/ir/collective.h"
#include "solar/ir/shape.h"
#include "solar/util/errors.h"

namespace solar::exec {

namespace {

using ir::CollectiveKind;
using ir::CollectiveOp;
using ir::Shape;

// Copies the box `box` of `src` (starting at `src_at` along `src_axis`) into `dst` (starting
// at `dst_at` along `dst_axis`); every other axis starts at 0. Row-major, compute type T.
template <class T>
void copy_box(const T* src, const Shape& src_shape, std::size_t src_axis, std::int64_t src_at,
              T* dst, const Shape& dst_shape, std::size_t dst_axis, std::int64_t dst_at,
              const Shape& box) {
  const std::int64_t n = ir::numel(box);
  if (n == 0) return;
  const Shape ss = ir::row_major_strides(src_shape), ds = ir::row_major_strides(dst_shape);
  std::vector<std::int64_t> idx(box.size(), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t s = 0, d = 0;
    for (std::size_t a = 0; a < box.size(); ++a) {
      s += (idx[a] + (a == src_axis ? src_at : 0)) * ss[a];
      d += (idx[a] + (a == dst_axis ? dst_at : 0)) * ds[a];
    }
    dst[d] = src[s];
    for (std::size_t a = box.size(); a-- > 0;) {
      if (++idx[a] < box[a]) break;
      idx[a] = 0;
    }
  }
}

// The elementwise reduction of `ins` (rank order) into `out`.
template <class T>
void reduce_into(ir::CollectiveReduction how, const std::vector<const Buffer*>& ins, T* out) {
  const std::int64_t n = ins.front()->num_elements();
  std::copy_n(ins.front()->data<T>(), n, out);
  for (std::size_t r = 1; r < ins.size(); ++r) {
    const T* x = ins[r]->data<T>();
    for (std::int64_t i = 0; i < n; ++i) {
      switch (how) {
        case ir::CollectiveReduction::Sum: case ir::CollectiveReduction::Avg: out[i] += x[i]; break;
        case ir::CollectiveReduction::Prod: out[i] *= x[i]; break;
        case ir::CollectiveReduction::Max: out[i] = std::max(out[i], x[i]); break;
        case ir::CollectiveReduction::Min: out[i] = std::min(out[i], x[i]); break;
      }
    }
  }
  if (how == ir::CollectiveReduction::Avg)
    for (std::int64_t i = 0; i < n; ++i) out[i] /= static_cast<T>(ins.size());
}

// One rank waiting at a collective.
struct Pending {
  const ir::Op* op = nullptr;
  std::vector<const Buffer*> inputs;
  Buffer* out = nullptr;
  bool done = false;
};

std::string describe(int rank, const ir::Op& op) {
  const CollectiveOp& c = op.collective();
  std::string what = fmt::format("rank {} at '{}' ({}", rank, op.name,
                                 ir::collective_kind_name(c.kind));
  if (c.kind == CollectiveKind::Send || c.kind == CollectiveKind::Recv)
    return what + fmt::format(" peer {})", c.peer);
  return what + fmt::format(" over {} ranks)", c.group.size);
}

class Exchange {
 public:
  explicit Exchange(int ranks) : pending_(ranks), finished_(ranks, false) {}

  // Rank `rank` reaches collective `op`: returns when `out` holds its result.
  void run(int rank, const ir::Op& op, const std::vector<const Buffer*>& ins, Buffer& out) {
    std::unique_lock<std::mutex> lock(mu_);
    if (aborted_) throw UserError(UserError::Kind::InvalidGraph, abort_message_);
    const CollectiveOp& c = op.collective();
    if (c.kind == CollectiveKind::Send) {
      send(rank, op, *ins.at(0));
      copy(*ins[0], out);
      return;
    }
    pending_[rank] = Pending{&op, ins, &out, false};
    try {
      progress();
    } catch (const UserError& e) {
      abort(e.message());
    }
    cv_.wait(lock, [&] { return pending_[rank].done || aborted_; });
    if (!pending_[rank].done) throw UserError(UserError::Kind::InvalidGraph, abort_message_);
    pending_[rank] = Pending{};
  }

  // Rank `rank` finished its graph (with `error` when it failed).
  void finish(int rank, const std::string& error) {
    std::lock_guard<std::mutex> lock(mu_);
    finished_[rank] = true;
    if (error.empty()) {
      check_deadlock();
    } else if (!aborted_) {
      failed_rank_ = rank;
      abort(fmt::format("rank {} failed: {}", rank, error));
    }
  }

  // The rank whose own error stopped the others; -1 when the ranks' collectives did.
  int failed_rank() const { return failed_rank_; }

  // Messages sent and never received, once every rank has finished.
  std::string undelivered() const {
    for (const auto& [key, queue] : mail_)
      if (!queue.empty())
        return fmt::format("rank {} sent {} message{} to rank {} that it never received "
                           "(no matching recv)",
                           key.first, queue.size(), queue.size() == 1 ? "" : "s", key.second);
    return "";
  }

 private:
  static void copy(const Buffer& from, Buffer& to) {
    with_type(from.storage(), [&](auto tag) {
      using T = decltype(tag);
      std::copy_n(from.data<T>(), from.num_elements(), to.data<T>());
    });
  }

  void send(int rank, const ir::Op& op, const Buffer& x) {
    const std::int64_t peer = op.collective().peer;
    const int n = static_cast<int>(pending_.size());
    if (peer >= n || peer == rank)
      abort_now(fmt::format("{}: peer {} is not another rank of the {}", describe(rank, op), peer,
                            n));
    Buffer copy_of = Buffer::zeros(x.dtype(), x.shape());
    copy(x, copy_of);
    mail_[{rank, static_cast<int>(peer)}].push_back(std::move(copy_of));
    try {
      progress();
    } catch (const UserError& e) {
      abort(e.message());
    }
  }

  [[noreturn]] void abort_now(const std::string& message) {
    abort(message);
    throw UserError(UserError::Kind::InvalidGraph, message);
  }

  void abort(const std::string& message) {
    if (!aborted_) {
      aborted_ = true;
      abort_message_ = message;
    }
    cv_.notify_all();
  }

  // Completes every collective whose ranks have all arrived; then, when every rank still
  // running waits and none could go on, the ranks wait for each other: an error.
  void progress() {
    bool any = true;
    while (any) {
      any = false;
      for (int r = 0; r < static_cast<int>(pending_.size()); ++r) {
        Pending& p = pending_[r];
        if (!p.op || p.done) continue;
        any = any || (p.op->collective().kind == CollectiveKind::Recv ? try_recv(r)
                                                                       : try_group(r));
      }
    }
    check_deadlock();
    cv_.notify_all();
  }

  void check_deadlock() {
    if (aborted_) return;
    std::vector<std::string> waiting;
    for (int r = 0; r < static_cast<int>(pending_.size()); ++r) {
      if (finished_[r]) continue;
      if (!pending_[r].op || pending_[r].done) return;  // a rank still runs
      waiting.push_back(describe(r, *pending_[r].op));
    }
    if (waiting.empty()) return;
    std::string finished;
    for (int r = 0; r < static_cast<int>(finished_.size()); ++r)
      if (finished_[r]) finished += fmt::format("{}{}", finished.empty() ? "" : ", ", r);
    abort(fmt::format("the ranks wait for each other: {}{}", fmt::join(waiting, "; "),
                      finished.empty() ? "" : "; finished: rank " + finished));
  }

  bool try_recv(int r) {
    Pending& p = pending_[r];
    const std::int64_t peer = p.op->collective().peer;
    if (peer >= static_cast<std::int64_t>(pending_.size()) || peer == r)
      throw UserError(UserError::Kind::InvalidGraph,
                      fmt::format("{}: peer {} is not another rank of the {}", describe(r, *p.op),
                                  peer, pending_.size()));
    auto it = mail_.find({static_cast<int>(peer), r});
    if (it == mail_.end() || it->second.empty()) return false;
    const Buffer& m = it->second.front();
    if (m.dtype() != p.out->dtype() || m.shape() != p.out->shape())
      throw UserError(UserError::Kind::InvalidGraph,
                      fmt::format("{} expects {} but rank {} sent {}", describe(r, *p.op),
                                  ir::type_str(p.out->dtype(), p.out->shape()), peer,
                                  ir::type_str(m.dtype(), m.shape())));
    copy(m, *p.out);
    it->second.pop_front();
    p.done = true;
    return true;
  }

  // The ranks of rank r's group at collective `op`, in group order: its replica group, or
  // without replica_groups the block of group-size consecutive ranks that holds r.
  std::vector<int> group_of(int r, const ir::Op& op) const {
    const ir::CollectiveGroup& g = op.collective().group;
    const int n = static_cast<int>(g.size);
    const int ranks = static_cast<int>(pending_.size());
    std::vector<int> out;
    if (g.replica_groups.empty()) {
      const int base = r / n * n;
      if (base + n > ranks)
        throw UserError(UserError::Kind::InvalidGraph,
                        fmt::format("{}: its group of {} consecutive ranks from rank {} needs {} "
                                    "ranks, the program has {}",
                                    describe(r, op), n, base, base + n, ranks));
      for (int k = base; k < base + n; ++k) out.push_back(k);
      return out;
    }
    const auto& all = g.replica_groups;
    for (std::size_t at = 0; at + n <= all.size(); at += n) {
      if (std::find(all.begin() + at, all.begin() + at + n, r) == all.begin() + at + n) continue;
      for (std::size_t k = at; k < at + n; ++k) {
        if (all[k] >= ranks)
          throw UserError(UserError::Kind::InvalidGraph,
                          fmt::format("{}: its replica group names rank {}, the program has {}",
                                      describe(r, op), all[k], ranks));
        out.push_back(static_cast<int>(all[k]));
      }
      return out;
    }
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("{}: rank {} is in none of its replica_groups {}", describe(r, op),
                                r, ir::shape_str(all)));
  }

  bool try_group(int r) {
    const Pending& p = pending_[r];
    const CollectiveOp& c = p.op->collective();
    std::vector<Pending*> members;
    const std::vector<int> group = group_of(r, *p.op);
    for (int k : group) {
      Pending& q = pending_[k];
      if (!q.op || q.done) return false;  // not there yet
      const CollectiveOp& d = q.op->collective();
      // A member still waiting at a recv reaches the group after its message arrives (it
      // has no input to compare yet); one waiting at a collective of another group (a tp
      // group while this is a dp group) reaches this one after that one completes.
      if (d.kind == CollectiveKind::Recv || group_of(k, *q.op) != group) return false;
      const Buffer& x = *p.inputs[0];
      const Buffer& y = *q.inputs[0];
      if (d.kind != c.kind || d.group.size != c.group.size || d.reduction != c.reduction ||
          d.axis != c.axis || d.concat_axis != c.concat_axis || d.root != c.root ||
          d.group.replica_groups != c.group.replica_groups ||
          x.dtype() != y.dtype() || x.shape() != y.shape())
        throw UserError(UserError::Kind::InvalidGraph,
                        fmt::format("collectives do not match: {} on {}, {} on {}",
                                    describe(r, *p.op), ir::type_str(x.dtype(), x.shape()),
                                    describe(k, *q.op), ir::type_str(y.dtype(), y.shape())));
      members.push_back(&q);
    }
    compute(c, members);
    for (Pending* q : members) {
      bring_to_dtype(*q->out);
      q->done = true;
    }
    return true;
  }

  static void compute(const CollectiveOp& c, const std::vector<Pending*>& members) {
    std::vector<const Buffer*> ins;
    for (const Pending* q : members) ins.push_back(q->inputs[0]);
    const Shape& in = ins[0]->shape();
    const std::int64_t n = static_cast<std::int64_t>(members.size());
    with_type(ins[0]->storage(), [&](auto tag) {
      using T = decltype(tag);
      const std::size_t axis = static_cast<std::size_t>(c.axis);
      switch (c.kind) {
        case CollectiveKind::AllReduce:
          for (Pending* q : members) reduce_into<T>(c.reduction, ins, q->out->template data<T>());
          return;
        case CollectiveKind::Broadcast:
          for (Pending* q : members)
            std::copy_n(ins[c.root]->template data<T>(), ins[c.root]->num_elements(),
                        q->out->template data<T>());
          return;
        case CollectiveKind::AllGather:
          for (Pending* q : members)
            for (std::int64_t j = 0; j < n; ++j)
              copy_box(ins[j]->template data<T>(), in, axis, 0, q->out->template data<T>(),
                       q->out->shape(), axis, j * in[axis], in);
          return;
        case CollectiveKind::ReduceScatter: {
          std::vector<T> sum(static_cast<std::size_t>(ir::numel(in)));
          reduce_into<T>(c.reduction, ins, sum.data());
          for (std::int64_t i = 0; i < n; ++i) {
            Buffer& out = *members[i]->out;
            copy_box(sum.data(), in, axis, i * out.shape()[axis], out.template data<T>(),
                     out.shape(), axis, 0, out.shape());
          }
          return;
        }
        case CollectiveKind::AllToAll: {
          const std::size_t concat = static_cast<std::size_t>(c.concat_axis);
          Shape block = in;
          block[axis] /= n;
          for (std::int64_t j = 0; j < n; ++j)    // receiving rank
            for (std::int64_t s = 0; s < n; ++s)  // sending rank: its block j
              copy_box(ins[s]->template data<T>(), in, axis, j * block[axis],
                       members[j]->out->template data<T>(), members[j]->out->shape(), concat,
                       s * block[concat], block);
          return;
        }
        case CollectiveKind::Send: case CollectiveKind::Recv:
          break;  // paired by peer, not by group
      }
      SOLAR_UNREACHABLE("a pair collective matched as a group");
    });
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Pending> pending_;
  std::vector<bool> finished_;
  std::map<std::pair<int, int>, std::deque<Buffer>> mail_;  // (from, to) -> messages in order
  bool aborted_ = false;
  std::string abort_message_;
  int failed_rank_ = -1;
};

class RankHook : public CollectiveHook {
 public:
  RankHook(Exchange& x, int rank) : x_(x), rank_(rank) {}
  void run(const ir::Op& op, const std::vector<const Buffer*>& inputs, Buffer& out) override {
    x_.run(rank_, op, inputs, out);
  }

 private:
  Exchange& x_;
  int rank_;
};

}  // namespace

std::vector<TensorMap> run_ranks(const std::vector<const ir::Graph*>& graphs,
                                 const std::vector<TensorMap>& sources,
                                 const ExecOptions& options, const std::set<std::string>& keep) {
  if (graphs.empty() || graphs.size() != sources.size())
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("run_ranks needs one set of inputs per rank: {} graphs, {} input "
                                "sets",
                                graphs.size(), sources.size()));
  const int ranks = static_cast<int>(graphs.size());
  for (const ir::Graph* g : graphs)
    if (g == nullptr) throw UserError(UserError::Kind::BadArgument, "run_ranks: a null graph");
  Exchange exchange(ranks);
  std::vector<RankHook> hooks;
  hooks.reserve(ranks);
  for (int r = 0; r < ranks; ++r) hooks.emplace_back(exchange, r);
  std::vector<TensorMap> outputs(ranks);
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      ExecOptions o = options;
      o.collectives = &hooks[r];
      if (o.threads == 0) o.threads = 1;
      const std::uint64_t limit =
          options.memory_limit_bytes ? options.memory_limit_bytes : default_memory_limit_bytes();
      o.memory_limit_bytes = std::max<std::uint64_t>(limit / ranks, 1);
      std::string error;
      try {
        outputs[r] = run_graph(*graphs[r], sources[r], o, keep);
      } catch (const Error& e) {
        errors[r] = std::current_exception();
        error = e.what();
      } catch (const std::exception& e) {
        errors[r] = std::current_exception();
        error = e.what();
      }
      exchange.finish(r, error);
    });
  }
  for (std::thread& t : threads) t.join();
  // A rank's own error explains the run (the others only stopped for it); else the first
  // rank's, which says how the collectives failed.
  int first = exchange.failed_rank();
  for (int r = 0; r < ranks && first < 0; ++r)
    if (errors[r]) first = r;
  if (first >= 0) {
    try {
      std::rethrow_exception(errors[first]);
    } catch (const UserError& e) {
      throw UserError(e.kind(), fmt::format("rank {}: {}", first, e.message()), e.origin());
    }
  }
  if (std::string lost = exchange.undelivered(); !lost.empty())
    throw UserError(UserError::Kind::InvalidGraph, lost);
  return outputs;
}

}  // namespace solar::exec
