#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

namespace proxc_cli {

namespace {

std::string escape(const std::string& s) {
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

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// ---------------------------------------------------------------------------
// The formula: the LaTeX subset ir/latex.cpp writes, as HTML.

class LatexToHtml {
 public:
  explicit LatexToHtml(const std::string& s) : s_(s) {}
  std::string run() { return group_until('\0'); }

 private:
  // Text up to `end` ('}' or the end of input) at this nesting level.
  std::string group_until(char end) {
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != end) out += atom();
    if (pos_ < s_.size()) ++pos_;  // the closing brace
    return out;
  }
  // One argument: {group} or a single character.
  std::string argument() {
    if (pos_ < s_.size() && s_[pos_] == '{') {
      ++pos_;
      return group_until('}');
    }
    return pos_ < s_.size() ? atom() : std::string();
  }
  std::string atom() {
    const char c = s_[pos_++];
    if (c == '{') return group_until('}');
    if (c == '_') return "<sub>" + argument() + "</sub>";
    if (c == '^') return "<sup>" + argument() + "</sup>";
    if (c == '\\') return command();
    if (c == '\n') return " ";
    if (std::isalpha(static_cast<unsigned char>(c))) return std::string("<i>") + c + "</i>";
    if (c == '-') return "&minus;";
    return escape(std::string(1, c));
  }
  std::string command() {
    std::string name;
    while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) name += s_[pos_++];
    if (name.empty() && pos_ < s_.size()) name = s_[pos_++];  // \, \; \| \\ \_
    static const std::map<std::string, std::string> symbols = {
        {",", "&thinsp;"},  {";", "&ensp;"},   {"|", "&Vert;"},   {"\\", "; "},     {"_", "_"},
        {"ast", "&lowast;"}, {"odot", "&odot;"}, {"nabla", "&nabla;"}, {"iota", "&iota;"}, {"geq", "&ge;"},
        {"infty", "&infin;"}, {"top", "&#x22A4;"}, {"langle", "&lang;"}, {"rangle", "&rang;"},
        {"cdot", "&middot;"}, {"min", "min"},   {"left", ""},       {"right", ""}};
    if (name == "mathrm") return "<span class=\"rm\">" + argument() + "</span>";
    if (name == "mathbf") return "<b>" + argument() + "</b>";
    if (name == "mathcal") return "<span class=\"cal\">" + argument() + "</span>";
    if (name == "begin" || name == "end") {
      const std::string env = argument();
      if (env == "bmatrix") return name == "begin" ? "[" : "]";
      return "";
    }
    auto it = symbols.find(name);
    return it != symbols.end() ? it->second : escape("\\" + name);
  }

