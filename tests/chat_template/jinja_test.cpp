// The Jinja interpreter, feature by feature, with what jinja2 3.1 renders (configured as
// Transformers configures it: trim_blocks, lstrip_blocks, its tojson) as the expected text.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/jinja_template.h"

namespace paceline::jinja {
namespace {

using Json = nlohmann::ordered_json;
using ::testing::HasSubstr;

std::string render(const std::string& source, const char* variables = "{}") {
  Dict vars;
  const Json parsed = Json::parse(variables);
  for (const auto& [k, v] : parsed.items()) vars.emplace_back(k, value_from_json(v));
  return JinjaTemplate(source).render(vars);
}

std::string error_of(const std::string& source, const char* variables = "{}") {
  try {
    render(source, variables);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Jinja, MinusStripsTheWhitespaceBesideATag) {
  EXPECT_EQ(render("a  {%- if true %} b {% endif -%}  c"), "a b c");
  EXPECT_EQ(render("a \n {{- 'x' -}} \n b"), "axb");
}

TEST(Jinja, TrimBlocksDropsTheNewlineAfterAStatementOnly) {
  EXPECT_EQ(render("{% if true %}\nx\n{% endif %}\ny"), "x\ny");
  EXPECT_EQ(render("{{ 'x' }}\ny"), "x\ny");
}

TEST(Jinja, LstripBlocksDropsIndentBeforeStatementsButNotPrints) {
  EXPECT_EQ(render("a\n    {% if true %}\n    b\n    {% endif %}\nc"), "a\n    b\nc");
  EXPECT_EQ(render("  {{ 'x' }}"), "  x");
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render("a\n  {# note #}\nb"), "a\nb");
  EXPECT_EQ(render("a {# note #} b"), "a  b");
}

TEST(Jinja, OneTrailingNewlineOfTheTemplateIsDropped) {
  EXPECT_EQ(render("x\n"), "x");
  EXPECT_EQ(render("x\n\n"), "x\n");
  EXPECT_EQ(render("a\r\nb"), "a\nb");
}

TEST(Jinja, LoopVariables) {
  EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.index }}{{ loop.first }}{{ loop.last }}"
                   "{{ loop.revindex0 }}|{% endfor %}"),
            "1TrueFalse2|2FalseFalse1|3FalseTrue0|");
  EXPECT_EQ(render("{% for x in range(6) if x is odd %}{{ loop.index }}:{{ x }} {% endfor %}"),
            "1:1 2:3 3:5 ");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in range(5) %}{% if x == 1 %}{% continue %}{% endif %}"
                   "{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "02");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
            "a=1;b=2;");
  EXPECT_EQ(render("{% for x in 'abc' %}{{ loop.cycle('0', '1') }}{% endfor %}"), "010");
  EXPECT_EQ(render("{% for x in [1, 2] %}{{ loop.previtem is defined }}{{ loop.nextitem }}"
                   "{% endfor %}"),
            "False2True");
}

TEST(Jinja, SetInALoopStaysInTheLoopButANamespaceCarriesOut) {
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}"
                   "{% endfor %}{{ ns.x }}"),
            "4");
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set s %}a{{ 1 }}{% endset %}{{ s }}"), "a1");
}

TEST(Jinja, SlicesIndexesAndStringMethodsArePythons) {
  EXPECT_EQ(render("{{ [1, 2, 3, 4][::-1] }}|{{ [1, 2, 3, 4][1:3] }}|{{ [1, 2, 3][-1] }}"),
            "[4, 3, 2, 1]|[2, 3]|3");
  EXPECT_EQ(render("{{ 'héllo'[1:3] }}|{{ 'abc'[-1] }}|{{ 'héllo' | length }}"), "él|c|5");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }}|{{ ' a b  c '.split() }}|{{ 'a-b-c'.split('-', 1) }}"),
            "['a', 'b', '', 'c']|['a', 'b', 'c']|['a', 'b-c']");
  EXPECT_EQ(render("{{ 'a-b-c'.rsplit('-', 1) }}"), "['a-b', 'c']");
  EXPECT_EQ(render("[{{ '  x  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nhi\\n'.lstrip('\\n') }}"
                   "|{{ 'hi\\n\\n'.rstrip() }}]"),
            "[x|hi|hi\n|hi]");
  EXPECT_EQ(render("{{ 'Hello'.startswith('He') }}{{ 'x'.startswith(('a', 'x')) }}"
                   "{{ 'Hello'.endswith('lo') }}"),
            "TrueTrueTrue");
  EXPECT_EQ(render("{{ 'ÉCOLE'.lower() }}|{{ 'éa'.upper() }}|{{ 'hello world'.title() }}"
                   "|{{ 'aXb'.replace('X', '-') }}|{{ 'abcb'.find('b') }}|{{ ', '.join(['a', 'b']) }}"),
            "école|ÉA|Hello World|a-b|1|a, b");
}

