/* chat: a multi-turn conversation on stdin, one user message a line, in
 * the bundle's own chat format (ft_engine_chat_format).
 *
 *   chat BUNDLE [N_TOKENS [TEMPERATURE]]
 *
 * Each turn renders the whole conversation and evaluates only the tokens
 * the session has not seen: the KV cache of earlier turns is kept, and
 * where the rendering of a reply tokenizes differently from the tokens
 * sampled, the session is rewound to the common prefix. After each reply
 * a line on stderr gives the turn's tokens and the context in use. */
#include "freetoken.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MESSAGES 64

static int fail(ft_status_t st)
{
    fprintf(stderr, "chat: %s: %s\n", ft_status_code_name(ft_status_code(st)),
            ft_status_message(st));
    ft_status_free(st);
    return 1;
}

/* Brings the session to the conversation's tokens: rewinds to what they
 * share with the evaluated ones (keeping at least one to evaluate, for its
 * logits) and evaluates the rest. hist holds the evaluated tokens. */
static ft_status_t sync_session(ft_session_t *s, int32_t *hist, uint32_t *n_hist,
                                const int32_t *ids, uint32_t n)
{
    uint32_t same = 0;
    while (same < *n_hist && same + 1 < n && hist[same] == ids[same])
        same++;
    ft_status_t st = ft_session_rewind(s, same);
    if (!st) st = ft_session_eval(s, ids + same, n - same, NULL);
    if (!st) {
        memcpy(hist + same, ids + same, (n - same) * sizeof(int32_t));
        *n_hist = n;
    }
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s BUNDLE [N_TOKENS [TEMPERATURE]] < messages\n", argv[0]);
        return 2;
    }
    const uint32_t n_predict = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 64;
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(argv[1], NULL, &e);
    if (st) return fail(st);
    ft_sampler_options_t so;
    ft_sampler_options_init(&so);
    if (argc > 3) so.temperature = strtof(argv[3], NULL);

    ft_chat_message_t msgs[MAX_MESSAGES];
    char *texts[MAX_MESSAGES]; /* what msgs[].content points to */
    size_t n_msgs = 0;
    ft_session_t *s = NULL;
    ft_sampler_t *smp = NULL;
    ft_detokenizer_t *detok = NULL;
    int32_t *hist = NULL;
    uint32_t n_hist = 0;
    char line[4096], *reply = NULL;
    if ((st = ft_session_create(e, NULL, &s)) ||
        (st = ft_sampler_create(&so, ft_engine_info(e)->vocab_size, &smp)) ||
        (st = ft_detokenizer_create(e, &detok)))
        goto out;
    const uint32_t n_ctx = ft_session_n_ctx(s);
    if (!(hist = malloc(n_ctx * sizeof(int32_t)))) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    while (n_msgs + 2 <= MAX_MESSAGES && fgets(line, sizeof(line), stdin)) {
        line[strcspn(line, "\n")] = 0;
        if (!(reply = calloc(1, 1)) || !(texts[n_msgs] = malloc(strlen(line) + 1))) {
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
            goto out;
        }
        strcpy(texts[n_msgs], line);
        msgs[n_msgs] = (ft_chat_message_t){"user", texts[n_msgs]};
        n_msgs++;
        char *conv = NULL;
        int32_t *ids = NULL;
        uint32_t n_ids = 0, n_gen = 0;
        if (!(st = ft_engine_chat_format(e, msgs, n_msgs, 1, &conv)))
            st = ft_engine_tokenize(e, conv, strlen(conv),
                                    FT_TOKENIZE_SPECIAL | FT_TOKENIZE_ADD_BOS, &ids, &n_ids);
        ft_engine_free(e, conv);
        if (!st && n_ids + n_predict > n_ctx)
            st = ft_status_make(FT_STATUS_OUT_OF_RANGE, "the conversation no longer fits %u tokens",
                                n_ctx);
        if (!st) st = sync_session(s, hist, &n_hist, ids, n_ids);
        ft_engine_free(e, ids);
        size_t n_reply = 0;
        ft_sampler_reset(smp); /* each reply is a new request */
        while (!st && n_gen < n_predict) {
            ft_sample_t smpl;
            const char *piece;
            size_t n_piece;
            if ((st = ft_sampler_next(smp, ft_session_logits(s), hist, n_hist, &smpl)) ||
                ft_engine_is_eog(e, smpl.token) ||
                (st = ft_detokenizer_feed(detok, smpl.token, &piece, &n_piece)))
                break;
            char *r = realloc(reply, n_reply + n_piece + 1);
            if (!r) {
                st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "out of memory");
                break;
            }
            reply = r;
            memcpy(reply + n_reply, piece, n_piece);
            reply[n_reply += n_piece] = 0;
            fwrite(piece, 1, n_piece, stdout);
            fflush(stdout);
            hist[n_hist++] = smpl.token;
            n_gen++;
            st = ft_session_eval(s, &smpl.token, 1, NULL);
        }
        const char *tail; /* a character the reply left incomplete: U+FFFD */
        size_t n_tail;
        if (st || (st = ft_detokenizer_flush(detok, &tail, &n_tail))) goto out;
        printf("%.*s\n", (int)n_tail, tail);
        fprintf(stderr, "[turn %zu: %u tokens, %u of %u context]\n", n_msgs / 2 + 1, n_gen,
                ft_session_n_past(s), n_ctx);
        texts[n_msgs] = reply;
        msgs[n_msgs] = (ft_chat_message_t){"assistant", reply};
        n_msgs++;
        reply = NULL;
    }

out:
    free(reply);
    for (size_t i = 0; i < n_msgs; i++)
        free(texts[i]);
    free(hist);
    ft_detokenizer_destroy(detok);
    ft_sampler_destroy(smp);
    ft_session_destroy(s);
    ft_engine_close(e);
    return st ? fail(st) : 0;
}
