/* Qwen3's chat template in C (srv_template.h), the family detection and
 * the dispatch to the other families' renderers (srv_template_*.c). The
 * Jinja source this mirrors is tests/fixtures/model_gen_template.c (as
 * Qwen3 checkpoints ship it); each branch below names the template lines
 * it follows. */
#include "srv_template.h"

#include "srv_template_internal.h"

#include <stdlib.h>
#include <string.h>

ft_srv_family_t ft_srv_family_detect(const char *tmpl, int has_chatml_tokens)
{
    /* each family by the markup only its template writes */
    if (tmpl && strstr(tmpl, "<|channel|>") && strstr(tmpl, "<|start|>"))
        return FT_SRV_FAMILY_HARMONY;
    if (tmpl && strstr(tmpl, "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>") &&
        strstr(tmpl, "</think>"))
        return FT_SRV_FAMILY_DEEPSEEK; /* V3.1 (V3 has no <think>, V3.2 writes DSML) */
    if (tmpl && strstr(tmpl, "<arg_key>") && strstr(tmpl, "<|observation|>"))
        return FT_SRV_FAMILY_GLM;
    if (tmpl && strstr(tmpl, "<|im_start|>")) {
        /* Qwen3-Coder's template also shows <function=example_function_name>, but
         * prints the tools as XML (its render_extra_keys macro) after its
         * default system text */
        if (strstr(tmpl, "<function=example_function_name>") && strstr(tmpl, "render_extra_keys") &&
            strstr(tmpl, "You are Qwen, a helpful AI assistant that can interact with a computer"))
            return FT_SRV_FAMILY_QWEN3_CODER;
        if (strstr(tmpl, "<function=example_function_name>") && !strstr(tmpl, "render_extra_keys"))
            return FT_SRV_FAMILY_QWEN35;
        if (strstr(tmpl, "<tool_call>") && strstr(tmpl, "<args-json-object>"))
            return FT_SRV_FAMILY_QWEN3;
        return FT_SRV_FAMILY_CHATML;
    }
    return has_chatml_tokens ? FT_SRV_FAMILY_CHATML : FT_SRV_FAMILY_NONE;
}

const char *ft_srv_family_name(ft_srv_family_t f)
{
    switch (f) {
    case FT_SRV_FAMILY_CHATML:
        return "chatml";
    case FT_SRV_FAMILY_QWEN3:
        return "qwen3";
    case FT_SRV_FAMILY_QWEN35:
        return "qwen3.5";
    case FT_SRV_FAMILY_HARMONY:
        return "harmony";
    case FT_SRV_FAMILY_DEEPSEEK:
        return "deepseek-v3.1";
    case FT_SRV_FAMILY_GLM:
        return "glm-4.5";
    case FT_SRV_FAMILY_QWEN3_CODER:
        return "qwen3-coder";
    case FT_SRV_FAMILY_NONE:
        break;
    }
    return "none";
}

int ft_srv_family_writes_bos(ft_srv_family_t f)
{
    return f == FT_SRV_FAMILY_DEEPSEEK || f == FT_SRV_FAMILY_GLM; /* GLM: [gMASK]<sop> */
}

static const char *const ft_srv_role_names[] = {"system", "user", "assistant", "tool"};

/* Python's s.strip('\n') / s.lstrip('\n') / s.rstrip('\n') as (start, len). */
static void ft_srv_strip_nl(const char *s, size_t n, int left, int right, const char **out,
                            size_t *out_n)
{
    while (left && n && *s == '\n')
        s++, n--;
    while (right && n && s[n - 1] == '\n')
        n--;
    *out = s;
    *out_n = n;
}

/* The template's reasoning split: with no reasoning_content given and
 * "</think>" in the content, reasoning = content.split('</think>')[0]
 * .rstrip('\n').split('<think>')[-1].lstrip('\n'), content =
 * content.split('</think>')[-1].lstrip('\n'). */
