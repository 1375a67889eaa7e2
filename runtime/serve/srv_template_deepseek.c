/* DeepSeek V3.1's chat template in C (srv_template_internal.h): the BOS
 * token and the system messages joined, <｜User｜>/<｜Assistant｜> turns,
 * </think> (or <think> when thinking) opening each reply, calls as
 * <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜> and results
 * as <｜tool▁output▁begin｜>...<｜tool▁output▁end｜>. The template does not
 * print the tools (DeepSeek's documentation has the caller describe them
 * in the system message), so neither does this. The Jinja source this
 * mirrors is tests/data/serve/templates/deepseek_v3_1.jinja. */
#include "srv_template_internal.h"

#include <string.h>

/* DeepSeek's markers: <｜...｜> with fullwidth bars, ▁ for spaces */
#define FT_DS_BAR "\xef\xbd\x9c"
#define FT_DS_SP "\xe2\x96\x81"
#define FT_DS_BOS "<" FT_DS_BAR "begin" FT_DS_SP "of" FT_DS_SP "sentence" FT_DS_BAR ">"
#define FT_DS_EOS "<" FT_DS_BAR "end" FT_DS_SP "of" FT_DS_SP "sentence" FT_DS_BAR ">"
#define FT_DS_USER "<" FT_DS_BAR "User" FT_DS_BAR ">"
#define FT_DS_ASSISTANT "<" FT_DS_BAR "Assistant" FT_DS_BAR ">"
#define FT_DS_CALLS_BEGIN "<" FT_DS_BAR "tool" FT_DS_SP "calls" FT_DS_SP "begin" FT_DS_BAR ">"
#define FT_DS_CALLS_END "<" FT_DS_BAR "tool" FT_DS_SP "calls" FT_DS_SP "end" FT_DS_BAR ">"
#define FT_DS_CALL_BEGIN "<" FT_DS_BAR "tool" FT_DS_SP "call" FT_DS_SP "begin" FT_DS_BAR ">"
#define FT_DS_CALL_END "<" FT_DS_BAR "tool" FT_DS_SP "call" FT_DS_SP "end" FT_DS_BAR ">"
#define FT_DS_SEP "<" FT_DS_BAR "tool" FT_DS_SP "sep" FT_DS_BAR ">"
#define FT_DS_OUT_BEGIN "<" FT_DS_BAR "tool" FT_DS_SP "output" FT_DS_SP "begin" FT_DS_BAR ">"
#define FT_DS_OUT_END "<" FT_DS_BAR "tool" FT_DS_SP "output" FT_DS_SP "end" FT_DS_BAR ">"

int ft_srv_render_deepseek(const ft_srv_conv_t *c, int add_generation_prompt, ft_srv_buf_t *b,
                           size_t *ends, ft_srv_error_t *err)
{
    (void)err;
    ft_srv_buf_puts(b, FT_DS_BOS);
    int first_sp = 1;
    for (size_t i = 0; i < c->n_msgs; i++) {
        if (c->msgs[i].role != FT_SRV_SYSTEM) continue;
        if (!first_sp) ft_srv_buf_puts(b, "\n\n");
        ft_srv_buf_puts(b, c->msgs[i].content);
        first_sp = 0;
    }
    const int thinking = c->enable_thinking == 1;
    int is_tool = 0, is_last_user = 0;
    for (size_t i = 0; i < c->n_msgs; i++) {
        const ft_srv_msg_t *m = &c->msgs[i];
        if (m->role == FT_SRV_USER) {
            is_tool = 0;
            is_last_user = 1;
            ft_srv_buf_puts(b, FT_DS_USER);
            ft_srv_buf_puts(b, m->content);
        } else if (m->role == FT_SRV_ASSISTANT && m->n_calls) {
            if (is_last_user) ft_srv_buf_puts(b, FT_DS_ASSISTANT "</think>");
            is_last_user = is_tool = 0;
            for (size_t k = 0; k < m->n_calls; k++) {
                if (!k) {
                    ft_srv_buf_puts(b, m->content);
                    ft_srv_buf_puts(b, FT_DS_CALLS_BEGIN);
                }
                ft_srv_buf_puts(b, FT_DS_CALL_BEGIN);
                ft_srv_buf_puts(b, m->calls[k].name);
                ft_srv_buf_puts(b, FT_DS_SEP);
                ft_srv_buf_puts(b, m->calls[k].arguments ? m->calls[k].arguments : "");
                ft_srv_buf_puts(b, FT_DS_CALL_END);
            }
            ft_srv_buf_puts(b, FT_DS_CALLS_END FT_DS_EOS);
        } else if (m->role == FT_SRV_ASSISTANT) {
            if (is_last_user) ft_srv_buf_puts(b, FT_DS_ASSISTANT "</think>");
            is_last_user = 0;
            const char *ct = m->content;
            if (is_tool) {
                is_tool = 0;
            } else {
                const char *e = strstr(ct, "</think>"); /* split('</think>', 1)[1] */
                if (e) ct = e + 8;
            }
            ft_srv_buf_puts(b, ct);
            ft_srv_buf_puts(b, FT_DS_EOS);
        } else if (m->role == FT_SRV_TOOL) {
            is_last_user = 0;
            is_tool = 1;
            ft_srv_buf_puts(b, FT_DS_OUT_BEGIN);
            ft_srv_buf_puts(b, m->content);
            ft_srv_buf_puts(b, FT_DS_OUT_END);
        }
        if (ends) ends[i] = b->len;
    }
    if (add_generation_prompt && is_last_user && !is_tool)
        ft_srv_buf_puts(b, thinking ? FT_DS_ASSISTANT "<think>" : FT_DS_ASSISTANT "</think>");
    return 1;
}
