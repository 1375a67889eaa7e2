/* /tokenize, /detokenize and /apply-template (srv_chat.h): what a client
 * needs to foresee a prompt's length and to see the exact prompt text. */
#include "srv_chat.h"

#include "srv_fields.h"

#include <string.h>

static int ft_srv_op_oom(ft_srv_error_t *err)
{
    ft_srv_error_set(err, 500, "server_error", "", "out of memory");
    return 0;
}

int ft_srv_op_tokenize(const ft_srv_model_t *m, const char *body, size_t n, json_t **out,
                       ft_srv_error_t *err)
{
    json_t *root = NULL;
    if (!ft_srv_json_parse(body, n, &root, err)) return 0;
    const char *content = NULL;
    int add_special = 0, parse_special = 1;
    int ok = ft_srv_get_string(root, "content", &content, err) &&
             ft_srv_get_bool(root, "add_special", &add_special, err) &&
             ft_srv_get_bool(root, "parse_special", &parse_special, err);
    if (ok && !content) {
        ft_srv_error_set(err, 400, "invalid_request_error", "content", "'content' is required");
        ok = 0;
    }
    int32_t *ids = NULL;
    uint32_t n_ids = 0;
    if (ok) {
        const unsigned flags =
            (parse_special ? FT_TOKENIZE_SPECIAL : 0) | (add_special ? FT_TOKENIZE_ADD_BOS : 0);
        ft_status_t st = ft_engine_tokenize(m->engine, content,
                                            json_string_length(json_object_get(root, "content")),
                                            flags, &ids, &n_ids);
        if (st) {
            ft_srv_error_set(err, 400, "invalid_request_error", "content", "%s",
                             ft_status_message(st));
            ft_status_free(st);
            ok = 0;
        }
    }
    if (ok) {
        json_t *arr = json_array();
        for (uint32_t i = 0; arr && i < n_ids; i++)
            if (json_array_append_new(arr, json_integer(ids[i])) != 0) {
                json_decref(arr);
                arr = NULL;
            }
        *out = arr ? json_pack("{s:o}", "tokens", arr) : NULL;
        if (!*out) ok = ft_srv_op_oom(err);
    }
    ft_engine_free(m->engine, ids);
    json_decref(root);
    return ok;
}

int ft_srv_op_detokenize(const ft_srv_model_t *m, const char *body, size_t n, json_t **out,
                         ft_srv_error_t *err)
{
    json_t *root = NULL;
    if (!ft_srv_json_parse(body, n, &root, err)) return 0;
    json_t *tokens = json_object_get(root, "tokens");
    int ok = 1;
    if (!json_is_array(tokens)) {
        ft_srv_error_set(err, 400, "invalid_request_error", "tokens",
                         "'tokens' must be an array of token ids");
        ok = 0;
    }
    ft_detokenizer_t *d = NULL;
    ft_srv_buf_t text = {0};
    if (ok) {
        ft_status_t st = ft_detokenizer_create(m->engine, &d);
        size_t i;
        json_t *t;
        json_array_foreach(tokens, i, t)
        {
            if (st) break;
            const json_int_t id = json_is_integer(t) ? json_integer_value(t) : -1;
            if (id < 0 || id >= (json_int_t)m->n_vocab) {
                ft_srv_error_set(err, 400, "invalid_request_error", "tokens",
                                 "'tokens[%zu]' is not a token id below %u", i, m->n_vocab);
                ok = 0;
                break;
            }
            const char *s;
            size_t len;
            st = ft_detokenizer_feed(d, (int32_t)id, &s, &len);
            if (!st) ft_srv_buf_put(&text, s, len);
        }
        if (ok && !st) {
            const char *s;
            size_t len;
            st = ft_detokenizer_flush(d, &s, &len);
            if (!st) ft_srv_buf_put(&text, s, len);
        }
        if (st) {
            ft_srv_error_set(err, 500, "server_error", "", "%s", ft_status_message(st));
            ft_status_free(st);
            ok = 0;
        }
    }
    if (ok) {
        *out = json_pack("{s:s%}", "content", text.data ? text.data : "", text.len);
        if (!*out || text.oom) ok = ft_srv_op_oom(err);
    }
    ft_detokenizer_destroy(d);
    ft_srv_buf_free(&text);
    json_decref(root);
    return ok;
}

int ft_srv_op_apply_template(const ft_srv_model_t *m, const char *body, size_t n, json_t **out,
                             ft_srv_error_t *err)
{
    json_t *root = NULL;
    if (!ft_srv_json_parse(body, n, &root, err)) return 0;
    ft_srv_conv_t c;
    ft_srv_conv_init(&c);
    ft_srv_buf_t text = {0};
    int ok = ft_srv_openai_parse(root, m->n_vocab, &c, err) &&
             ft_srv_render(m->family, &c, 1, &text, err);
    if (ok) {
        *out = json_pack("{s:s%}", "prompt", text.data ? text.data : "", text.len);
        if (!*out) ok = ft_srv_op_oom(err);
    }
    ft_srv_buf_free(&text);
    ft_srv_conv_free(&c);
    json_decref(root);
    return ok;
}
