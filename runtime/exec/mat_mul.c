/* Matrix products over a plan's weight matrices (model.h: ft_mat_mul). */
#include "model.h"

#include "../backends/cpu/kernels.h"
#include "../format/wlayout.h"

#include <string.h>

uint32_t ft_mat_grain(const ft_mat_t *mat, uint32_t grain)
{
    const uint32_t g = ft_wlayout_group_rows(mat->layout);
    return g > grain ? g : grain;
}

void ft_mat_mul(const ft_mat_t *mat, int gen, const uint8_t *w, const void *xp, uint32_t n_tok,
                uint32_t r0, uint32_t r1, float *y, size_t ldy)
{
    if (r0 >= r1) return;
    if (mat->kernel && gen) {
        mat->kernel(w, mat->row_bytes, xp, n_tok, r0, r1, y, ldy);
        return;
    }
    if (mat->layout == FT_WLAYOUT_ROWS) {
        ft_cpu_matmul(mat->dtype, w, mat->row_bytes, xp, n_tok, mat->cols, r0, r1, y, ldy);
        return;
    }
    /* The reference kernels read rows: each group of the layout's rows
     * put back in row order (the model checked a group fits). */
    _Alignas(64) uint8_t rows[FT_WLAYOUT_MAX_GROUP_BYTES];
    const uint32_t gr = ft_wlayout_group_rows(mat->layout);
    for (uint32_t g0 = r0 - r0 % gr; g0 < r1; g0 += gr) {
        ft_wlayout_unpack_group(mat->layout, w + (size_t)g0 * mat->row_bytes, mat->row_bytes, rows);
        const uint32_t a = r0 > g0 ? r0 - g0 : 0, b = r1 - g0 < gr ? r1 - g0 : gr;
        ft_cpu_matmul(mat->dtype, rows, mat->row_bytes, xp, n_tok, mat->cols, a, b, y + g0, ldy);
    }
}
