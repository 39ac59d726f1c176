#include "einsum_gemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "solar/exec/einsum_path.h"
#include "solar/util/errors.h"

// OpenBLAS's run-time kernel dispatch (DYNAMIC_ARCH builds only, hence weak).
extern "C" {
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}

namespace solar::exec {
namespace {

// Debian 12's OpenBLAS 0.3.21 does not know CPUs newer than it (Sapphire/Emerald Rapids among
// them) and falls back to its SSE3 "Prescott" kernels, 5x slower than its AVX-512 ones on the
// same machine. When that happened, and the user did not choose with OPENBLAS_CORETYPE, redo
// the dispatch once (before the first GEMM) for the newest kernel family the CPU supports.
void ensure_blas_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    openblas_set_num_threads(1);  // run_gemms parallelizes with OpenMP instead
    if (std::getenv("OPENBLAS_CORETYPE") != nullptr || !gotoblas_dynamic_init || !gotoblas_dynamic_quit)
      return;
    const char* core = openblas_get_corename();
    static const char* const kFallbacks[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                             "Katmai", "Coppermine", "Northwood", "Banias", "Atom",
                                             "unknown"};
    bool fallback = core == nullptr;
    for (const char* f : kFallbacks) fallback = fallback || std::strcmp(core, f) == 0;
    if (!fallback) return;
    __builtin_cpu_init();
    const char* want = nullptr;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
      want = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      want = "Haswell";
    else if (__builtin_cpu_supports("avx"))
      want = "Sandybridge";
    if (want == nullptr) return;
    setenv("OPENBLAS_CORETYPE", want, 0);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");
  });
}

using ir::AffineExpr;
using ir::AffineTerm;

std::vector<char> indices_in(const std::vector<AffineExpr>& sub, std::size_t n) {
  std::vector<char> in(n, 0);
  for (const AffineExpr& a : sub)
    for (const AffineTerm& t : a.terms()) in[static_cast<std::size_t>(t.index)] = 1;
  return in;
}

// Each index in at most one output dimension, and within a dimension the terms nest like the
// digits of a mixed-radix number (g*Kg + k with k < Kg): distinct points, distinct elements.
bool structurally_one_to_one(const ir::EinsumOp& e, const std::vector<std::int64_t>& ext) {
  std::vector<int> uses(ext.size(), 0);
  for (const AffineExpr& a : e.output) {
    std::vector<AffineTerm> terms;
    for (const AffineTerm& t : a.terms()) {
      ++uses[static_cast<std::size_t>(t.index)];
      if (ext[static_cast<std::size_t>(t.index)] > 1) terms.push_back(t);
    }
    std::sort(terms.begin(), terms.end(), [](const AffineTerm& x, const AffineTerm& y) {
      return std::llabs(x.coef) > std::llabs(y.coef);
    });
    for (std::size_t k = 0; k + 1 < terms.size(); ++k)
      if (std::llabs(terms[k].coef) <
          std::llabs(terms[k + 1].coef) * ext[static_cast<std::size_t>(terms[k + 1].index)])
        return false;
  }
  for (int u : uses)
    if (u > 1) return false;
  return true;
}

template <class T> constexpr Storage storage_of() {
  return std::is_same_v<T, float> ? Storage::F32 : Storage::F64;
}

std::int64_t product(const std::vector<int>& idx, const std::vector<std::int64_t>& ext) {
  std::int64_t p = 1;
  for (int j : idx) p *= ext[static_cast<std::size_t>(j)];
  return p;
}

// Several indices viewed as one strided axis (outermost first in `order`).
struct Group {
  bool ok = true;
  bool trivial = true;  // every extent is 1: any stride will do
  std::int64_t stride = 0;
  std::int64_t size = 1;
};
Group merge(const std::vector<int>& order, const std::vector<std::int64_t>& st,
            const std::vector<std::int64_t>& ext) {
  Group g;
  std::int64_t span = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t j = static_cast<std::size_t>(*it);
    g.size *= ext[j];
    if (ext[j] == 1) continue;
    if (g.trivial) {
      g.trivial = false;
      g.stride = st[j];
      if (st[j] <= 0) g.ok = false;
    } else if (st[j] != span) {
      g.ok = false;
    }
    span = st[j] * ext[j];
  }
  return g;
}

