/* ft perplexity's base logits file (layout in cli_ppl_file.h). The file is
 * input like any other: every count is checked against the file's real
 * size before anything is allocated from it. Integers and floats are
 * converted from little-endian byte by byte, so the file reads the same on
 * any host. */
#include "cli_ppl_file.h"

#include "base/checked.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void ft_ppl_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t ft_ppl_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t ft_ppl_fnv(uint64_t h, const void *bytes, size_t n)
{
    const uint8_t *p = bytes;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

ft_status_t ft_ppl_vocab_hash(const ft_engine_t *e, uint64_t *out_hash)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const uint32_t vocab = ft_engine_info(e)->vocab_size;
    for (uint32_t id = 0; id < vocab; id++) {
        const char *bytes;
        uint32_t len;
        ft_status_t st = ft_engine_token_bytes(e, (int32_t)id, &bytes, &len);
        if (st) return ft_status_annotate(st, "hashing the vocabulary");
        uint8_t l[4];
        ft_ppl_put_u32(l, len);
        h = ft_ppl_fnv(ft_ppl_fnv(h, l, 4), bytes, len);
    }
    *out_hash = h;
    return FT_OK;
}

/* Writes n 32-bit words (int32 or float bit patterns) little-endian. */
static ft_status_t ft_ppl_write_words(FILE *f, const char *path, const void *words, size_t n)
{
    uint8_t buf[4096];
    const uint8_t *src = words;
    while (n > 0) {
        const size_t k = n < sizeof(buf) / 4 ? n : sizeof(buf) / 4;
        for (size_t i = 0; i < k; i++) {
            uint32_t v;
            memcpy(&v, src + 4 * i, 4);
            ft_ppl_put_u32(buf + 4 * i, v);
        }
        if (fwrite(buf, 4, k, f) != k)
            return ft_status_make(FT_STATUS_IO, "%s: write failed", path);
        src += 4 * k;
        n -= k;
    }
    return FT_OK;
}

ft_status_t ft_ppl_file_write_header(FILE *f, const char *path, const ft_ppl_file_header_t *h,
                                     const int32_t *tokens)
{
    uint8_t b[FT_PPL_FILE_HEADER_BYTES];
    memcpy(b, FT_PPL_FILE_MAGIC, 8);
    ft_ppl_put_u32(b + 8, FT_PPL_FILE_VERSION);
    ft_ppl_put_u32(b + 12, h->vocab_size);
    ft_ppl_put_u32(b + 16, h->ctx);
    ft_ppl_put_u32(b + 20, h->n_windows);
    ft_ppl_put_u32(b + 24, (uint32_t)h->vocab_hash);
    ft_ppl_put_u32(b + 28, (uint32_t)(h->vocab_hash >> 32));
    if (fwrite(b, 1, sizeof(b), f) != sizeof(b))
        return ft_status_make(FT_STATUS_IO, "%s: write failed", path);
    return ft_ppl_write_words(f, path, tokens, (size_t)h->n_windows * h->ctx);
}

ft_status_t ft_ppl_file_write_rows(FILE *f, const char *path, const float *rows, size_t n_floats)
{
    return ft_ppl_write_words(f, path, rows, n_floats);
}

int ft_ppl_file_is(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char magic[8];
    const int is = fread(magic, 1, 8, f) == 8 && memcmp(magic, FT_PPL_FILE_MAGIC, 8) == 0;
    fclose(f);
    return is;
}

/* Reads n little-endian words at the current offset into out. */
static ft_status_t ft_ppl_read_words(FILE *f, const char *path, uint64_t offset, void *out,
                                     size_t n)
{
    uint8_t buf[4096];
    uint8_t *dst = out;
    if (fseek(f, (long)offset, SEEK_SET) != 0)
        return ft_status_make(FT_STATUS_IO, "%s: cannot seek to offset %llu", path,
                              (unsigned long long)offset);
    while (n > 0) {
        const size_t k = n < sizeof(buf) / 4 ? n : sizeof(buf) / 4;
        if (fread(buf, 4, k, f) != k)
            return ft_status_make(FT_STATUS_IO, "%s: read failed near offset %llu", path,
                                  (unsigned long long)offset);
        for (size_t i = 0; i < k; i++) {
            const uint32_t v = ft_ppl_get_u32(buf + 4 * i);
            memcpy(dst + 4 * i, &v, 4);
        }
        dst += 4 * k;
        n -= k;
        offset += 4 * k;
    }
    return FT_OK;
}

/* The byte size the header's counts give, or 0 on overflow. */
static uint64_t ft_ppl_file_size(const ft_ppl_file_header_t *h, uint64_t *out_logits_at)
{
    uint64_t n_tok, tok_bytes, rows, floats, logit_bytes, at, size;
    if (!ft_mul_u64(h->n_windows, h->ctx, &n_tok) || !ft_mul_u64(n_tok, 4, &tok_bytes) ||
        !ft_mul_u64(h->n_windows, ft_ppl_n_scored(h->ctx), &rows) ||
        !ft_mul_u64(rows, h->vocab_size, &floats) || !ft_mul_u64(floats, 4, &logit_bytes) ||
        !ft_add_u64(FT_PPL_FILE_HEADER_BYTES, tok_bytes, &at) ||
        !ft_add_u64(at, logit_bytes, &size))
        return 0;
    *out_logits_at = at;
    return size;
}