  const std::string& s_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------
// Images: what a 2-D or 3-D array looks like as a picture.

struct Picture {
  std::string file;     // beside index.html
  std::string caption;
};

// (H, W) grey, (H, W, 3) colour: a picture as it is. (D, H, W) and
// (D, H, W, 3): the middle slice and the maximum along the first axis.
// Anything else has no picture.
bool is_colour(const proxc::Shape& s) { return !s.empty() && s.back() == 3 && (s.size() == 3 || s.size() == 4); }

// How many pictures views() makes of an array of shape s: a plane one, a stack two.
size_t view_count(const proxc::Shape& s) {
  const size_t plane_rank = is_colour(s) ? 3 : 2;
  return s.size() == plane_rank ? 1 : s.size() == plane_rank + 1 ? 2 : 0;
}

std::vector<std::pair<std::string, proxc::Array>> views(const proxc::Array& a) {
  const proxc::Shape& s = a.shape();
  const size_t n_views = view_count(s);
  if (n_views == 1) return {{"", a}};
  if (n_views == 0) return {};
  const int64_t depth = s[0];
  proxc::Shape plane(s.begin() + 1, s.end());
  int64_t n = 1;
  for (int64_t e : plane) n *= e;
  proxc::Array middle(plane), mip(plane);
  const float* d = a.data();
  std::copy(d + (depth / 2) * n, d + (depth / 2 + 1) * n, middle.data());
  float* m = mip.data();
  std::fill(m, m + n, -std::numeric_limits<float>::infinity());
  for (int64_t z = 0; z < depth; ++z) {
    for (int64_t i = 0; i < n; ++i) m[i] = std::max(m[i], d[z * n + i]);
  }
  return {{"middle slice " + std::to_string(depth / 2) + " of " + std::to_string(depth), middle},
          {"maximum projection", mip}};
}

// The input picture of a solve's report: the first constant of the result's
// shape (the data), "" when the problem has several variables or no such constant.
std::string input_constant(const proxc::Problem& p) {
  const std::vector<proxc::Expr> vars = p.variables();
  if (vars.size() != 1) return "";
  for (const std::string& c : p.constant_names()) {
    if (p.constant(c).shape() == vars[0].shape()) return c;
  }
  return "";
}

std::string image_file(size_t index) { return "image" + std::to_string(index) + ".png"; }

// ---------------------------------------------------------------------------
// The convergence plot: inline SVG, one panel per quantity group.

struct Series {
  std::string name, colour;
  std::vector<double> x, y;
};

std::string plot(const std::string& title, const std::vector<Series>& series, bool log_y) {
  const double W = 620, H = 240, L = 70, R = 150, T = 28, B = 40;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const Series& s : series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      double y = s.y[i];
      if (!std::isfinite(y) || (log_y && y <= 0)) continue;
      y = log_y ? std::log10(y) : y;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  }
  std::ostringstream o;
  o << "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W + R << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W + R << " " << H << "\" role=\"img\" aria-label=\"" << escape(title) << "\">\n";
  o << "<text x=\"" << L << "\" y=\"18\" class=\"title\">" << escape(title) << "</text>\n";
  if (!(x0 <= x1)) {
    o << "<text x=\"" << L << "\" y=\"" << H / 2 << "\">no values to plot</text>\n</svg>\n";
    return o.str();
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) {
    y0 -= log_y ? 0.5 : std::max(1e-12, std::fabs(y0) * 0.05);
    y1 += log_y ? 0.5 : std::max(1e-12, std::fabs(y1) * 0.05);
  }
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - 10); };
  auto py = [&](double y) { return T + (y1 - y) / (y1 - y0) * (H - T - B); };
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - 10 << "\" height=\"" << H - T - B
    << "\" class=\"frame\"/>\n";
  for (int k = 0; k <= 4; ++k) {  // ticks
    const double xv = x0 + (x1 - x0) * k / 4, yv = y0 + (y1 - y0) * k / 4;
    o << "<text x=\"" << px(xv) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">"
      << fmt("%.0f", xv) << "</text>\n";
    o << "<text x=\"" << L - 6 << "\" y=\"" << py(yv) + 4 << "\" text-anchor=\"end\">"
      << (log_y ? fmt("%.1e", std::pow(10.0, yv)) : fmt("%.5g", yv)) << "</text>\n";
    o << "<line x1=\"" << L << "\" x2=\"" << W - 10 << "\" y1=\"" << py(yv) << "\" y2=\"" << py(yv)
      << "\" class=\"grid\"/>\n";
  }
  o << "<text x=\"" << (L + W) / 2 << "\" y=\"" << H - 6 << "\" text-anchor=\"middle\">iteration</text>\n";
  int legend = 0;
  for (const Series& s : series) {
    std::string points;
    for (size_t i = 0; i < s.x.size(); ++i) {
      double y = s.y[i];
      if (!std::isfinite(y) || (log_y && y <= 0)) continue;
      y = log_y ? std::log10(y) : y;
      points += fmt("%.2f", px(s.x[i])) + "," + fmt("%.2f", py(y)) + " ";
    }
    if (points.empty()) continue;
    o << "<polyline class=\"series\" data-name=\"" << escape(s.name) << "\" fill=\"none\" stroke=\"" << s.colour
      << "\" stroke-width=\"2\" points=\"" << points << "\"/>\n";
    const double ly = T + 8 + 18 * legend++;
    o << "<line x1=\"" << W + 4 << "\" x2=\"" << W + 24 << "\" y1=\"" << ly << "\" y2=\"" << ly << "\" stroke=\""
      << s.colour << "\" stroke-width=\"2\"/><text x=\"" << W + 30 << "\" y=\"" << ly + 4 << "\">" << escape(s.name)
      << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

const char* kStyle =
    R"(body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
.formula { font: 1.25em/1.6 "Latin Modern Math", "STIX Two Math", Cambria, serif; padding: .6em 1em; background: #f6f6f4; border-radius: 6px; }
.formula .rm { font-style: normal; } .formula .cal { font-family: cursive; }
figure { display: inline-block; margin: 0 1em 1em 0; vertical-align: top; }
figure img { image-rendering: pixelated; border: 1px solid #ccc; max-width: 340px; min-width: 200px; }
figcaption { font-size: .9em; color: #555; max-width: 340px; }
table { border-collapse: collapse; } td, th { padding: 2px 12px 2px 0; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
svg.plot text { font-size: 12px; fill: #333; } svg.plot .title { font-weight: bold; }
svg.plot .frame { fill: none; stroke: #999; } svg.plot .grid { stroke: #eee; }
pre { background: #f6f6f4; padding: .6em 1em; overflow-x: auto; }
.warning { color: #8a3b00; }
#render-check { color: #777; font-size: .85em; }
)";

// Sets #render-check from what the browser shows: how many images decoded,
// how many curves have points. Only reads the page; nothing is fetched.
const char* kCheckScript = R"(<script>
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img'), loaded = 0;
  imgs.forEach(function (i) { if (i.complete && i.naturalWidth > 0) loaded++; });
  var lines = document.querySelectorAll('svg.plot polyline'), drawn = 0;
  lines.forEach(function (l) { if (l.points.numberOfItems > 0 && l.getTotalLength() >= 0) drawn++; });
  var c = document.getElementById('render-check');
  c.dataset.images = imgs.length; c.dataset.imagesLoaded = loaded;
  c.dataset.curves = lines.length; c.dataset.curvesDrawn = drawn;
  c.textContent = 'Rendered: ' + loaded + ' of ' + imgs.length + ' images, ' + drawn + ' of ' + lines.length + ' curves.';
});
</script>
)";

std::string page_head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>proxc: " + escape(title) +
         "</title>\n<style>\n" + kStyle + "</style>\n</head>\n<body>\n";
}

std::string page_tail() {
  return std::string("<p id=\"render-check\">Rendered: not checked (scripts off).</p>\n") + kCheckScript +
         "</body>\n</html>\n";
}

// The arrays' first views (a 3-D array's middle slice) in one grey range,
// written as PNG files DIR/NAME; false when one has no picture.
bool write_pictures(const std::string& dir, const std::vector<std::pair<std::string, proxc::Array>>& arrays) {
  std::vector<proxc::Array> shown;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& [file, a] : arrays) {
    auto v = views(a);
    if (v.empty()) return false;
    shown.push_back(std::move(v[0].second));
    for (int64_t i = 0; i < shown.back().size(); ++i) {
      lo = std::min(lo, static_cast<double>(shown.back()[i]));
      hi = std::max(hi, static_cast<double>(shown.back()[i]));
    }
  }
  if (!(hi > lo)) hi = lo + 1;
  for (size_t k = 0; k < shown.size(); ++k) {
    for (int64_t i = 0; i < shown[k].size(); ++i) shown[k][i] = static_cast<float>((shown[k][i] - lo) / (hi - lo));
    proxc::save_array((std::filesystem::path(dir) / arrays[k].first).string(), shown[k]);
  }
  return true;
}

std::string phase_table(const proxc::SolverSummary& s) {
  std::ostringstream o;
  const double total = s.parse_s + s.passes_s + s.compile_s + s.iterate_s;
  o << "<table>\n";
  for (const auto& [name, t] : std::vector<std::pair<const char*, double>>{{"parse and load", s.parse_s},
                                                                             {"rewriting passes", s.passes_s},
                                                                             {"compile", s.compile_s},
                                                                             {"iterate", s.iterate_s},
                                                                             {"total", total}}) {
    o << "<tr><td>" << name << "</td><td class=\"n\">" << fmt("%.3f", t) << " s</td></tr>\n";
  }
  o << "</table>\n";
  if (!s.programs.empty()) {
    o << "<table><tr><th>program</th><th>runs</th><th>seconds</th><th>ms per run</th></tr>\n";
    for (const auto& p : s.programs) {
      o << "<tr><td>" << escape(p.name) << "</td><td class=\"n\">" << p.runs << "</td><td class=\"n\">"
        << fmt("%.4f", p.seconds) << "</td><td class=\"n\">" << fmt("%.4f", p.runs ? 1e3 * p.seconds / p.runs : 0)
        << "</td></tr>\n";
    }
    o << "</table>\n";
  }
  return o.str();
}

}  // namespace

std::string latex_to_html(const std::string& latex) {
  std::string s = latex;
  for (const char* env : {"\\begin{equation*}", "\\end{equation*}"}) {
    const size_t at = s.find(env);
    if (at != std::string::npos) s.erase(at, std::string(env).size());
  }
  return LatexToHtml(s).run();
}

void check_report_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path d(dir);
  try {
    if (fs::exists(d, ec)) {
      if (!fs::is_directory(d, ec)) throw proxc::UserError(dir + ": a file is in its place; the report is a folder");
      proxc::check_writable((d / "index.html").string());
    } else {
      // The folder is made beside its siblings: its parent must take a new file.
      const fs::path parent = d.parent_path().empty() ? fs::path(".") : d.parent_path();
      proxc::check_writable((parent / d.filename()).string());
    }
  } catch (const proxc::UserError& e) {
    throw proxc::UserError(std::string("--report: ") + e.what());
  }
}

void write_report(const std::string& dir, const Report& r) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw proxc::UserError("--report " + dir + ": cannot create the folder: " + ec.message());

  // One display range for every picture, so that they compare.
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, proxc::Array>>>> shown;
  for (const auto& [caption, a] : r.images) {
    shown.emplace_back(caption, views(a));
    for (const auto& [what, v] : shown.back().second) {
      for (int64_t i = 0; i < v.size(); ++i) {
        lo = std::min(lo, static_cast<double>(v[i]));
        hi = std::max(hi, static_cast<double>(v[i]));
      }
    }
  }
  if (!(hi > lo)) hi = lo + 1;
  std::ostringstream figs;
  size_t index = 0;
  for (auto& [caption, vs] : shown) {
    if (vs.empty()) {
      figs << "<p>" << escape(caption) << ": no picture for this shape.</p>\n";
      continue;
    }
    for (auto& [what, v] : vs) {
      for (int64_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((v[i] - lo) / (hi - lo));
      const std::string file = image_file(index++);
      proxc::save_array((fs::path(dir) / file).string(), v);
      figs << "<figure><img src=\"" << file << "\" alt=\"" << escape(caption) << "\" width=\"" << v.shape()[1]
           << "\" height=\"" << v.shape()[0] << "\" style=\"width: " << std::clamp<int64_t>(v.shape()[1] * 4, 200, 340)
           << "px; height: auto\"><figcaption>" << escape(caption) << (what.empty() ? "" : ", " + escape(what))
           << "</figcaption></figure>\n";
    }
  }

  const proxc::SolverSummary& s = r.summary;
  std::vector<Series> objective{{"objective", "#1f5fbf", {}, {}}};
  std::vector<Series> residuals{{"r (primal)", "#c0392b", {}, {}},
                                {"eps_pri", "#e6a0a0", {}, {}},
                                {"s (dual)", "#1e8449", {}, {}},
                                {"eps_dual", "#9fd4ae", {}, {}}};
  for (const proxc::IterationInfo& h : s.history) {
    objective[0].x.push_back(h.iteration);
    objective[0].y.push_back(h.objective);
    const double ys[] = {h.r, h.eps_pri, h.s, h.eps_dual};
    for (int k = 0; k < 4; ++k) {
      residuals[k].x.push_back(h.iteration);
      residuals[k].y.push_back(ys[k]);
    }
  }

  std::ostringstream html;
  html << page_head(r.title);
  html << "<h1>" << escape(r.title) << "</h1>\n";
  html << "<div class=\"formula\">" << latex_to_html(r.latex) << "</div>\n";
  html << "<details><summary>as proxc prints it</summary><pre>" << escape(r.text) << "</pre></details>\n";
  html << "<h2>Images</h2>\n<p>Shown from " << fmt("%.4g", lo) << " (black) to " << fmt("%.4g", hi)
       << " (white), the same range for every image.</p>\n" << figs.str();
  html << "<h2>Convergence</h2>\n<p>" << s.history.size() << " checks.</p>\n";
  html << plot("objective per check", objective, false) << plot("residuals and tolerances per check", residuals, true);
  html << "<h2>Summary</h2>\n<pre>" << escape(s.brief_report()) << "</pre>\n";
  for (const std::string& w : s.warnings) html << "<p class=\"warning\">warning: " << escape(w) << "</p>\n";
  html << "<table>\n";
  auto row = [&](const std::string& k, const std::string& v) {
    html << "<tr><td>" << escape(k) << "</td><td>" << escape(v) << "</td></tr>\n";
  };
  row("solver", proxc::to_string(s.solver));
  row("termination", proxc::to_string(s.termination));
  row("iterations", std::to_string(s.iterations));
  row("objective", fmt("%.9g", s.objective));
  if (s.has_projection) row("objective at max(x, 0)", fmt("%.9g", s.objective_at_projection));
  row("backend", proxc::to_string(s.backend_used));
  row("schedule", proxc::to_string(s.schedule_used));
  if (r.has_reference) {
    row("PSNR against the reference", fmt("%.2f dB", r.psnr));
    row("SSIM against the reference", fmt("%.4f", r.ssim));
  }
  for (const std::string& o : r.outputs) row("written", o);
  html << "</table>\n<h2>Time per phase</h2>\n" << phase_table(s);
  html << page_tail();
  proxc::write_file((fs::path(dir) / "index.html").string(), html.str());
}

std::vector<std::string> solve_report_files(const std::string& dir, const proxc::Problem& p,
                                            const proxc::Shape* reference) {
  const std::vector<proxc::Expr> vars = p.variables();
  size_t pictures = 0;
  if (!input_constant(p).empty()) pictures += view_count(vars[0].shape());
  for (const proxc::Expr& v : vars) pictures += view_count(v.shape());
  if (reference) pictures += view_count(*reference);
  std::vector<std::string> files{(std::filesystem::path(dir) / "index.html").string()};
  for (size_t i = 0; i < pictures; ++i)
    files.push_back((std::filesystem::path(dir) / image_file(i)).string());
  return files;
}

std::vector<std::string> batch_report_files(const std::string& dir, size_t frames) {
  std::vector<std::string> files{(std::filesystem::path(dir) / "index.html").string()};
  for (size_t i = 0; i < frames; ++i) {
    for (const char* what : {"_input.png", "_result.png"}) {
      files.push_back((std::filesystem::path(dir) / ("frame" + std::to_string(i) + what)).string());
    }
  }
  return files;
}

void write_solve_report(const std::string& dir, const std::string& title, const proxc::Problem& p,
                        const proxc::SolverSummary& summary, const std::vector<std::string>& written,
                        const std::string& reference, double psnr, double ssim) {
  Report r;
  r.title = title;
  r.latex = p.print(proxc::ProblemFormat::Latex);
  r.text = p.print(proxc::ProblemFormat::Text);
  r.summary = summary;
  r.outputs = written;
  const std::vector<proxc::Expr> vars = p.variables();
  const std::string input = input_constant(p);
  if (!input.empty()) r.images.emplace_back("input " + input, p.constant(input));
  for (const proxc::Expr& v : vars) r.images.emplace_back("result " + p.name_of(v), p.value(v));
  if (!reference.empty()) {
    r.images.emplace_back("reference " + std::filesystem::path(reference).filename().string(),
                          proxc::load_array(reference));
    r.has_reference = true;
    r.psnr = psnr;
    r.ssim = ssim;
  }
  write_report(dir, r);
}

BatchReport::BatchReport(const std::string& dir, const std::string& title, const proxc::Problem& p)
    : dir_(dir), title_(title) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw proxc::UserError("--report " + dir_ + ": cannot create the folder: " + ec.message());
  latex_ = p.print(proxc::ProblemFormat::Latex);
}

