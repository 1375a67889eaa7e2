/* CUDA graphs: capture of work queued on a stream, instantiation and
 * replay. The entry points are optional in the driver table; without them
 * ft_cuda_graphs_supported is 0 and callers launch directly. */
#include "cuda_device_internal.h"

int ft_cuda_graphs_supported(const ft_cuda_device_t *d)
{
    const ft_cuda_api_t *cu = &d->cu;
    return cu->cuStreamBeginCapture && cu->cuStreamEndCapture && cu->cuGraphInstantiateWithFlags &&
           cu->cuGraphLaunch && cu->cuGraphDestroy && cu->cuGraphExecDestroy;
}

ft_status_t ft_cuda_capture_begin(ft_cuda_device_t *d, ft_cu_stream stream)
{
    if (!ft_cuda_graphs_supported(d))
        return ft_status_make(FT_STATUS_UNAVAILABLE, "CUDA: the driver has no graph entry points");
    ft_status_t st = ft_cuda_enter(d);
    return st ? st
              : ft_cuda_check(
                    &d->cu,
                    d->cu.cuStreamBeginCapture(stream, FT_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                    "cuStreamBeginCapture");
}

ft_status_t ft_cuda_capture_end(ft_cuda_device_t *d, ft_cu_stream stream,
                                ft_cu_graph_exec *out_exec)
{
    *out_exec = NULL;
    ft_status_t st = ft_cuda_enter(d);
    if (st) return st;
    ft_cu_graph g = NULL;
    st = ft_cuda_check(&d->cu, d->cu.cuStreamEndCapture(stream, &g), "cuStreamEndCapture");
    if (!st)
        st = ft_cuda_check(&d->cu, d->cu.cuGraphInstantiateWithFlags(out_exec, g, 0),
                           "cuGraphInstantiate");
    if (g) d->cu.cuGraphDestroy(g); /* the executable graph keeps what it needs */
    return st;
}

ft_status_t ft_cuda_graph_launch(ft_cuda_device_t *d, ft_cu_graph_exec exec, ft_cu_stream stream)
{
    ft_status_t st = ft_cuda_enter(d);
    return st ? st : ft_cuda_check(&d->cu, d->cu.cuGraphLaunch(exec, stream), "cuGraphLaunch");
}

void ft_cuda_graph_destroy(ft_cuda_device_t *d, ft_cu_graph_exec exec)
{
    if (exec && !ft_cuda_enter(d)) d->cu.cuGraphExecDestroy(exec);
}
