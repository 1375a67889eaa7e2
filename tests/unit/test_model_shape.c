/* models/shape*.c: each family's shape from a small config against
 * hand-computed bytes and parameters; the Qwen3-MoE shape from config.json
 * and from a GGUF header equals the one re-counted from the tiny fixture's
 * real tensor table; hostile configs give clear errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gguf.h"
#include "hf_internal.h"
#include "import.h"
#include "model_gen.h"
#include "plan_model.h"
#include "shape.h"
#include "test_tmp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parsed {
    ft_arena_t *arena;
    ft_meta_t meta;
} parsed_t;

static void parse(parsed_t *p, const char *json)
{
    assert_null(ft_arena_create(0, &p->arena));
    ft_meta_init(&p->meta, p->arena);
    ft_status_t st = ft_hf_config_parse(&p->meta, "config.json", json, strlen(json));
    if (st) fail_msg("%s", ft_status_message(st));
}

static void unparse(parsed_t *p)
{
    ft_meta_release(&p->meta);
    ft_arena_destroy(p->arena);
}

static ft_plan_model_t *shape_ok(const char *json, ft_dtype_t ef, ft_dtype_t df)
{
    parsed_t p;
    parse(&p, json);
    ft_plan_model_t *m = NULL;
    ft_status_t st = ft_model_shape(&p.meta, "config.json", 0, ef, df, &m);
    if (st) fail_msg("%s", ft_status_message(st));
    unparse(&p);
    return m;
}

/* The error message of a config that must be refused; "" when accepted. */
static char *shape_err(const char *json, ft_status_code_t *code)
{
    parsed_t p;
    parse(&p, json);
    ft_plan_model_t *m = NULL;
    ft_status_t st = ft_model_shape(&p.meta, "config.json", 0, FT_DTYPE_F16, FT_DTYPE_F16, &m);
    unparse(&p);
    assert_null(m == NULL ? NULL : (ft_model_shape_free(m), "accepted"));
    assert_non_null(st);
    *code = ft_status_code(st);
    char *msg = strdup(ft_status_message(st));
    ft_status_free(st);
    return msg;
}

#define QWEN3_SMALL                                                                                \
    "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": "  \
    "2,"                                                                                           \
    " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, \"num_experts\": " \
    "8,"                                                                                           \
    " \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, \"vocab_size\": 300"

static void test_qwen3moe(void **state)
{
    (void)state;
    ft_plan_model_t *m = shape_ok(QWEN3_SMALL "}", FT_DTYPE_Q8_0, FT_DTYPE_F16);
    assert_string_equal(m->arch, "qwen3moe");
    assert_int_equal(m->n_layers, 2);
    const ft_plan_layer_t *l = &m->layers[0];
    assert_true(l->is_moe);
    assert_int_equal(l->n_experts, 8);
    assert_int_equal(l->n_used, 2);
    /* gate, up: 32 rows of 64 (2 q8_0 blocks of 34 bytes); down: 64 rows of 32. */
    assert_int_equal(l->expert_bytes, 32 * 68 * 2 + 64 * 34);
    assert_int_equal(l->expert_params, 3 * 32 * 64);
    /* norms 64+64+16+16 f32; q 64x64, k 32x64, v 32x64, o 64x64, router 8x64 f16 */
    assert_int_equal(l->dense_params, 12960);
    assert_int_equal(l->dense_bytes, 26240);
    assert_int_equal(m->layers[1].dense_params, 12960 + 64); /* + output norm */
    assert_int_equal(l->kv_bytes_per_token, 2 * 2 * 16 * 2); /* K+V, 2 kv heads of 16, f16 */
    assert_int_equal(l->state_bytes, 0);
    assert_int_equal(m->embed_bytes, 300 * 64 * 2);
    assert_int_equal(m->output_bytes, 300 * 64 * 2);
    assert_int_equal(m->expert_format, FT_DTYPE_Q8_0);
    ft_shape_totals_t t;
    ft_model_shape_totals(m, &t);
    assert_int_equal(t.params, 2 * (12960 + 8 * 6144) + 64 + 2 * 300 * 64);
    assert_int_equal(t.active_params, 2 * (12960 + 2 * 6144) + 64 + 300 * 64 + 64);
    ft_model_shape_free(m);

    /* Tied embeddings are counted once (as the output head). */
    m = shape_ok(QWEN3_SMALL ", \"tie_word_embeddings\": true}", FT_DTYPE_F16, FT_DTYPE_F16);
    assert_int_equal(m->embed_bytes, 0);
    assert_int_equal(m->output_bytes, 300 * 64 * 2);
    ft_model_shape_free(m);

    /* A dense layer via mlp_only_layers. */
    m = shape_ok(QWEN3_SMALL ", \"mlp_only_layers\": [1], \"intermediate_size\": 128}",
                 FT_DTYPE_F16, FT_DTYPE_F16);
    assert_false(m->layers[1].is_moe);
    assert_int_equal(m->layers[1].dense_params, 12960 - 512 + 3 * 64 * 128 + 64);
    ft_model_shape_free(m);
}

