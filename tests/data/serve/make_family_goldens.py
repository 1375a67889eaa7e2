#!/usr/bin/env python3
"""Renders the model families' own chat templates (tests/data/serve/templates/,
ORIGIN.md names where each comes from) with Python Jinja2 on a corpus of
conversations (OpenAI chat request bodies), in the environment HF
transformers renders chat templates in: an ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks and loopcontrols, tojson = json.dumps
(ensure_ascii=False), raise_exception, strftime_now.

Each case's request goes through the same reading the server applies
before its C renderer runs (runtime/serve/srv_openai_req.c and the
family's renderer): null content is "", and the template gets
  - qwen3_5, qwen3_coder, gpt_oss, glm4_6: tool-call arguments as objects (the JSON text
    parsed, as transformers' chat-template docs ask), gpt_oss: the
    reasoning as the message's "thinking";
  - deepseek_v3_1: arguments as JSON text, bos_token "<｜begin▁of▁sentence｜>".
A case whose rendering raises (the template refuses it) is recorded
with "error" instead of "prompt"; the C renderer must refuse it too. One
that fails only on an undefined field (gpt-oss's tool namespace needs a
description for every parameter) is rendered again with such fields as
"" and marked "lenient": the server accepts those tools.

tests/unit/test_serve_family_template.c checks the C renderers against
the committed <family>_render.json byte for byte; the ctest
serve_family_goldens_regen runs this script into a temporary directory
(--out DIR) and compares, so a template or corpus change cannot drift.

Usage: python3 tests/data/serve/make_family_goldens.py [--out DIR]
(Debian python3-jinja2)"""
import copy
import json
import os
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

here = os.path.dirname(os.path.abspath(__file__))
# gpt-oss prints the date; the goldens pin it (the C test passes the same)
TODAY = "2026-01-15"


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def strftime_now(fmt):
    assert fmt == "%Y-%m-%d"
    return TODAY


class LenientUndefined(jinja2.Undefined):
    """An undefined value that concatenates as "" (the server renders a
    missing description as empty where the template would fail)."""
    def __add__(self, other):
        return '' + str(other)

    def __radd__(self, other):
        return str(other) + ''


def load(name, lenient=False):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=['jinja2.ext.loopcontrols'],
                                        **({'undefined': LenientUndefined} if lenient else {}))
    env.filters['tojson'] = tojson
    env.globals['raise_exception'] = raise_exception
    env.globals['strftime_now'] = strftime_now
    with open(os.path.join(here, 'templates', name), encoding='utf-8') as f:
        return env.from_string(f.read())


FAMILIES = {
    "qwen3_5": {"template": "qwen3_5.jinja", "args": "object"},
    "gpt_oss": {"template": "gpt_oss.jinja", "args": "object", "thinking": True},
    "deepseek_v3_1": {"template": "deepseek_v3_1.jinja", "args": "text",
                      "bos_token": "<｜begin▁of▁sentence｜>"},
    "glm4_6": {"template": "glm4_6.jinja", "args": "object"},
    "qwen3_coder": {"template": "qwen3_coder.jinja", "args": "object"},
}


def template_messages(fam, req):
    out = []
    for m in copy.deepcopy(req["messages"]):
        if m.get("content") is None:
            m["content"] = ""
        if m.get("role") == "developer":
            m["role"] = "system"
        for tc in m.get("tool_calls") or []:
            fn = tc["function"]
            a = fn.get("arguments")
            if fam["args"] == "object" and isinstance(a, str):
                try:
                    fn["arguments"] = json.loads(a)
                except ValueError:
                    pass
            elif fam["args"] == "text" and not isinstance(a, str):
                fn["arguments"] = json.dumps(a, ensure_ascii=False)
        if fam.get("thinking") and "reasoning_content" in m:
            r = m.pop("reasoning_content")
            if r is not None:
                m["thinking"] = r
        out.append(m)
    return out


weather = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city, \"now\" — in °C",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city"},
        "days": {"type": "integer", "minimum": 1, "description": "How many days"}},
        "required": ["city"]}}}
ls = {"type": "function", "function": {"name": "ls", "description": "List files",
                                       "parameters": {"type": "object", "properties": {}}}}
