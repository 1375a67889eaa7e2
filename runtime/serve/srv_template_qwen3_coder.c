/* Qwen3-Coder's chat template in C (srv_template_internal.h): ChatML, the
 * system text (or a default one when there are tools) before the tools,
 * each tool written as XML (<function><name>, <parameters><parameter> with
 * its type, description and every other schema key), calls as
 * <function=NAME><parameter=P>, no reasoning. The Jinja source this
 * mirrors is tests/data/serve/templates/qwen3_coder.jinja
 * (Qwen/Qwen3-Coder-30B-A3B-Instruct). */
#include "srv_template_internal.h"

#include <string.h>

static const char ft_srv_coder_default_system[] =
    "You are Qwen, a helpful AI assistant that can interact with a computer to solve tasks.";
static const char ft_srv_coder_tools_tail[] =
    "\n</tools>\n\nIf you choose to call a tool ONLY reply in the following format with NO "
    "suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>"
    "\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nvalue_2\n</parameter>\n"
    "</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the "
    "specified format: the tool calling block MUST begin with an opening <tool_call> tag and "
    "end with a closing </tool_call> tag.\n- Required parameters MUST be specified\n- You may "
    "provide optional reasoning for your function call in natural language BEFORE the function "
    "call, but NOT after\n- If there is no function call available, answer the question like "
    "normal with your current knowledge and do not tell the user about function calls\n"
    "</IMPORTANT>";

/* Jinja's `| string` of a value: str() (repr for lists and dicts). */
static void ft_srv_coder_str(ft_srv_buf_t *b, const json_t *v)
{
    if (json_is_array(v) || json_is_object(v))
        ft_srv_py_repr(b, v);
    else
        ft_srv_py_str(b, v);
}

/* (value | string) | trim */
static void ft_srv_coder_trimmed(ft_srv_buf_t *b, const json_t *v)
{
    if (!json_is_string(v)) {
        ft_srv_coder_str(b, v);
        return;
    }
    const char *s;
    size_t n;
    ft_srv_py_strip(json_string_value(v), json_string_length(v), &s, &n);
    ft_srv_buf_put(b, s, n);
}

/* The render_extra_keys macro: \n<K>V</K> for each key of o not in
 * handled (NULL-terminated); containers as tojson, scalars as str(). */
static void ft_srv_coder_extra(ft_srv_buf_t *b, const json_t *o, const char *const *handled)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        int skip = 0;
        for (const char *const *h = handled; *h && !skip; h++)
            skip = !strcmp(*h, k);
        if (skip) continue;
        ft_srv_buf_printf(b, "\n<%s>", k);
        if (json_is_object(v) || json_is_array(v))
            ft_srv_buf_tojson(b, v);
        else
            ft_srv_py_str(b, v);
        ft_srv_buf_printf(b, "</%s>", k);
    }
}

static void ft_srv_coder_tool(ft_srv_buf_t *b, const json_t *tool)
{
    const json_t *fn = json_object_get(tool, "function");
    if (fn) tool = fn;
    ft_srv_buf_puts(b, "\n<function>\n<name>");
    ft_srv_coder_str(b, json_object_get(tool, "name"));
    ft_srv_buf_puts(b, "</name>");
    const json_t *d = json_object_get(tool, "description");
    if (d) {
        ft_srv_buf_puts(b, "\n<description>");
        ft_srv_coder_trimmed(b, d);
        ft_srv_buf_puts(b, "</description>");
    }
    ft_srv_buf_puts(b, "\n<parameters>");
    const json_t *params = json_object_get(tool, "parameters");
    const json_t *props = json_object_get(params, "properties");
    if (json_is_object(params) && json_is_object(props)) {
        const char *k;
        json_t *p;
        json_object_foreach((json_t *)props, k, p)
        {
            ft_srv_buf_puts(b, "\n<parameter>\n<name>");
            ft_srv_buf_puts(b, k);
            ft_srv_buf_puts(b, "</name>");
            const json_t *t = json_object_get(p, "type");
            if (t) {
                ft_srv_buf_puts(b, "\n<type>");
                ft_srv_coder_str(b, t);
                ft_srv_buf_puts(b, "</type>");
            }
            const json_t *pd = json_object_get(p, "description");
            if (pd) {
                ft_srv_buf_puts(b, "\n<description>");
                ft_srv_coder_trimmed(b, pd);
                ft_srv_buf_puts(b, "</description>");
            }
            static const char *const handled[] = {"name", "type", "description", NULL};
            if (json_is_object(p)) ft_srv_coder_extra(b, p, handled);
            ft_srv_buf_puts(b, "\n</parameter>");
        }
    }
    static const char *const handled_params[] = {"type", "properties", NULL};
    if (json_is_object(params)) ft_srv_coder_extra(b, params, handled_params);
    ft_srv_buf_puts(b, "\n</parameters>");
    static const char *const handled_tool[] = {"type", "name", "description", "parameters", NULL};
    ft_srv_coder_extra(b, tool, handled_tool);
    ft_srv_buf_puts(b, "\n</function>");
}

