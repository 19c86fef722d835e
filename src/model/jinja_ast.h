#pragma once
// The syntax tree of a parsed chat template: expressions and statements, each with the line and
// column it came from so that a failure while rendering can say where.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/jinja_value.h"

namespace paceline::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kList,     // args: items (a tuple is a list here)
    kDict,     // args: key, value, key, value...
    kAttr,     // args[0].name
    kItem,     // args[0][args[1]]
    kSlice,    // args[0][args[1]:args[2]:args[3]], missing bounds are null
    kCall,     // args[0](args[1..], kwargs)
    kFilter,   // args[0] | name(args[1..], kwargs)
    kTest,     // args[0] is [not] name(args[1..])
    kUnary,    // name: "not", "-", "+"; args[0]
    kBinary,   // name: the operator ("+", "and", "in", "not in", "==", ...); args[0], args[1]
    kCond,     // args[0] if args[1] else args[2] (null: undefined)
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string name;
  Value value;
  bool negated = false;  // `is not`
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using Body = std::vector<std::unique_ptr<Node>>;

struct Node {
  enum class Kind {
    kText,      // text
    kPrint,     // {{ expr }}
    kIf,        // conditions[i] guards bodies[i]; a last body without condition is the else
    kFor,       // for targets in expr [if condition]: bodies[0], else bodies[1]
    kSet,       // set targets = expr, set target.attribute = expr, or {% set x %}bodies[0]{% endset %}
    kMacro,     // macro name(params = defaults): bodies[0]
    kCallBlock, // {% call expr %}bodies[0]{% endcall %}: `caller()` renders the body
    kFilterBlock,  // {% filter expr %}bodies[0]{% endfilter %}: expr is a kFilter with a null subject
    kBreak,
    kContinue,
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;                    // kFor's filter
  std::vector<ExprPtr> conditions;      // kIf
  std::vector<Body> bodies;
  std::vector<std::string> targets;     // kFor, kSet; kMacro: parameter names
  std::string attribute;                // kSet on a namespace attribute
  std::vector<ExprPtr> defaults;        // kMacro: one per parameter, null when none
};

struct Template {
  Body body;
};

}  // namespace paceline::jinja
