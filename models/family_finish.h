/* The end every family's IR builder shares, once its hyperparameters and
 * blocks are set: whether the output head is the token embedding, the
 * tensors collected by name, and the vocabulary size taken from the token
 * embedding and checked against the tokenizer and an HF config. */
#ifndef FT_MODELS_FAMILY_FINISH_H
#define FT_MODELS_FAMILY_FINISH_H

#include "freetoken.h"
#include "ir.h"
#include "source.h"

/* 1 when the output head is the token embedding: an HF config's
 * tie_word_embeddings, or a GGUF without output.weight. */
int ft_family_tied_embeddings(const ft_src_model_t *src);

/* ft_model_names_collect, then hp.vocab_size from the token embedding's
 * rows; a FORMAT status when there is no usable embedding, or the
 * tokenizer or an HF config's vocab_size disagrees with it. */
FT_WARN_UNUSED ft_status_t ft_family_collect(const ft_src_model_t *src, ft_ir_model_t *m);

#endif
