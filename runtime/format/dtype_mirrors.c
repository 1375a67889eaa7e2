/* The format numbers exist three times: ft_dtype_t (dtype.h, the
 * runtime's), plan.proto's WeightFormat (what a plan stores; protobuf-c
 * generates Ftplan__WeightFormat from it) and ft_kernel_abi.h's
 * FT_KABI_FMT_* (the self-contained header emitted CPU modules include).
 * They must be the same numbers: a mismatch here fails the build. The
 * names are checked at run time too (test_dtype_table: every WeightFormat
 * value is named WF_<dtype name>). */
#include "dtype.h"

#include "ft_kernel_abi.h"
#include "plan.pb-c.h"

#define FT_SAME_WF(x)                                                                              \
    _Static_assert((int)FT_DTYPE_##x == (int)FTPLAN__WEIGHT_FORMAT__WF_##x,                       \
                   "plan.proto WeightFormat WF_" #x " must equal FT_DTYPE_" #x)
#define FT_SAME_KABI(x)                                                                            \
    _Static_assert((int)FT_KABI_FMT_##x == (int)FT_DTYPE_##x,                                     \
                   "ft_kernel_abi.h FT_KABI_FMT_" #x " must equal FT_DTYPE_" #x)

FT_SAME_WF(INVALID);
FT_SAME_WF(F32);
FT_SAME_WF(F16);
FT_SAME_WF(BF16);
FT_SAME_WF(F64);
FT_SAME_WF(I8);
FT_SAME_WF(I16);
FT_SAME_WF(I32);
FT_SAME_WF(I64);
FT_SAME_WF(U8);
FT_SAME_WF(U16);
FT_SAME_WF(U32);
FT_SAME_WF(U64);
FT_SAME_WF(BOOL);
FT_SAME_WF(F8_E4M3);
FT_SAME_WF(F8_E5M2);
FT_SAME_WF(Q4_0);
FT_SAME_WF(Q4_1);
FT_SAME_WF(Q5_0);
FT_SAME_WF(Q5_1);
FT_SAME_WF(Q8_0);
FT_SAME_WF(Q8_1);
FT_SAME_WF(Q2_K);
FT_SAME_WF(Q3_K);
FT_SAME_WF(Q4_K);
FT_SAME_WF(Q5_K);
FT_SAME_WF(Q6_K);
FT_SAME_WF(Q8_K);
FT_SAME_WF(IQ2_XXS);
FT_SAME_WF(IQ2_XS);
FT_SAME_WF(IQ3_XXS);
FT_SAME_WF(IQ1_S);
FT_SAME_WF(IQ4_NL);
FT_SAME_WF(IQ3_S);
FT_SAME_WF(IQ2_S);
FT_SAME_WF(IQ4_XS);
FT_SAME_WF(IQ1_M);
FT_SAME_WF(TQ1_0);
FT_SAME_WF(TQ2_0);
FT_SAME_WF(MXFP4);
FT_SAME_WF(NVFP4);
FT_SAME_WF(FP8);

/* Appending a format to ft_dtype_t fails here until it has its
 * WeightFormat in plan.proto and its line above. */
_Static_assert(FT_DTYPE_COUNT == FT_DTYPE_FP8 + 1,
               "a new ft_dtype_t value needs a plan.proto WeightFormat and an FT_SAME_WF line in "
               "dtype_mirrors.c");

FT_SAME_KABI(F32);
FT_SAME_KABI(F16);
FT_SAME_KABI(BF16);
FT_SAME_KABI(Q4_0);
FT_SAME_KABI(Q8_0);
FT_SAME_KABI(Q4_K);
FT_SAME_KABI(Q6_K);
FT_SAME_KABI(Q8_K);
