"""The profiles the whole-model, driver and ISA tests run. The oneDNN and x86 profiles differ from fbgemm only
in the constants of their conv, linear and transposed-conv layers: onednn (oneDNN's order for every such
layer) and x86_amx (PyTorch's x86 dispatch, the oneDNN layers with AMX's product scales) cover every rule
of onednn_amx and x86 too."""
from qnnpy.profiles import SHOWN_PROFILES
ONEDNN_DEFAULT_PROFILES = ("onednn", "x86_amx")
RULE_PROFILES = (*SHOWN_PROFILES, *ONEDNN_DEFAULT_PROFILES)
