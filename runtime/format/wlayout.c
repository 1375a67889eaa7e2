#include "wlayout.h"

#include <string.h>

enum { FT_R16 = 16, FT_Q8_0_BLOCK = 34, FT_Q8_0_ELEMS = 32 };

const char *ft_wlayout_name(uint32_t layout)
{
    switch (layout) {
    case FT_WLAYOUT_ROWS:
        return "rows";
    case FT_WLAYOUT_Q8_0_R16:
        return "q8_0_r16";
    default:
        return NULL;
    }
}

uint32_t ft_wlayout_group_rows(uint32_t layout)
{
    return layout == FT_WLAYOUT_ROWS ? 1 : layout == FT_WLAYOUT_Q8_0_R16 ? FT_R16 : 0;
}

int ft_wlayout_fits(uint32_t layout, ft_dtype_t dt, uint64_t rows, uint64_t cols)
{
    if (layout == FT_WLAYOUT_ROWS) return 1;
    if (layout == FT_WLAYOUT_Q8_0_R16)
        return dt == FT_DTYPE_Q8_0 && rows > 0 && rows % FT_R16 == 0 && cols > 0 &&
               cols % FT_Q8_0_ELEMS == 0 &&
               cols / FT_Q8_0_ELEMS * FT_Q8_0_BLOCK * FT_R16 <= FT_WLAYOUT_MAX_GROUP_BYTES;
    return 0;
}

/* Byte j of row r's block b <-> its place in the group (see wlayout.h):
 * the scale's two bytes at b * 544 + 2r, quant c (0..31) at b * 544 + 32
 * + (c / 4) * 64 + 4r + c % 4. */
void ft_wlayout_pack_group(uint32_t layout, const uint8_t *rows, size_t row_bytes, uint8_t *out)
{
    if (layout == FT_WLAYOUT_ROWS) {
        memcpy(out, rows, row_bytes);
        return;
    }
    const size_t nb = row_bytes / FT_Q8_0_BLOCK;
    for (size_t b = 0; b < nb; b++) {
        uint8_t *o = out + b * FT_R16 * FT_Q8_0_BLOCK;
        for (uint32_t r = 0; r < FT_R16; r++) {
            const uint8_t *blk = rows + r * row_bytes + b * FT_Q8_0_BLOCK;
            o[2 * r] = blk[0];
            o[2 * r + 1] = blk[1];
            for (uint32_t c = 0; c < FT_Q8_0_ELEMS; c++)
                o[32 + (c / 4) * 64 + 4 * r + c % 4] = blk[2 + c] ^ 0x80u;
        }
    }
}

void ft_wlayout_unpack_group(uint32_t layout, const uint8_t *group, size_t row_bytes, uint8_t *rows)
{
    if (layout == FT_WLAYOUT_ROWS) {
        memcpy(rows, group, row_bytes);
        return;
    }
    const size_t nb = row_bytes / FT_Q8_0_BLOCK;
    for (size_t b = 0; b < nb; b++) {
        const uint8_t *g = group + b * FT_R16 * FT_Q8_0_BLOCK;
        for (uint32_t r = 0; r < FT_R16; r++) {
            uint8_t *blk = rows + r * row_bytes + b * FT_Q8_0_BLOCK;
            blk[0] = g[2 * r];
            blk[1] = g[2 * r + 1];
            for (uint32_t c = 0; c < FT_Q8_0_ELEMS; c++)
                blk[2 + c] = g[32 + (c / 4) * 64 + 4 * r + c % 4] ^ 0x80u;
        }
    }
}
