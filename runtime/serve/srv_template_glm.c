/* GLM-4.5/4.6's chat template in C (srv_template_internal.h): [gMASK]<sop>,
 * a tools block as its own <|system|> turn, <|user|>/<|assistant|>/
 * <|observation|> turns, "<think>...</think>" on every reply (empty but for
 * the turns after the last user message), calls as <tool_call>NAME
 * <arg_key>K</arg_key><arg_value>V</arg_value>. The Jinja source this
 * mirrors is tests/data/serve/templates/glm4_6.jinja (zai-org/GLM-4.6). */
#include "srv_template_internal.h"

#include <string.h>

static const char ft_srv_glm_tools_head[] =
    "<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user "
    "query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n";
static const char ft_srv_glm_tools_tail[] =
    "</tools>\n\nFor each function call, output the function name and arguments within the "
    "following XML format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n"
    "<arg_value>{arg-value-1}</arg_value>\n<arg_key>{arg-key-2}</arg_key>\n"
    "<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>";

static int ft_srv_glm_call(const ft_srv_tool_call_t *call, ft_srv_buf_t *b, ft_srv_error_t *err)
{
    ft_srv_buf_puts(b, "\n<tool_call>");
    ft_srv_buf_puts(b, call->name);
    ft_srv_buf_puts(b, "\n");
    json_t *args = ft_srv_call_args(call->arguments);
    if (args && !json_is_object(args) && !json_is_null(args)) {
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
        ft_srv_buf_puts(b, "<arg_key>");
        ft_srv_buf_puts(b, k);
        ft_srv_buf_puts(b, "</arg_key>\n<arg_value>");
        if (json_is_string(v))
            ft_srv_buf_put(b, json_string_value(v), json_string_length(v));
        else
            ft_srv_buf_tojson(b, v);
        ft_srv_buf_puts(b, "</arg_value>\n");
    }
    json_decref(args);
    ft_srv_buf_puts(b, "</tool_call>");
    return 1;
}

static int ft_srv_glm_assistant(const ft_srv_msg_t *m, int after_last_user, ft_srv_buf_t *b,
                                ft_srv_error_t *err)
{
    const char *ct = m->content, *r = "";
    size_t cn = strlen(ct), rn = 0;
    if (m->reasoning) {
        r = m->reasoning;
        rn = strlen(r);
    } else {
        ft_srv_split_think_text(ct, cn, &r, &rn, &ct, &cn);
    }
    ft_srv_buf_puts(b, "<|assistant|>");
    if (after_last_user && rn) {
        ft_srv_py_strip(r, rn, &r, &rn);
        ft_srv_buf_puts(b, "\n<think>");
        ft_srv_buf_put(b, r, rn);
        ft_srv_buf_puts(b, "</think>");
    } else {
        ft_srv_buf_puts(b, "\n<think></think>");
    }
    ft_srv_py_strip(ct, cn, &ct, &cn);
    if (cn) {
        ft_srv_buf_puts(b, "\n");
        ft_srv_buf_put(b, ct, cn);
    }
    for (size_t k = 0; k < m->n_calls; k++)
        if (!ft_srv_glm_call(&m->calls[k], b, err)) return 0;
    return 1;
}

int ft_srv_render_glm(const ft_srv_conv_t *c, int add_generation_prompt, ft_srv_buf_t *b,
                      size_t *ends, ft_srv_error_t *err)
{
    ft_srv_buf_puts(b, "[gMASK]<sop>");
    if (ft_srv_n_tools(c)) {
        ft_srv_buf_puts(b, ft_srv_glm_tools_head);
        size_t i;
        json_t *t;
        json_array_foreach(c->tools, i, t)
        {
            ft_srv_buf_tojson(b, t);
            ft_srv_buf_puts(b, "\n");
        }
        ft_srv_buf_puts(b, ft_srv_glm_tools_tail);
    }
    size_t last_user = 0;
    int any_user = 0;
    for (size_t i = 0; i < c->n_msgs; i++)
        if (c->msgs[i].role == FT_SRV_USER) last_user = i, any_user = 1;
    for (size_t i = 0; i < c->n_msgs; i++) {
        const ft_srv_msg_t *m = &c->msgs[i];
        switch (m->role) {
        case FT_SRV_USER: {
            ft_srv_buf_puts(b, "<|user|>\n");
            ft_srv_buf_puts(b, m->content);
            const size_t n = strlen(m->content);
            if (c->enable_thinking == 0 && !(n >= 8 && !memcmp(m->content + n - 8, "/nothink", 8)))
                ft_srv_buf_puts(b, "/nothink");
            break;
        }
        case FT_SRV_ASSISTANT:
            if (!ft_srv_glm_assistant(m, !any_user || i > last_user, b, err)) return 0;
            break;
        case FT_SRV_TOOL:
            if (i == 0 || c->msgs[i - 1].role != FT_SRV_TOOL) ft_srv_buf_puts(b, "<|observation|>");
            ft_srv_buf_puts(b, "\n<tool_response>\n");
            ft_srv_buf_puts(b, m->content);
            ft_srv_buf_puts(b, "\n</tool_response>");
            break;
        case FT_SRV_SYSTEM:
            ft_srv_buf_puts(b, "<|system|>\n");
            ft_srv_buf_puts(b, m->content);
            break;
        }
        if (ends) ends[i] = b->len;
    }
    if (add_generation_prompt) {
        ft_srv_buf_puts(b, "<|assistant|>");
        if (c->enable_thinking == 0) ft_srv_buf_puts(b, "\n<think></think>");
    }
    return 1;
}