static void test_qwen3next(void **state)
{
    (void)state;
    ft_plan_model_t *m = shape_ok(
        "{\"architectures\": [\"Qwen3NextForCausalLM\"], \"hidden_size\": 64, "
        "\"num_hidden_layers\": 4,"
        " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
        "\"num_experts\": 8,"
        " \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, "
        "\"shared_expert_intermediate_size\": 32,"
        " \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4, \"linear_key_head_dim\": 8,"
        " \"linear_value_head_dim\": 8, \"linear_conv_kernel_dim\": 4, "
        "\"full_attention_interval\": 4,"
        " \"vocab_size\": 100}",
        FT_DTYPE_F16, FT_DTYPE_F16);
    assert_string_equal(m->arch, "qwen3next");
    const ft_plan_layer_t *lin = &m->layers[0], *full = &m->layers[3];
    /* Gated DeltaNet: qkvz 96x64, ba 8x64, conv 64x4, dt/A 4+4, norm 8, out 64x32;
     * then ffn norm, router 8x64, shared expert 3x32x64 and its gate 1x64. */
    assert_int_equal(lin->dense_params, 15824);
    assert_int_equal(lin->dense_bytes, 32448);
    assert_int_equal(lin->kv_bytes_per_token, 0);
    assert_int_equal(lin->state_bytes, 4 * 8 * 8 * 4 + 64 * 3 * 4); /* f32 state and conv tail */
    /* Gated attention: q 128x64 (query + gate), k, v 32x64, o 64x64, q/k norms. */
    assert_int_equal(full->dense_params, 23328);
    assert_int_equal(full->kv_bytes_per_token, 128);
    assert_int_equal(full->state_bytes, 0);
    assert_int_equal(full->expert_params, 3 * 32 * 64);
    ft_model_shape_free(m);

    /* Multimodal wrapper: the same model under text_config, layer_types listed. */
    m = shape_ok(
        "{\"architectures\": [\"Qwen3_5MoeForConditionalGeneration\"], \"text_config\": {"
        " \"hidden_size\": 64, \"num_hidden_layers\": 2, \"layer_types\": [\"full_attention\", "
        "\"linear_attention\"],"
        " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
        "\"num_experts\": 8,"
        " \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, "
        "\"shared_expert_intermediate_size\": 32,"
        " \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4, \"linear_key_head_dim\": 8,"
        " \"linear_value_head_dim\": 8, \"vocab_size\": 100}}",
        FT_DTYPE_F16, FT_DTYPE_F16);
    assert_int_equal(m->layers[0].kv_bytes_per_token, 128);
    assert_int_equal(m->layers[1].kv_bytes_per_token, 0);
    assert_int_equal(m->layers[1].state_bytes, 1792);
    ft_model_shape_free(m);
}