// A rows x cols matrix over two groups as cblas (row-major) reads it: NoTrans when the column
// group is contiguous, Trans when the row group is.
struct Layout {
  bool ok = false;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  std::int64_t ld = 1;
};
Layout matrix_layout(const Group& rows, const Group& cols, bool allow_trans) {
  if (!rows.ok || !cols.ok) return {};
  const std::int64_t nr = std::max<std::int64_t>(rows.size, 1), nc = std::max<std::int64_t>(cols.size, 1);
  if (cols.trivial || cols.stride == 1) {
    const std::int64_t ld = rows.trivial ? nc : rows.stride;
    if (ld >= nc) return {true, CblasNoTrans, ld};
  }
  if (allow_trans && (rows.trivial || rows.stride == 1)) {
    const std::int64_t ld = cols.trivial ? nr : cols.stride;
    if (ld >= nr) return {true, CblasTrans, ld};
  }
  return {};
}

bool all_finite(const LoopTensor& t) {
  std::int64_t n = 1;
  for (std::int64_t d : t.shape) n *= d;
  bool finite = true;
  switch (t.storage) {
    case Storage::F32: {
      const float* p = static_cast<const float*>(t.data);
      float acc = 0;
      for (std::int64_t i = 0; i < n; ++i) acc += p[i] * 0.0f;  // NaN iff some value is inf/NaN
      finite = acc == 0;
      break;
    }
    case Storage::F64: {
      const double* p = static_cast<const double*>(t.data);
      double acc = 0;
      for (std::int64_t i = 0; i < n; ++i) acc += p[i] * 0.0;
      finite = acc == 0;
      break;
    }
    case Storage::I64: break;
  }
  return finite;
}

// An affine expression over a sub-space of the op's indices (old -> new position in `map`,
// -1 for none), with index c shifted by lo (the start of a chunk).
AffineExpr remap(const AffineExpr& a, const std::vector<int>& map, int c, std::int64_t lo) {
  std::vector<AffineTerm> terms;
  std::int64_t constant = a.constant_term();
  for (const AffineTerm& t : a.terms()) {
    if (t.index == c) constant += t.coef * lo;
    const int to = map[static_cast<std::size_t>(t.index)];
    SOLAR_CHECK(to >= 0, "GEMM path: an index outside the operand's sub-space");
    terms.push_back({to, t.coef});
  }
  return AffineExpr::make(std::move(terms), constant);
}

template <class T>
struct Side {
  const T* data = nullptr;
  std::int64_t base = 0;
  std::vector<std::int64_t> st;  // per op index (batch strides)
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  std::int64_t ld = 1;
};

template <class T>
void gemm_call(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, std::int64_t m, std::int64_t n,
               std::int64_t k, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T* c,
               std::int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(lda), b,
                static_cast<blasint>(ldb), 0.0f, c, static_cast<blasint>(ldc));
  else
    cblas_dgemm(CblasRowMajor, ta, tb, static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), 1.0, a, static_cast<blasint>(lda), b,
                static_cast<blasint>(ldb), 0.0, c, static_cast<blasint>(ldc));
}

