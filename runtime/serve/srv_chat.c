/* Chat request -> prompt tokens (srv_chat.h). */
#include "srv_chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ft_srv_model_init(ft_srv_model_t *m, ft_engine_t *engine, uint32_t n_ctx)
{
    m->engine = engine;
    m->n_vocab = ft_engine_info(engine)->vocab_size;
    m->n_ctx = n_ctx;
    /* a vocabulary with both ChatML markers as single special tokens */
    int chatml = 1;
    static const char *const marks[] = {"<|im_start|>", "<|im_end|>"};
    for (int i = 0; i < 2; i++) {
        int32_t *ids = NULL;
        uint32_t n = 0;
        ft_status_t st =
            ft_engine_tokenize(engine, marks[i], strlen(marks[i]), FT_TOKENIZE_SPECIAL, &ids, &n);
        if (st || n != 1) chatml = 0;
        ft_status_free(st);
        ft_engine_free(engine, ids);
    }
    m->family = ft_srv_family_detect(ft_engine_chat_template(engine), chatml);
}

static int ft_srv_ends_with(const ft_srv_buf_t *b, const char *s)
{
    const size_t n = strlen(s);
    return b->len >= n && !memcmp(b->data + b->len - n, s, n);
}

/* How the family's models write tool calls; 0 when it has no syntax. */
static int ft_srv_family_dialect(ft_srv_family_t f, ft_srv_dialect_t *d)
{
    switch (f) {
    case FT_SRV_FAMILY_QWEN3:
        *d = FT_SRV_DIALECT_QWEN3;
        return 1;
    case FT_SRV_FAMILY_QWEN35:
    case FT_SRV_FAMILY_QWEN3_CODER:
        *d = FT_SRV_DIALECT_XML;
        return 1;
    case FT_SRV_FAMILY_HARMONY:
        *d = FT_SRV_DIALECT_HARMONY;
        return 1;
    case FT_SRV_FAMILY_DEEPSEEK:
        *d = FT_SRV_DIALECT_DEEPSEEK;
        return 1;
    case FT_SRV_FAMILY_GLM:
        *d = FT_SRV_DIALECT_GLM;
        return 1;
    default:
        *d = FT_SRV_DIALECT_QWEN3;
        return 0;
    }
}

/* A forced call (tool_choice required): what the prompt writes to open it
 * (appended to text) and, for the output parser, what it wrote after the
 * call's opening marker (harmony: the header so far). name: the tool, or
 * NULL for any. */
static void ft_srv_forced_call(ft_srv_dialect_t d, const char *name, ft_srv_buf_t *text,
                               ft_srv_buf_t *pre)
{
    switch (d) {
    case FT_SRV_DIALECT_QWEN3:
        ft_srv_buf_puts(pre, "\n");
        if (name) {
            json_t *js = json_string(name);
            char *quoted = js ? ft_srv_tojson(js) : NULL;
            json_decref(js);
            ft_srv_buf_printf(pre, "{\"name\": %s, \"arguments\": ", quoted ? quoted : "\"\"");
            free(quoted);
        }
        ft_srv_buf_puts(text, "<tool_call>");
        break;
    case FT_SRV_DIALECT_XML:
        ft_srv_buf_puts(pre, "\n");
        if (name) ft_srv_buf_printf(pre, "<function=%s>\n", name);
        ft_srv_buf_puts(text, "<tool_call>");
        break;
    case FT_SRV_DIALECT_DEEPSEEK:
/* <｜tool▁...｜>: fullwidth bars, ▁ for spaces */
#define FT_DS_SP "\xe2\x96\x81"
#define FT_DS_TOOL(what) "<\xef\xbd\x9ctool" FT_DS_SP what "\xef\xbd\x9c>"
        if (name) ft_srv_buf_printf(pre, "%s" FT_DS_TOOL("sep"), name);
        ft_srv_buf_puts(text,
                        FT_DS_TOOL("calls" FT_DS_SP "begin") FT_DS_TOOL("call" FT_DS_SP "begin"));
#undef FT_DS_TOOL
#undef FT_DS_SP
        break;
    case FT_SRV_DIALECT_GLM:
        if (name) ft_srv_buf_printf(pre, "%s\n", name);
        ft_srv_buf_puts(text, "<tool_call>");
        break;
    case FT_SRV_DIALECT_HARMONY:
        ft_srv_buf_puts(pre, "<|channel|>commentary to=functions.");
        if (name) ft_srv_buf_printf(pre, "%s <|constrain|>json<|message|>", name);
        break;
    }
    ft_srv_buf_put(text, pre->data ? pre->data : "", pre->len);
}