static void test_gptoss(void **state)
{
    (void)state;
    ft_plan_model_t *m = shape_ok(
        "{\"architectures\": [\"GptOssForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": "
        "2,"
        " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16,"
        " \"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"intermediate_size\": 64,"
        " \"sliding_window\": 8, \"layer_types\": [\"sliding_attention\", \"full_attention\"],"
        " \"vocab_size\": 100}",
        FT_DTYPE_MXFP4, FT_DTYPE_F16);
    const ft_plan_layer_t *l = &m->layers[0];
    /* 3 matrices of 64 rows x 64 (2 mxfp4 blocks of 17 bytes) + bf16 biases 128 + 64. */
    assert_int_equal(l->expert_bytes, 3 * 64 * 34 + (128 + 64) * 2);
    assert_int_equal(l->expert_params, 3 * 64 * 64 + 192);
    assert_int_equal(l->dense_params, 12872);
    assert_int_equal(l->dense_bytes, 26400);
    /* sliding: the window's 8 tokens x (K+V of 2 heads x 16, f16) as state */
    assert_int_equal(l->kv_bytes_per_token, 0);
    assert_int_equal(l->state_bytes, 8 * 128);
    assert_int_equal(m->layers[1].kv_bytes_per_token, 128);
    assert_int_equal(m->layers[1].state_bytes, 0);
    ft_model_shape_free(m);
}

static void test_deepseek3(void **state)
{
    (void)state;
    ft_plan_model_t *m = shape_ok(
        "{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"hidden_size\": 64, "
        "\"num_hidden_layers\": 3,"
        " \"num_attention_heads\": 4, \"q_lora_rank\": 32, \"kv_lora_rank\": 16, "
        "\"qk_nope_head_dim\": 8,"
        " \"qk_rope_head_dim\": 4, \"v_head_dim\": 8, \"n_routed_experts\": 8, "
        "\"num_experts_per_tok\": 2,"
        " \"moe_intermediate_size\": 16, \"n_shared_experts\": 1, \"intermediate_size\": 128,"
        " \"first_k_dense_replace\": 1, \"vocab_size\": 100}",
        FT_DTYPE_F16, FT_DTYPE_F16);
    assert_false(m->layers[0].is_moe);
    assert_int_equal(m->layers[0].dense_params, 32688);
    assert_int_equal(m->layers[0].dense_bytes, 65728);
    assert_int_equal(m->layers[0].kv_bytes_per_token, (16 + 4) * 2); /* MLA latent + rope key */
    const ft_plan_layer_t *l = &m->layers[1];
    assert_true(l->is_moe);
    assert_int_equal(l->dense_params, 11704);
    assert_int_equal(l->dense_bytes, 23776);
    assert_int_equal(l->expert_params, 3 * 16 * 64);
    assert_int_equal(l->expert_bytes, 3 * 16 * 64 * 2);
    ft_model_shape_free(m);
}

static void test_deepseek4(void **state)
{
    (void)state;
    ft_plan_model_t *m = shape_ok(
        "{\"architectures\": [\"DeepseekV4ForCausalLM\"], \"hidden_size\": 64, "
        "\"num_hidden_layers\": 3,"
        " \"num_attention_heads\": 4, \"num_key_value_heads\": 1, \"head_dim\": 32, "
        "\"q_lora_rank\": 16,"
        " \"o_lora_rank\": 8, \"o_groups\": 2, \"sliding_window\": 8, \"n_routed_experts\": 4,"
        " \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 16, \"n_shared_experts\": 1,"
        " \"num_hash_layers\": 1, \"hc_mult\": 2, \"index_n_heads\": 2, \"index_head_dim\": 8,"
        " \"compress_ratios\": [0, 4, 128, 0], \"vocab_size\": 100}",
        FT_DTYPE_MXFP4, FT_DTYPE_F16);
    assert_string_equal(m->arch, "deepseek4");
    /* Layer 0: window only, hash routing. */
    assert_int_equal(m->layers[0].dense_params, 12690);
    assert_int_equal(m->layers[0].kv_bytes_per_token, 0);
    assert_int_equal(m->layers[0].state_bytes, 8 * 32 * 2);
    /* Layer 1: CSA (ratio 4): latent 64 B + indexer key 16 B per 4 tokens. */
    assert_int_equal(m->layers[1].dense_params, 23734);
    assert_int_equal(m->layers[1].kv_bytes_per_token, 20);
    assert_int_equal(m->layers[1].state_bytes, 512 + 2048 + 512);
    /* Layer 2: HCA (ratio 128): 64 B per 128 tokens, rounded up. */
    assert_int_equal(m->layers[2].kv_bytes_per_token, 1);
    assert_int_equal(m->layers[2].state_bytes, 512 + 2 * 128 * 32 * 4);
    /* Experts: 16 rows of 64 and 64 rows of 16 are not whole mxfp4 rows of
     * 32 for the latter -> q8_0 fallback would not fit either: f16. */
    assert_int_equal(m->layers[1].expert_params, 3 * 16 * 64);
    assert_int_equal(m->layers[1].expert_bytes, 2 * 16 * 34 + 64 * 32);
    ft_model_shape_free(m);
}