// One GEMM per point of the batch indices, spread over the threads by OpenMP: batches first,
// and when there are fewer batches than threads, each GEMM split into row (M) or column (N)
// ranges. BLAS itself always runs single-threaded: its own thread pool would compete with
// OpenMP's (OpenBLAS workers keep spinning after a call), so only one pool ever runs.
template <class T>
void run_gemms(const std::vector<int>& batch, const std::vector<std::int64_t>& ext,
               const Side<T>& a, const Side<T>& b, const Side<T>& c, std::int64_t m,
               std::int64_t n, std::int64_t k, int threads) {
  ensure_blas_kernels();
  const std::int64_t nb = product(batch, ext);
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  // Split a GEMM only when it is big enough to share (each part >= 64 rows/columns, and
  // at least ~4M multiply-adds).
  const bool split_m = m >= n;
  const std::int64_t along = split_m ? m : n;
  std::int64_t parts = 1;
  if (nb < threads && macs >= 4.0e6)
    parts = std::max<std::int64_t>(1, std::min<std::int64_t>((threads + nb - 1) / nb, along / 64));
  const std::int64_t tasks = nb * parts;
  auto run_one = [&](std::int64_t task) {
    std::int64_t t = task / parts;
    const std::int64_t part = task % parts;
    std::int64_t oa = a.base, ob = b.base, oc = c.base;
    for (int q = static_cast<int>(batch.size()) - 1; q >= 0; --q) {
      const std::size_t j = static_cast<std::size_t>(batch[static_cast<std::size_t>(q)]);
      const std::int64_t i = t % ext[j];
      t /= ext[j];
      oa += i * a.st[j];
      ob += i * b.st[j];
      oc += i * c.st[j];
    }
    const std::int64_t lo = along * part / parts, hi = along * (part + 1) / parts;
    std::int64_t mm = m, nn = n;
    if (split_m) {
      mm = hi - lo;
      oa += a.trans == CblasNoTrans ? lo * a.ld : lo;
      oc += lo * c.ld;
    } else {
      nn = hi - lo;
      ob += b.trans == CblasNoTrans ? lo : lo * b.ld;
      oc += lo;
    }
    gemm_call<T>(a.trans, b.trans, mm, nn, k, a.data + oa, a.ld, b.data + ob, b.ld,
                 const_cast<T*>(c.data) + oc, c.ld);
  };
  const int used = static_cast<int>(std::min<std::int64_t>(threads, tasks));
  if (used <= 1 || macs * static_cast<double>(nb) < 2.0e5) {
    for (std::int64_t t = 0; t < tasks; ++t) run_one(t);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(used)
  for (std::int64_t t = 0; t < tasks; ++t) run_one(t);
}

template <class T>
bool run_typed(const GemmClassification& cl, const LoopSpec& spec, int threads, int& chunks) {
  const std::size_t n = spec.extents.size();
  const std::vector<std::int64_t>& ext = spec.extents;
  const std::vector<GemmRole>& role = cl.role;
  std::int64_t base[2];
  std::vector<std::int64_t> st[2];
  for (int k = 0; k < 2; ++k) tensor_strides(spec.operands[static_cast<std::size_t>(k)], n, base[k], st[k]);
  std::int64_t cbase;
  std::vector<std::int64_t> cst;
  tensor_strides(spec.output, n, cbase, cst);
  if (!output_is_one_to_one(cst, ext)) return false;

  std::vector<ir::AffineConstraint> mask_of[3];
  for (std::size_t q = 0; q < spec.mask.size(); ++q)
    mask_of[cl.mask_owner[q]].push_back(spec.mask[q]);
  for (int k = 0; k < 2; ++k)
    if (!mask_of[k].empty() && !all_finite(spec.operands[static_cast<std::size_t>(1 - k)])) return false;

  auto free_of = [&](int op) { return op == 0 ? GemmRole::Free0 : GemmRole::Free1; };
  std::vector<int> out_order;
  for (std::size_t j = 0; j < n; ++j)
    if (role[j] == GemmRole::Batch || role[j] == GemmRole::Free0 || role[j] == GemmRole::Free1)
      out_order.push_back(static_cast<int>(j));
  std::stable_sort(out_order.begin(), out_order.end(),
                   [&](int x, int y) { return std::llabs(cst[x]) > std::llabs(cst[y]); });

  // Candidate 1 writes C in place: the innermost run of one operand's free indices is N, the
  // run of the other's outside it is M, and every index further out is looped over.
  int b1 = -1;
  std::vector<int> m1, n1, batch1;
  {
    int pos = static_cast<int>(out_order.size()) - 1;
    int probe = pos;
    while (probe >= 0 && ext[static_cast<std::size_t>(out_order[probe])] == 1) --probe;
    const GemmRole r = probe >= 0 ? role[static_cast<std::size_t>(out_order[probe])] : GemmRole::Batch;
    if (r == GemmRole::Free0 || r == GemmRole::Free1) {
      b1 = r == GemmRole::Free0 ? 0 : 1;
      auto take = [&](std::vector<int>& group, int op) {
        while (pos >= 0) {
          const int j = out_order[static_cast<std::size_t>(pos)];
          if (ext[static_cast<std::size_t>(j)] == 1) batch1.push_back(j);
          else if (role[static_cast<std::size_t>(j)] == free_of(op)) group.insert(group.begin(), j);
          else break;
          --pos;
        }
      };
      take(n1, b1);
      take(m1, 1 - b1);
      for (; pos >= 0; --pos) batch1.push_back(out_order[static_cast<std::size_t>(pos)]);
    }
  }
  // Candidate 2: the canonical split (every free index of one operand is M, of the other N);
  // C goes through a temporary when the output layout does not allow it directly.
  int a2 = 0;
  for (int j : out_order)
    if (ext[static_cast<std::size_t>(j)] > 1 &&
        (role[static_cast<std::size_t>(j)] == GemmRole::Free0 || role[static_cast<std::size_t>(j)] == GemmRole::Free1)) {
      a2 = role[static_cast<std::size_t>(j)] == GemmRole::Free0 ? 0 : 1;
      break;
    }
  std::vector<int> m2, n2, batch2;
  for (int j : out_order) {
    const GemmRole r = role[static_cast<std::size_t>(j)];
    if (ext[static_cast<std::size_t>(j)] > 1 && r == free_of(a2)) m2.push_back(j);
    else if (ext[static_cast<std::size_t>(j)] > 1 && r == free_of(1 - a2)) n2.push_back(j);
    else batch2.push_back(j);
  }
  const std::int64_t size1 = b1 >= 0 ? product(m1, ext) * product(n1, ext) : 0;
  const std::int64_t size2 = product(m2, ext) * product(n2, ext);
  const bool use1 = b1 >= 0 && (size1 * 4 >= size2 || size1 >= 65536);
  const int ia = use1 ? 1 - b1 : a2, ib = 1 - ia;
  const std::vector<int>& M = use1 ? m1 : m2;
  const std::vector<int>& N = use1 ? n1 : n2;
  const std::vector<int>& batch = use1 ? batch1 : batch2;

  std::vector<int> K, pre[2];
  for (std::size_t j = 0; j < n; ++j) {
    if (role[j] == GemmRole::K) K.push_back(static_cast<int>(j));
    if (role[j] == GemmRole::Pre0) pre[0].push_back(static_cast<int>(j));
    if (role[j] == GemmRole::Pre1) pre[1].push_back(static_cast<int>(j));
  }
  auto in_range = [&](int k) {
    const LoopTensor& t = spec.operands[static_cast<std::size_t>(k)];
    for (std::size_t d = 0; d < t.subscript.size(); ++d)
      if (t.subscript[d].min_value(ext) < 0 || t.subscript[d].max_value(ext) >= t.shape[d]) return false;
    return true;
  };
  auto may_be_direct = [&](int k) {
    return spec.operands[static_cast<std::size_t>(k)].storage == storage_of<T>() && in_range(k) &&
           pre[k].empty() && mask_of[k].empty();
  };
  // K in the order of the operand that can be read in place (A's if both can).
  const int k_from = may_be_direct(ia) ? ia : ib;
  std::stable_sort(K.begin(), K.end(), [&](int x, int y) {
    return std::llabs(st[k_from][static_cast<std::size_t>(x)]) > std::llabs(st[k_from][static_cast<std::size_t>(y)]);
  });

  Layout lay[2];
  bool direct[2];
  for (int k : {ia, ib}) {
    const bool is_a = k == ia;
    const Group g1 = merge(is_a ? M : K, st[k], ext), g2 = merge(is_a ? K : N, st[k], ext);
    lay[k] = matrix_layout(g1, g2, true);
    direct[k] = may_be_direct(k) && lay[k].ok;
  }
  const Layout clay = matrix_layout(merge(M, cst, ext), merge(N, cst, ext), false);
  const bool c_direct = spec.output.storage == storage_of<T>() && clay.ok;

  // Materialized operands: [batch indices the operand uses..., M..., K...] for A and
  // [batch..., K..., N...] for B, contiguous.
  std::vector<int> layout[2];
  std::int64_t mat_bytes[2] = {0, 0};
  for (int k : {ia, ib}) {
    if (direct[k]) continue;
    const std::vector<char> uses = indices_in(spec.operands[static_cast<std::size_t>(k)].subscript, n);
    for (int j : batch)
      if (uses[static_cast<std::size_t>(j)]) layout[k].push_back(j);
    const std::vector<int>& g1 = k == ia ? M : K;
    const std::vector<int>& g2 = k == ia ? K : N;
    layout[k].insert(layout[k].end(), g1.begin(), g1.end());
    layout[k].insert(layout[k].end(), g2.begin(), g2.end());
    mat_bytes[k] = product(layout[k], ext) * static_cast<std::int64_t>(sizeof(T));
  }
  // blasint is 32-bit: larger matrices go to the loop nest.
  for (std::int64_t v : {product(M, ext), product(N, ext), product(K, ext), lay[0].ld, lay[1].ld, clay.ld})
    if (v > INT_MAX) return false;

  // Chunking: when a materialized operand exceeds the budget, split the work along its
  // outermost output index (a batch index, or the outermost index of its M/N group, whose
  // chunks are column or row ranges of C).
  int c = -1;
  std::int64_t chunk = 1;
  const std::int64_t budget = static_cast<std::int64_t>(materialize_budget_bytes());
  const int worst = mat_bytes[ia] >= mat_bytes[ib] ? ia : ib;
  if (mat_bytes[worst] > budget) {
    const std::vector<int>& free_group = worst == ia ? M : N;
    for (int j : layout[worst]) {
      const bool is_batch = std::find(batch.begin(), batch.end(), j) != batch.end();
      const bool outer_free = !free_group.empty() && j == free_group.front();
      if ((is_batch || outer_free) && ext[static_cast<std::size_t>(j)] > 1) {
        c = j;
        break;
      }
    }
    if (c >= 0) {
      const std::int64_t slice = mat_bytes[worst] / ext[static_cast<std::size_t>(c)];
      chunk = std::max<std::int64_t>(1, budget / std::max<std::int64_t>(slice, 1));
    }
  }
  const std::int64_t n_chunks_range = c >= 0 ? ext[static_cast<std::size_t>(c)] : 1;
  if (c < 0) chunk = 1;

  // Buffers sized for the largest chunk.
  const ir::DType tdtype = std::is_same_v<T, float> ? ir::DType::F32 : ir::DType::F64;
  std::vector<std::int64_t> ext_max = ext;
  if (c >= 0) ext_max[static_cast<std::size_t>(c)] = std::min(chunk, ext[static_cast<std::size_t>(c)]);
  Buffer mat[2];
  for (int k : {ia, ib})
    if (!direct[k]) mat[k] = Buffer::zeros(tdtype, {product(layout[k], ext_max)});
  Buffer ctemp;
  std::vector<int> clayout;
  std::vector<std::int64_t> tst(n, 0);
  if (!c_direct) {
    clayout = batch;
    clayout.insert(clayout.end(), M.begin(), M.end());
    clayout.insert(clayout.end(), N.begin(), N.end());
    std::int64_t s = 1;
    for (auto it = clayout.rbegin(); it != clayout.rend(); ++it) {
      tst[static_cast<std::size_t>(*it)] = s;
      s *= ext[static_cast<std::size_t>(*it)];
    }
    ctemp = Buffer::zeros(tdtype, {s});
  }

  Side<T> side[2];
  chunks = 0;
  for (std::int64_t lo = 0; lo < n_chunks_range; lo += chunk) {
    ++chunks;
    std::vector<std::int64_t> ext_l = ext;
    if (c >= 0) ext_l[static_cast<std::size_t>(c)] = std::min(chunk, ext[static_cast<std::size_t>(c)] - lo);
    const std::int64_t shift = c >= 0 ? lo : 0;
    for (int k : {ia, ib}) {
      Side<T>& s = side[k];
      const LoopTensor& t = spec.operands[static_cast<std::size_t>(k)];
      // A materialized operand without the chunk index is the same for every chunk.
      if (!direct[k] && lo > 0 && std::find(layout[k].begin(), layout[k].end(), c) == layout[k].end())
        continue;
      if (direct[k]) {
        s.data = static_cast<const T*>(t.data);
        s.base = base[k] + (c >= 0 ? shift * st[k][static_cast<std::size_t>(c)] : 0);
        s.st = st[k];
        s.trans = lay[k].trans;
        s.ld = lay[k].ld;
        continue;
      }
      // Materialize with the loop nest over the operand's own indices.
      std::vector<int> map(n, -1);
      LoopSpec ms;
      int next = 0;
      for (int j : layout[k]) {
        map[static_cast<std::size_t>(j)] = next++;
        ms.extents.push_back(ext_l[static_cast<std::size_t>(j)]);
      }
      for (int j : pre[k]) {
        map[static_cast<std::size_t>(j)] = next++;
        ms.extents.push_back(ext_l[static_cast<std::size_t>(j)]);
      }
      LoopTensor in = t;
      for (AffineExpr& a : in.subscript) a = remap(a, map, c, shift);
      ms.operands.push_back(std::move(in));
      ms.output.data = mat[k].raw_data();
      ms.output.storage = storage_of<T>();
      for (int j : layout[k]) {
        ms.output.shape.push_back(ext_l[static_cast<std::size_t>(j)]);
        ms.output.subscript.push_back(AffineExpr::index(map[static_cast<std::size_t>(j)]));
      }
      ms.output_dtype = tdtype;
      ms.combine = ir::Expr::operand(0);
      ms.reduce = pre[k].empty() ? ir::Reduce::None : ir::Reduce::Sum;
      for (const ir::AffineConstraint& q : mask_of[k]) ms.mask.push_back({remap(q.expr, map, c, shift)});
      ms.compute = storage_of<T>();
      run_loop_nest(ms, threads);
      s.data = mat[k].data<T>();
      s.base = 0;
      s.st.assign(n, 0);
      std::int64_t stride = 1;
      for (auto it = layout[k].rbegin(); it != layout[k].rend(); ++it) {
        s.st[static_cast<std::size_t>(*it)] = stride;
        stride *= ext_l[static_cast<std::size_t>(*it)];
      }
      s.trans = CblasNoTrans;
      s.ld = product(k == ia ? K : N, ext_l);
    }
    Side<T> cs;
    if (c_direct) {
      cs.data = static_cast<const T*>(spec.output.data);
      cs.base = cbase + (c >= 0 ? shift * cst[static_cast<std::size_t>(c)] : 0);
      cs.st = cst;
      cs.ld = clay.ld;
    } else {
      cs.data = ctemp.data<T>();
      cs.base = c >= 0 ? shift * tst[static_cast<std::size_t>(c)] : 0;
      cs.st = tst;
      cs.ld = product(N, ext);
    }
    run_gemms<T>(batch, ext_l, side[ia], side[ib], cs, product(M, ext_l), product(N, ext_l),
                 product(K, ext_l), threads);
  }

  // Finish: copy a temporary C into the output, zero the points an output mask removes, round
  // to a narrow output dtype.
  const bool narrow = spec.output.storage == Storage::F32 && spec.output_dtype != ir::DType::F32;
  if (!c_direct || !mask_of[2].empty()) {
    std::vector<int> map(n, -1);
    LoopSpec fs;
    int next = 0;
    for (int j : out_order) {
      map[static_cast<std::size_t>(j)] = next++;
      fs.extents.push_back(ext[static_cast<std::size_t>(j)]);
    }
    LoopTensor src;
    if (!c_direct) {
      src.data = ctemp.raw_data();
      src.storage = storage_of<T>();
      for (int j : clayout) {
        src.shape.push_back(ext[static_cast<std::size_t>(j)]);
        src.subscript.push_back(AffineExpr::index(map[static_cast<std::size_t>(j)]));
      }
    } else {
      src = spec.output;
      for (AffineExpr& a : src.subscript) a = remap(a, map, -1, 0);
    }
    fs.operands.push_back(std::move(src));
    fs.output = spec.output;
    for (AffineExpr& a : fs.output.subscript) a = remap(a, map, -1, 0);
    fs.output_dtype = spec.output_dtype;
    fs.combine = ir::Expr::operand(0);
    fs.reduce = ir::Reduce::None;
    for (const ir::AffineConstraint& q : mask_of[2]) fs.mask.push_back({remap(q.expr, map, -1, 0)});
    fs.compute = storage_of<T>();
    run_loop_nest(fs, threads);
  } else if (narrow) {
    std::int64_t total = 1;
    for (std::int64_t d : spec.output.shape) total *= d;
    convert_storage(spec.output.data, Storage::F32, const_cast<void*>(spec.output.data),
                    Storage::F32, spec.output_dtype, total, threads);
  }
  return true;
}

}  // namespace