static void ft_srv_split_think(const ft_srv_msg_t *m, const char **r, size_t *rn, const char **ct,
                               size_t *cn)
{
    const char *c = m->content;
    *ct = c;
    *cn = strlen(c);
    *r = m->reasoning ? m->reasoning : "";
    *rn = strlen(*r);
    if (m->reasoning) return;
    const char *end = strstr(c, "</think>");
    if (!end) return;
    /* [0]: up to the first </think>; [-1]: after the last one */
    const char *head = c;
    size_t hn = (size_t)(end - c);
    while (hn && head[hn - 1] == '\n')
        hn--;
    for (const char *p = head; p + 7 <= head + hn; p++) /* split('<think>')[-1] */
        if (!memcmp(p, "<think>", 7)) {
            hn -= (size_t)(p + 7 - head);
            head = p + 7;
            p = head - 1;
        }
    ft_srv_strip_nl(head, hn, 1, 0, r, rn);
    const char *last = end;
    for (const char *p = end; (p = strstr(p + 1, "</think>"));)
        last = p;
    const char *tail = last + 8;
    ft_srv_strip_nl(tail, strlen(tail), 1, 0, ct, cn);
}

static int ft_srv_is_tool_response(const char *s)
{
    static const char open[] = "<tool_response>", close[] = "</tool_response>";
    const size_t n = strlen(s);
    return n >= sizeof(open) - 1 && !memcmp(s, open, sizeof(open) - 1) && n >= sizeof(close) - 1 &&
           !memcmp(s + n - (sizeof(close) - 1), close, sizeof(close) - 1);
}

static void ft_srv_render_tools(const ft_srv_conv_t *c, ft_srv_buf_t *b)
{
    ft_srv_buf_puts(b, "<|im_start|>system\n");
    if (c->n_msgs && c->msgs[0].role == FT_SRV_SYSTEM) {
        ft_srv_buf_puts(b, c->msgs[0].content);
        ft_srv_buf_puts(b, "\n\n");
    }
    ft_srv_buf_puts(b, "# Tools\n\nYou may call one or more functions to assist with the user "
                       "query.\n\nYou are provided with function signatures within "
                       "<tools></tools> XML tags:\n<tools>");
    size_t i;
    json_t *t;
    json_array_foreach(c->tools, i, t)
    {
        char *s = ft_srv_tojson(t);
        ft_srv_buf_puts(b, "\n");
        if (s)
            ft_srv_buf_puts(b, s);
        else
            b->oom = 1;
        free(s);
    }
    ft_srv_buf_puts(b, "\n</tools>\n\nFor each function call, return a json object with function "
                       "name and arguments within <tool_call></tool_call> XML tags:\n"
                       "<tool_call>\n{\"name\": <function-name>, \"arguments\": "
                       "<args-json-object>}\n</tool_call><|im_end|>\n");
}

void ft_srv_bounds_mark(ft_srv_bounds_t *bd, size_t off)
{
    if (!bd || off == 0 || (bd->n && off <= bd->off[bd->n - 1])) return;
    if (bd->n == bd->cap) {
        const size_t cap = bd->cap ? 2 * bd->cap : 16;
        size_t *o = realloc(bd->off, cap * sizeof(*o));
        if (!o) {
            bd->oom = 1;
            return;
        }
        bd->off = o;
        bd->cap = cap;
    }
    bd->off[bd->n++] = off;
}

void ft_srv_bounds_free(ft_srv_bounds_t *bd)
{
    free(bd->off);
    bd->off = NULL;
    bd->n = bd->cap = 0;
    bd->oom = 0;
}

