// Typed reads of op attributes (the `attrs` of data-movement and opaque ops), and what the
// attributes say about a data-movement op: one definition each for every module.
//
// Two kinds of read:
// - find_*: the value when the attribute is present with that type; nothing when it is absent
//   or of another type. For analyses that do without what they cannot read.
// - *_attr: absent gives the fallback; present with another type throws
//   UserError(InvalidGraph) "<context>attribute 'KEY' must be ...", where `context` names the
//   op ("opaque \"gather\": "). For code that runs the op and needs the value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solar/ir/graph.h"

namespace solar::ir {

const AttrValue* find_attr(const Attrs& a, std::string_view key);
std::optional<std::int64_t> find_int(const Attrs& a, std::string_view key);
// A float, or an integer as a float.
std::optional<double> find_number(const Attrs& a, std::string_view key);
const std::string* find_string(const Attrs& a, std::string_view key);
const std::vector<std::int64_t>* find_int_list(const Attrs& a, std::string_view key);

std::int64_t int_attr(const Attrs& a, std::string_view key, std::int64_t fallback,
                      std::string_view context = "");
double number_attr(const Attrs& a, std::string_view key, double fallback,
                   std::string_view context = "");
std::string string_attr(const Attrs& a, std::string_view key, std::string_view fallback,
                        std::string_view context = "");
// A list of integers, or one integer as a list of one; absent: empty.
std::vector<std::int64_t> int_list_attr(const Attrs& a, std::string_view key,
                                        std::string_view context = "");

// Whether a slice (MoveKind::Slice) copies its slice: its `copy` attribute, a number (absent or
// 0: it does not, the output is a view of the input). Throws UserError(InvalidGraph) with the
// op's origin when `copy` is not a number.
bool slice_copies(const Op& op);

// Whether `op` is a free view: a view, or a slice that does not copy. It moves no byte; its
// output names elements of its input, stored as the input stores them. Throws as
// slice_copies does.
bool is_free_view(const Op& op);

}  // namespace solar::ir
