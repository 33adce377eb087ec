/// \file
/// Tokens of the .prox language (grammar in docs/language.md).
#pragma once

#include <string>
#include <vector>

#include "support/error.h"

namespace proxc::internal {

enum class TokenKind { Ident, Number, String, LParen, RParen, LBracket, RBracket, Comma, Assign, Plus, Minus,
                       Star, Slash, Newline, End };

struct Token {
  TokenKind kind;
  std::string text;  // identifier, decoded string, or the number's spelling
  double number = 0;
  int line = 0;
  int col = 0;
};

/// Describes a token kind for messages ("')'", "a number").
std::string describe(TokenKind kind);
/// Describes a token for messages ("'conv'", "end of line").
std::string describe(const Token& t);

/// Splits `source` into tokens. Newlines inside ( ) and [ ] are dropped;
/// comments run from '#' to the end of the line. Throws UserError located at
/// the offending byte (unterminated string, stray byte, bad number).
std::vector<Token> tokenize(const std::string& source, const std::string& file);

}  // namespace proxc::internal
