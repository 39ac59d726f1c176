// Private to the report: the system a graph runs on as one rank, in the JSON report (the
// `system` section, link rows) and in the readable table (docs/report-json.md, "system").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "solar/report/report.h"

namespace solar::report::detail {

// The top-level `system` section of a report with a system.
nlohmann::json system_json(const Report& r);

// A device's links, one object per link: {link, bytes, seconds, collectives}.
nlohmann::json links_json(const std::vector<bound::LinkUse>& links);

// A collective op's link terms: {link, bytes, bandwidth, seconds, algorithm, ...}.
nlohmann::json op_links_json(const std::vector<bound::LinkTerm>& links);

// Collectives' payload bytes by kind ({"all_reduce": N, ...}).
nlohmann::json comm_bytes_json(const cost::Work& w);

// The table's system section: each level with and without overlap, each link's bytes and
// time. Empty without a system.
std::string system_rows(const Report& r);

}  // namespace solar::report::detail
