/* Fuzzes the HF JSON readers in memory. The input is up to three documents
 * separated by NUL bytes: config.json, tokenizer.json and
 * tokenizer_config.json (the last two optional). */
#include "hf_internal.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *part[3] = {NULL, NULL, NULL};
    size_t len[3] = {0, 0, 0};
    const char *p = size ? (const char *)data : "", *end = p + size;
    for (int i = 0; i < 3 && p <= end; i++) {
        const char *nul = i < 2 ? memchr(p, '\0', (size_t)(end - p)) : NULL;
        part[i] = p;
        len[i] = (size_t)((nul ? nul : end) - p);
        if (!nul) break;
        p = nul + 1;
    }
    ft_src_model_t *src;
    if (ft_src_model_create(FT_SRC_HF, "fuzz", &src)) __builtin_trap(); /* only out of memory */
    ft_status_t st = ft_hf_config_parse(&src->meta, "fuzz/config.json", part[0], len[0]);
    ft_status_free(st);
    if (part[1]) {
        st = ft_hf_tokenizer_parse(src, "fuzz/tokenizer.json", part[1], len[1],
                                   "fuzz/tokenizer_config.json", part[2], len[2]);
        /* A parsed tokenizer holds only ids inside its vocabulary. */
        const ft_ir_tokenizer_t *t = &src->tok;
        if (!st && (t->bos_id >= (int32_t)t->n_tokens || t->eos_id >= (int32_t)t->n_tokens ||
                    t->pad_id >= (int32_t)t->n_tokens || t->unk_id >= (int32_t)t->n_tokens))
            __builtin_trap();
        ft_status_free(st);
    }
    ft_src_model_destroy(src);
    return 0;
}
