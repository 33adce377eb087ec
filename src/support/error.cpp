#include "support/error.h"

#include <algorithm>
#include <exception>
#include <sstream>

namespace proxc::internal {

std::string SourceLoc::to_string() const {
  std::ostringstream s;
  s << (file.empty() ? "<input>" : file);
  if (line > 0) s << ":" << line << ":" << col;
  return s.str();
}

ErrorBuilder::ErrorBuilder(bool user, const char* file, int line, const char* cond) : user_(user) {
  if (!user_) {
    msg_ << "internal error (a bug in proxc) at " << file << ":" << line;
    if (cond) msg_ << ", condition failed: " << cond;
    msg_ << ": ";
  }
}

ErrorBuilder::~ErrorBuilder() noexcept(false) {
  // Never throw while another exception unwinds the stack.
  if (std::uncaught_exceptions() > 0) return;
  if (user_) throw UserError(msg_.str());
  throw InternalError(msg_.str());
}

std::string format_located_error(const SourceLoc& loc, const std::string& message,
                                 const std::string& source) {
  std::ostringstream s;
  s << loc.to_string() << ": error: " << message;
  if (loc.line <= 0) return s.str();
  // Find the line in the source.
  size_t start = 0;
  for (int l = 1; l < loc.line && start != std::string::npos; ++l) {
    start = source.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos || start > source.size()) return s.str();
  size_t end = source.find('\n', start);
  std::string text = source.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (!text.empty() && text.back() == '\r') text.pop_back();
  // Show non-printable bytes as '?' so the caret stays aligned.
  for (char& ch : text) {
    unsigned char u = static_cast<unsigned char>(ch);
    if (u != '\t' && (u < 0x20 || u == 0x7f)) ch = '?';
  }
  // A long line is shown as a window of 120 columns around the caret, "..."
  // marking what was cut.
  constexpr int kWindow = 120;
  int col = std::max(loc.col, 1);
  if (static_cast<int>(text.size()) > kWindow) {
    const int first = std::max(0, std::min(col - 1 - kWindow / 2, static_cast<int>(text.size()) - kWindow));
    std::string window = text.substr(static_cast<size_t>(first), kWindow);
    // Whole UTF-8 characters only: continuation bytes at either cut become '?'.
    auto continuation = [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) == 0x80; };
    for (size_t i = 0; i < window.size() && continuation(window[i]); ++i) window[i] = '?';
    for (size_t i = window.size(); i > 0 && (continuation(window[i - 1]) ||
                                             static_cast<unsigned char>(window[i - 1]) >= 0xC0);
         --i) {
      if (static_cast<unsigned char>(window[i - 1]) >= 0xC0) {
        for (size_t j = i - 1; j < window.size(); ++j) window[j] = '?';
        break;
      }
    }
    const bool cut_left = first > 0, cut_right = first + kWindow < static_cast<int>(text.size());
    text = (cut_left ? "..." : "") + window + (cut_right ? "..." : "");
    col = col - first + (cut_left ? 3 : 0);
  }
  s << "\n  " << text << "\n  ";
  for (int i = 1; i < col && i <= static_cast<int>(text.size()); ++i) {
    s << (text[i - 1] == '\t' ? '\t' : ' ');
  }
  s << "^";
  return s.str();
}

}  // namespace proxc::internal
