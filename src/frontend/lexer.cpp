#include "frontend/lexer.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace proxc::internal {

std::string describe(TokenKind kind) {
  switch (kind) {
    case TokenKind::Ident: return "a name";
    case TokenKind::Number: return "a number";
    case TokenKind::String: return "a string";
    case TokenKind::LParen: return "'('";
    case TokenKind::RParen: return "')'";
    case TokenKind::LBracket: return "'['";
    case TokenKind::RBracket: return "']'";
    case TokenKind::Comma: return "','";
    case TokenKind::Assign: return "'='";
    case TokenKind::Plus: return "'+'";
    case TokenKind::Minus: return "'-'";
    case TokenKind::Star: return "'*'";
    case TokenKind::Slash: return "'/'";
    case TokenKind::Newline: return "end of line";
    case TokenKind::End: return "end of file";
  }
  return "?";
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::Ident: return "'" + t.text + "'";
    case TokenKind::Number: return "number " + t.text;
    case TokenKind::String: return "a string";
    default: return describe(t.kind);
  }
}

namespace {
// The offset of the first byte of `s` that does not belong to a well-formed
// UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF), or npos. Strings become file paths and JSON, which need text.
size_t invalid_utf8_at(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;  // truncated sequence
    for (size_t k = 1; k <= n; ++k) {
      const unsigned char ck = b(i + k);
      if (k == 1 ? (ck < lo || ck > hi) : (ck < 0x80 || ck > 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string::npos;
}

class Lexer {
 public:
  Lexer(const std::string& src, const std::string& file) : src_(src), file_(file) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    int depth = 0;
    while (pos_ < src_.size()) {
      char ch = src_[pos_];
      if (ch == '\n') {
        if (depth == 0 && !out.empty() && out.back().kind != TokenKind::Newline) {
          out.push_back(make(TokenKind::Newline, "\n"));
        }
        advance();
        continue;
      }
      if (ch == ' ' || ch == '\t' || ch == '\r') {
        advance();
        continue;
      }
      if (ch == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') advance();
        continue;
      }
      Token t = make(TokenKind::End, "");
      unsigned char u = static_cast<unsigned char>(ch);
      if (std::isalpha(u) || ch == '_') {
        size_t start = pos_;
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
          advance();
        }
        t.kind = TokenKind::Ident;
        t.text = src_.substr(start, pos_ - start);
      } else if (std::isdigit(u) || (ch == '.' && pos_ + 1 < src_.size() &&
                                     std::isdigit(static_cast<unsigned char>(src_[pos_ + 1])))) {
        number(&t);
      } else if (ch == '"') {
        string(&t);
      } else {
        switch (ch) {
          case '(': t.kind = TokenKind::LParen; ++depth; break;
          case ')': t.kind = TokenKind::RParen; depth = depth > 0 ? depth - 1 : 0; break;
          case '[': t.kind = TokenKind::LBracket; ++depth; break;
          case ']': t.kind = TokenKind::RBracket; depth = depth > 0 ? depth - 1 : 0; break;
          case ',': t.kind = TokenKind::Comma; break;
          case '=': t.kind = TokenKind::Assign; break;
          case '+': t.kind = TokenKind::Plus; break;
          case '-': t.kind = TokenKind::Minus; break;
          case '*': t.kind = TokenKind::Star; break;
          case '/': t.kind = TokenKind::Slash; break;
          default: stray(u);
        }
        t.text = std::string(1, ch);
        advance();
      }
      out.push_back(t);
    }
    if (!out.empty() && out.back().kind != TokenKind::Newline) out.push_back(make(TokenKind::Newline, "\n"));
    out.push_back(make(TokenKind::End, ""));
    return out;
  }

 private:
  Token make(TokenKind k, std::string text) const {
    Token t;
    t.kind = k;
    t.text = std::move(text);
    t.line = line_;
    t.col = col_;
    return t;
  }

  void advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  [[noreturn]] void fail(int line, int col, const std::string& msg) const {
    throw UserError(format_located_error(SourceLoc{file_, line, col}, msg, src_));
  }

  [[noreturn]] void stray(unsigned char u) const {
    char buf[96];
    if (u >= 0x20 && u < 0x7f) {
      std::snprintf(buf, sizeof buf, "unexpected character '%c'", u);
    } else {
      std::snprintf(buf, sizeof buf, "stray byte 0x%02X (only ASCII text is allowed outside strings and comments)",
                    u);
    }
    fail(line_, col_, buf);
  }

  void number(Token* t) {
    size_t start = pos_;
    auto digits = [&] {
      while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) advance();
    };
    digits();
    if (pos_ < src_.size() && src_[pos_] == '.') {
      advance();
      digits();
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t save_pos = pos_;
      int save_col = col_;
      advance();
      if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) advance();
      if (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) {
        digits();
      } else {
        pos_ = save_pos;
        col_ = save_col;
        fail(t->line, t->col, "malformed number '" + src_.substr(start, pos_ + 1 - start) + "': exponent has no digits");
      }
    }
    if (pos_ < src_.size() && (std::isalpha(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
      fail(line_, col_, "malformed number: '" + src_.substr(start, pos_ + 1 - start) + "' (a name cannot start with a digit)");
    }
    t->kind = TokenKind::Number;
    t->text = src_.substr(start, pos_ - start);
    errno = 0;
    t->number = std::strtod(t->text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(t->number)) fail(t->line, t->col, "number " + t->text + " is too large");
  }

  void string(Token* t) {
    advance();  // opening quote
    std::string value;
    while (true) {
      if (pos_ >= src_.size() || src_[pos_] == '\n') fail(t->line, t->col, "unterminated string");
      char ch = src_[pos_];
      if (ch == '"') {
        advance();
        break;
      }
      if (ch == '\\') {
        advance();
        if (pos_ >= src_.size()) fail(t->line, t->col, "unterminated string");
        char e = src_[pos_];
        switch (e) {
          case '"': value += '"'; break;
          case '\\': value += '\\'; break;
          case 'n': value += '\n'; break;
          case 't': value += '\t'; break;
          case 'x': {
            if (pos_ + 2 >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_ + 1])) ||
                !std::isxdigit(static_cast<unsigned char>(src_[pos_ + 2]))) {
              fail(line_, col_ - 1, "bad escape: \\x needs two hex digits");
            }
            value += static_cast<char>(std::stoi(src_.substr(pos_ + 1, 2), nullptr, 16));
            advance();
            advance();
            break;
          }
          default: fail(line_, col_ - 1, std::string("unknown escape '\\") + e + "' in string");
        }
        advance();
        continue;
      }
      value += ch;
      advance();
    }
    if (size_t bad = invalid_utf8_at(value); bad != std::string::npos) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "the string is not UTF-8 text (byte 0x%02X at offset %zu of its value)",
                    static_cast<unsigned char>(value[bad]), bad);
      fail(t->line, t->col, buf);
    }
    t->kind = TokenKind::String;
    t->text = value;
  }

  const std::string& src_;
  const std::string& file_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};
}  // namespace

std::vector<Token> tokenize(const std::string& source, const std::string& file) { return Lexer(source, file).run(); }

}  // namespace proxc::internal
