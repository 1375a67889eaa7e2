/* Internal to runtime/backends/cuda: the device object, shared by the
 * device, stream and module files. */
#ifndef FT_BACKENDS_CUDA_DEVICE_INTERNAL_H
#define FT_BACKENDS_CUDA_DEVICE_INTERNAL_H

#include "cuda_device.h"

struct ft_cuda_device {
    ft_cuda_api_t cu;
    ft_cu_device dev;
    ft_cu_context ctx; /* the device's primary context, retained */
    ft_cuda_device_info_t info;
};

/* Makes the device's context current on the calling thread. */
FT_WARN_UNUSED ft_status_t ft_cuda_enter(ft_cuda_device_t *d);

#endif
