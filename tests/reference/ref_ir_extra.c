#include "ref_ir_extra.h"

#include <stdio.h>
#include <string.h>

static uint64_t ref_extra_elems(const ft_ref_extra_t *t)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++)
        n *= t->shape[d]; /* small test tensors */
    return n;
}

ft_status_t ft_ref_ir_add_f32(ft_ir_model_t *ir, const char *path, const ft_ref_extra_t *t, uint32_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return ft_status_make(FT_STATUS_IO, "%s: cannot create", path);
    uint64_t at = 0;
    int ok = 1;
    for (uint32_t i = 0; i < n && ok; i++) {
        const uint64_t e = ref_extra_elems(&t[i]);
        ok = fwrite(t[i].data, sizeof(float), e, f) == e;
        at += e * sizeof(float);
    }
    ok &= fclose(f) == 0;
    if (!ok) return ft_status_make(FT_STATUS_IO, "%s: cannot write", path);
    ft_src_file_t *files = ft_arena_array(ir->arena, ir->n_files + 1, sizeof(*files));
    ft_ir_tensor_t *ts = ft_arena_array(ir->arena, ir->n_tensors + n, sizeof(*ts));
    const char *p = ft_arena_strdup(ir->arena, path);
    if (!files || !ts || !p) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
    memcpy(files, ir->files, ir->n_files * sizeof(*files));
    memcpy(ts, ir->tensors, ir->n_tensors * sizeof(*ts));
    files[ir->n_files] = (ft_src_file_t){p, at};
    at = 0;
    for (uint32_t i = 0; i < n; i++) {
        ft_ir_tensor_t *x = &ts[ir->n_tensors + i];
        memset(x, 0, sizeof(*x));
        x->name = ft_arena_strdup(ir->arena, t[i].name);
        x->role = t[i].role;
        x->layer = t[i].layer;
        x->dtype = FT_DTYPE_F32;
        x->n_dims = t[i].n_dims;
        memcpy(x->shape, t[i].shape, t[i].n_dims * sizeof(uint64_t));
        x->n_pieces = 1;
        x->pieces = ft_arena_alloc(ir->arena, sizeof(ft_ir_piece_t));
        if (!x->name || !x->pieces) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        const uint64_t bytes = ref_extra_elems(&t[i]) * sizeof(float);
        x->pieces[0] = (ft_ir_piece_t){ir->n_files, at, bytes};
        at += bytes;
    }
    ir->files = files;
    ir->n_files++;
    ir->tensors = ts;
    ir->n_tensors += n;
    return ft_ir_model_validate(ir);
}

void ft_ref_fill_uniform(float *v, uint64_t n, uint32_t seed, float amp)
{
    uint64_t s = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (uint64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = amp * ((float)(s >> 40) / (float)(1ull << 24) * 2.0f - 1.0f);
    }
}