std::optional<GemmClassification> classify_contraction(const ir::EinsumOp& e, Storage compute) {
  if (e.reduce != ir::Reduce::Sum || e.operands.size() != 2 || !e.combine.defined() ||
      !e.combine.is_product_of_two_operands())
    return std::nullopt;
  if (compute == Storage::I64) return std::nullopt;  // integer contractions: the i64 loop nest
  const std::size_t n = e.indices.size();
  const std::vector<std::int64_t> ext = e.extents();
  if (!structurally_one_to_one(e, ext)) return std::nullopt;
  const std::vector<char> in0 = indices_in(e.operands[0].subscript, n);
  const std::vector<char> in1 = indices_in(e.operands[1].subscript, n);
  const std::vector<char> out = indices_in(e.output, n);
  GemmClassification cl;
  cl.role.resize(n);
  double m = 1, nn = 1, k = 1;
  bool has_k = false;
  for (std::size_t j = 0; j < n; ++j) {
    const double x = static_cast<double>(ext[j]);
    if (out[j]) {
      cl.role[j] = in0[j] && in1[j] ? GemmRole::Batch
                   : in0[j]         ? GemmRole::Free0
                   : in1[j]         ? GemmRole::Free1
                                    : GemmRole::Batch;
      if (cl.role[j] == GemmRole::Free0) m *= x;
      if (cl.role[j] == GemmRole::Free1) nn *= x;
    } else if (in0[j] && in1[j]) {
      cl.role[j] = GemmRole::K;
      k *= x;
      has_k = true;
    } else if (in0[j]) {
      cl.role[j] = GemmRole::Pre0;
    } else if (in1[j]) {
      cl.role[j] = GemmRole::Pre1;
    } else {
      return std::nullopt;  // the verifier rejects an index no subscript uses
    }
  }
  // Batched dot products and tiny matrices are faster in the loop nest than per-call BLAS.
  if (!has_k || m * nn < 16 || m * nn * k < 4096) return std::nullopt;
  for (const ir::AffineConstraint& q : e.mask) {
    bool all_out = true, all0 = true, all1 = true;
    for (const AffineTerm& t : q.expr.terms()) {
      const std::size_t j = static_cast<std::size_t>(t.index);
      all_out = all_out && out[j];
      all0 = all0 && in0[j];
      all1 = all1 && in1[j];
    }
    if (all_out) cl.mask_owner.push_back(2);
    else if (all0) cl.mask_owner.push_back(0);
    else if (all1) cl.mask_owner.push_back(1);
    else return std::nullopt;  // a constraint tying both operands' indices: the loop nest
  }
  for (const ir::Operand& o : e.operands)
    for (const AffineExpr& a : o.subscript)
      if (!a.is_constant() && !a.as_plain_index()) cl.affine_operands = true;
  return cl;
}

bool run_gemm_path(const GemmClassification& cl, const LoopSpec& spec, int threads, int& chunks) {
  switch (*spec.compute) {
    case Storage::F32: return run_typed<float>(cl, spec, threads, chunks);
    case Storage::F64: return run_typed<double>(cl, spec, threads, chunks);
    case Storage::I64: return false;
  }
  return false;
}

}  // namespace solar::exec
