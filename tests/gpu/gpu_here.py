"""Whether this machine can run a GPU script: the one reason to skip, said
the same way by every GPU test and benchmark (a script that cannot run says
why and exits 77, which meson shows as a skip with that reason)."""


def skip_reason(triton=True, gpus=1, nccl=False):
    """None when torch (and triton, when asked), CUDA, `gpus` devices and
    (when asked) NCCL are here; else one line saying what is missing."""
    try:
        import torch
        if triton:
            import triton as _triton  # noqa: F401
        if nccl:
            import torch.distributed as dist
    except ImportError as e:
        return "no torch%s here (%s)" % ("/triton" if triton else "", e)
    if not torch.cuda.is_available():
        return "no CUDA GPU here (torch.cuda.is_available() is False)"
    if nccl and not dist.is_nccl_available():
        return "this torch has no NCCL"
    if torch.cuda.device_count() < gpus:
        return "%d ranks need %d GPUs, this machine has %d" % (gpus, gpus, torch.cuda.device_count())
    return None
