#include "source.h"

#include <stdlib.h>
#include <string.h>

void ft_ir_tokenizer_init(ft_ir_tokenizer_t *tok)
{
    memset(tok, 0, sizeof(*tok));
    tok->bos_id = tok->eos_id = tok->pad_id = tok->unk_id = -1;
}

ft_status_t ft_src_model_create(ft_src_kind_t kind, const char *path, ft_src_model_t **out_src)
{
    *out_src = NULL;
    ft_src_model_t *src = calloc(1, sizeof(*src));
    if (!src)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    /* Metadata, names and tokenizer of the largest real checkpoints take a
     * few tens of MiB; 2 GiB bounds what a hostile file can make us hold. */
    ft_status_t st = ft_arena_create(2ull << 30, &src->arena);
    if (st) {
        free(src);
        return st;
    }
    src->kind = kind;
    src->path = ft_arena_strdup(src->arena, path);
    ft_meta_init(&src->meta, src->arena);
    ft_ir_tokenizer_init(&src->tok);
    *out_src = src;
    return FT_OK;
}

void ft_src_model_destroy(ft_src_model_t *src)
{
    if (!src)
        return;
    ft_meta_release(&src->meta);
    ft_arena_destroy(src->arena);
    free(src);
}

const ft_src_tensor_t *ft_src_find_tensor(const ft_src_model_t *src, const char *name)
{
    for (uint32_t i = 0; i < src->n_tensors; i++)
        if (strcmp(src->tensors[i].name, name) == 0)
            return &src->tensors[i];
    return NULL;
}
