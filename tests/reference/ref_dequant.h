/* The float64 reference's own dequantizer: every weight format a bundle or
 * a source model can hold, decoded to double from the format's definition
 * (ggml's block layouts for the ggml types, OCP's for the minifloats,
 * runtime/format/dtype.h's text for NVFP4's sub-block order and for FP8),
 * written apart from the runtime's quantizers and dequantizers and calling
 * none of them, so that a layout misread by both the writer and the runtime's
 * reader is not also the reference's. Every value is exact in double. */
#ifndef FT_REF_DEQUANT_H
#define FT_REF_DEQUANT_H

#include "freetoken.h"
#include "../../runtime/format/dtype.h"

#include <stdint.h>

/* Bytes of a row of n elements of dt by this file's own block table, or 0
 * when dt is not one it reads or n is not a multiple of its block. */
uint64_t ft_ref_row_bytes(ft_dtype_t dt, uint64_t n);

/* Decodes a row of n elements of dt at src into out. Errors: a format this
 * reference does not read, n not a multiple of the block. */
FT_WARN_UNUSED ft_status_t ft_ref_dequant_row(ft_dtype_t dt, const uint8_t *src, uint64_t n,
                                              double *out);

#endif
