/* models/qwen3moe.c + ir/: source models built in memory (no files), in
 * GGUF and HF naming, mapped to IR; the two namings give the same IR; and
 * every kind of inconsistency is refused with a message naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { D = 64, L = 2, H = 4, KV = 2, HD = 16, E = 8, U = 2, F = 32, V = 300 };

typedef struct fake {
    ft_src_model_t *src;
    uint32_t cap;
    uint64_t next_offset;
} fake_t;

static void fake_tensor(fake_t *f, const char *name, uint32_t n_dims, uint64_t d0, uint64_t d1, uint64_t d2)
{
    ft_src_model_t *s = f->src;
    if (s->n_tensors == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 64;
        ft_src_tensor_t *t = ft_arena_array(s->arena, f->cap, sizeof(*t));
        assert_non_null(t);
        if (s->n_tensors)
            memcpy(t, s->tensors, s->n_tensors * sizeof(*t));
        s->tensors = t;
    }
    ft_src_tensor_t *t = &s->tensors[s->n_tensors++];
    t->name = ft_arena_strdup(s->arena, name);
    t->dtype = FT_DTYPE_F32;
    t->n_dims = n_dims;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->shape[2] = d2;
    uint64_t n = d0 * (n_dims > 1 ? d1 : 1) * (n_dims > 2 ? d2 : 1);
    t->file = 0;
    t->offset = f->next_offset;
    t->n_bytes = n * 4;
    f->next_offset += t->n_bytes;
}

static void fake_files(fake_t *f)
{
    f->src->n_files = 1;
    f->src->files = ft_arena_array(f->src->arena, 1, sizeof(ft_src_file_t));
    f->src->files[0].path = "fake";
    f->src->files[0].size = f->next_offset;
}

static void fake_tokenizer(fake_t *f)
{
    ft_ir_tokenizer_t *tok = &f->src->tok;
    tok->model = "gpt2";
    tok->pre = "qwen2";
    tok->n_tokens = V;
    const char **tokens = ft_arena_array(f->src->arena, V, sizeof(char *));
    uint32_t *lens = ft_arena_array(f->src->arena, V, sizeof(uint32_t));
    uint8_t *types = ft_arena_array(f->src->arena, V, 1);
    for (int i = 0; i < V; i++) {
        tokens[i] = ft_arena_printf(f->src->arena, "t%d", i);
        lens[i] = (uint32_t)strlen(tokens[i]);
        types[i] = FT_TOKEN_NORMAL;
    }
    tok->tokens = tokens;
    tok->token_lens = lens;
    tok->token_types = types;
    tok->eos_id = V - 1;
}

static fake_t make_gguf(void)
{
    fake_t f = {0};
    assert_null(ft_src_model_create(FT_SRC_GGUF, "fake.gguf", &f.src));
    ft_meta_t *m = &f.src->meta;
    assert_null(ft_meta_add_string(m, "general.architecture", "qwen3moe", 8));
    assert_null(ft_meta_add_int(m, "qwen3moe.block_count", L));
    assert_null(ft_meta_add_int(m, "qwen3moe.embedding_length", D));
    assert_null(ft_meta_add_int(m, "qwen3moe.context_length", 256));
    assert_null(ft_meta_add_int(m, "qwen3moe.attention.head_count", H));
    assert_null(ft_meta_add_int(m, "qwen3moe.attention.head_count_kv", KV));
    assert_null(ft_meta_add_int(m, "qwen3moe.attention.key_length", HD));
    assert_null(ft_meta_add_int(m, "qwen3moe.attention.value_length", HD));
    assert_null(ft_meta_add_int(m, "qwen3moe.expert_count", E));
    assert_null(ft_meta_add_int(m, "qwen3moe.expert_used_count", U));
    assert_null(ft_meta_add_int(m, "qwen3moe.expert_feed_forward_length", F));
    assert_null(ft_meta_add_float(m, "qwen3moe.attention.layer_norm_rms_epsilon", (float)1e-6));
    assert_null(ft_meta_add_float(m, "qwen3moe.rope.freq_base", 1000000.0));
    fake_tensor(&f, "token_embd.weight", 2, V, D, 0);
    fake_tensor(&f, "output_norm.weight", 1, D, 0, 0);
    fake_tensor(&f, "output.weight", 2, V, D, 0);
    char n[128];
    for (int l = 0; l < L; l++) {
#define T(suffix, ...) (snprintf(n, sizeof(n), "blk.%d." suffix ".weight", l), fake_tensor(&f, n, __VA_ARGS__))
        T("attn_norm", 1, D, 0, 0);
        T("attn_q", 2, H * HD, D, 0);
        T("attn_k", 2, KV * HD, D, 0);
        T("attn_v", 2, KV * HD, D, 0);
        T("attn_output", 2, D, H * HD, 0);
        T("attn_q_norm", 1, HD, 0, 0);
        T("attn_k_norm", 1, HD, 0, 0);
        T("ffn_norm", 1, D, 0, 0);
        T("ffn_gate_inp", 2, E, D, 0);
        T("ffn_gate_exps", 3, E, F, D);
        T("ffn_up_exps", 3, E, F, D);
        T("ffn_down_exps", 3, E, D, F);
#undef T
    }
    fake_files(&f);
    fake_tokenizer(&f);
    return f;
}

static fake_t make_hf(void)
{
    fake_t f = {0};
    assert_null(ft_src_model_create(FT_SRC_HF, "fake-hf", &f.src));
    ft_meta_t *m = &f.src->meta;
    assert_null(ft_meta_add_string(m, "architectures.0", "Qwen3MoeForCausalLM", 19));
    assert_null(ft_meta_add_int(m, "num_hidden_layers", L));
    assert_null(ft_meta_add_int(m, "hidden_size", D));
    assert_null(ft_meta_add_int(m, "max_position_embeddings", 256));
    assert_null(ft_meta_add_int(m, "num_attention_heads", H));
    assert_null(ft_meta_add_int(m, "num_key_value_heads", KV));
    assert_null(ft_meta_add_int(m, "head_dim", HD));
    assert_null(ft_meta_add_int(m, "num_experts", E));
    assert_null(ft_meta_add_int(m, "num_experts_per_tok", U));
    assert_null(ft_meta_add_int(m, "moe_intermediate_size", F));
    assert_null(ft_meta_add_int(m, "intermediate_size", 96));
    assert_null(ft_meta_add_int(m, "vocab_size", V));
    assert_null(ft_meta_add_bool(m, "norm_topk_prob", 1));
    assert_null(ft_meta_add_bool(m, "tie_word_embeddings", 0));
    assert_null(ft_meta_add_int(m, "decoder_sparse_step", 1));
    assert_null(ft_meta_add_array(m, "mlp_only_layers", NULL, 0));
    assert_null(ft_meta_add_float(m, "rms_norm_eps", 1e-6));
    assert_null(ft_meta_add_float(m, "rope_theta", 1000000.0));
    fake_tensor(&f, "model.embed_tokens.weight", 2, V, D, 0);
    fake_tensor(&f, "model.norm.weight", 1, D, 0, 0);
    fake_tensor(&f, "lm_head.weight", 2, V, D, 0);
    char n[160];
    for (int l = 0; l < L; l++) {
#define T(suffix, ...) (snprintf(n, sizeof(n), "model.layers.%d." suffix ".weight", l), fake_tensor(&f, n, __VA_ARGS__))
        T("input_layernorm", 1, D, 0, 0);
        T("self_attn.q_proj", 2, H * HD, D, 0);
        T("self_attn.k_proj", 2, KV * HD, D, 0);
        T("self_attn.v_proj", 2, KV * HD, D, 0);
        T("self_attn.o_proj", 2, D, H * HD, 0);
        T("self_attn.q_norm", 1, HD, 0, 0);
        T("self_attn.k_norm", 1, HD, 0, 0);
        T("post_attention_layernorm", 1, D, 0, 0);
        T("mlp.gate", 2, E, D, 0);
        /* HF lists experts interleaved, not grouped by matrix */
        for (int e = 0; e < E; e++) {
            snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.%d.down_proj.weight", l, e);
            fake_tensor(&f, n, 2, D, F, 0);
            snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.%d.gate_proj.weight", l, e);
            fake_tensor(&f, n, 2, F, D, 0);
            snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.%d.up_proj.weight", l, e);
            fake_tensor(&f, n, 2, F, D, 0);
        }
