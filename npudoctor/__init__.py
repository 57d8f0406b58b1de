"""npudoctor: diagnose PyTorch-on-Ascend-NPU software stacks without importing torch."""

__version__ = "0.1.0"