ft_status_t ft_ppl_file_open(FILE *f, const char *path, ft_ppl_file_t *out)
{
    memset(out, 0, sizeof(*out));
    uint8_t b[FT_PPL_FILE_HEADER_BYTES];
    if (fseek(f, 0, SEEK_END) != 0) return ft_status_make(FT_STATUS_IO, "%s: cannot seek", path);
    const long end = ftell(f);
    if (end < 0 || fseek(f, 0, SEEK_SET) != 0)
        return ft_status_make(FT_STATUS_IO, "%s: cannot tell its size", path);
    if ((uint64_t)end < sizeof(b) || fread(b, 1, sizeof(b), f) != sizeof(b))
        return ft_status_make(FT_STATUS_FORMAT, "%s: %ld bytes, shorter than the %u-byte header",
                              path, end, FT_PPL_FILE_HEADER_BYTES);
    if (memcmp(b, FT_PPL_FILE_MAGIC, 8) != 0)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: offset 0: not a saved logits file (magic is not %s)", path,
                              FT_PPL_FILE_MAGIC);
    ft_ppl_file_header_t h = {ft_ppl_get_u32(b + 8), ft_ppl_get_u32(b + 12), ft_ppl_get_u32(b + 16),
                              ft_ppl_get_u32(b + 20),
                              ft_ppl_get_u32(b + 24) | (uint64_t)ft_ppl_get_u32(b + 28) << 32};
    if (h.version != FT_PPL_FILE_VERSION)
        return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: offset 8: version %u (this ft reads %u)",
                              path, h.version, FT_PPL_FILE_VERSION);
    if (h.vocab_size == 0 || h.vocab_size > INT32_MAX)
        return ft_status_make(FT_STATUS_FORMAT, "%s: offset 12: vocab_size %u", path, h.vocab_size);
    if (h.ctx < FT_PPL_MIN_CTX)
        return ft_status_make(FT_STATUS_FORMAT, "%s: offset 16: ctx %u (at least %u)", path, h.ctx,
                              FT_PPL_MIN_CTX);
    if (h.n_windows == 0)
        return ft_status_make(FT_STATUS_FORMAT, "%s: offset 20: n_windows is 0", path);
    uint64_t logits_at = 0;
    const uint64_t size = ft_ppl_file_size(&h, &logits_at);
    if (size == 0 || size != (uint64_t)end)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: %ld bytes, but %u windows of %u tokens over a vocabulary of %u "
                              "make %llu (truncated or not this format)",
                              path, end, h.n_windows, h.ctx, h.vocab_size,
                              (unsigned long long)size);
    const size_t n_tok = (size_t)h.n_windows * h.ctx;
    int32_t *tokens = malloc(n_tok * sizeof(int32_t));
    if (!tokens)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: %zu tokens: out of memory", path,
                              n_tok);
    ft_status_t st = ft_ppl_read_words(f, path, FT_PPL_FILE_HEADER_BYTES, tokens, n_tok);
    for (size_t i = 0; !st && i < n_tok; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= h.vocab_size)
            st = ft_status_make(FT_STATUS_FORMAT,
                                "%s: offset %llu: token %d is outside the vocabulary of %u", path,
                                (unsigned long long)(FT_PPL_FILE_HEADER_BYTES + 4 * (uint64_t)i),
                                tokens[i], h.vocab_size);
    if (st) {
        free(tokens);
        return st;
    }
    out->f = f;
    out->path = path;
    out->h = h;
    out->tokens = tokens;
    return FT_OK;
}

ft_status_t ft_ppl_file_read_window(const ft_ppl_file_t *pf, uint32_t w, float *rows)
{
    const ft_ppl_file_header_t *h = &pf->h;
    if (w >= h->n_windows)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: window %u of %u", pf->path, w,
                              h->n_windows);
    const uint32_t n_scored = ft_ppl_n_scored(h->ctx);
    const size_t n = (size_t)n_scored * h->vocab_size;
    /* Within the size ft_ppl_file_open checked, so no overflow. */
    const uint64_t offset =
        FT_PPL_FILE_HEADER_BYTES + 4 * (uint64_t)h->n_windows * h->ctx + 4 * (uint64_t)w * n;
    ft_status_t st = ft_ppl_read_words(pf->f, pf->path, offset, rows, n);
    for (size_t i = 0; !st && i < n; i++)
        if (!isfinite(rows[i]))
            st = ft_status_make(FT_STATUS_FORMAT,
                                "%s: offset %llu: logit %g (window %u, position %u, token %zu) is "
                                "not finite",
                                pf->path, (unsigned long long)(offset + 4 * i), (double)rows[i], w,
                                h->ctx / 2 + (uint32_t)(i / h->vocab_size), i % h->vocab_size);
    return st;
}

void ft_ppl_file_close(ft_ppl_file_t *pf)
{
    free(pf->tokens);
    pf->tokens = NULL;
}