static void test_qwen3moe_matches_fixture_ir(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    const char *dir = ft_test_tmpdir("shape_fixture");
    char hf[512], gguf[512], cfg[600];
    snprintf(hf, sizeof(hf), "%s/hf", dir);
    snprintf(gguf, sizeof(gguf), "%s/tiny.gguf", dir);
    snprintf(cfg, sizeof(cfg), "%s/config.json", hf);
    assert_null(ft_fixture_write_hf(&o, hf, 1));
    assert_null(ft_fixture_write_gguf(&o, gguf));

    ft_ir_model_t *ir = NULL;
    assert_null(ft_import_model(hf, &ir));
    static const ft_dtype_t fmts[][2] = {{FT_DTYPE_Q8_0, FT_DTYPE_Q8_0},
                                         {FT_DTYPE_Q4_K, FT_DTYPE_F16},
                                         {FT_DTYPE_MXFP4, FT_DTYPE_BF16}};
    char *json = NULL;
    uint64_t len = 0;
    assert_null(ft_hf_read_file(cfg, FT_HF_MAX_CONFIG_BYTES, &json, &len));
    parsed_t p;
    parse(&p, json);
    free(json);
    ft_src_model_t *src = NULL;
    assert_null(ft_gguf_import(gguf, &src));
    const ft_src_tensor_t *embd = ft_src_find_tensor(src, "token_embd.weight");
    assert_non_null(embd);
    assert_null(ft_meta_add_int(&src->meta, "qwen3moe.vocab_size", (int64_t)embd->shape[0]));

    for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
        ft_plan_model_t *a = NULL, *b = NULL, *g = NULL;
        assert_null(ft_model_shape_from_ir(ir, fmts[f][0], fmts[f][1], &a));
        assert_null(ft_model_shape(&p.meta, "config.json", 0, fmts[f][0], fmts[f][1], &b));
        assert_null(ft_model_shape(&src->meta, gguf, 1, fmts[f][0], fmts[f][1], &g));
        const ft_plan_model_t *s[2] = {b, g};
        for (int k = 0; k < 2; k++) {
            assert_int_equal(a->n_layers, s[k]->n_layers);
            assert_int_equal(a->d_model, s[k]->d_model);
            assert_int_equal(a->vocab_size, s[k]->vocab_size);
            assert_int_equal(a->embed_bytes, s[k]->embed_bytes);
            assert_int_equal(a->output_bytes, s[k]->output_bytes);
            assert_memory_equal(a->layers, s[k]->layers, a->n_layers * sizeof(ft_plan_layer_t));
        }
        ft_model_shape_free(a);
        ft_model_shape_free(b);
        ft_model_shape_free(g);
    }
    ft_src_model_destroy(src);
    unparse(&p);
    ft_ir_model_destroy(ir);
}

/* The Qwen3.5 hybrid and Qwen3-Next fixtures (4 layers, layer 3 full
 * attention): `ftc plan`'s shape of the GGUF (from its imported IR), the
 * shape of the HF import's IR and the one config.json's hyperparameters
 * give are the same, layer for layer; KV only in the full-attention layer;
 * each DeltaNet layer's fixed state is the runtime's (f32 conv tail and S). */
