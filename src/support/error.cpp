#include "support/error.h"

#include <exception>

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
  s << "\n  " << text << "\n  ";
  for (int i = 1; i < loc.col && i <= static_cast<int>(text.size()); ++i) {
    s << (text[i - 1] == '\t' ? '\t' : ' ');
  }
  s << "^";
  return s.str();
}

}  // namespace proxc::internal
