#include "suggest.h"

#include <algorithm>
#include <cstdint>

#include "yaml_reader.h"

namespace solar::hw {
namespace {

// Lowercase without separators, for suggestions only: "h100-sxm" ~ "H100_SXM".
std::string squash(std::string_view s) {
  std::string out;
  for (char c : yaml::lower(s))
    if (c != '_' && c != '-' && c != ' ' && c != '.') out += c;
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> suggestions(std::string_view query, const std::vector<std::string>& ids) {
  std::string q = squash(query);
  std::vector<std::string> out;
  if (q.empty()) return out;
  for (const std::string& id : ids)
    if (squash(id).starts_with(q)) out.push_back(id);
  if (!out.empty()) return out;
  size_t best = SIZE_MAX;
  for (const std::string& id : ids) {
    size_t dist = edit_distance(q, squash(id));
    if (dist < best) {
      best = dist;
      out = {id};
    } else if (dist == best) {
      out.push_back(id);
    }
  }
  // Only an unambiguous, small edit is "obvious"; otherwise the list of ids says enough.
  if (out.size() != 1 || best > 2 || best * 2 >= q.size()) out.clear();
  return out;
}

std::string did_you_mean(const std::vector<std::string>& hint) {
  if (hint.empty()) return "";
  std::string out = "; did you mean ";
  for (size_t i = 0; i < hint.size(); ++i)
    out += (i == 0 ? "" : i + 1 == hint.size() ? " or " : ", ") + hint[i];
  return out + "?";
}

}  // namespace solar::hw