TEST(Jinja, ValuesPrintAsPythonPrintsThem) {
  EXPECT_EQ(render("{{ true }}{{ none }}{{ 1.0 }}{{ 1e-5 }}{{ x }}"), "TrueNone1.01e-05");
  EXPECT_EQ(render("{{ [1.5, 'a', none, true, \"it's\"] }}{{ {'a': 1} }}"),
            "[1.5, 'a', None, True, \"it's\"]{'a': 1}");
}

TEST(Jinja, Operators) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ 7 % 3 }} {{ -7 // 2 }} {{ 2 ** 3 }} {{ 7 / 2 }} {{ 1 + 2 * 3 }}"),
            "3 1 -4 8 3.5 7");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none }}|{{ 1 if false }}|{{ 'y' if 0 else 'n' }}"), "a1None||n");
  EXPECT_EQ(render("{{ 'x' in 'xyz' }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 3 not in [1] }}"),
            "TrueTrueTrueTrue");
  EXPECT_EQ(render("{{ 1 == 1.0 }}{{ [1] + [2] }}{{ 'ab' * 2 }}{{ 0 or '' or 'c' }}{{ 1 and 'b' }}"),
            "True[1, 2]ababcb");
  EXPECT_EQ(render("{{ 'a' in nothing }}{{ 'a' not in nothing }}{{ nothing | length }}"
                   "{% for x in nothing %}x{% endfor %}"),
            "FalseTrue0");
  EXPECT_EQ(render("{{ not none is none }}{{ (1, 2)[1] }}{{ 'a' < 'b' }}{{ 2 >= 3 }}"),
            "False2TrueFalse");
}

TEST(Jinja, Filters) {
  const char* users = R"({"users": [{"name": "a", "active": true, "n": 2},
                                    {"name": "b", "active": false, "n": 1}]})";
  EXPECT_EQ(render("{{ users | selectattr('active') | map(attribute='name') | join(', ') }}", users), "a");
  EXPECT_EQ(render("{{ users | rejectattr('active') | map(attribute='name') | list }}", users), "['b']");
  EXPECT_EQ(render("{{ users | selectattr('name', 'equalto', 'b') | map(attribute='n') | first }}", users),
            "1");
  EXPECT_EQ(render("{{ users | sort(attribute='n') | map(attribute='name') | join }}", users), "ba");
  EXPECT_EQ(render("{{ [3, 1, 2] | sort | join(',') }}|{{ [1, 2, 3] | select('odd') | list }}"
                   "|{{ [1, 2, 3] | reject('odd') | list }}"),
            "1,2,3|[1, 3]|[2]");
  EXPECT_EQ(render("{{ x | default('d') }}|{{ '' | default('d', true) }}|{{ none | default('d') }}"),
            "d|d|None");
  EXPECT_EQ(render("{{ [1, 2] | first }}{{ [1, 2] | last }}{{ '5' | int + 1 }}{{ 3.7 | int }}"
                   "{{ 'x' | int }}{{ '2.5' | float }}"),
            "12630" "2.5");
  EXPECT_EQ(render("{{ 'ab' | upper }}{{ 'AB' | lower }}{{ 'a-b' | replace('-', '+') }}"
                   "{{ ' x \\n' | trim }}{{ 'xhix' | trim('x') }}{{ 1 | string ~ 2 }}"),
            "ABaba+bxhi12");
  EXPECT_EQ(render("{% for k, v in {'b': 1, 'a': 2} | items %}{{ k }}{{ v }}{% endfor %}"
                   "{% for k, v in {'b': 1, 'a': 2} | dictsort %}{{ k }}{{ v }}{% endfor %}"),
            "b1a2a2b1");
  EXPECT_EQ(render("{{ [1, 2, 1] | unique | list }}{{ [1, 2] | reverse | list }}{{ [1, 2] | sum }}"
                   "{{ [3, 1] | min }}{{ [3, 1] | max }}{{ -2 | abs }}"),
            "[1, 2][2, 1]3132");
  EXPECT_EQ(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}"),
            "a\n  b\n\n  c|  a\n  b");
  EXPECT_EQ(render("{% filter upper %}ab{% endfilter %}"), "AB");
}