/* The boundaries (byte offsets into text) as positions in ids: each
 * piece of text between kept boundaries is tokenized on its own, and a
 * boundary is kept when its piece's tokens are the next ones of ids (the
 * special tokens that open each message make that the rule; a piece
 * that merges with its neighbour is joined to the next one instead). */
static void ft_srv_prompt_bounds(const ft_srv_model_t *m, const ft_srv_buf_t *text,
                                 const ft_srv_bounds_t *bd, unsigned add_bos, ft_srv_prompt_t *out)
{
    if (!bd->n || !out->n_ids) return;
    out->bounds = malloc(bd->n * sizeof(*out->bounds));
    if (!out->bounds) return;
    size_t start = 0;
    uint32_t pos = 0, misses = 0;
    for (size_t i = 0; i < bd->n && bd->off[i] < text->len && misses < 8; i++) {
        int32_t *ids = NULL;
        uint32_t n = 0;
        ft_status_t st = ft_engine_tokenize(m->engine, text->data + start, bd->off[i] - start,
                                            FT_TOKENIZE_SPECIAL | (start ? 0 : add_bos),
                                            &ids, &n);
        if (st) {
            ft_status_free(st);
            break;
        }
        if (n && pos + n < out->n_ids && !memcmp(ids, out->ids + pos, n * sizeof(*ids))) {
            pos += n;
            out->bounds[out->n_bounds++] = pos;
            start = bd->off[i];
            misses = 0;
        } else {
            misses++;
        }
        ft_engine_free(m->engine, ids);
    }
}