void BatchReport::add(size_t index, const proxc::Problem& p, const std::string& constant, const std::string& input,
                      const proxc::SolverSummary& s, const std::vector<std::string>& outputs) {
  if (dir_.empty()) return;
  milliseconds_ += std::lround(1e3 * (s.parse_s + s.passes_s + s.compile_s + s.iterate_s));
  const std::vector<proxc::Expr> vars = p.variables();
  const std::string in = "frame" + std::to_string(index) + "_input.png",
                    out = "frame" + std::to_string(index) + "_result.png";
  const bool pictures = write_pictures(dir_, {{in, p.constant(constant)}, {out, p.value(vars[0])}});
  std::ostringstream row;
  row << "<tr><td>" << escape(input) << "</td>";
  if (pictures) {
    for (const std::string& f : {in, out}) {
      row << "<td><img src=\"" << f << "\" alt=\"" << escape(f) << "\" style=\"width: 160px; height: auto\"></td>";
    }
  } else {
    row << "<td colspan=\"2\">no picture for this shape</td>";
  }
  row << "<td>" << proxc::to_string(s.termination) << "</td><td class=\"n\">" << s.iterations
      << "</td><td class=\"n\">" << fmt("%.6g", s.objective) << "</td><td class=\"n\">"
      << fmt("%.3f", s.iterate_s) << "</td><td class=\"n\">" << fmt("%.3f", s.compile_s) << "</td><td>";
  for (const std::string& o : outputs) row << escape(o) << "<br>";
  for (const std::string& w : s.warnings)
    row << "<span class=\"warning\">warning: " << escape(w) << "</span><br>";
  row << "</td></tr>\n";
  rows_[index] = row.str();
}

