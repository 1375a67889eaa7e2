/* Fuzz target: ft perplexity's saved logits file (runtime/cli/cli_ppl_file.c),
 * read through a memory stream: the header and size checks, the tokens, and
 * every window's logits. Seeds: tests/fuzz/corpus/fuzz_ppl_file/. */
#include "../../runtime/cli/cli_ppl_file.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0; /* fmemopen refuses an empty buffer */
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f) return 0;
    ft_ppl_file_t pf;
    ft_status_t st = ft_ppl_file_open(f, "fuzz.kld", &pf);
    if (!st) {
        const size_t n = (size_t)ft_ppl_n_scored(pf.h.ctx) * pf.h.vocab_size;
        float *rows = malloc(n * sizeof(float));
        for (uint32_t w = 0; rows && w < pf.h.n_windows && !st; w++)
            st = ft_ppl_file_read_window(&pf, w, rows);
        free(rows);
        ft_ppl_file_close(&pf);
    }
    ft_status_free(st);
    fclose(f);
    return 0;
}
