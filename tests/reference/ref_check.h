/* cmocka helpers shared by the forward-pass tests; include after cmocka.h. */
#ifndef FT_REF_CHECK_H
#define FT_REF_CHECK_H

#include "freetoken.h"

/* Fails the test with the status message when expr returns an error. */
#define FT_REF_OK(expr)                                                                            \
    do {                                                                                           \
        ft_status_t ft_ref_st_ = (expr);                                                           \
        if (ft_ref_st_) {                                                                          \
            print_error("%s\n  -> %s\n", #expr, ft_status_message(ft_ref_st_));                    \
            ft_status_free(ft_ref_st_);                                                            \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

#endif
