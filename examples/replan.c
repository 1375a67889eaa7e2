/* replan: run a bundle on the sim backend (a modelled GPU with a VRAM
 * budget, real expert cache and streaming, numerics on the CPU) and move
 * the budget while the session lives.
 *
 *   replan BUNDLE PRESET VRAM NEW_VRAM [PROMPT [N_TOKENS]]
 *
 * PRESET: a hardware profile (a .textproto of share/freetoken/presets); VRAM,
 * NEW_VRAM: bytes, or with a K, M or G suffix (binary units). Generates
 * N_TOKENS greedily (default 24), calling ft_engine_replan(NEW_VRAM) half
 * way; the text goes to stdout, the engine's statistics before and after
 * the re-plan to stderr. The KV cache is planned for 64 tokens. */
#include "freetoken.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTEXT 64

static int fail(ft_status_t st)
{
    fprintf(stderr, "replan: %s: %s\n", ft_status_code_name(ft_status_code(st)),
            ft_status_message(st));
    ft_status_free(st);
    return 1;
}

static uint64_t parse_size(const char *s)
{
    char *end;
    uint64_t v = strtoull(s, &end, 10);
    switch (*end) {
    case 'G':
        v <<= 10; /* fall through */
    case 'M':
        v <<= 10; /* fall through */
    case 'K':
        v <<= 10;
        break;
    default:
        break;
    }
    return v;
}

static void print_stats(const char *when, const ft_engine_t *e)
{
    ft_engine_stats_t s;
    ft_engine_stats(e, &s);
    fprintf(stderr,
            "%s: vram_bytes=%llu n_slots=%u expert_hits=%llu expert_misses=%llu bytes_copied=%llu "
            "n_tokens=%llu device_seconds=%.6f%s\n",
            when, (unsigned long long)s.vram_bytes, s.n_slots, (unsigned long long)s.expert_hits,
            (unsigned long long)s.expert_misses, (unsigned long long)s.bytes_copied,
            (unsigned long long)s.n_tokens, s.device_seconds, s.predicted ? " (modelled)" : "");
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: %s BUNDLE PRESET VRAM NEW_VRAM [PROMPT [N_TOKENS]]\n", argv[0]);
        return 2;
    }
    const char *prompt_text = argc > 5 ? argv[5] : "In the beginning";
    const uint32_t n_predict = argc > 6 ? (uint32_t)strtoul(argv[6], NULL, 10) : 24;
    const uint64_t new_vram = parse_size(argv[4]);

    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_SIM;
    eo.hw_profile = argv[2];
    eo.vram_bytes = parse_size(argv[3]);
    eo.plan_ctx = CONTEXT;
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(argv[1], &eo, &e);
    if (st) return fail(st);

    ft_session_options_t sopt;
    ft_session_options_init(&sopt);
    sopt.n_ctx = CONTEXT;
    ft_sampler_options_t so;
    ft_sampler_options_init(&so);
    so.temperature = 0; /* greedy: the same tokens as the cpu backend */
    ft_session_t *s = NULL;
    ft_sampler_t *smp = NULL;
    ft_detokenizer_t *detok = NULL;
    int32_t *ids = NULL, hist[CONTEXT];
    uint32_t n = 0, n_prompt = 0;
    const char *text;
    size_t n_text;
    if ((st = ft_session_create(e, &sopt, &s)) ||
        (st = ft_sampler_create(&so, ft_engine_info(e)->vocab_size, &smp)) ||
        (st = ft_detokenizer_create(e, &detok)) ||
        (st = ft_engine_tokenize(e, prompt_text, strlen(prompt_text), FT_TOKENIZE_ADD_BOS, &ids,
                                 &n_prompt)))
        goto out;
    if (n_prompt == 0 || n_prompt + n_predict > CONTEXT) {
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "%u prompt tokens and %u more exceed %d",
                            n_prompt, n_predict, CONTEXT);
        goto out;
    }
    memcpy(hist, ids, n_prompt * sizeof(int32_t));
    n = n_prompt;
    if ((st = ft_session_eval(s, ids, n_prompt, NULL))) goto out;
    for (uint32_t i = 0; i < n_predict; i++) {
        if (i == n_predict / 2) {
            print_stats("before replan", e);
            /* The expert slots and KV memory are repartitioned; the
             * session and its KV cache stay as they are. */
            if ((st = ft_engine_replan(e, new_vram))) goto out;
            print_stats("after replan", e);
        }
        ft_sample_t smpl;
        if ((st = ft_sampler_next(smp, ft_session_logits(s), hist, n, &smpl)) ||
            ft_engine_is_eog(e, smpl.token))
            break;
        hist[n++] = smpl.token;
        if ((st = ft_detokenizer_feed(detok, smpl.token, &text, &n_text))) goto out;
        fwrite(text, 1, n_text, stdout);
        if (i + 1 < n_predict && (st = ft_session_eval(s, &smpl.token, 1, NULL))) goto out;
    }
    if (!st && !(st = ft_detokenizer_flush(detok, &text, &n_text))) fwrite(text, 1, n_text, stdout);
    printf("\n");
    print_stats("end", e);

out:
    ft_engine_free(e, ids);
    ft_detokenizer_destroy(detok);
    ft_sampler_destroy(smp);
    ft_session_destroy(s);
    ft_engine_close(e);
    return st ? fail(st) : 0;
}
