/* Chat formats: turning a list of messages into the prompt text a model
 * was trained on. ChatML (<|im_start|>role\ncontent<|im_end|>\n) is what
 * Qwen models use; the format is recognized from the plan's chat template. */
#ifndef FT_TEXT_CHAT_H
#define FT_TEXT_CHAT_H

#include "freetoken.h"
#include "tokenizer.h"

#include <stddef.h>

typedef enum ft_chat_format {
    FT_CHAT_NONE = 0,
    FT_CHAT_CHATML = 1,
} ft_chat_format_t;

/* The format the tokenizer's chat template (or its special tokens) implies. */
ft_chat_format_t ft_chat_detect(const ft_tokenizer_t *tok);

/* Renders messages (role: "system", "user", "assistant", "tool") and, when
 * add_generation_prompt, the opening of the assistant turn. *out_text is
 * malloc'ed. An unknown format or role is an error. */
FT_WARN_UNUSED ft_status_t ft_chat_render(ft_chat_format_t fmt, const ft_chat_message_t *msgs, size_t n_msgs,
                           int add_generation_prompt, char **out_text);

#endif
