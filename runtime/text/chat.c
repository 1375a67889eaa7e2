/* Chat formats (see chat.h). Only ChatML for now: Qwen2/2.5/3 and most
 * models whose vocabulary carries <|im_start|> / <|im_end|>. */
#include "chat.h"

#include <stdlib.h>
#include <string.h>

static const char *const ft_chat_roles[] = {"system", "user", "assistant", "tool"};

ft_chat_format_t ft_chat_detect(const ft_tokenizer_t *tok)
{
    if (!tok) return FT_CHAT_NONE;
    const char *tmpl = ft_tokenizer_chat_template(tok);
    if (tmpl && strstr(tmpl, "<|im_start|>")) return FT_CHAT_CHATML;
    /* No template (or one we do not recognize), but the vocabulary has
     * the ChatML markers: the model was trained on ChatML. */
    if (ft_tokenizer_find(tok, "<|im_start|>") >= 0 && ft_tokenizer_find(tok, "<|im_end|>") >= 0)
        return FT_CHAT_CHATML;
    return FT_CHAT_NONE;
}

static int ft_chat_role_known(const char *role)
{
    for (size_t i = 0; i < sizeof(ft_chat_roles) / sizeof(ft_chat_roles[0]); i++)
        if (strcmp(role, ft_chat_roles[i]) == 0) return 1;
    return 0;
}

static void ft_chat_put(char *out, size_t *at, const char *s, size_t len)
{
    memcpy(out + *at, s, len);
    *at += len;
}

/* "<|im_start|>" role "\n" content "<|im_end|>\n" per message, then
 * "<|im_start|>assistant\n" when the model is to answer. */
FT_WARN_UNUSED static ft_status_t ft_chat_render_chatml(const ft_chat_message_t *msgs, size_t n_msgs,
                                         int add_generation_prompt, char **out_text)
{
    static const char start[] = "<|im_start|>", end[] = "<|im_end|>\n";
    static const char gen[] = "<|im_start|>assistant\n";
    const size_t fixed = (sizeof(start) - 1) + 1 + (sizeof(end) - 1);
    size_t total = add_generation_prompt ? sizeof(gen) - 1 : 0;
    for (size_t i = 0; i < n_msgs; i++) {
        const size_t add = fixed + strlen(msgs[i].role) + strlen(msgs[i].content);
        if (add < fixed || total > SIZE_MAX - 1 - add)
            return ft_status_make(FT_STATUS_OUT_OF_RANGE, "chat: messages too long at %zu", i);
        total += add;
    }
    char *out = malloc(total + 1);
    if (!out) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "chat: %zu bytes", total + 1);
    size_t at = 0;
    for (size_t i = 0; i < n_msgs; i++) {
        ft_chat_put(out, &at, start, sizeof(start) - 1);
        ft_chat_put(out, &at, msgs[i].role, strlen(msgs[i].role));
        ft_chat_put(out, &at, "\n", 1);
        ft_chat_put(out, &at, msgs[i].content, strlen(msgs[i].content));
        ft_chat_put(out, &at, end, sizeof(end) - 1);
    }
    if (add_generation_prompt) ft_chat_put(out, &at, gen, sizeof(gen) - 1);
    out[at] = '\0';
    *out_text = out;
    return FT_OK;
}

ft_status_t ft_chat_render(ft_chat_format_t fmt, const ft_chat_message_t *msgs, size_t n_msgs,
                           int add_generation_prompt, char **out_text)
{
    *out_text = NULL;
    if (n_msgs > 0 && !msgs)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "chat: %zu messages but no array",
                              n_msgs);
    for (size_t i = 0; i < n_msgs; i++) {
        if (!msgs[i].role || !msgs[i].content)
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "chat: message %zu has no %s", i,
                                  msgs[i].role ? "content" : "role");
        if (!ft_chat_role_known(msgs[i].role))
            return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                                  "chat: message %zu has role '%s' (expected system, user, "
                                  "assistant or tool)",
                                  i, msgs[i].role);
    }
    switch (fmt) {
    case FT_CHAT_CHATML:
        return ft_chat_render_chatml(msgs, n_msgs, add_generation_prompt, out_text);
    case FT_CHAT_NONE:
        break;
    }
    return ft_status_make(FT_STATUS_UNSUPPORTED,
                          "chat: the model has no chat format this runtime knows (format %d)",
                          (int)fmt);
}
