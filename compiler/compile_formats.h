/* Compile-time check that every selected target computes the weight
 * formats a bundle will store (compile_formats.c). */
#ifndef FT_COMPILER_COMPILE_FORMATS_H
#define FT_COMPILER_COMPILE_FORMATS_H

#include "compile.h"

/* FT_STATUS_UNSUPPORTED naming the tensor, its stored format, the target
 * (cpu, or the first cuda arch) and that target's formats, for the first
 * matrix some target cannot compute; FT_OK when all can. Writes nothing. */
FT_WARN_UNUSED ft_status_t ft_compile_check_formats(const ft_ir_model_t *model,
                                                    const ft_compile_options_t *opts);

#endif