#undef T
    }
    fake_files(&f);
    fake_tokenizer(&f);
    return f;
}

static char *ir_text(const ft_ir_model_t *m)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ft_ir_model_print(m, f);
    fclose(f);
    return buf;
}

static void test_gguf_and_hf_give_same_ir(void **state)
{
    (void)state;
    fake_t g = make_gguf(), h = make_hf();
    ft_ir_model_t *mg = NULL, *mh = NULL;
    ft_status_t st = ft_model_build_ir(g.src, &mg);
    assert_null(st);
    st = ft_model_build_ir(h.src, &mh);
    if (st)
        fail_msg("%s", ft_status_message(st));
    char *tg = ir_text(mg), *th = ir_text(mh);
    assert_string_equal(tg, th);
    free(tg);
    free(th);

    /* Parameter counts from the hyperparameters. */
    uint64_t per_layer = D + (uint64_t)H * HD * D + 2ull * KV * HD * D + (uint64_t)D * H * HD + 2 * HD + D +
                         (uint64_t)E * D + 3ull * E * F * D;
    uint64_t want_total = 2ull * V * D + D + L * per_layer;
    uint64_t want_active = want_total - (uint64_t)L * (E - U) * 3 * F * D;
    uint64_t total, active;
    ft_ir_param_counts(mh, &total, &active);
    assert_int_equal(total, want_total);
    assert_int_equal(active, want_active);

    /* The HF expert stack points at each expert's own bytes, in order. */
    const ft_ir_tensor_t *gate = ft_ir_find(mh, FT_ROLE_FFN_GATE_EXPS, 1);
    assert_non_null(gate);
    assert_int_equal(gate->n_pieces, E);
    assert_int_equal(gate->shape[0], E);
    const ft_src_tensor_t *g3 = ft_src_find_tensor(h.src, "model.layers.1.mlp.experts.3.gate_proj.weight");
    assert_int_equal(gate->pieces[3].offset, g3->offset);
    assert_int_equal(mh->hp.vocab_size, V);
    assert_int_equal(mh->blocks[0].moe.norm_topk_prob, 1);
    assert_int_equal(mh->hp.rope, FT_ROPE_NEOX);

    ft_ir_model_destroy(mg);
    ft_ir_model_destroy(mh);
    ft_src_model_destroy(g.src);
    ft_src_model_destroy(h.src);
}