static void ft_srv_render_assistant(const ft_srv_conv_t *c, size_t i, size_t last_query,
                                    ft_srv_buf_t *b, ft_srv_bounds_t *bd)
{
    const ft_srv_msg_t *m = &c->msgs[i];
    const char *r, *ct;
    size_t rn, cn;
    ft_srv_split_think(m, &r, &rn, &ct, &cn);
    ft_srv_buf_puts(b, "<|im_start|>assistant\n");
    const int last = i + 1 == c->n_msgs;
    if (i > last_query && (last || rn)) {
        const char *rs, *cs;
        size_t rsn, csn;
        ft_srv_strip_nl(r, rn, 1, 1, &rs, &rsn);
        ft_srv_strip_nl(ct, cn, 1, 0, &cs, &csn);
        ft_srv_buf_puts(b, "<think>\n");
        ft_srv_buf_put(b, rs, rsn);
        ft_srv_buf_puts(b, "\n</think>\n\n");
        ft_srv_buf_put(b, cs, csn);
    } else {
        ft_srv_buf_put(b, ct, cn);
    }
    for (size_t k = 0; k < m->n_calls; k++) {
        if (k > 0 || cn) ft_srv_buf_puts(b, "\n");
        ft_srv_buf_puts(b, "<tool_call>\n{\"name\": \"");
        ft_srv_buf_puts(b, m->calls[k].name);
        ft_srv_buf_puts(b, "\", \"arguments\": ");
        ft_srv_buf_puts(b, m->calls[k].arguments);
        ft_srv_buf_puts(b, "}\n</tool_call>");
        ft_srv_bounds_mark(bd, b->len); /* after each tool call */
    }
    ft_srv_buf_puts(b, "<|im_end|>\n");
}

static void ft_srv_render_qwen3(ft_srv_family_t f, const ft_srv_conv_t *c,
                                int add_generation_prompt, ft_srv_buf_t *b, ft_srv_bounds_t *bd);

int ft_srv_render(ft_srv_family_t f, const ft_srv_conv_t *c, int add_generation_prompt,
                  ft_srv_buf_t *b, ft_srv_error_t *err)
{
    return ft_srv_render_bounds(f, c, add_generation_prompt, b, NULL, err);
}

int ft_srv_render_bounds(ft_srv_family_t f, const ft_srv_conv_t *c, int add_generation_prompt,
                         ft_srv_buf_t *b, ft_srv_bounds_t *bd, ft_srv_error_t *err)
{
    if (f == FT_SRV_FAMILY_NONE) {
        ft_srv_error_set(
            err, 400, "invalid_request_error", "messages",
            "the model has no chat template this server knows (ChatML, Qwen3, Qwen3.5, "
            "Qwen3-Coder, gpt-oss harmony, DeepSeek V3.1, GLM-4.5)");
        return 0;
    }
    if (f == FT_SRV_FAMILY_CHATML && c->tools) {
        ft_srv_error_set(err, 400, "invalid_request_error", "tools",
                         "the model's chat template has no tool-call syntax this server knows; "
                         "send the request without 'tools'");
        return 0;
    }
    /* The other families' renderers record where each message ends: those
     * are their boundaries (a message's end is the next one's start, so
     * before each tool result and after each tool call's message). */
    size_t *ends = NULL;
    if (bd && f != FT_SRV_FAMILY_QWEN3 && f != FT_SRV_FAMILY_CHATML && c->n_msgs &&
        !(ends = calloc(c->n_msgs, sizeof(*ends)))) {
        ft_srv_error_set(err, 500, "server_error", "", "out of memory rendering the prompt");
        return 0;
    }
    int ok = 1;
    switch (f) {
    case FT_SRV_FAMILY_QWEN35:
        ok = ft_srv_render_qwen35(c, add_generation_prompt, b, ends, err);
        break;
    case FT_SRV_FAMILY_HARMONY:
        ok = ft_srv_render_harmony(c, add_generation_prompt, b, ends, err);
        break;
    case FT_SRV_FAMILY_DEEPSEEK:
        ok = ft_srv_render_deepseek(c, add_generation_prompt, b, ends, err);
        break;
    case FT_SRV_FAMILY_GLM:
        ok = ft_srv_render_glm(c, add_generation_prompt, b, ends, err);
        break;
    case FT_SRV_FAMILY_QWEN3_CODER:
        ok = ft_srv_render_qwen3_coder(c, add_generation_prompt, b, ends, err);
        break;
    default:
        ft_srv_render_qwen3(f, c, add_generation_prompt, b, bd);
        break;
    }
    if (ok && ends)
        for (size_t i = 0; i < c->n_msgs; i++)
            ft_srv_bounds_mark(bd, ends[i]);
    free(ends);
    if (!ok) return 0;
    if (b->oom || (bd && bd->oom)) {
        ft_srv_error_set(err, 500, "server_error", "", "out of memory rendering the prompt");
        return 0;
    }
    return 1;
}

