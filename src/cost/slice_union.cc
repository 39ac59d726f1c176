#include "slice_union.h"

#include <algorithm>
#include <set>
#include <utility>

#include "solar/ir/attrs.h"

namespace solar::cost::detail {
namespace {

constexpr std::size_t kMaxCells = 1 << 20;  // exact union by cells up to this many

Count product(const std::vector<std::int64_t>& counts) {
  Count n = 1;
  for (std::int64_t c : counts) n *= Count(static_cast<std::uint64_t>(c));
  return n;
}

// Distinct positions of one dimension over all boxes.
std::optional<Count> union_positions(const std::vector<StridedBox>& boxes, std::size_t d) {
  bool unit_steps = std::all_of(boxes.begin(), boxes.end(),
                                [&](const StridedBox& b) { return b.step[d] == 1 || b.count[d] <= 1; });
  if (unit_steps) {  // union of intervals [start, start + count)
    std::vector<std::pair<std::int64_t, std::int64_t>> iv;
    for (const StridedBox& b : boxes)
      if (b.count[d] > 0) iv.emplace_back(b.start[d], b.start[d] + b.count[d]);
    std::sort(iv.begin(), iv.end());
    std::uint64_t n = 0;
    std::int64_t end = INT64_MIN;
    for (auto [lo, hi] : iv) {
      lo = std::max(lo, end);
      if (hi > lo) n += static_cast<std::uint64_t>(hi - lo);
      end = std::max(end, hi);
    }
    return Count(n);
  }
  std::size_t total = 0;
  for (const StridedBox& b : boxes) total += static_cast<std::size_t>(b.count[d]);
  if (total > kMaxCells) return std::nullopt;
  std::vector<std::int64_t> pos;
  pos.reserve(total);
  for (const StridedBox& b : boxes)
    for (std::int64_t i = 0; i < b.count[d]; ++i) pos.push_back(b.start[d] + i * b.step[d]);
  std::sort(pos.begin(), pos.end());
  return Count(static_cast<std::uint64_t>(std::unique(pos.begin(), pos.end()) - pos.begin()));
}

// Exact union of unit-step boxes differing in several dimensions: compress each dimension
// to the intervals between box edges and count covered cells.
std::optional<Count> union_by_cells(const std::vector<StridedBox>& boxes) {
  const std::size_t rank = boxes.front().start.size();
  std::vector<std::vector<std::int64_t>> edges(rank);
  std::size_t cells = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    std::set<std::int64_t> e;
    for (const StridedBox& b : boxes) {
      if (b.step[d] != 1 && b.count[d] > 1) return std::nullopt;
      e.insert(b.start[d]);
      e.insert(b.start[d] + b.count[d]);
    }
    edges[d].assign(e.begin(), e.end());
    cells *= edges[d].size() - 1;
    if (cells > kMaxCells) return std::nullopt;
  }
  Count n = 0;
  std::vector<std::size_t> cell(rank, 0);
  for (std::size_t k = 0; k < cells; ++k) {
    std::size_t rest = k;
    for (std::size_t d = rank; d-- > 0;) {
      cell[d] = rest % (edges[d].size() - 1);
      rest /= edges[d].size() - 1;
    }
    bool covered = std::any_of(boxes.begin(), boxes.end(), [&](const StridedBox& b) {
      for (std::size_t d = 0; d < rank; ++d)
        if (edges[d][cell[d]] < b.start[d] || edges[d][cell[d] + 1] > b.start[d] + b.count[d])
          return false;
      return true;
    });
    if (!covered) continue;
    Count volume = 1;
    for (std::size_t d = 0; d < rank; ++d)
      volume *= Count(static_cast<std::uint64_t>(edges[d][cell[d] + 1] - edges[d][cell[d]]));
    n += volume;
  }
  return n;
}

}  // namespace

StridedBox whole_box(const std::vector<std::int64_t>& shape) {
  return StridedBox{std::vector<std::int64_t>(shape.size(), 0),
                    std::vector<std::int64_t>(shape.size(), 1), shape};
}

StridedBox slice_box(const StridedBox& in, const ir::MoveOp& slice) {
  const std::size_t rank = in.start.size();
  const std::vector<std::int64_t> ones(rank, 1);
  // The verifier checked the lists; an absent one reads as ones.
  auto list = [&](const char* key) -> const std::vector<std::int64_t>& {
    const std::vector<std::int64_t>* v = ir::find_int_list(slice.attrs, key);
    return v ? *v : ones;
  };
  const std::vector<std::int64_t>& starts = list("starts");
  const std::vector<std::int64_t>& ends = list("ends");
  const std::vector<std::int64_t>& steps = list("steps");
  StridedBox out = in;
  for (std::size_t d = 0; d < rank; ++d) {
    out.start[d] = in.start[d] + in.step[d] * starts[d];
    out.step[d] = in.step[d] * steps[d];
    out.count[d] = ends[d] > starts[d] ? (ends[d] - starts[d] + steps[d] - 1) / steps[d] : 0;
  }
  return out;
}

std::optional<Count> union_elements(const std::vector<StridedBox>& boxes) {
  if (boxes.empty()) return Count(0);
  const std::size_t rank = boxes.front().start.size();
  std::vector<std::size_t> differing;
  for (std::size_t d = 0; d < rank; ++d)
    for (const StridedBox& b : boxes)
      if (b.start[d] != boxes.front().start[d] || b.step[d] != boxes.front().step[d] ||
          b.count[d] != boxes.front().count[d]) {
        differing.push_back(d);
        break;
      }
  if (differing.empty()) return product(boxes.front().count);
  if (differing.size() == 1) {
    const std::size_t d = differing.front();
    std::optional<Count> along = union_positions(boxes, d);
    if (!along) return std::nullopt;
    std::vector<std::int64_t> others = boxes.front().count;
    others[d] = 1;
    return *along * product(others);
  }
  return union_by_cells(boxes);
}

}  // namespace solar::cost::detail
