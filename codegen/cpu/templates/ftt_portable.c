/* template: portable C for the formats the SIMD templates tile (Q8_0,
 * Q4_K): the same row loop as the others. */
FTT_DEFINE_ROWLOOP_MATMUL(q8_0, (size_t)(cols / FTT_QK8_0) * FTT_Q8_0_BYTES)
FTT_DEFINE_ROWLOOP_MATMUL(q4_k, (size_t)(cols / FTT_QK_K) * FTT_Q8_K_BYTES)
FTT_DEFINE_ROWLOOP_MATMUL(f32, (size_t)cols * 4)
