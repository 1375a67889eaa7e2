/* The logit adjustments before the filters (steps 1-3 of the chain in
 * freetoken.h): logit bias, llama.cpp's repetition penalty over the
 * caller's history, and OpenAI's presence and frequency penalties over the
 * tokens this request generated. Each touches only the ids it names: the
 * bias list, the history window, the distinct generated ids. */
#include "sampler_internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

ft_status_t ft_sampler_check_penalties(const ft_sampler_options_t *o, uint32_t n_vocab)
{
    if (!(fabsf(o->presence_penalty) <= FT_SAMPLER_MAX_PENALTY))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "sampler: presence_penalty %g, expected -%g..%g (0: off)",
                              o->presence_penalty, FT_SAMPLER_MAX_PENALTY, FT_SAMPLER_MAX_PENALTY);
    if (!(fabsf(o->frequency_penalty) <= FT_SAMPLER_MAX_PENALTY))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "sampler: frequency_penalty %g, expected -%g..%g (0: off)",
                              o->frequency_penalty, FT_SAMPLER_MAX_PENALTY, FT_SAMPLER_MAX_PENALTY);
    if (o->n_logit_bias > 0 && !o->logit_bias)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "sampler: %u logit_bias entries but no array", o->n_logit_bias);
    for (uint32_t i = 0; i < o->n_logit_bias; i++) {
        const ft_logit_bias_t *b = &o->logit_bias[i];
        if (b->id < 0 || (uint32_t)b->id >= n_vocab)
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "sampler: logit_bias[%u] is for token %d, outside the vocabulary "
                                  "of %u tokens",
                                  i, b->id, n_vocab);
        if (!(fabsf(b->bias) <= FT_SAMPLER_MAX_PENALTY) && b->bias != -INFINITY)
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "sampler: logit_bias[%u] (token %d) is %g, expected -%g..%g or "
                                  "-inf (a ban)",
                                  i, b->id, b->bias, FT_SAMPLER_MAX_PENALTY,
                                  FT_SAMPLER_MAX_PENALTY);
        for (uint32_t j = 0; j < i; j++) /* OpenAI's are JSON object keys: unique */
            if (o->logit_bias[j].id == b->id)
                return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                      "sampler: logit_bias[%u] and [%u] are both for token %d", j,
                                      i, b->id);
    }
    return FT_OK;
}

/* Keeps an adjusted logit below +inf (softmax must stay finite). */
static float ft_sampler_clamp(float l)
{
    return l > FLT_MAX ? FLT_MAX : l;
}

static void ft_sampler_repeat(ft_sampler_t *s, const int32_t *history, uint32_t n_history)
{
    const float penalty = s->opts.repeat_penalty;
    if (penalty == 1.0f || s->opts.repeat_last_n == 0 || n_history == 0) return;
    if (++s->stamp == 0) { /* wrapped after 2^32 calls: forget old stamps */
        memset(s->seen, 0, (size_t)s->n_vocab * sizeof(*s->seen));
        s->stamp = 1;
    }
    const uint32_t n = n_history < s->opts.repeat_last_n ? n_history : s->opts.repeat_last_n;
    for (uint32_t i = n_history - n; i < n_history; i++) {
        const int32_t id = history[i];
        if (s->seen[id] == s->stamp) continue;
        s->seen[id] = s->stamp;
        float *l = &s->cand[id].logit;
        *l = *l > 0.0f ? *l / penalty : *l * penalty;
    }
}

ft_status_t ft_sampler_penalize(ft_sampler_t *s, const int32_t *history, uint32_t n_history)
{
    if (n_history > 0 && !history)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "sampler: %u history ids but no array",
                              n_history);
    for (uint32_t i = 0; i < n_history; i++)
        if (history[i] < 0 || (uint32_t)history[i] >= s->n_vocab)
            return ft_status_make(
                FT_STATUS_INVALID_ARGUMENT,
                "sampler: history[%u] = %d is outside the vocabulary of %u tokens", i, history[i],
                s->n_vocab);
    for (uint32_t i = 0; i < s->opts.n_logit_bias; i++) {
        float *l = &s->cand[s->bias[i].id].logit;
        *l = ft_sampler_clamp(*l + s->bias[i].bias);
    }
    ft_sampler_repeat(s, history, n_history);
    const float presence = s->opts.presence_penalty, frequency = s->opts.frequency_penalty;
    if (presence != 0.0f || frequency != 0.0f) {
        for (uint32_t i = 0; i < s->n_generated; i++) {
            const int32_t id = s->generated[i];
            /* |penalty| <= 1e6 * (1 + 2^32): finite, so no inf - inf */
            const float penalty = presence + frequency * (float)s->count[id];
            s->cand[id].logit = ft_sampler_clamp(s->cand[id].logit - penalty);
        }
    }
    return FT_OK;
}

void ft_sampler_count(ft_sampler_t *s, int32_t id)
{
    if (s->count[id] == 0) s->generated[s->n_generated++] = id;
    if (s->count[id] < UINT32_MAX) s->count[id]++;
}
