// Private helper of the device and system databases (not installed): the ids an unknown name
// obviously meant.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace solar::hw {

// The ids an unknown `query` obviously meant: those it is a prefix of ("h100" -> H100_PCIe,
// H100_SXM), else the single closest one within a small edit distance ("mi300" -> MI300X);
// separators and case are ignored. Empty when nothing is obvious.
std::vector<std::string> suggestions(std::string_view query, const std::vector<std::string>& ids);

// The clause "; did you mean A, B or C?" for a non-empty list, "" for an empty one.
std::string did_you_mean(const std::vector<std::string>& hint);

}  // namespace solar::hw