void BatchReport::add_failure(size_t index, const std::string& input, const std::string& error) {
  if (dir_.empty()) return;
  rows_[index] = "<tr><td>" + escape(input) + "</td><td colspan=\"8\">failed: " + escape(error) + "</td></tr>\n";
}

void BatchReport::finish(const Ranks& ranks) {
  if (dir_.empty()) return;
  // Rows travel as "index \x1f html \x1e" (the html holds neither).
  std::string mine;
  for (const auto& [i, html] : rows_) mine += std::to_string(i) + '\x1f' + html + '\x1e';
  const std::vector<std::string> parts = gather_to_root(ranks, mine);
  const long milliseconds = sum_over_ranks(ranks, milliseconds_);
  if (ranks.rank != 0) return;
  std::map<size_t, std::string> all;
  for (const std::string& part : parts) {
    for (size_t start = 0; start < part.size();) {
      const size_t sep = part.find('\x1f', start), end = part.find('\x1e', sep);
      all[std::stoul(part.substr(start, sep - start))] = part.substr(sep + 1, end - sep - 1);
      start = end + 1;
    }
  }
  std::ostringstream html;
  html << page_head(title_) << "<h1>" << escape(title_) << ": " << all.size() << " frames</h1>\n";
  html << "<div class=\"formula\">" << latex_to_html(latex_) << "</div>\n";
  html << "<p>Each row: the frame's data and its result in one grey range (a volume's middle slice); "
       << fmt("%.3f", milliseconds / 1e3) << " s of solving in all"
       << (ranks.size > 1 ? ", over " + std::to_string(ranks.size) + " ranks" : std::string()) << ".</p>\n";
  html << "<table class=\"frames\">\n<tr><th>frame</th><th>input</th><th>result</th><th>termination</th>"
       << "<th>iterations</th><th>objective</th><th>iterate s</th><th>compile s</th><th>written</th></tr>\n";
  for (const auto& [i, row] : all) html << row;
  html << "</table>\n" << page_tail();
  proxc::write_file((std::filesystem::path(dir_) / "index.html").string(), html.str());
}

}  // namespace proxc_cli