/* Builds, expects failure with `code`, and that the message holds `needle`. */
static void expect_error(fake_t *f, ft_status_code_t code, const char *needle)
{
    ft_ir_model_t *m = NULL;
    ft_status_t st = ft_model_build_ir(f->src, &m);
    assert_null(m);
    if (!st)
        fail_msg("expected an error containing '%s'", needle);
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle))
        fail_msg("got [%s] %s; wanted [%s] containing '%s'", ft_status_code_name(ft_status_code(st)),
                 ft_status_message(st), ft_status_code_name(code), needle);
    ft_status_free(st);
    ft_src_model_destroy(f->src);
}

/* Rebuilds the metadata without `key`. */
static void meta_without(fake_t *f, const char *key)
{
    ft_meta_t old = f->src->meta;
    ft_meta_init(&f->src->meta, f->src->arena);
    for (uint32_t i = 0; i < old.n_entries; i++) {
        const ft_meta_entry_t *e = &old.entries[i];
        if (strcmp(e->key, key) == 0)
            continue;
        switch (e->type) {
        case FT_META_INT: assert_null(ft_meta_add_int(&f->src->meta, e->key, e->i)); break;
        case FT_META_FLOAT: assert_null(ft_meta_add_float(&f->src->meta, e->key, e->f)); break;
        case FT_META_STRING: assert_null(ft_meta_add_string(&f->src->meta, e->key, e->s, e->len)); break;
        default: fail_msg("meta_without: unexpected type for %s", e->key);
        }
    }
    ft_meta_release(&old);
}

static ft_src_tensor_t *find_mut(fake_t *f, const char *name)
{
    return (ft_src_tensor_t *)ft_src_find_tensor(f->src, name);
}