static void test_qwen35_gguf_plan_from_ir(void **state)
{
    (void)state;
    for (int next = 0; next < 2; next++) {
        ft_fixture_opts_t o;
        ft_fixture_opts_init(&o);
        o.arch = next ? FT_FIXTURE_QWEN3NEXT : FT_FIXTURE_QWEN35MOE;
        o.n_layers = 4;
        const char *dir = ft_test_tmpdir(next ? "shape_q3n" : "shape_q35");
        char hf[512], gguf[512], cfg[600];
        snprintf(hf, sizeof(hf), "%s/hf", dir);
        snprintf(gguf, sizeof(gguf), "%s/tiny.gguf", dir);
        snprintf(cfg, sizeof(cfg), "%s/config.json", hf);
        assert_null(ft_fixture_write_hf(&o, hf, 1));
        assert_null(ft_fixture_write_gguf(&o, gguf));
        ft_plan_model_opts_t po = {.expert_format = FT_DTYPE_Q8_0, .dense_format = FT_DTYPE_Q8_0};
        ft_plan_model_info_t info;
        ft_plan_model_t *g = NULL, *h = NULL, *c = NULL;
        assert_null(ft_plan_model_load(gguf, &po, &g, &info));
        assert_true(info.from_gguf);
        ft_ir_model_t *ir = NULL;
        assert_null(ft_import_model(hf, &ir));
        assert_null(ft_model_shape_from_ir(ir, FT_DTYPE_Q8_0, FT_DTYPE_Q8_0, &h));
        ft_ir_model_destroy(ir);
        char *json = NULL;
        uint64_t len = 0;
        assert_null(ft_hf_read_file(cfg, FT_HF_MAX_CONFIG_BYTES, &json, &len));
        parsed_t p;
        parse(&p, json);
        free(json);
        assert_null(ft_model_shape(&p.meta, "config.json", 0, FT_DTYPE_Q8_0, FT_DTYPE_Q8_0, &c));
        unparse(&p);
        const ft_plan_model_t *s[2] = {h, c};
        for (int k = 0; k < 2; k++) {
            assert_int_equal(g->n_layers, s[k]->n_layers);
            assert_int_equal(g->embed_bytes, s[k]->embed_bytes);
            assert_int_equal(g->output_bytes, s[k]->output_bytes);
            assert_memory_equal(g->layers, s[k]->layers, g->n_layers * sizeof(ft_plan_layer_t));
        }
        const uint64_t hd = o.head_dim, ch = (2ull * o.n_kv_heads + o.n_heads) * hd;
        for (uint32_t l = 0; l < 4; l++) {
            const ft_plan_layer_t *L = &g->layers[l];
            if (l == 3) {
                assert_int_equal(L->kv_bytes_per_token, 2 * o.n_kv_heads * hd * 2);
                assert_int_equal(L->state_bytes, 0);
            } else {
                assert_int_equal(L->kv_bytes_per_token, 0);
                assert_int_equal(L->state_bytes, (3 * ch + o.n_heads * hd * hd) * 4);
            }
        }
        ft_model_shape_free(g);
        ft_model_shape_free(h);
        ft_model_shape_free(c);
    }
}

static void expect_err(const char *json, ft_status_code_t want, const char *needle)
{
    ft_status_code_t code;
    char *msg = shape_err(json, &code);
    if (code != want || !strstr(msg, needle))
        fail_msg("want code %d and '%s' in: %s (code %d)", (int)want, needle, msg, (int)code);
    free(msg);
}

/* QWEN3_SMALL with one key's value replaced (or added). */
static void expect_qwen_err(const char *key, const char *value, ft_status_code_t want,
                            const char *needle)
{
    static const char *const base[][2] = {
        {"hidden_size", "64"},        {"num_hidden_layers", "2"},
        {"num_attention_heads", "4"}, {"num_key_value_heads", "2"},
        {"head_dim", "16"},           {"num_experts", "8"},
        {"num_experts_per_tok", "2"}, {"moe_intermediate_size", "32"},
        {"vocab_size", "300"}};
    char json[2048];
    int n = snprintf(json, sizeof(json),
                     "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"%s\": %s", key, value);
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        if (strcmp(base[i][0], key) != 0)
            n += snprintf(json + n, sizeof(json) - (size_t)n, ", \"%s\": %s", base[i][0],
                          base[i][1]);
    snprintf(json + n, sizeof(json) - (size_t)n, "}");
    expect_err(json, want, needle);
}

