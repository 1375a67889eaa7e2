/* The IQ codebooks as C arrays: iq_grids.inc's tables, named ft_<name>
 * (named quant_* so that the fake CUDA driver, which builds the
 * quantizers, gets them too). */
#include "iq_grids.h"

typedef uint8_t ft_iq_u8;
typedef uint16_t ft_iq_u16;
typedef uint32_t ft_iq_u32;
typedef uint64_t ft_iq_u64;
/* clang-format off */
#define FT_IQ_TABLE(type, name, n) const ft_iq_##type ft_##name[n] = {
#define FT_IQ_TABLE_END };
/* clang-format on */
#include "iq_grids.inc"
#undef FT_IQ_TABLE
#undef FT_IQ_TABLE_END