int ft_srv_prepare(const ft_srv_model_t *m, ft_srv_proto_t proto, int count_only, const char *body,
                   size_t n, ft_srv_conv_t *c, ft_srv_prompt_t *out, ft_srv_error_t *err)
{
    memset(out, 0, sizeof(*out));
    json_t *root = NULL;
    if (!ft_srv_json_parse(body, n, &root, err)) return 0;
    int ok = 0;
    switch (proto) {
    case FT_SRV_OPENAI:
        ok = ft_srv_openai_parse(root, m->n_vocab, c, err);
        break;
    case FT_SRV_COMPLETIONS:
        ok = ft_srv_completions_parse(root, m->n_vocab, c, err);
        break;
    case FT_SRV_RESPONSES:
        ok = ft_srv_responses_parse(root, c, err);
        break;
    case FT_SRV_ANTHROPIC:
        ok = ft_srv_anthropic_parse(root, count_only, c, err);
        break;
    }
    json_decref(root);
    if (!ok) return 0;
    ft_srv_buf_t text = {0};
    ft_srv_bounds_t bounds = {0};
    const char *param = "messages";
    if (proto == FT_SRV_COMPLETIONS) {
        param = "prompt";
        if (c->prompt_ids) { /* ids as given (checked against the vocabulary) */
            out->n_ids = (uint32_t)json_array_size(c->prompt_ids);
            out->ids = malloc(out->n_ids * sizeof(*out->ids)); /* ft_engine_free: libc free */
            if (!out->ids) {
                ft_srv_error_set(err, 500, "server_error", "", "out of memory");
                return 0;
            }
            for (uint32_t i = 0; i < out->n_ids; i++)
                out->ids[i] = (int32_t)json_integer_value(json_array_get(c->prompt_ids, i));
        } else {
            ft_srv_buf_put(&text, c->prompt, c->prompt_len);
        }
    } else {
        if (!ft_srv_render_bounds(m->family, c, !count_only || proto != FT_SRV_OPENAI, &text,
                                  count_only ? NULL : &bounds, err)) {
            ft_srv_buf_free(&text);
            ft_srv_bounds_free(&bounds);
            return 0;
        }
        if (!ft_srv_conv_check_tool_choice(c, "tool_choice", err)) {
            ft_srv_buf_free(&text);
            ft_srv_bounds_free(&bounds);
            return 0;
        }
        /* Qwen templates open replies with "<think>\n", DeepSeek's with "<think>" */
        out->reasoning_open =
            ft_srv_ends_with(&text, "<think>\n") || ft_srv_ends_with(&text, "<think>");
        out->tools =
            ft_srv_family_dialect(m->family, &out->dialect) && c->tools && !c->tool_choice_none;
        if (out->tools && c->tool_choice_required && !count_only) {
            /* a forced call: the reply starts inside the call (and, for a named
             * tool, after its name), where the output parser starts too */
            ft_srv_buf_t pre = {0};
            ft_srv_forced_call(out->dialect, c->tool_choice_name, &text, &pre);
            out->call_prefix = ft_srv_buf_take(&pre);
            if (!out->call_prefix) out->call_prefix = strdup("");
            out->reasoning_open = 0;
        }
    }
    ft_status_t st = FT_OK;
    /* a template that writes the BOS token itself (DeepSeek, GLM) gets no second one */
    const unsigned flags =
        FT_TOKENIZE_SPECIAL |
        (proto != FT_SRV_COMPLETIONS && ft_srv_family_writes_bos(m->family) ? 0
                                                                            : FT_TOKENIZE_ADD_BOS);
    if (!out->ids)
        st = ft_engine_tokenize(m->engine, text.data ? text.data : "", text.len, flags, &out->ids,
                                &out->n_ids);
    if (!st) ft_srv_prompt_bounds(m, &text, &bounds, flags & FT_TOKENIZE_ADD_BOS, out);
    out->side = !c->raw && !c->tools && c->max_tokens > 0 && c->max_tokens <= FT_SRV_SIDE_MAX_TOKENS;
    ft_srv_buf_free(&text);
    ft_srv_bounds_free(&bounds);
    if (st) {
        ft_srv_error_set(err, 400, "invalid_request_error", param, "%s", ft_status_message(st));
        ft_status_free(st);
        ft_srv_prompt_free(m, out);
        return 0;
    }
    if (!count_only && out->n_ids == 0) {
        ft_srv_error_set(err, 400, "invalid_request_error", param, "the prompt is empty");
        ft_srv_prompt_free(m, out);
        return 0;
    }
    if (!count_only && out->n_ids >= m->n_ctx) {
        if (proto == FT_SRV_ANTHROPIC)
            ft_srv_error_set(err, 400, "invalid_request_error", "messages",
                             "prompt is too long: %u tokens > %u maximum", out->n_ids,
                             m->n_ctx - 1);
        else
            ft_srv_error_set(err, 400, "invalid_request_error", param,
                             "This model's maximum context length is %u tokens. However, your "
                             "messages resulted in %u tokens.",
                             m->n_ctx, out->n_ids);
        snprintf(err->code, sizeof(err->code), "context_length_exceeded");
        ft_srv_prompt_free(m, out);
        return 0;
    }
    return 1;
}

void ft_srv_prompt_free(const ft_srv_model_t *m, ft_srv_prompt_t *p)
{
    ft_engine_free(m->engine, p->ids);
    free(p->call_prefix);
    free(p->bounds);
    memset(p, 0, sizeof(*p));
}
