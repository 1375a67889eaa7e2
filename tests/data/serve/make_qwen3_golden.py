#!/usr/bin/env python3
"""Regenerates qwen3_render.json: conversations (OpenAI chat request
bodies) and the prompt Python Jinja2 renders for each from Qwen3's chat
template (tests/fixtures/model_gen_template.c), in the environment HF
transformers renders chat templates in (trim_blocks, lstrip_blocks,
tojson = json.dumps(ensure_ascii=False)). tests/unit/test_serve_template.c
checks runtime/serve/'s C renderer against it byte for byte.

Usage: python3 tests/data/serve/make_qwen3_golden.py  (Debian python3-jinja2)"""
import ast
import json
import os
import re

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.join(here, '..', '..', 'fixtures', 'model_gen_template.c')
c = open(src, encoding='utf-8').read()
body = c[c.index('ft_fixture_chat_template[] ='):]
body = body[:body.index(';\n')]
template = ''.join(ast.literal_eval('"' + m + '"') for m in re.findall(r'"((?:[^"\\]|\\.)*)"', body))


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=['jinja2.ext.loopcontrols'])
env.filters['tojson'] = tojson
env.globals['raise_exception'] = raise_exception
tmpl = env.from_string(template)

weather = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city, \"now\" — in °C",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                    "days": {"type": "integer", "minimum": 1}},
                   "required": ["city"]}}}
ls = {"type": "function", "function": {"name": "ls", "description": "List files",
                                       "parameters": {"type": "object", "properties": {}}}}
call = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}
call_obj = {"id": "call_2", "type": "function",
            "function": {"name": "ls", "arguments": {"path": "/tmp", "all": True, "n": 3}}}

cases = {
    "user only": {"messages": [{"role": "user", "content": "Hello"}]},
    "system and user": {"messages": [{"role": "system", "content": "Be terse."},
                                     {"role": "user", "content": "Hi\nthere"}]},
    "thinking off": {"messages": [{"role": "user", "content": "Hi"}],
                     "chat_template_kwargs": {"enable_thinking": False}},
    "multi turn": {"messages": [{"role": "user", "content": "A"},
                                {"role": "assistant", "content": "B"},
                                {"role": "user", "content": "C"}]},
    "reasoning after last query": {"messages": [
        {"role": "user", "content": "A"},
        {"role": "assistant", "content": "B", "reasoning_content": "\nthink hard\n"}]},
    "reasoning before last query dropped": {"messages": [
        {"role": "user", "content": "A"},
        {"role": "assistant", "content": "B", "reasoning_content": "old thoughts"},
        {"role": "user", "content": "C"}]},
    "think tags in content": {"messages": [
        {"role": "user", "content": "A"},
        {"role": "assistant", "content": "<think>\nmy reasoning\n</think>\n\nthe answer"}]},
    "tools": {"messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": [weather, ls]},
    "tools with system": {"messages": [{"role": "system", "content": "You are an agent."},
                                       {"role": "user", "content": "Weather?"}],
                          "tools": [weather]},
    "tool round trip": {"messages": [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "reasoning_content": "Need the tool.",
         "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 3}"}],
        "tools": [weather]},
    "parallel calls and results": {"messages": [
        {"role": "user", "content": "Do both"},
        {"role": "assistant", "content": "Sure.", "tool_calls": [call, call_obj]},
        {"role": "tool", "tool_call_id": "call_1", "content": "cold"},
        {"role": "tool", "tool_call_id": "call_2", "content": "a\nb"},
        {"role": "assistant", "content": "Done: cold, a and b."},
        {"role": "user", "content": "Thanks"}],
        "tools": [weather, ls]},
    "multi step tool chain": {"messages": [
        {"role": "user", "content": "Go"},
        {"role": "assistant", "content": "", "reasoning_content": "step 1", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "r1"},
        {"role": "assistant", "content": "", "reasoning_content": "step 2", "tool_calls": [call_obj]},
        {"role": "tool", "tool_call_id": "call_2", "content": "r2"}],
        "tools": [weather, ls]},
    "later system message": {"messages": [{"role": "user", "content": "A"},
                                          {"role": "system", "content": "Now be brief."},
                                          {"role": "user", "content": "B"}]},
    "unicode and escapes": {"messages": [{"role": "user", "content": "naïve “quotes” 日本 \\ \"x\" \t"}],
                            "tools": [{"type": "function", "function": {
                                "name": "f", "description": "ünïcode <b>&</b>",
                                "parameters": {"type": "object", "properties": {}}}}]},
}

out = []
for name, req in cases.items():
    kwargs = dict(req.get("chat_template_kwargs", {}))
    prompt = tmpl.render(messages=req["messages"], tools=req.get("tools"),
                         add_generation_prompt=True, **kwargs)
    out.append({"name": name, "request": req, "prompt": prompt})

with open(os.path.join(here, 'qwen3_render.json'), 'w', encoding='utf-8') as f:
    banner = ('generated by tests/data/serve/make_qwen3_golden.py with Python Jinja2 ' +
              jinja2.__version__ + '; do not edit')
    json.dump({"generated_by": banner, "cases": out}, f, ensure_ascii=False, indent=1)
    f.write('\n')
print(f"wrote {len(out)} cases")
