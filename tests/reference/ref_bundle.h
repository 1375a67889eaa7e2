/* Test helpers around the reference: compile a fixture model into a bundle
 * in-process (fixture writer -> import -> compile), and load the reference
 * of a bundle. Used by the forward-pass tests (tests/unit/test_forward*.c,
 * slow_forward*.c). */
#ifndef FT_REF_BUNDLE_H
#define FT_REF_BUNDLE_H

#include "freetoken.h"
#include "model_gen.h"

#include <stddef.h>

struct ft_ir_model;

typedef enum ft_ref_source { FT_REF_FROM_GGUF = 0, FT_REF_FROM_HF = 1 } ft_ref_source_t;

/* Writes the fixture o (as a GGUF file or an HF directory) under work_dir,
 * imports it and compiles it with weight format `format` (FT_DTYPE_INVALID
 * keeps the source's) into the bundle directory
 * "<work_dir>/bundle-<format>-<gguf|hf>", whose path goes to out_bundle
 * (cap bytes). The KV cache is f32 (ftc compile --kv f32): the tests that
 * use this compare with the float64 reference or assert bit-identity,
 * which an f16 cache's rounding would not keep. */
ft_status_t ft_ref_build_bundle(const ft_fixture_opts_t *o, ft_ref_source_t from, ft_dtype_t format,
                                const char *work_dir, char *out_bundle, size_t cap);

/* ft_ref_build_bundle with the KV cache in kv_format (FT_DTYPE_F16, ftc's
 * default, or FT_DTYPE_F32); an f16 bundle's directory ends in "-kvf16". */
ft_status_t ft_ref_build_bundle_kv(const ft_fixture_opts_t *o, ft_ref_source_t from, ft_dtype_t format,
                                   ft_dtype_t kv_format, const char *work_dir, char *out_bundle, size_t cap);

/* Imports the source model src (a GGUF file or an HF directory) and
 * compiles it to f32 weights with an f32 KV cache and cubins for sm_90
 * (the fake CUDA driver's device), no other CUDA target, into out_bundle:
 * the cuda backend's tests against the float64 reference. */
ft_status_t ft_ref_build_cuda_bundle(const char *src, const char *out_bundle);
/* The same from an imported (and possibly amended) IR. */
ft_status_t ft_ref_build_cuda_bundle_ir(const struct ft_ir_model *m, const char *out_bundle);

/* The "wide" fixture: the tiny preset's layout with every row length a
 * multiple of 256 (d_model 256, 4 heads of 64 / 2 kv heads, 4 experts of
 * ffn 256, 2 used), so that the K-quant formats (Q4_K, Q6_K) apply. */
void ft_ref_wide_opts(ft_fixture_opts_t *o);

#endif