static int ft_srv_coder_call(const ft_srv_tool_call_t *call, ft_srv_buf_t *b, ft_srv_error_t *err)
{
    ft_srv_buf_puts(b, "\n<tool_call>\n<function=");
    ft_srv_buf_puts(b, call->name);
    ft_srv_buf_puts(b, ">\n");
    json_t *args = ft_srv_call_args(call->arguments);
    if (!json_is_object(args)) {
        json_decref(args);
        ft_srv_error_set(err, 400, "invalid_request_error", "messages",
                         "the arguments of the call to '%.64s' must be a JSON object for this "
                         "model's chat template",
                         call->name);
        return 0;
    }
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v)
    {
        ft_srv_buf_printf(b, "<parameter=%s>\n", k);
        if (json_is_object(v) || json_is_array(v))
            ft_srv_buf_tojson(b, v);
        else
            ft_srv_py_str(b, v);
        ft_srv_buf_puts(b, "\n</parameter>\n");
    }
    json_decref(args);
    ft_srv_buf_puts(b, "</function>\n</tool_call>");
    return 1;
}

int ft_srv_render_qwen3_coder(const ft_srv_conv_t *c, int add_generation_prompt, ft_srv_buf_t *b,
                              size_t *ends, ft_srv_error_t *err)
{
    const int sys0 = c->n_msgs && c->msgs[0].role == FT_SRV_SYSTEM;
    const size_t n_tools = ft_srv_n_tools(c);
    if (sys0) {
        ft_srv_buf_puts(b, "<|im_start|>system\n");
        ft_srv_buf_puts(b, c->msgs[0].content);
    } else if (n_tools) {
        ft_srv_buf_puts(b, "<|im_start|>system\n");
        ft_srv_buf_puts(b, ft_srv_coder_default_system);
    }
    if (n_tools) {
        ft_srv_buf_puts(b, "\n\n# Tools\n\nYou have access to the following tools:\n\n<tools>");
        size_t i;
        json_t *t;
        json_array_foreach(c->tools, i, t) ft_srv_coder_tool(b, t);
        ft_srv_buf_puts(b, ft_srv_coder_tools_tail);
    }
    if (sys0 || n_tools) ft_srv_buf_puts(b, "<|im_end|>\n");
    if (sys0 && ends) ends[0] = b->len;
    static const char *const roles[] = {"system", "user", "assistant", "tool"};
    for (size_t i = sys0; i < c->n_msgs; i++) {
        const ft_srv_msg_t *m = &c->msgs[i];
        if (m->role == FT_SRV_ASSISTANT && m->n_calls) {
            ft_srv_buf_puts(b, "<|im_start|>assistant");
            const char *s;
            size_t n;
            ft_srv_py_strip(m->content, strlen(m->content), &s, &n);
            if (n) {
                ft_srv_buf_puts(b, "\n");
                ft_srv_buf_put(b, s, n);
                ft_srv_buf_puts(b, "\n");
            }
            for (size_t k = 0; k < m->n_calls; k++)
                if (!ft_srv_coder_call(&m->calls[k], b, err)) return 0;
            ft_srv_buf_puts(b, "<|im_end|>\n");
        } else if (m->role == FT_SRV_TOOL) {
            if (i > (size_t)sys0 && c->msgs[i - 1].role != FT_SRV_TOOL)
                ft_srv_buf_puts(b, "<|im_start|>user\n");
            ft_srv_buf_puts(b, "<tool_response>\n");
            ft_srv_buf_puts(b, m->content);
            ft_srv_buf_puts(b, "\n</tool_response>\n");
            if (i + 1 == c->n_msgs || c->msgs[i + 1].role != FT_SRV_TOOL)
                ft_srv_buf_puts(b, "<|im_end|>\n");
        } else {
            ft_srv_buf_puts(b, "<|im_start|>");
            ft_srv_buf_puts(b, roles[m->role]);
            ft_srv_buf_puts(b, "\n");
            ft_srv_buf_puts(b, m->content);
            ft_srv_buf_puts(b, "<|im_end|>\n");
        }
        if (ends) ends[i] = b->len;
    }
    if (add_generation_prompt) ft_srv_buf_puts(b, "<|im_start|>assistant\n");
    return 1;
}