schema_zoo = {"type": "function", "function": {
    "name": "zoo", "description": "Every schema shape",
    "parameters": {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags"},
        "counts": {"type": "array", "items": {"type": "integer"}, "description": "Counts",
                   "nullable": True},
        "flags": {"type": "array", "items": {"type": "boolean"}, "description": "Flags"},
        "points": {"type": "array", "items": {"type": "object", "properties": {
            "x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]},
            "description": "Points"},
        "anything": {"type": "array", "description": "Anything"},
        "mode": {"type": "string", "enum": ["fast", "slow"], "description": "Mode",
                 "default": "fast"},
        "note": {"type": "string", "nullable": True, "description": "A note"},
        "ratio": {"type": "number", "description": "Ratio", "default": 0.5},
        "on": {"type": "boolean", "description": "On", "default": False},
        "union": {"type": ["string", "integer"], "description": "A union"},
        "single": {"type": ["string"], "description": "One type in a list"},
        "nested": {"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"],
            "description": "Nested"},
        "empty_obj": {"type": "object", "description": "Free-form"},
        "choice": {"oneOf": [{"type": "string"}, {"type": "integer"}],
                   "description": "One of two"},
        "obj_choice": {"oneOf": [{"type": "object"}, {"type": "string"}],
                       "description": "Object or string"},
        "described_choice": {"oneOf": [{"type": "string", "description": "a name",
                                        "default": "x"}, {"type": "number"}],
                             "description": "One of two, described"},
        "untyped": {"description": "No type"}},
        "required": ["tags", "mode"]}}}
no_params = {"type": "function", "function": {"name": "now", "description": "The time"}}
extra_keys = {"type": "function", "strict": True, "function": {
    "name": "edit", "description": "  Edit a file.\n", "strict": False,
    "parameters": {"type": "object", "properties": {
        "path": {"type": "string", "description": " The path ", "minLength": 1,
                 "examples": ["a.txt", "it's \"b\""], "default": None},
        "mode": {"type": ["string", "null"], "enum": ["w", "a"], "nullable": True},
        "n": {"type": "integer", "maximum": 1e3, "format": "int32"},
        "opts": {"type": "object", "properties": {"x": {"type": "boolean"}}}},
        "required": ["path"], "additionalProperties": False}}}
call = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}
call_obj = {"id": "call_2", "type": "function",
            "function": {"name": "ls", "arguments": {"path": "/tmp", "all": True, "n": 3}}}
call_types = {"id": "call_3", "type": "function", "function": {
    "name": "zoo", "arguments": "{\"tags\": [\"a\", \"b\"], \"mode\": \"slow\", \"ratio\": 0.25, "
    "\"on\": false, \"note\": null, \"nested\": {\"a\": \"x\\ny\", \"b\": 2}, "
    "\"count\": 7, \"big\": 1e+22, \"text\": \"line 1\\nline 2\"}"}}

