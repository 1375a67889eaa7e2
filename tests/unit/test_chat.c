/* Chat formats: ChatML detection from the template or the vocabulary,
 * rendering, and refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/text/chat.h"
#include "tok_fixture.h"

#include <stdlib.h>
#include <string.h>

static void expect_error(ft_status_t st, ft_status_code_t code, const char *needle)
{
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle))
        fail_msg("expected %s with '%s', got %s: %s", ft_status_code_name(code), needle,
                 ft_status_code_name(ft_status_code(st)), ft_status_message(st));
    ft_status_free(st);
}

static void test_detect(void **state)
{
    (void)state;
    ft_tok_fixture_t fx;
    assert_null(ft_tok_fixture_init(&fx, 0, "qwen2"));
    assert_int_equal(ft_chat_detect(fx.tok), FT_CHAT_CHATML);

    /* no template: the vocabulary's <|im_start|> and <|im_end|> decide */
    Ftplan__Tokenizer pt = fx.pt;
    pt.chat_template = "";
    ft_tokenizer_t *tok;
    assert_null(ft_tokenizer_create(&pt, "test", &tok));
    assert_int_equal(ft_chat_detect(tok), FT_CHAT_CHATML);
    ft_tokenizer_destroy(tok);

    /* neither: rename the markers so the vocabulary lacks them */
    ProtobufCBinaryData *tokens = malloc(pt.n_tokens * sizeof(*tokens));
    memcpy(tokens, pt.tokens, pt.n_tokens * sizeof(*tokens));
    tokens[fx.vocab.im_start_id].data = (uint8_t *)"<|begin|>";
    tokens[fx.vocab.im_start_id].len = 9;
    pt.tokens = tokens;
    pt.chat_template = "{{ messages }}";
    assert_null(ft_tokenizer_create(&pt, "test", &tok));
    assert_int_equal(ft_chat_detect(tok), FT_CHAT_NONE);
    ft_tokenizer_destroy(tok);
    /* a template that writes the markers is ChatML whatever the vocabulary */
    pt.chat_template = "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}";
    assert_null(ft_tokenizer_create(&pt, "test", &tok));
    assert_int_equal(ft_chat_detect(tok), FT_CHAT_CHATML);
    ft_tokenizer_destroy(tok);
    free(tokens);
    assert_int_equal(ft_chat_detect(NULL), FT_CHAT_NONE);
    ft_tok_fixture_free(&fx);
}

static void test_render(void **state)
{
    (void)state;
    const ft_chat_message_t msgs[] = {
        {"system", "You are terse."},
        {"user", "Hi"},
        {"assistant", "Hello."},
        {"tool", "{\"ok\":true}"},
    };
    char *text;
    assert_null(ft_chat_render(FT_CHAT_CHATML, msgs, 2, 1, &text));
    assert_string_equal(text, "<|im_start|>system\nYou are terse.<|im_end|>\n"
                              "<|im_start|>user\nHi<|im_end|>\n"
                              "<|im_start|>assistant\n");
    free(text);
    assert_null(ft_chat_render(FT_CHAT_CHATML, msgs, 4, 0, &text));
    assert_string_equal(text, "<|im_start|>system\nYou are terse.<|im_end|>\n"
                              "<|im_start|>user\nHi<|im_end|>\n"
                              "<|im_start|>assistant\nHello.<|im_end|>\n"
                              "<|im_start|>tool\n{\"ok\":true}<|im_end|>\n");
    free(text);
    assert_null(ft_chat_render(FT_CHAT_CHATML, NULL, 0, 1, &text));
    assert_string_equal(text, "<|im_start|>assistant\n");
    free(text);
    assert_null(ft_chat_render(FT_CHAT_CHATML, NULL, 0, 0, &text));
    assert_string_equal(text, "");
    free(text);
}

static void test_render_refusals(void **state)
{
    (void)state;
    char *text = (char *)&text;
    const ft_chat_message_t bad_role[] = {{"user", "a"}, {"narrator", "b"}};
    expect_error(ft_chat_render(FT_CHAT_CHATML, bad_role, 2, 1, &text), FT_STATUS_INVALID_ARGUMENT,
                 "message 1 has role 'narrator'");
    assert_null(text);
    const ft_chat_message_t no_content[] = {{"user", NULL}};
    expect_error(ft_chat_render(FT_CHAT_CHATML, no_content, 1, 1, &text),
                 FT_STATUS_INVALID_ARGUMENT, "no content");
    const ft_chat_message_t ok[] = {{"user", "a"}};
    expect_error(ft_chat_render(FT_CHAT_NONE, ok, 1, 1, &text), FT_STATUS_UNSUPPORTED,
                 "chat format");
    expect_error(ft_chat_render((ft_chat_format_t)7, ok, 1, 1, &text), FT_STATUS_UNSUPPORTED,
                 "format 7");
}

/* The rendered prompt, tokenized with special tokens, starts and ends
 * each turn with the ChatML marker tokens. */
static void test_render_tokenizes(void **state)
{
    (void)state;
    ft_tok_fixture_t fx;
    assert_null(ft_tok_fixture_init(&fx, 0, "qwen2"));
    const ft_chat_message_t msgs[] = {{"user", "What is the time?"}};
    char *text;
    assert_null(ft_chat_render(ft_chat_detect(fx.tok), msgs, 1, 1, &text));
    int32_t *ids;
    uint32_t n;
    assert_null(ft_tokenizer_encode(fx.tok, text, strlen(text), FT_TOKENIZE_SPECIAL, &ids, &n));
    assert_int_equal(ids[0], (int32_t)fx.vocab.im_start_id);
    uint32_t n_start = 0, n_end = 0;
    for (uint32_t i = 0; i < n; i++) {
        n_start += ids[i] == (int32_t)fx.vocab.im_start_id;
        n_end += ids[i] == (int32_t)fx.vocab.im_end_id;
    }
    assert_int_equal(n_start, 2);
    assert_int_equal(n_end, 1);
    free(ids);
    free(text);
    ft_tok_fixture_free(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_render_refusals),
        cmocka_unit_test(test_render_tokenizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