static void test_bad_models(void **state)
{
    (void)state;
    fake_t f = make_gguf();
    find_mut(&f, "blk.1.attn_k.weight")->name = "blk.1.attn_kk.weight";
    expect_error(&f, FT_STATUS_FORMAT, "blk.1.attn_k.weight");

    f = make_gguf();
    find_mut(&f, "blk.0.ffn_up_exps.weight")->shape[1] = F + 32;
    expect_error(&f, FT_STATUS_FORMAT, "blk.0.ffn_up_exps.weight");

    f = make_gguf();
    fake_tensor(&f, "blk.0.mystery.weight", 1, 4, 0, 0);
    fake_files(&f);
    expect_error(&f, FT_STATUS_UNSUPPORTED, "blk.0.mystery.weight");

    f = make_gguf();
    meta_without(&f, "qwen3moe.block_count");
    expect_error(&f, FT_STATUS_FORMAT, "qwen3moe.block_count");

    f = make_gguf();
    assert_null(ft_meta_add_string(&f.src->meta, "qwen3moe.embedding_length", "64", 2));
    expect_error(&f, FT_STATUS_FORMAT, "qwen3moe.embedding_length");

    f = make_gguf();
    assert_null(ft_meta_add_int(&f.src->meta, "qwen3moe.attention.head_count_kv", 3));
    expect_error(&f, FT_STATUS_FORMAT, "KV heads");

    f = make_gguf();
    assert_null(ft_meta_add_int(&f.src->meta, "qwen3moe.expert_used_count", E + 1));
    expect_error(&f, FT_STATUS_OUT_OF_RANGE, "expert_used_count");

    f = make_gguf();
    assert_null(ft_meta_add_int(&f.src->meta, "qwen3moe.block_count", 5000));
    expect_error(&f, FT_STATUS_OUT_OF_RANGE, "block_count");

    f = make_gguf(); /* bytes past the end of the file */
    f.src->files[0].size -= 4;
    expect_error(&f, FT_STATUS_OUT_OF_RANGE, "outside the file");

    f = make_gguf();
    find_mut(&f, "blk.0.attn_q.weight")->n_bytes -= 4;
    expect_error(&f, FT_STATUS_FORMAT, "blk.0.attn_q.weight");

    f = make_gguf();
    assert_null(ft_meta_add_string(&f.src->meta, "general.architecture", "llama4", 6));
    expect_error(&f, FT_STATUS_UNSUPPORTED, "llama4");

    f = make_hf();
    find_mut(&f, "model.layers.1.mlp.experts.5.up_proj.weight")->name = "model.layers.1.mlp.experts.5.up.weight";
    expect_error(&f, FT_STATUS_FORMAT, "experts.5.up_proj");

    f = make_hf();
    find_mut(&f, "model.layers.0.mlp.experts.2.gate_proj.weight")->dtype = FT_DTYPE_BF16;
    expect_error(&f, FT_STATUS_FORMAT, "experts.2.gate_proj");

    f = make_hf();
    assert_null(ft_meta_add_int(&f.src->meta, "vocab_size", V + 1));
    expect_error(&f, FT_STATUS_FORMAT, "vocab_size");

    f = make_hf();
    assert_null(ft_meta_add_bool(&f.src->meta, "attention_bias", 1)); /* and no bias tensors */
    expect_error(&f, FT_STATUS_FORMAT, "no 'model.layers.0.self_attn.q_proj.bias'");

    f = make_hf(); /* layer 1 declared dense but the file has experts */
    double only[1] = {1};
    assert_null(ft_meta_add_array(&f.src->meta, "mlp_only_layers", only, 1));
    expect_error(&f, FT_STATUS_FORMAT, "model.layers.1.mlp.gate_proj.weight");
}

static void test_tied_embeddings(void **state)
{
    (void)state;
    fake_t f = make_gguf();
    find_mut(&f, "output.weight")->name = "renamed";
    /* an unknown tensor remains: refused */
    expect_error(&f, FT_STATUS_UNSUPPORTED, "renamed");

    f = make_hf();
    assert_null(ft_meta_add_bool(&f.src->meta, "tie_word_embeddings", 1));
    ft_ir_model_t *m = NULL;
    ft_status_t st = ft_model_build_ir(f.src, &m);
    if (st)
        fail_msg("%s", ft_status_message(st));
    assert_int_equal(m->hp.tie_embeddings, 1);
    assert_null(ft_ir_find(m, FT_ROLE_OUTPUT, -1));
    ft_ir_model_destroy(m);
    ft_src_model_destroy(f.src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gguf_and_hf_give_same_ir),
        cmocka_unit_test(test_bad_models),
        cmocka_unit_test(test_tied_embeddings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
