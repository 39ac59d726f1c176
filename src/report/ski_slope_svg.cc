// The ski-slope chart as a self-contained SVG document (no external dependency): log-log
// DRAM traffic in bytes against on-chip capacity in bytes.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "format.h"
#include "solar/report/report.h"
#include "solar/util/errors.h"

namespace solar::report {

namespace {

constexpr double kWidth = 860, kHeight = 540;
constexpr double kLeft = 90, kRight = 230, kTop = 40, kBottom = 60;  // margins (legend right)
constexpr const char* kOpColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                     "#8c564b", "#e377c2", "#7f7f7f"};

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Log-scale axes over [x0, x1] x [y0, y1] (all > 0).
struct Axes {
  double lx0, lx1, ly0, ly1;
  Axes(double x0, double x1, double y0, double y1)
      : lx0(std::log10(x0)), lx1(std::log10(x1)), ly0(std::log10(y0)), ly1(std::log10(y1)) {}
  double x(double v) const {
    return kLeft + (std::log10(v) - lx0) / (lx1 - lx0) * (kWidth - kLeft - kRight);
  }
  double y(double v) const {
    return kHeight - kBottom - (std::log10(v) - ly0) / (ly1 - ly0) * (kHeight - kTop - kBottom);
  }
};

std::string polyline(const std::vector<std::pair<double, double>>& pts, const Axes& a,
                     const std::string& style) {
  std::string d;
  for (const auto& [x, y] : pts) d += fmt::format("{:.1f},{:.1f} ", a.x(x), a.y(y));
  return fmt::format("<polyline fill=\"none\" {} points=\"{}\"/>\n", style, d);
}

// A step curve: Q(S) = traffic of the last point with buffer <= S, clipped to [x0, x1].
// Points below x0 are not drawn (pinning them to the axis drew a spike there): only the
// last of them, Q(x0), starts the curve at the axis.
std::vector<std::pair<double, double>> steps(const std::vector<tiling::CurvePoint>& points,
                                             double x0, double x1) {
  std::vector<std::pair<double, double>> out;
  double current = -1;
  for (const tiling::CurvePoint& p : points) {
    double b = p.buffer_bytes.to_double();
    double q = p.traffic_bytes.to_double();
    if (b > x1) break;
    if (b <= x0) {
      current = q;
      continue;
    }
    if (out.empty() && current >= 0) out.emplace_back(x0, current);
    if (current >= 0) out.emplace_back(b, current);
    out.emplace_back(b, q);
    current = q;
  }
  if (current >= 0) {
    if (out.empty()) out.emplace_back(x0, current);
    out.emplace_back(x1, current);
  }
  return out;
}

// Text that fits in `px` pixels at `font_px`, cut with "..." when longer. The width is
// estimated at kCharEm of the font size per character (sans-serif averages ~0.55 em; 0.62
// leaves room for capitals and digits), so labels stay on the canvas.
constexpr double kCharEm = 0.62;
double text_px(const std::string& s, double font_px) {
  return static_cast<double>(s.size()) * kCharEm * font_px;
}
std::string fit(const std::string& s, double px, double font_px) {
  if (text_px(s, font_px) <= px) return s;
  auto keep = static_cast<std::size_t>(std::max(0.0, px / (kCharEm * font_px) - 3));
  // Never cut inside a UTF-8 sequence.
  while (keep > 0 && keep < s.size() && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80)
    --keep;
  return s.substr(0, keep) + "...";
}

}  // namespace

