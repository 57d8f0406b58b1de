from torch_npu import _C  # noqa
