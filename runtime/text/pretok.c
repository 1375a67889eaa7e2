/* Pre-tokenizer regexes through PCRE2 (see pretok.h).
 *
 * The patterns are the ones llama.cpp runs (src/llama-vocab.cpp), which
 * are the tokenizer.json patterns with "(?i:'s|...)" written out as
 * "'[sS]|..." (the same set of strings, without Unicode case folding that
 * could let "ſ" or "K" match). For gpt2 we keep GPT-2's final "|\s+",
 * which llama.cpp leaves to its gap handling; the result is the same. */
#include "pretok.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdlib.h>
#include <string.h>

struct ft_pretok {
    pcre2_code *code;
};

struct ft_pretok_match {
    pcre2_match_data *md;
};

/* Qwen2, Qwen2.5 and Qwen3 (tokenizer.ggml.pre "qwen2"). */
static const char ft_pretok_qwen2[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* Llama 3: as qwen2 but digits go in runs of up to three. */
static const char ft_pretok_llama3[] =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* GPT-2. */
static const char ft_pretok_gpt2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

const char *ft_pretok_pattern(const char *pre)
{
    if (!pre) return NULL;
    if (strcmp(pre, "qwen2") == 0) return ft_pretok_qwen2;
    if (strcmp(pre, "llama-bpe") == 0 || strcmp(pre, "llama3") == 0 || strcmp(pre, "llama-v3") == 0)
        return ft_pretok_llama3;
    /* A GGUF without tokenizer.ggml.pre is "default" to llama.cpp; the
     * plan carries it as "". */
    if (strcmp(pre, "gpt2") == 0 || strcmp(pre, "default") == 0 || pre[0] == '\0')
        return ft_pretok_gpt2;
    return NULL;
}

/* PCRE2 error codes become statuses here and nowhere else. */
FT_WARN_UNUSED static ft_status_t ft_pretok_error(ft_status_code_t code, int pcre_err, const char *what,
                                   const char *where, size_t offset)
{
    PCRE2_UCHAR msg[256];
    if (pcre2_get_error_message(pcre_err, msg, sizeof(msg)) < 0)
        strcpy((char *)msg, "unknown PCRE2 error");
    return ft_status_make(code, "%s: %s at byte %zu: %s (PCRE2 error %d)", where, what, offset,
                          (const char *)msg, pcre_err);
}

ft_status_t ft_pretok_create(const char *pre, const char *where, ft_pretok_t **out_pretok)
{
    *out_pretok = NULL;
    const char *pattern = ft_pretok_pattern(pre);
    if (!pattern)
        return ft_status_make(FT_STATUS_UNSUPPORTED,
                              "%s: tokenizer.pre '%s' is not a known pre-tokenizer (known: "
                              "qwen2, llama-bpe, gpt2, default)",
                              where, pre ? pre : "(null)");
    ft_pretok_t *pt = calloc(1, sizeof(*pt));
    if (!pt) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: pre-tokenizer", where);
    int err = 0;
    PCRE2_SIZE err_off = 0;
    pt->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                             &err, &err_off, NULL);
    if (!pt->code) {
        free(pt);
        return ft_pretok_error(FT_STATUS_INTERNAL, err, "compiling the pre-tokenizer regex", where,
                               (size_t)err_off);
    }
    /* JIT is a speed-up only: where it is missing (not built in, or no
     * executable memory) pcre2_match interprets the same pattern. */
    uint32_t has_jit = 0;
    if (pcre2_config(PCRE2_CONFIG_JIT, &has_jit) >= 0 && has_jit)
        (void)pcre2_jit_compile(pt->code, PCRE2_JIT_COMPLETE);
    *out_pretok = pt;
    return FT_OK;
}

void ft_pretok_destroy(ft_pretok_t *pt)
{
    if (!pt) return;
    pcre2_code_free(pt->code);
    free(pt);
}

ft_status_t ft_pretok_match_create(const ft_pretok_t *pt, ft_pretok_match_t **out_match)
{
    *out_match = NULL;
    ft_pretok_match_t *m = malloc(sizeof(*m));
    if (!m) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "pre-tokenizer match data");
    m->md = pcre2_match_data_create_from_pattern(pt->code, NULL);
    if (!m->md) {
        free(m);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "pre-tokenizer match data");
    }
    *out_match = m;
    return FT_OK;
}

void ft_pretok_match_destroy(ft_pretok_match_t *m)
{
    if (!m) return;
    pcre2_match_data_free(m->md);
    free(m);
}

void ft_pretok_cursor_init(ft_pretok_cursor_t *c, const ft_pretok_t *pt, ft_pretok_match_t *m,
                           const char *s, size_t n)
{
    memset(c, 0, sizeof(*c));
    c->pt = pt;
    c->m = m;
    c->s = s;
    c->n = n;
}

/* The length of the UTF-8 character at s[i] (the text is valid). */
static size_t ft_pretok_char_len(const unsigned char *s, size_t i, size_t n)
{
    size_t len = s[i] < 0x80 ? 1 : s[i] < 0xe0 ? 2 : s[i] < 0xf0 ? 3 : 4;
    return len <= n - i ? len : n - i;
}

int ft_pretok_cursor_next(ft_pretok_cursor_t *c, size_t *out_start, size_t *out_len,
                          ft_status_t *out_status)
{
    *out_status = FT_OK;
    if (c->has_pending) {
        c->has_pending = 0;
        *out_start = c->pending_start;
        *out_len = c->pending_end - c->pending_start;
        c->pos = c->pending_end;
        return 1;
    }
    if (c->pos >= c->n) return 0;
    /* The subject is the whole fragment (so lookahead sees past the
     * piece) and was validated once by the caller: NO_UTF_CHECK keeps
     * each call from rescanning the rest of the text, which would make
     * encoding quadratic. */
    int rc = pcre2_match(c->pt->code, (PCRE2_SPTR)c->s, c->n, c->pos, PCRE2_NO_UTF_CHECK, c->m->md,
                         NULL);
    *out_start = c->pos;
    if (rc == PCRE2_ERROR_NOMATCH) {
        /* Nothing more matches: the rest is one piece (as llama.cpp keeps
         * unmatched text). */
        *out_len = c->n - c->pos;
        c->pos = c->n;
        return 1;
    }
    if (rc < 0) {
        *out_status =
            ft_pretok_error(FT_STATUS_INTERNAL, rc, "pre-tokenizer match", "text", c->pos);
        c->pos = c->n;
        return 0;
    }
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->m->md);
    const size_t ms = ov[0], me = ov[1];
    if (me <= ms) {
        /* An empty match (no pattern here makes one): take one character
         * so that the walk always advances. */
        *out_len = ft_pretok_char_len((const unsigned char *)c->s, c->pos, c->n);
        c->pos += *out_len;
        return 1;
    }
    if (ms > c->pos) {
        /* Text the regex skipped is a piece of its own; the match is
         * returned by the next call. */
        *out_len = ms - c->pos;
        c->has_pending = 1;
        c->pending_start = ms;
        c->pending_end = me;
        c->pos = ms;
        return 1;
    }
    *out_len = me - ms;
    c->pos = me;
    return 1;
}
