/* Calibration (`ftc compile --calibrate FILE.txt`): runs sample text
 * through a compiled bundle on the CPU backend with routing counting on,
 * to learn how often each expert of each layer is chosen. The CPU
 * runtime's routing is deterministic, so the counts are too. */
#ifndef FT_COMPILER_CALIBRATE_H
#define FT_COMPILER_CALIBRATE_H

#include "compile.h"

#include <stdint.h>

/* The largest calibration text read, bytes. */
#define FT_CALIBRATE_MAX_TEXT_BYTES (64u << 20)

typedef struct ft_calibration {
    uint64_t n_tokens;   /* tokens evaluated */
    uint32_t n_layers;
    uint32_t n_experts;  /* row stride of counts */
    uint64_t *counts;    /* [n_layers][n_experts] tokens routed to each expert; malloc'ed */
    char source[256];    /* the text file's name without its directory */
} ft_calibration_t;

/* Tokenizes the text file at text_path and evaluates it through the bundle
 * in bundle_dir in windows of up to the model's context length (a new
 * window starts from an empty context), counting routing. progress (may be
 * NULL) gets "calibrating", tokens done and the total. An empty or
 * token-less text is an error. Release *out with ft_calibration_release. */
FT_WARN_UNUSED ft_status_t ft_calibrate_bundle(const char *bundle_dir, const char *text_path,
                                ft_progress_fn progress, void *user, ft_calibration_t *out);
void ft_calibration_release(ft_calibration_t *c);

#endif
