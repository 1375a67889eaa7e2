/* Qwen3.5's chat template in C (srv_template_internal.h): ChatML, the
 * tools block (with its XML call format) before the system text, tool
 * calls as <function=NAME><parameter=P>, <think> blocks after the last
 * query, "<think>\n" opening the reply. The Jinja source this mirrors is
 * tests/data/serve/templates/qwen3_5.jinja (Qwen/Qwen3.5-35B-A3B). */
#include "srv_template_internal.h"

#include <string.h>

static const char ft_srv_qwen35_tools_head[] =
    "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>";
static const char ft_srv_qwen35_tools_tail[] =
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO "
    "suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>"
    "\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second "
    "parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n"
    "<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner "
    "<function=...></function> block must be nested within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n- You may provide optional reasoning for your "
    "function call in natural language BEFORE the function call, but NOT after\n- If there is "
    "no function call available, answer the question like normal with your current knowledge "
    "and do not tell the user about function calls\n</IMPORTANT>";

static void ft_srv_trimmed(const ft_srv_msg_t *m, const char **s, size_t *n)
{
    ft_srv_py_strip(m->content, strlen(m->content), s, n);
}

static int ft_srv_is_tool_response_text(const char *s, size_t n)
{
    static const char open[] = "<tool_response>", close[] = "</tool_response>";
    return n >= sizeof(open) - 1 && !memcmp(s, open, sizeof(open) - 1) && n >= sizeof(close) - 1 &&
           !memcmp(s + n - (sizeof(close) - 1), close, sizeof(close) - 1);
}

/* One call: <tool_call>\n<function=NAME>\n, a <parameter=K>\nV\n</parameter>\n
 * per argument (strings as they are, containers as tojson, other scalars
 * as Python's str), </function>\n</tool_call>. */
static int ft_srv_qwen35_call(const ft_srv_tool_call_t *call, ft_srv_buf_t *b, ft_srv_error_t *err)
{
    ft_srv_buf_puts(b, "<tool_call>\n<function=");
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
        ft_srv_buf_puts(b, "<parameter=");
        ft_srv_buf_puts(b, k);
        ft_srv_buf_puts(b, ">\n");
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

static int ft_srv_qwen35_assistant(const ft_srv_msg_t *m, int think, ft_srv_buf_t *b,
                                   ft_srv_error_t *err)
{
    const char *ct, *r = "";
    size_t cn, rn = 0;
    ft_srv_trimmed(m, &ct, &cn);
    if (m->reasoning) {
        r = m->reasoning;
        rn = strlen(r);
    } else {
        ft_srv_split_think_text(ct, cn, &r, &rn, &ct, &cn);
    }
    ft_srv_py_strip(r, rn, &r, &rn);
    ft_srv_buf_puts(b, "<|im_start|>assistant\n");
    if (think) {
        ft_srv_buf_puts(b, "<think>\n");
        ft_srv_buf_put(b, r, rn);
        ft_srv_buf_puts(b, "\n</think>\n\n");
    }
    ft_srv_buf_put(b, ct, cn);
    const char *ts;
    size_t tn;
    ft_srv_py_strip(ct, cn, &ts, &tn);
    for (size_t k = 0; k < m->n_calls; k++) {
        ft_srv_buf_puts(b, k ? "\n" : tn ? "\n\n" : "");
        if (!ft_srv_qwen35_call(&m->calls[k], b, err)) return 0;
    }
    ft_srv_buf_puts(b, "<|im_end|>\n");
    return 1;
}

int ft_srv_render_qwen35(const ft_srv_conv_t *c, int add_generation_prompt, ft_srv_buf_t *b,
                         size_t *ends, ft_srv_error_t *err)
{
    if (!c->n_msgs) return ft_srv_template_refuse(err, "No messages provided.");
    const int sys0 = c->msgs[0].role == FT_SRV_SYSTEM;
    const char *s;
    size_t n;
    if (ft_srv_n_tools(c)) {
        ft_srv_buf_puts(b, ft_srv_qwen35_tools_head);
        size_t i;
        json_t *t;
        json_array_foreach(c->tools, i, t)
        {
            ft_srv_buf_puts(b, "\n");
            ft_srv_buf_tojson(b, t);
        }
        ft_srv_buf_puts(b, ft_srv_qwen35_tools_tail);
        if (sys0) {
            ft_srv_trimmed(&c->msgs[0], &s, &n);
            if (n) ft_srv_buf_puts(b, "\n\n");
            ft_srv_buf_put(b, s, n);
        }
        ft_srv_buf_puts(b, "<|im_end|>\n");
    } else if (sys0) {
        ft_srv_trimmed(&c->msgs[0], &s, &n);
        ft_srv_buf_puts(b, "<|im_start|>system\n");
        ft_srv_buf_put(b, s, n);
        ft_srv_buf_puts(b, "<|im_end|>\n");
    }
    /* ns.last_query_index: the last user message that is not only tool responses */
    size_t last_query = 0;
    int found = 0;
    for (size_t k = c->n_msgs; k-- > 0 && !found;) {
        if (c->msgs[k].role != FT_SRV_USER) continue;
        ft_srv_trimmed(&c->msgs[k], &s, &n);
        if (!ft_srv_is_tool_response_text(s, n)) {
            found = 1;
            last_query = k;
        }
    }
    if (!found) return ft_srv_template_refuse(err, "No user query found in messages.");
    for (size_t i = 0; i < c->n_msgs; i++) {
        const ft_srv_msg_t *m = &c->msgs[i];
        ft_srv_trimmed(m, &s, &n);
        switch (m->role) {
        case FT_SRV_SYSTEM:
            if (i) return ft_srv_template_refuse(err, "System message must be at the beginning.");
            break;
        case FT_SRV_USER:
            ft_srv_buf_puts(b, "<|im_start|>user\n");
            ft_srv_buf_put(b, s, n);
            ft_srv_buf_puts(b, "<|im_end|>\n");
            break;
        case FT_SRV_ASSISTANT:
            if (!ft_srv_qwen35_assistant(m, i > last_query, b, err)) return 0;
            break;
        case FT_SRV_TOOL:
            if (i > 0 && c->msgs[i - 1].role != FT_SRV_TOOL) ft_srv_buf_puts(b, "<|im_start|>user");
            ft_srv_buf_puts(b, "\n<tool_response>\n");
            ft_srv_buf_put(b, s, n);
            ft_srv_buf_puts(b, "\n</tool_response>");
            if (i + 1 == c->n_msgs || c->msgs[i + 1].role != FT_SRV_TOOL)
                ft_srv_buf_puts(b, "<|im_end|>\n");
            break;
        }
        if (ends) ends[i] = b->len;
    }
    if (add_generation_prompt) {
        ft_srv_buf_puts(b, "<|im_start|>assistant\n");
        ft_srv_buf_puts(b, c->enable_thinking == 0 ? "<think>\n\n</think>\n\n" : "<think>\n");
    }
    return 1;
}