CASES = {
    "user only": {"messages": [{"role": "user", "content": "Hello"}]},
    "system and user": {"messages": [{"role": "system", "content": "Be terse."},
                                     {"role": "user", "content": "Hi\nthere"}]},
    "developer role": {"messages": [{"role": "developer", "content": "Dev rules."},
                                    {"role": "user", "content": "Hi"}]},
    "thinking off": {"messages": [{"role": "user", "content": "Hi"}],
                     "chat_template_kwargs": {"enable_thinking": False}},
    "thinking on": {"messages": [{"role": "user", "content": "Hi"}],
                    "chat_template_kwargs": {"enable_thinking": True}},
    "reasoning effort high": {"messages": [{"role": "user", "content": "Prove it"}],
                              "reasoning_effort": "high"},
    "multi turn": {"messages": [{"role": "user", "content": "A"},
                                {"role": "assistant", "content": "B"},
                                {"role": "user", "content": "C"}]},
    "whitespace around content": {"messages": [
        {"role": "system", "content": "  sys \n"},
        {"role": "user", "content": "\n  A  \n"},
        {"role": "assistant", "content": " B\u00a0"},
        {"role": "user", "content": "C\u2028"}]},
    "reasoning after last query": {"messages": [
        {"role": "user", "content": "A"},
        {"role": "assistant", "content": "B", "reasoning_content": "\nthink hard\n"}]},
    "reasoning before last query dropped": {"messages": [
        {"role": "user", "content": "A"},
        {"role": "assistant", "content": "B", "reasoning_content": "old thoughts"},
        {"role": "user", "content": "C"}]},
    "think tags in content": {"messages": [
        {"role": "user", "content": "A"},
        {"role": "assistant", "content": "<think>\nmy reasoning\n</think>\n\nthe answer"},
        {"role": "user", "content": "B"}]},
    "tools": {"messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": [weather, ls]},
    "tools with system": {"messages": [{"role": "system", "content": "You are an agent."},
                                       {"role": "user", "content": "Weather?"}],
                          "tools": [weather]},
    "tool schema shapes": {"messages": [{"role": "user", "content": "x"}],
                           "tools": [schema_zoo, no_params]},
    "tool schema extra keys": {"messages": [{"role": "system", "content": "S"},
                                            {"role": "user", "content": "x"}],
                               "tools": [extra_keys]},
    "tool round trip": {"messages": [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "reasoning_content": "Need the tool.",
         "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 3}"}],
        "tools": [weather]},
    "content before a call": {"messages": [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}],
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
        {"role": "assistant", "content": "", "reasoning_content": "step 2",
         "tool_calls": [call_obj]},
        {"role": "tool", "tool_call_id": "call_2", "content": "r2"},
        {"role": "assistant", "content": "All done.", "reasoning_content": "wrap up"}],
        "tools": [weather, ls]},
    "argument types": {"messages": [
        {"role": "user", "content": "zoo"},
        {"role": "assistant", "content": None, "tool_calls": [call_types]},
        {"role": "tool", "tool_call_id": "call_3", "content": "ok \"quoted\"\n"}],
        "tools": [schema_zoo]},
    "later system message": {"messages": [{"role": "system", "content": "First."},
                                          {"role": "user", "content": "A"},
                                          {"role": "system", "content": "Now be brief."},
                                          {"role": "user", "content": "B"}]},
    "channel tags in content": {"messages": [
        {"role": "user", "content": "A"},
        {"role": "assistant", "content": "<|channel|>final<|message|>B"},
        {"role": "user", "content": "C"}]},
    "no user query": {"messages": [{"role": "system", "content": "S"}]},
    "unicode and escapes": {"messages": [{"role": "user", "content": "naïve “quotes” 日本 \\ \"x\" \t"}],
                            "tools": [{"type": "function", "function": {
                                "name": "f", "description": "ünïcode <b>&</b>",
                                "parameters": {"type": "object", "properties": {
                                    "s": {"type": "string", "description": "ctl \x01 \u2028"}}}}}]},
}


def render(fam, req, lenient=False):
    kwargs = {}
    if "chat_template_kwargs" in req:
        kwargs.update(req["chat_template_kwargs"])
    if req.get("reasoning_effort") in ("low", "medium", "high"):
        kwargs["reasoning_effort"] = req["reasoning_effort"]
    if "bos_token" in fam:
        kwargs["bos_token"] = fam["bos_token"]
    return load(fam["template"], lenient).render(messages=template_messages(fam, req),
                                        tools=req.get("tools"), add_generation_prompt=True,
                                        **kwargs)


def main():
    out_dir = here
    if len(sys.argv) == 3 and sys.argv[1] == "--out":
        out_dir = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit("usage: make_family_goldens.py [--out DIR]")
    for name, fam in FAMILIES.items():
        cases = []
        for cname, req in CASES.items():
            case = {"name": cname, "request": req}
            try:
                case["prompt"] = render(fam, req)
            except jinja2.exceptions.UndefinedError as e:
                # the template fails on a missing field (gpt-oss: a parameter
                # without a description); the server renders it as empty
                case["prompt"] = render(fam, req, lenient=True)
                case["lenient"] = str(e)
            except jinja2.exceptions.TemplateError as e:
                case["error"] = str(e)
            cases.append(case)
        path = os.path.join(out_dir, name + '_render.json')
        with open(path, 'w', encoding='utf-8') as f:
            banner = ('generated by tests/data/serve/make_family_goldens.py from templates/' +
                      fam["template"] + ' with Python Jinja2 ' + jinja2.__version__ +
                      '; do not edit')
            json.dump({"generated_by": banner, "family": name, "today": TODAY, "cases": cases},
                      f, ensure_ascii=False, indent=1)
            f.write('\n')
        print(f"{path}: {len(cases)} cases, "
              f"{sum('error' in c for c in cases)} refused by the template")


main()
