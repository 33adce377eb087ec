/// \file
/// Number and string formatting shared by the printers.
#pragma once

#include <string>

namespace proxc::internal {

/// The shortest decimal spelling of `v` that parses back (strtod) to exactly
/// `v`: 0.1 prints "0.1", 1e-5 prints "1e-05", 2 prints "2". Must be finite.
std::string format_double(double v);

/// format_double for any value, for messages about user input: non-finite
/// values print as the .prox text spells them ("inf", "-inf", "nan").
std::string format_number(double v);

/// `s` in double quotes with \" \\ \n \t and \xHH escapes, as the .prox
/// lexer reads strings.
std::string quote_string(const std::string& s);

}  // namespace proxc::internal