/* Qwen3 and plain ChatML. */
static void ft_srv_render_qwen3(ft_srv_family_t f, const ft_srv_conv_t *c,
                                int add_generation_prompt, ft_srv_buf_t *b, ft_srv_bounds_t *bd)
{
    if (c->tools) {
        ft_srv_render_tools(c, b);
    } else if (c->n_msgs && c->msgs[0].role == FT_SRV_SYSTEM) {
        ft_srv_buf_puts(b, "<|im_start|>system\n");
        ft_srv_buf_puts(b, c->msgs[0].content);
        ft_srv_buf_puts(b, "<|im_end|>\n");
    }
    ft_srv_bounds_mark(bd, b->len); /* the system turn: system text and tools */
    /* ns.last_query_index: the last user message that is not only a
     * tool response (Qwen3 renders <think> only for turns after it). */
    size_t last_query = c->n_msgs ? c->n_msgs - 1 : 0;
    for (size_t k = c->n_msgs; k-- > 0;)
        if (c->msgs[k].role == FT_SRV_USER && !ft_srv_is_tool_response(c->msgs[k].content)) {
            last_query = k;
            break;
        }
    for (size_t i = 0; i < c->n_msgs; i++) {
        const ft_srv_msg_t *m = &c->msgs[i];
        ft_srv_bounds_mark(bd, b->len); /* each message's start: before a tool result */
        if (m->role == FT_SRV_USER || (m->role == FT_SRV_SYSTEM && i > 0)) {
            ft_srv_buf_puts(b, "<|im_start|>");
            ft_srv_buf_puts(b, ft_srv_role_names[m->role]);
            ft_srv_buf_puts(b, "\n");
            ft_srv_buf_puts(b, m->content);
            ft_srv_buf_puts(b, "<|im_end|>\n");
        } else if (m->role == FT_SRV_ASSISTANT) {
            if (f == FT_SRV_FAMILY_QWEN3) {
                ft_srv_render_assistant(c, i, last_query, b, bd);
            } else {
                ft_srv_buf_puts(b, "<|im_start|>assistant\n");
                ft_srv_buf_puts(b, m->content);
                ft_srv_buf_puts(b, "<|im_end|>\n");
            }
        } else if (m->role == FT_SRV_TOOL) {
            if (i == 0 || c->msgs[i - 1].role != FT_SRV_TOOL)
                ft_srv_buf_puts(b, "<|im_start|>user");
            ft_srv_buf_puts(b, "\n<tool_response>\n");
            ft_srv_buf_puts(b, m->content);
            ft_srv_buf_puts(b, "\n</tool_response>");
            if (i + 1 == c->n_msgs || c->msgs[i + 1].role != FT_SRV_TOOL)
                ft_srv_buf_puts(b, "<|im_end|>\n");
        }
        ft_srv_bounds_mark(bd, b->len); /* each message's end */
    }
    if (add_generation_prompt) {
        ft_srv_buf_puts(b, "<|im_start|>assistant\n");
        if (c->enable_thinking == 0 && f == FT_SRV_FAMILY_QWEN3)
            ft_srv_buf_puts(b, "<think>\n\n</think>\n\n");
    }
}