TEST(Jinja, TojsonIsTransformersJsonDumps) {
  EXPECT_EQ(render(R"({{ {'a': [1, 2.5, none, true], 'é': 'x"y</'} | tojson }})"),
            R"({"a": [1, 2.5, null, true], "é": "x\"y</"})");
  EXPECT_EQ(render("{{ {'a': [1, {}], 'b': []} | tojson(indent=2) }}"),
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}"), R"({"a": 2, "b": 1})");
  EXPECT_EQ(render("{{ {'b': 1, 'a': [2]} | tojson(separators=(',', ':')) }}"), R"({"b":1,"a":[2]})");
  EXPECT_EQ(render("{{ 'é😀' | tojson(ensure_ascii=true) }}"), R"("\u00e9\ud83d\ude00")");
  EXPECT_EQ(render("{{ t | tojson }}", R"({"t": {"x": 1e16, "y": 0.1, "z": 100}})"),
            R"({"x": 1e+16, "y": 0.1, "z": 100})");
}

TEST(Jinja, Tests) {
  EXPECT_EQ(render("{{ x is defined }}{{ y is defined }}{{ y is undefined }}", R"({"x": 1})"),
            "TrueFalseTrue");
  EXPECT_EQ(render("{{ none is none }}{{ x is not none }}{{ 'a' is string }}{{ 1 is string }}",
                   R"({"x": 1})"),
            "TrueTrueTrueFalse");
  EXPECT_EQ(render("{{ {} is mapping }}{{ [] is mapping }}{{ [] is iterable }}{{ 1 is iterable }}"
                   "{{ 'a' is sequence }}"),
            "TrueFalseTrueFalseTrue");
  EXPECT_EQ(render("{{ 4 is divisibleby 2 }}{{ 3 is even }}{{ true is true }}{{ 1 is true }}"
                   "{{ false is false }}{{ 1 is number }}{{ 1.5 is integer }}{{ 2 is eq 2 }}"),
            "TrueFalseTrueFalseTrueTrueFalseTrue");
}

TEST(Jinja, MacrosCallBlocksAndGlobals) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Ann') }} {{ greet('Bo', punct='?') }}"),
            "Hi Ann! Hi Bo?");
  EXPECT_EQ(render("{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}in{% endcall %}"),
            "[in]");
  EXPECT_EQ(render("{{ range(3) | list }}{{ range(1, 7, 2) | list }}{{ dict(a=1) }}"),
            "[0, 1, 2][1, 3, 5]{'a': 1}");
  EXPECT_EQ(render("{{ strftime_now('%Y') | length }}"), "4");
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}|{% generation %}g{% endgeneration %}"), "{{ x }}|g");
  EXPECT_EQ(render("{{ 'a\\tb\\u00e9' }}{{ \"q\\\"\" }}"), "a\tbé" "q\"");
}

TEST(Jinja, AttributeAndItemLookup) {
  const char* vars = R"({"m": {"role": "user", "items": 7, "list": [1, {"k": "v"}]}})";
  EXPECT_EQ(render("{{ m.role }}{{ m['role'] }}{{ m.list[1].k }}{{ m.list.0 }}{{ m.missing is defined }}",
                   vars),
            "useruserv1False");
  EXPECT_EQ(render("{{ m['items'] }}|{{ m.get('role') }}{{ m.get('x', 'no') }}{{ m.keys() | list | length }}",
                   vars),
            "7|userno3");
}

TEST(Jinja, ErrorsNameLineAndColumn) {
  EXPECT_THAT(error_of("line one\n{{ 1 + }}"), HasSubstr("line 2, column 8"));
  EXPECT_THAT(error_of("{% if x %}never closed"), HasSubstr("unexpected end of template, expected 'endif'"));
  EXPECT_THAT(error_of("{% for %}"), HasSubstr("line 1, column 8: expected a name"));
  EXPECT_THAT(error_of("{% frob %}"), HasSubstr("unknown statement 'frob'"));
  EXPECT_THAT(error_of("{{ 'unterminated }}"), HasSubstr("unterminated string literal"));
  EXPECT_THAT(error_of("{{ x"), HasSubstr("unclosed '{{' tag"));
  EXPECT_THAT(error_of("\n  {{ x | nosuch }}"), HasSubstr("line 2, column 10: no filter named 'nosuch'"));
  EXPECT_THAT(error_of("{{ 'a' + 1 }}"), HasSubstr("unsupported operand type(s) for +: 'str' and 'int'"));
  EXPECT_THAT(error_of("{{ x.y.z }}", R"({"x": {}})"), HasSubstr("'x.y' is undefined"));
  EXPECT_THAT(error_of("ok\n{{ raise_exception('roles must alternate') }}"),
              HasSubstr("line 2, column 4: the template raised an error: roles must alternate"));
  EXPECT_THAT(error_of("{% set x = 1 %}{% set x.a = 2 %}"), HasSubstr("only a namespace()"));
}

}  // namespace
}  // namespace paceline::jinja
