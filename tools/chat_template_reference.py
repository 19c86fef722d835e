#!/usr/bin/env python3
"""Renders the Qwen3 chat template with jinja2 configured the way Hugging Face transformers does.

A development aid for src/model/chat_template.cpp: the authoritative fixtures come from real
transformers (tests/fixtures/chat_template/cases.json). Needs python3-jinja2.

Input (a file argument or stdin): one case object or an array of them, each
  {"messages": [...], "tools": [...] | null, "add_generation_prompt": bool,
   "enable_thinking": true | false | null}
where a null enable_thinking means "not passed". Output: the rendered text of a single case, or,
for an array, the same array with "expected" filled in (and "error" where jinja2 raised).
"""
import json
import pathlib
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

CONFIG = pathlib.Path(__file__).resolve().parent.parent / "third_party/qwen3-tokenizer/tokenizer_config.json"


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def compile_template():
    source = json.loads(CONFIG.read_text(encoding="utf-8"))["chat_template"]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env.from_string(source)


def render(template, case):
    kwargs = {}
    if case.get("enable_thinking") is not None:
        kwargs["enable_thinking"] = case["enable_thinking"]
    tools = case.get("tools")
    return template.render(messages=case["messages"], tools=tools, documents=None,
                           add_generation_prompt=case.get("add_generation_prompt", True), **kwargs)


def main():
    text = open(sys.argv[1], encoding="utf-8").read() if len(sys.argv) > 1 else sys.stdin.read()
    data = json.loads(text)
    template = compile_template()
    if isinstance(data, dict):
        sys.stdout.write(render(template, data))
        return
    for case in data:
        try:
            case["expected"] = render(template, case)
        except Exception as e:  # noqa: BLE001 - reported per case
            case["error"] = f"{type(e).__name__}: {e}"
    json.dump(data, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
