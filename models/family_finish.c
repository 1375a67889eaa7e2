#include "family_finish.h"

#include "model_names.h"

int ft_family_tied_embeddings(const ft_src_model_t *src)
{
    if (src->kind == FT_SRC_HF) {
        int tie = 0;
        ft_meta_get_bool(&src->meta, "tie_word_embeddings", &tie);
        return tie;
    }
    return ft_src_find_tensor(src, "output.weight") == NULL;
}

ft_status_t ft_family_collect(const ft_src_model_t *src, ft_ir_model_t *m)
{
    ft_status_t st = ft_model_names_collect(src, m);
    if (st)
        return st;
    const ft_ir_tensor_t *embd = ft_ir_find(m, FT_ROLE_TOKEN_EMBD, -1);
    if (!embd || embd->n_dims != 2 || embd->shape[0] > UINT32_MAX)
        return ft_status_make(FT_STATUS_FORMAT, "%s: no usable token embedding tensor", src->path);
    m->hp.vocab_size = (uint32_t)embd->shape[0];
    int64_t cfg_vocab;
    if (src->kind == FT_SRC_HF && ft_meta_get_i64(&src->meta, "vocab_size", &cfg_vocab) &&
        cfg_vocab != (int64_t)m->hp.vocab_size)
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: config.json vocab_size %lld disagrees with the embedding's %u rows",
                              src->path, (long long)cfg_vocab, m->hp.vocab_size);
    if (m->tok.n_tokens && m->tok.n_tokens != m->hp.vocab_size)
        return ft_status_make(FT_STATUS_FORMAT, "%s: tokenizer has %u tokens but the embedding has %u rows",
                              src->path, m->tok.n_tokens, m->hp.vocab_size);
    return FT_OK;
}
