/// \file
/// The public API of proxc: build or load a problem, print it in its forms.
///
///     proxc::Problem p = proxc::load_problem("denoise.prox");
///     std::cout << proxc::print_text(p);
#pragma once

#include "api/load.h"
#include "api/plugin.h"
#include "frontend/parser.h"
#include "ir/dot.h"
#include "ir/expr.h"
#include "ir/function.h"
#include "ir/json.h"
#include "ir/latex.h"
#include "ir/printer.h"
#include "ir/problem.h"
#include "support/error.h"