static void test_hostile(void **state)
{
    (void)state;
    expect_err("{\"architectures\": [\"LlamaForCausalLM\"]}", FT_STATUS_UNSUPPORTED,
               "LlamaForCausalLM");
    expect_err("{\"hidden_size\": 64}", FT_STATUS_UNSUPPORTED, "(none)");
    expect_err("{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"hidden_size\": 64}",
               FT_STATUS_FORMAT, "'num_hidden_layers' is missing");
    expect_qwen_err("num_hidden_layers", "1000000000", FT_STATUS_OUT_OF_RANGE, "num_hidden_layers");
    expect_qwen_err("hidden_size", "\"big\"", FT_STATUS_FORMAT, "'hidden_size' must be an integer");
    expect_qwen_err("hidden_size", "-5", FT_STATUS_OUT_OF_RANGE, "hidden_size");
    expect_qwen_err("num_experts_per_tok", "9", FT_STATUS_OUT_OF_RANGE, "num_experts_per_tok");
    expect_qwen_err("vocab_size", "1e30", FT_STATUS_FORMAT, "vocab_size");
    expect_qwen_err("mlp_only_layers", "[0]", FT_STATUS_FORMAT, "intermediate_size");
    expect_err("{\"architectures\": [\"GptOssForCausalLM\"], \"hidden_size\": 64, "
               "\"num_hidden_layers\": 2,"
               " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16,"
               " \"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"intermediate_size\": 64,"
               " \"sliding_window\": 8, \"layer_types\": [\"chunked\", \"full_attention\"], "
               "\"vocab_size\": 100}",
               FT_STATUS_UNSUPPORTED, "layer_types[0]");
    expect_err(
        "{\"architectures\": [\"DeepseekV4ForCausalLM\"], \"hidden_size\": 64, "
        "\"num_hidden_layers\": 3,"
        " \"num_attention_heads\": 4, \"head_dim\": 32, \"q_lora_rank\": 16, \"o_lora_rank\": 8,"
        " \"sliding_window\": 8, \"n_routed_experts\": 4, \"num_experts_per_tok\": 2,"
        " \"moe_intermediate_size\": 16, \"compress_ratios\": [0, 4], \"vocab_size\": 100}",
        FT_STATUS_FORMAT, "compress_ratios");
    expect_err(
        "{\"architectures\": [\"DeepseekV4ForCausalLM\"], \"hidden_size\": 64, "
        "\"num_hidden_layers\": 1,"
        " \"num_attention_heads\": 4, \"head_dim\": 32, \"q_lora_rank\": 16, \"o_lora_rank\": 8,"
        " \"sliding_window\": 8, \"n_routed_experts\": 4, \"num_experts_per_tok\": 2,"
        " \"moe_intermediate_size\": 16, \"compress_ratios\": [2.5], \"vocab_size\": 100}",
        FT_STATUS_OUT_OF_RANGE, "compress_ratios[0]");
    /* Each size within its bound, but the products overflow 64 bits. */
    expect_err(
        "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"hidden_size\": 1048576,"
        " \"num_hidden_layers\": 4096, \"num_attention_heads\": 65536, \"head_dim\": 1048576,"
        " \"num_experts\": 65536, \"num_experts_per_tok\": 1, \"moe_intermediate_size\": 1048576,"
        " \"vocab_size\": 16777216}",
        FT_STATUS_OUT_OF_RANGE, "overflow");
    /* GGUF: only qwen3moe has a shape model. */
    ft_arena_t *arena = NULL;
    assert_null(ft_arena_create(0, &arena));
    ft_meta_t meta;
    ft_meta_init(&meta, arena);
    assert_null(ft_meta_add_string(&meta, "general.architecture", "llama", 5));
    ft_plan_model_t *m = NULL;
    ft_status_t st = ft_model_shape(&meta, "x.gguf", 1, FT_DTYPE_Q4_K, FT_DTYPE_Q8_0, &m);
    assert_non_null(st);
    assert_non_null(strstr(ft_status_message(st), "'llama'"));
    ft_status_free(st);
    st = ft_model_shape(&meta, "x.gguf", 1, FT_DTYPE_INVALID, FT_DTYPE_Q8_0, &m);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    ft_meta_release(&meta);
    ft_arena_destroy(arena);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3moe),  cmocka_unit_test(test_qwen3next),
        cmocka_unit_test(test_gptoss),    cmocka_unit_test(test_deepseek3),
        cmocka_unit_test(test_deepseek4), cmocka_unit_test(test_qwen3moe_matches_fixture_ir),
        cmocka_unit_test(test_qwen35_gguf_plan_from_ir),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