std::string ski_slope_svg(const Report& r) {
  if (!r.ski_slope)
    throw UserError(UserError::Kind::BadArgument,
                    "this report has no ski-slope (the cache-aware level was skipped)");
  SOLAR_CHECK(r.graph != nullptr, "report without a graph");
  const bound::SkiSlope& s = *r.ski_slope;
  SOLAR_CHECK(!s.capacities.empty() && s.attainable.size() == s.capacities.size() &&
                  s.provable.size() == s.capacities.size(),
              "ski-slope samples do not match their capacities");
  double x0 = s.capacities.front().to_double(), x1 = s.capacities.back().to_double();
  double y0 = std::max(1.0, s.compulsory_bytes.to_double());
  double y1 = y0;
  auto widen = [&](double v) {
    if (v > 0) {
      y0 = std::min(y0, v);
      y1 = std::max(y1, v);
    }
  };
  for (Count c : s.attainable) widen(c.to_double());
  for (Count c : s.provable) widen(c.to_double());
  // The heaviest ops' curves as drawn (clipped to the x range): the y range fits them.
  std::vector<std::vector<std::pair<double, double>>> op_curves;
  for (const bound::SkiSlopeOp& o : s.heaviest) {
    op_curves.push_back(steps(o.points, x0, x1));
    for (const auto& pt : op_curves.back()) widen(pt.second);
  }
  y0 = std::pow(10, std::floor(std::log10(y0)));
  y1 = std::pow(10, std::ceil(std::log10(y1 * 1.01)));
  if (y1 <= y0) y1 = y0 * 10;
  Axes a(x0, x1, y0, y1);

  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" font-size=\"14\">{3}</text>\n",
      kWidth, kHeight, kLeft,
      xml_escape(fit("Ski-slope of " + r.graph->name + ": DRAM traffic Q(S) vs on-chip capacity S",
                     kWidth - kLeft - 10, 14)));
  // Frame and decade grid.
  double px0 = a.x(x0), px1 = a.x(x1), py0 = a.y(y0), py1 = a.y(y1);
  svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                     "fill=\"none\" stroke=\"black\"/>\n",
                     px0, py1, px1 - px0, py0 - py1);
  for (double d = std::pow(10, std::ceil(std::log10(x0))); d <= x1; d *= 10)
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
                       "stroke=\"#ddd\"/><text x=\"{0:.1f}\" y=\"{3:.1f}\" "
                       "text-anchor=\"middle\">{4}</text>\n",
                       a.x(d), py0, py1, py0 + 16, detail::si(d, "B"));
  for (double d = y0; d <= y1 * 1.0001; d *= 10)
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" "
                       "stroke=\"#ddd\"/><text x=\"{3:.1f}\" y=\"{4:.1f}\" "
                       "text-anchor=\"end\">{5}</text>\n",
                       px0, a.y(d), px1, px0 - 6, a.y(d) + 4, detail::si(d, "B"));
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">on-chip capacity "
                     "S (bytes, log)</text>\n",
                     (px0 + px1) / 2, kHeight - 18);
  svg += fmt::format("<text x=\"18\" y=\"{0:.1f}\" text-anchor=\"middle\" "
                     "transform=\"rotate(-90 18 {0:.1f})\">DRAM traffic Q(S) (bytes, log)</text>\n",
                     (py0 + py1) / 2);

  // Devices' capacities. The label reads upwards along the line, inside the frame: it ends
  // just below the frame's top (text-anchor end) and is cut to the frame's height.
  for (const auto& [id, bytes] : r.device_capacities) {
    double b = bytes.to_double();
    if (b < x0 || b > x1) continue;
    std::string label = fit(id + " (" + detail::si(b, "B") + ")", py0 - py1 - 8, 11);
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
                       "stroke=\"#888\" stroke-dasharray=\"2,3\"/><text x=\"{3:.1f}\" "
                       "y=\"{4:.1f}\" fill=\"#555\" text-anchor=\"end\" "
                       "transform=\"rotate(-90 {3:.1f} {4:.1f})\">{5}</text>\n",
                       a.x(b), py0, py1, a.x(b) - 3, py1 + 4, xml_escape(label));
  }

  // Heaviest ops, then the whole graph on top.
  std::string legend;
  double ly = kTop + 10;
  auto legend_row = [&](const std::string& style, const std::string& label) {
    legend += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" {3}/>"
                          "<text x=\"{4:.1f}\" y=\"{5:.1f}\">{6}</text>\n",
                          kWidth - kRight + 15, ly, kWidth - kRight + 40, style,
                          kWidth - kRight + 46, ly + 4,
                          xml_escape(fit(label, kRight - 46 - 6, 11)));
    ly += 18;
  };
  for (std::size_t i = 0; i < s.heaviest.size(); ++i) {
    std::string style = fmt::format("stroke=\"{}\" stroke-width=\"1.5\"",
                                    kOpColors[i % std::size(kOpColors)]);
    svg += polyline(op_curves[i], a, style);
    legend_row(style, "op " + r.graph->op(s.heaviest[i].op).name);
  }
  std::vector<std::pair<double, double>> att, prov;
  for (std::size_t i = 0; i < s.capacities.size(); ++i) {
    att.emplace_back(s.capacities[i].to_double(), std::max(y0, s.attainable[i].to_double()));
    prov.emplace_back(s.capacities[i].to_double(), std::max(y0, s.provable[i].to_double()));
  }
  std::string att_style = "stroke=\"black\" stroke-width=\"2.5\"";
  std::string prov_style = "stroke=\"black\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"";
  std::string floor_style = "stroke=\"#c00\" stroke-width=\"1\" stroke-dasharray=\"1,3\"";
  svg += polyline(att, a, att_style);
  svg += polyline(prov, a, prov_style);
  double fy = std::max(y0, s.compulsory_bytes.to_double());
  svg += polyline({{x0, fy}, {x1, fy}}, a, floor_style);
  legend_row(att_style, "graph, attainable");
  legend_row(prov_style, "graph, provable");
  legend_row(floor_style, "compulsory (fused)");
  svg += legend;
  svg += "</svg>\n";
  return svg;
}

}  // namespace solar::report
