/* Fuzzes the HF model builders (config.json keys and tensor names, shapes
 * and dtypes -> IR: the families in models/ and their naming), the Qwen3.5 / Qwen3-Next
 * / gpt-oss layouts in particular. The input is config.json, a NUL, then a
 * safetensors header's JSON; the target lays out a file of that header
 * and a zeroed data section as long as its largest data_offsets end (at
 * most 8 MiB), parses it as ftc does and builds the IR. Seeds:
 * tests/fuzz/corpus/fuzz_hf_model/ (the tiny fixtures' config.json and
 * safetensors headers). */
#include "hf_internal.h"
#include "ir.h"
#include "model_registry.h"
#include "safetensors.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FT_FUZZ_MAX_DATA (8u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The largest data_offsets end in header json (0 when none is usable). */
static uint64_t ft_fuzz_data_end(const char *json, size_t len)
{
    json_t *root = json_loadb(json, len, 0, NULL);
    uint64_t end = 0;
    const char *key;
    json_t *v;
    if (json_is_object(root))
        json_object_foreach(root, key, v)
        {
            json_t *off = json_object_get(v, "data_offsets");
            json_t *e = json_array_get(off, 1);
            if (json_is_integer(e) && json_integer_value(e) > 0 &&
                (uint64_t)json_integer_value(e) > end)
                end = (uint64_t)json_integer_value(e);
        }
    json_decref(root);
    return end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = size ? (const char *)data : "";
    const char *nul = memchr(p, '\0', size);
    if (!nul) return 0;
    const size_t clen = (size_t)(nul - p), hlen = size - clen - 1;
    const uint64_t dend = ft_fuzz_data_end(nul + 1, hlen);
    if (dend > FT_FUZZ_MAX_DATA) return 0;
    const uint64_t fsize = 8 + hlen + dend;
    uint8_t *file = calloc(1, fsize);
    if (!file) return 0;
    for (int i = 0; i < 8; i++)
        file[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    memcpy(file + 8, nul + 1, hlen);
    ft_src_model_t *src = NULL;
    ft_st_file_t *f = NULL;
    ft_ir_model_t *m = NULL;
    if (ft_src_model_create(FT_SRC_HF, "fuzz", &src)) __builtin_trap(); /* only out of memory */
    ft_status_t st = ft_hf_config_parse(&src->meta, "fuzz/config.json", p, clen);
    if (!st) st = ft_st_parse(file, fsize, "fuzz/model.safetensors", &f);
    if (!st) {
        src->files = ft_arena_array(src->arena, 1, sizeof(ft_src_file_t));
        src->tensors = ft_arena_array(src->arena, f->n_tensors ? f->n_tensors : 1,
                                      sizeof(ft_src_tensor_t));
        if (!src->files || !src->tensors) __builtin_trap();
        src->n_files = 1;
        src->files[0] = (ft_src_file_t){"fuzz/model.safetensors", fsize};
        for (uint32_t i = 0; i < f->n_tensors; i++) {
            const ft_st_tensor_t *t = &f->tensors[i];
            ft_src_tensor_t *d = &src->tensors[src->n_tensors++];
            memset(d, 0, sizeof(*d));
            if (!(d->name = ft_arena_strdup(src->arena, t->name))) __builtin_trap();
            d->dtype = t->dtype;
            d->n_dims = t->n_dims;
            memcpy(d->shape, t->shape, sizeof(d->shape));
            d->offset = t->offset;
            d->n_bytes = t->n_bytes;
        }
        st = ft_hf_unwrap_text_model(src); /* a multimodal release's text model */
        if (!st) st = ft_model_build_ir(src, &m);
        /* a model that builds is a validated IR: every piece in the file */
        for (uint32_t i = 0; !st && i < m->n_tensors; i++)
            for (uint32_t k = 0; k < m->tensors[i].n_pieces; k++) {
                const ft_ir_piece_t *pc = &m->tensors[i].pieces[k];
                if (pc->offset > fsize || pc->n_bytes > fsize - pc->offset) __builtin_trap();
            }
    }
    ft_status_free(st);
    ft_ir_model_destroy(m);
    ft_st_file_free(f);
    ft_src_model_destroy(src);
    free(file);
    return 0;
}
