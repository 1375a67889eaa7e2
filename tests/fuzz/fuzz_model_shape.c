/* Fuzzes model shapes from config.json text: a config that parses gives
 * either a clear error or a shape whose totals do not overflow. The first
 * input byte picks the weight formats. */
#include "hf_internal.h"
#include "shape.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const ft_dtype_t fmts[] = {FT_DTYPE_Q4_K, FT_DTYPE_MXFP4, FT_DTYPE_BF16, FT_DTYPE_Q8_0};
    unsigned sel = size ? data[0] : 0;
    const char *json = size ? (const char *)data + 1 : "";
    size_t len = size ? size - 1 : 0;
    ft_src_model_t *src;
    if (ft_src_model_create(FT_SRC_HF, "fuzz", &src))
        __builtin_trap(); /* only out of memory */
    ft_status_t st = ft_hf_config_parse(&src->meta, "fuzz/config.json", json, len);
    if (!st) {
        ft_plan_model_t *m = NULL;
        st = ft_model_shape(&src->meta, "fuzz/config.json", 0, fmts[sel & 3], fmts[(sel >> 2) & 3], &m);
        if (!st) {
            ft_shape_totals_t t;
            ft_model_shape_totals(m, &t);
            if (m->n_layers == 0 || t.weight_bytes < t.active_bytes / 2)
                __builtin_trap();
        }
        ft_model_shape_free(m);
    }
    ft_status_free(st);
    ft_src_model_destroy(src);
    return 0;
}
