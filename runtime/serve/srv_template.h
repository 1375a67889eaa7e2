/* Chat templates rendered in C, one renderer per model family, chosen
 * from the model's own Jinja template (ft_engine_chat_template). Each
 * renderer reproduces its template's output byte for byte
 * (tests/unit/test_serve_template.c checks it against Python Jinja2's
 * rendering of the template, tests/data/serve/). */
#ifndef FT_SERVE_SRV_TEMPLATE_H
#define FT_SERVE_SRV_TEMPLATE_H

#include "srv_buf.h"
#include "srv_conv.h"

typedef enum ft_srv_family {
    FT_SRV_FAMILY_NONE = 0,    /* no chat format we know: chat endpoints refuse */
    FT_SRV_FAMILY_CHATML = 1,  /* <|im_start|> turns, no tool or reasoning syntax */
    FT_SRV_FAMILY_QWEN3 = 2,   /* Qwen3: ChatML with <tools>, JSON in <tool_call>, <think> */
    FT_SRV_FAMILY_QWEN35 = 3,  /* Qwen3.5/3.6: tools before the system text, XML calls
                                  (<function=NAME><parameter=P>), "<think>\n" opens replies */
    FT_SRV_FAMILY_HARMONY = 4, /* gpt-oss: <|start|>ROLE<|channel|>C<|message|>...<|end|> */
    FT_SRV_FAMILY_DEEPSEEK =
        5, /* DeepSeek V3.1: <｜User｜>, <｜Assistant｜>, <｜tool▁call▁begin｜> */
    FT_SRV_FAMILY_GLM = 6, /* GLM-4.5/4.6: [gMASK]<sop>, <|user|>, <tool_call>NAME<arg_key> */
    FT_SRV_FAMILY_QWEN3_CODER = 7, /* Qwen3-Coder: ChatML, tools as XML, Qwen3.5's XML calls */
} ft_srv_family_t;

/* From the template source (NULL: none); has_chatml_tokens: the
 * vocabulary has <|im_start|> and <|im_end|> (a model without a template
 * that was trained on ChatML). */
ft_srv_family_t ft_srv_family_detect(const char *chat_template, int has_chatml_tokens);
const char *ft_srv_family_name(ft_srv_family_t f);

/* The family's template writes the BOS token itself (the prompt is
 * tokenized without adding one). */
int ft_srv_family_writes_bos(ft_srv_family_t f);

/* Renders c's messages and tools and, when add_generation_prompt, the
 * opening of the assistant turn (c->enable_thinking 0 adds the empty
 * think block, as Qwen3's template does) into out. 0 and *err (400) when
 * the family cannot express the conversation (tools on plain ChatML) or
 * its template refuses it (Qwen3.5: a system message after the first). */
int ft_srv_render(ft_srv_family_t f, const ft_srv_conv_t *c, int add_generation_prompt,
                  ft_srv_buf_t *out, ft_srv_error_t *err);

/* Message boundaries of a rendering: byte offsets into out, ascending,
 * where a later request is likely to resume (srv_anchor.h): the end of
 * the system turn (system text and tools), the start and end of each
 * message (so before each tool result and after it), and the end of
 * each tool call in an assistant message. A family that marks nothing
 * still renders correctly; its requests just restore less. */
typedef struct ft_srv_bounds {
    size_t *off;
    size_t n, cap;
    int oom;
} ft_srv_bounds_t;

/* Records offset off (ignored unless past the last one; NULL b: nothing). */
void ft_srv_bounds_mark(ft_srv_bounds_t *b, size_t off);
void ft_srv_bounds_free(ft_srv_bounds_t *b);

/* ft_srv_render, also marking the boundaries into bounds (NULL: none). */
int ft_srv_render_bounds(ft_srv_family_t f, const ft_srv_conv_t *c, int add_generation_prompt,
                         ft_srv_buf_t *out, ft_srv_bounds_t *bounds, ft_srv_error_t *err);

#endif
